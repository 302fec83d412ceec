"""link (backend argument): what a call's ``backend=`` argument says, for a call into the kernel library.

A call made from a choice's code may hand the library a backend by name
(``backend="cudnn"``), or compute it from the option's value
(``backend=self.backend.removeprefix("flashinfer_")``): the first is a
literal, the second names the choices the library is asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from guardscan.guards import ChoiceV, ConstV, ExtV, OptV, Value, Vocabulary
from guardscan.index.facts import CallFact
from guardscan.index.observe import FactsView
from guardscan.link.kernel_args import call_arguments
from guardscan.link.model import Hop, HopRole, KernelCall
from guardscan.predicate import QuantIs, conj, leaves
from guardscan.syntax import parse_expr

if TYPE_CHECKING:
    from guardscan.link.conditions import Conditions
    from guardscan.link.context import LinkContext
    from guardscan.link.quantization import QuantizationMethods

__all__ = ["backend_argument", "backend_choices", "carried_backend_calls", "literal_backend"]


def literal_backend(vocab: Vocabulary, facts: FactsView, call: CallFact) -> str | None:
    """A ``backend=`` argument that resolves to a string, e.g. ``backend="cudnn"``."""
    value = backend_argument(vocab, facts, call)
    return value.value if isinstance(value, ConstV) and isinstance(value.value, str) else None


def backend_argument(vocab: Vocabulary, facts: FactsView, call: CallFact) -> Value | None:
    """The value of a call's ``backend=`` argument (None: it has none)."""
    for name, text in call.kwargs:
        if name == "backend":
            if parse_expr(text) is None:
                return None
            return vocab.value(text, facts.rel, call.scope, call.line)
    return None


def backend_choices(value: Value | None, choices: dict[str, tuple[str, ...]],
                    ) -> tuple[str, tuple[tuple[str, str], ...]] | None:
    """(dest, (choice, string)...) when a ``backend=`` value is computed from an
    option's value (``backend.removeprefix("flashinfer_")``, or the value itself)."""
    if isinstance(value, OptV) and value.dest in choices:
        return value.dest, tuple((c, c) for c in choices[value.dest])
    if isinstance(value, ChoiceV) and value.dest in choices:
        # a mapping that renames some choices (``flashinfer_trtllm`` ->
        # ``trtllm``) marks those as the library's backends; the choices it
        # passes through unchanged (``marlin``, ``auto``) are not taken to make
        # the call (they are SGLang's own paths, or resolved elsewhere)
        strings = value.strings()
        renamed = tuple((c, s) for c, s in strings if c != s)
        strings = renamed or strings
        return (value.dest, strings) if strings else None
    return None


def carried_backend_calls(ctx: LinkContext, conditions: Conditions,
                          quant: QuantizationMethods, facts: FactsView) -> list[KernelCall]:
    """Calls into the kernel library whose ``backend=`` argument is computed
    from an option's value (``mm_fp4(..., backend=backend)`` after
    ``backend = get_fp4_gemm_runner_backend().get_flashinfer_backend()``):
    whatever the path, each choice makes that call with its own string, so
    the call belongs to every choice, judged per choice."""
    choices = {o.dest: o.choices for o in ctx.options}
    out = []
    for call in facts.calls:
        if not any(name == "backend" for name, _ in call.kwargs):
            continue
        if parse_expr(call.func) is None:
            continue
        callee = ctx.vocab.value(call.func, facts.rel, call.scope, call.line)
        if not (isinstance(callee, ExtV) and callee.path.split(".")[0] in ctx.kernel_packages):
            continue
        carried = backend_choices(backend_argument(ctx.vocab, facts, call), choices)
        if carried is None:
            continue
        dest, strings = carried
        cond = conditions.path(facts, call.path, call.scope)
        scope_cond = quant.condition(facts.rel, call.scope)
        if any(isinstance(a, QuantIs) for a in leaves(scope_cond)):
            cond = conj(scope_cond, cond)
        hop = Hop(facts.rel, call.line, HopRole.LINK,
                  f"backend= carries {dest}: " + ", ".join(
                      f"{c} -> {s!r}" for c, s in strings if c != s)[:200])
        out.append(KernelCall(
            dest, cond, callee.path, facts.rel, call.line, (hop,), None, owned=True,
            backends=strings, args=call_arguments(ctx, facts, call)))
    return out
