"""kernels (form 11): raising checks on the arguments a caller passes.

What it recognises
    A ``raise`` in a kernel-library function reached only under tests of which
    at least one is about a parameter the caller decides
    (``kernels.arguments``): ``if backend == "xqa": if
    multi_ctas_kv_counter_buffer is not None: raise ValueError(...)``. The
    fact's predicate is where the raise is *not* reached, every test on its
    path read (the device, the ``backend`` option, the argument states).
Why it matters
    Only a call that passes those arguments meets the raise: the fact is
    decided for SGLang's own call (its argument states, ``support``) and
    stays undecided for any other question. The MLA decode API raises for
    SGLang's always-given ``multi_ctas_kv_counter_buffer`` once its
    ``backend="auto"`` has picked ``xqa`` (major 12).
Known limits
    Such a check can only exclude: passing it says nothing about the arch (the
    solver never takes its TRUE as support). Raises in ``except`` handlers
    or under ``while`` / ``match`` are skipped, as for capability checks.
Example
    ``def f(x, buf=None): if buf is not None: raise ValueError`` called with
    ``buf=`` given: FALSE, the chain ending at the ``if``.
"""

from __future__ import annotations

from guardscan.index.facts import FunctionFact
from guardscan.kernels.arguments import argument_option
from guardscan.kernels.model import KernelFact
from guardscan.kernels.paths import BRANCH_KINDS, PathReader, negate
from guardscan.kernels.symbols import ModuleSymbols, Resolver
from guardscan.predicate import OptionIs, atoms

__all__ = ["KIND", "recognise_argument_checks"]

KIND = "argument-check"


def recognise_argument_checks(resolver: Resolver, table: ModuleSymbols, fn: FunctionFact,
                              paths: PathReader, backend_first: bool = False,
                              ) -> list[KernelFact]:
    """The raises of ``fn`` that a test of its arguments leads to
    (``backend_first``: see ``CapabilityReader.read``)."""
    scope = fn.qualname
    arguments = paths.arguments(table, fn)
    if not arguments:
        return []
    options = {argument_option(p) for p in arguments}
    facts: list[KernelFact] = []
    for found in table.raises.get(scope, []):
        if not found.path:
            continue
        path = paths.effective_path(table, scope, found.line, found.path)
        if any(table.facts.cond(i).kind not in BRANCH_KINDS for i in path):
            continue
        reached = paths.argument_path(table, path, arguments, backend_first)
        if not any(isinstance(a, OptionIs) and a.option in options for a in atoms(reached)):
            continue
        cond = table.facts.cond(found.path[-1])  # the innermost test
        facts.append(KernelFact(
            function=f"{table.module}.{scope}", kind=KIND, rel=table.rel, line=cond.line,
            text=resolver.line_text(table.rel, cond.line), predicate=negate(reached),
            note=f"raises at line {found.line}: {found.exc[:120]}"))
    return facts
