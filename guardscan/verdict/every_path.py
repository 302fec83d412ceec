"""verdict (every path): gates that each could raise, one per branch, which together raise on every path the choice can take.

What it judges
    The gates about a choice that are undecided on the arch, each raising
    there on some paths only (``could raise ... depending on``), whose
    undecided tests are all the same handful of the code's own branches
    (``runner_input.use_masked_gemm``, ``weight_dtype == torch.bfloat16``).
    When every way those tests can come out meets at least one of the gates,
    the choice fails on the arch whatever the launch: ``blocked``, each gate
    shown with the paths it covers.
Why it matters
    A runner that dispatches on its input (masked or contiguous, FP8 or BF16)
    and calls, on each branch, a wrapper that only works where a flag decided
    by the arch is set (``deep_gemm`` imported only under
    ``ENABLE_JIT_DEEPGEMM``) fails on every branch. Judged one gate at a time,
    each depends on the branch, and the choice read as ``unknown`` ("safe to
    try") where SGLang never runs it.
Known limits
    Tests are matched by their source text: the same text in two gates is
    taken for the same test (both gates lie on one function's branches). At
    most ``MAX_TESTS`` undecided tests, else nothing is combined. A path that
    escapes every gate only where a count is zero (``if all_tokens == 0:
    return``, an empty batch) does no work: the verdict is ``blocked``, with
    the escape in its conditions. A count is read from its text (a size, a
    length, a number of tokens, ``x.shape[0]``, a one-letter dimension); a
    zero rank or index (``tp_rank == 0``) is a real path, and stops it. Only gates that test the device take part,
    so code that fails on every arch alike is never combined into a verdict
    here.
Example
    sglang 0.5.19, ``--moe-runner-backend deep_gemm`` on sm80: the BF16 and
    FP8, masked and contiguous grouped GEMMs of ``deep_gemm_wrapper`` each
    call the never-imported ``deep_gemm``; every branch of
    ``DeepGemmRunnerCore.run`` takes one: ``blocked``, not blocked when
    ``all_tokens == 0`` (the FP8 contiguous path's empty-batch return).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import replace

from guardscan.evidence import FactKind, arg, args_of
from guardscan.link import GATE_KINDS, Finding
from guardscan.predicate import (
    And,
    Const,
    Not,
    Or,
    Predicate,
    Unknown,
    leaves,
)
from guardscan.predicate_dag import residual
from guardscan.results import Role
from guardscan.verdict.chain import finding_evidence
from guardscan.verdict.model import Case, Outcome

__all__ = ["MAX_TESTS", "covers", "every_path_fails", "uncovered"]

#: the most undecided tests whose outcomes are tried together (2**n paths)
MAX_TESTS = 10

#: a test that a count is zero (the empty input, which a runner returns early
#: for): a size, a length, a number of tokens, a one-letter GEMM dimension;
#: never a rank or an index, whose zero is the common case (``tp_rank == 0``)
_ZERO = re.compile(
    r"^(?:[\w.]*(?:tokens|num_\w*|len|size|count|batch\w*)|(?:[\w.]+\.)?[mMnN]|"
    r"[\w.]+\.numel\(\)|[\w.]+\.shape\[\d+\]|[\w.]+\.size\(\d*\)) == 0$")


def every_path_fails(judged: Sequence[tuple[Finding, Outcome]], case: Case,
                     ) -> list[tuple[Finding, Outcome]]:
    """The rules' outcomes for one choice on one arch, with the gates that
    together raise on every path turned from caveats into blocking lines."""
    if any(o.blocking for _, o in judged):
        return list(judged)
    ctx = case.ctx
    parts: list[tuple[int, Predicate]] = []
    for position, (finding, outcome) in enumerate(judged):
        if finding.kind in GATE_KINDS and _could_raise(outcome) and \
                case.values.mentions(finding.condition):
            part = residual(finding.condition, ctx, lambda a: False)
            if all(isinstance(a, Unknown) for a in leaves(part)):
                parts.append((position, part))
    for group in _groups(parts):
        zeros = covers([p for _, p in group])
        if zeros is not None:
            return _blocked(judged, case, group, zeros)
    return list(judged)


def _blocked(judged: Sequence[tuple[Finding, Outcome]], case: Case,
             group: list[tuple[int, Predicate]], zeros: list[str],
             ) -> list[tuple[Finding, Outcome]]:
    out = list(judged)
    others = len({(judged[p][0].rel, judged[p][0].line) for p, _ in group}) - 1
    escape = (f"not blocked when {' or '.join(zeros)} (no rows to compute)",) if zeros else ()
    for position, part in group:
        finding, outcome = judged[position]
        out[position] = (finding, replace(outcome, caveats=(), conditions=(
            *outcome.conditions, *escape), blocking=tuple(finding_evidence(
                case.index, finding, Role.GATE, FactKind.GATE, args_of(
                    effect="every-path", arch=case.arch.name, when=part.describe()[:300],
                    others=str(others))))))
    return out


def _groups(parts: list[tuple[int, Predicate]]) -> list[list[tuple[int, Predicate]]]:
    """The gates in groups that share their tests (a test in two groups
    joins them): only gates on one function's branches can cover its paths
    together, and a group is tried on its own tests only."""
    groups: list[tuple[set[Predicate], list[tuple[int, Predicate]]]] = []
    for position, part in parts:
        tests = set(leaves(part))
        joined = [g for g in groups if g[0] & tests]
        for g in joined:
            groups.remove(g)
            tests |= g[0]
        groups.append((tests, [m for g in joined for m in g[1]] + [(position, part)]))
    return [sorted(members, key=lambda m: m[0]) for _, members in groups if len(members) > 1]


def covers(parts: list[Predicate]) -> list[str] | None:
    """None unless on every way the tests come out one of ``parts`` holds,
    or none holds only where a count is zero; then those zero tests (empty
    when no path escapes)."""
    escapes = uncovered(parts)
    if escapes is None:
        return None
    zeros: set[str] = set()
    for world in escapes:
        held = [t.reason for t, holds in world.items() if holds and _ZERO.match(t.reason)]
        if not held:
            return None
        zeros.update(held)
    return sorted(zeros)


def uncovered(parts: Sequence[Predicate]) -> list[dict[Unknown, bool]] | None:
    """The ways the undecided tests of ``parts`` can come out under which
    none of them holds (each test taken as free, a test's text its identity);
    None when they test something other than the code's own values, or too
    many things to try.

    >>> masked, bf16 = Unknown("masked"), Unknown("bf16")
    >>> from guardscan.predicate import conj, neg
    >>> uncovered([conj(masked, bf16), conj(masked, neg(bf16)), neg(masked)])
    []
    >>> [{t.reason: v for t, v in w.items()} for w in uncovered([masked, bf16])]
    [{'masked': False, 'bf16': False}]
    >>> [bool(_ZERO.match(t)) for t in ("all_tokens == 0", "m == 0", "x.shape[0] == 0",
    ...                                  "tp_rank == 0", "layer_id == 0", "x == 0")]
    [True, True, True, False, False, False]
    """
    tests: list[Unknown] = []
    for part in parts:
        for atom in leaves(part):
            if not isinstance(atom, Unknown):
                return None
            if atom not in tests:
                tests.append(atom)
    if len(tests) > MAX_TESTS:
        return None
    out = []
    for values in itertools.product((False, True), repeat=len(tests)):
        world = dict(zip(tests, values, strict=True))
        if not any(_holds(part, world) for part in parts):
            out.append(world)
    return out


def _holds(pred: Predicate, world: dict[Unknown, bool]) -> bool:
    if isinstance(pred, And):
        return all(_holds(p, world) for p in pred.items)
    if isinstance(pred, Or):
        return any(_holds(p, world) for p in pred.items)
    if isinstance(pred, Not):
        return not _holds(pred.item, world)
    if isinstance(pred, Const):
        return pred.value
    assert isinstance(pred, Unknown)
    return world[pred]


def _could_raise(outcome: Outcome) -> bool:
    """Whether the gate rule made this gate a caveat that could raise here."""
    return any(ev.kind == FactKind.GATE and arg(ev.args, "effect") == "could-raise"
               for ev in outcome.caveats)

