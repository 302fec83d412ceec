"""kernels (form 5): explicit capability checks that raise (or assert).

What it recognises
    A ``raise`` reached only under conditions that mention the device
    (``if major < 10: raise ...``, ``if props.major != 12: raise ...``, ``if
    not is_sm100a_supported(device): raise``), and an ``assert`` whose test
    does. The conditions are read by the guards interpreter and its forms, as
    SGLang's guards are, with what the library's callers say its parameters
    hold (see ``conditions``).
    The fact's predicate is where the raise is *not* reached: the negation of
    the raise's path (``major >= 10``); for an assert, its test (under the
    conditions around it).
Why it matters
    It is the kernel library rejecting the arch itself, before any kernel is
    looked for. Where the check passes, it is positive evidence only as an
    allow-list (it raises unless the arch is in a set: ``if major != 12``); a
    deny-list (``if major == 11 and minor == 0: raise``, ``if major < 10:
    raise``) rejects what it names and says nothing about the rest. The
    solver tells them apart by analysis: a check that also lets a far-future
    arch (42.0) through is a deny-list (``support.deny_list``).
Known limits
    Raises already explained as a dispatch's fall-through are left to the
    dispatch recogniser; raises inside ``except`` handlers are skipped.
    Conditions mixing the device with other things (``if use_fp8 and major <
    10``) give facts that are UNKNOWN unless the other part is decided, never a
    wrong FALSE. Without the guard forms, helper calls such as
    ``is_sm100a_supported(device)`` and device properties are not read and the
    check is skipped.
Example
    ``major, _ = get_compute_capability(x.device)``; ``if major < 10: raise
    ValueError("needs SM100")`` -> ``capability major >= 10``.
"""

from __future__ import annotations

from guardscan.index.facts import FunctionFact
from guardscan.kernels.model import KernelFact
from guardscan.kernels.paths import BRANCH_KINDS, PathReader, negate
from guardscan.kernels.symbols import ModuleSymbols, Resolver
from guardscan.predicate import disj, mentions_device

__all__ = ["recognise_checks"]


def recognise_checks(resolver: Resolver, table: ModuleSymbols, fn: FunctionFact,
                     paths: PathReader, claimed: set[int]) -> list[KernelFact]:
    """The raising capability checks of one function (``claimed`` raise lines skipped)."""
    scope = fn.qualname
    function_id = f"{table.module}.{fn.qualname}"
    facts: list[KernelFact] = []
    for found in table.raises.get(scope, []):
        if found.line in claimed or not found.path:
            continue
        raise_ = found._replace(
            path=paths.effective_path(table, scope, found.line, found.path))
        if any(table.facts.cond(i).kind not in BRANCH_KINDS for i in raise_.path):
            continue
        device_conds = [i for i in raise_.path
                        if paths.device_predicate(table, scope, i) is not None]
        if not device_conds:
            continue
        cond = table.facts.cond(device_conds[-1])
        facts.append(KernelFact(
            function=function_id, kind="check", rel=table.rel, line=cond.line,
            text=resolver.line_text(table.rel, cond.line),
            predicate=negate(paths.path_predicate(table, scope, raise_.path)),
            note=f"raises at line {raise_.line}: {raise_.exc[:120]}",
        ))
    names = paths.names(table, scope)
    for assert_ in table.asserts.get(scope, []):
        test = paths.reader.read(assert_.test, table.rel, scope, assert_.line, names.quantities,
                                 names.consts, names.params)
        if test is None or not mentions_device(test):
            continue
        predicate = test
        path = paths.effective_path(table, scope, assert_.line, assert_.path)
        if path:
            predicate = disj(negate(paths.path_predicate(table, scope, path)), test)
        facts.append(KernelFact(
            function=function_id, kind="check", rel=table.rel, line=assert_.line,
            text=resolver.line_text(table.rel, assert_.line), predicate=predicate,
            note=f"assert {assert_.test[:120]}",
        ))
    return facts
