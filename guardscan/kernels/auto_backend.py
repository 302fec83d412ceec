"""kernels (form 12): what a kernel-library function's ``backend="auto"`` becomes on an arch.

What it recognises
    In a function with a ``backend`` parameter, literal assignments to it under
    a test that it is ``"auto"``::

        if backend == "auto":
            cc = get_compute_capability(query.device)
            if cc[0] == 12 and sparse_mla_top_k > 0:
                backend = "sparse"
            elif cc[0] != 10:
                backend = "xqa"

    Each assignment holds where its path does, the device and the caller's
    argument states (``kernels.arguments``) read. An earlier assignment
    ``backend = helper(..., backend=backend, ...)`` must hand the parameter
    back for the call's arguments: the helper's first return that the
    arguments reach (its tests read with what the call binds) is ``return
    backend``.
Why it matters
    FlashInfer resolves ``auto`` itself, off SGLang's side of the call:
    SGLang's MLA decode passes no ``backend=``, and on major 12 FlashInfer
    picks ``xqa``, whose checks then decide (``support``).
Known limits
    Decided only where exactly one assignment holds and every other is
    false; where none holds, ``auto`` stays the union of the backends (the
    solver's reading without this form). A later assignment to ``backend``
    outside the ``auto`` test, or an earlier one that is not such a
    hand-back, leaves it undecided. Only the function the caller reaches
    is resolved (its callees are judged without the caller's arguments).
Example
    The block above, called without ``sparse_mla_top_k`` (default ``0``):
    ``xqa`` on sm120, ``auto`` left as it is on sm100.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass

from guardscan.arch import Arch
from guardscan.index.facts import FunctionFact
from guardscan.kernels.arguments import DEFAULT, GIVEN, NONE, argument_option
from guardscan.kernels.conditions import BACKEND_OPTION
from guardscan.kernels.paths import PathReader
from guardscan.kernels.symbols import ModuleSymbols, Resolver
from guardscan.predicate import Context, OptionIs, Predicate, Tri
from guardscan.syntax import NOT_LITERAL, literal, parse_expr

__all__ = ["AutoBackend", "Pick", "read_auto_backend"]

_AUTO = OptionIs(BACKEND_OPTION, frozenset({"auto"}))


@dataclass(frozen=True, slots=True)
class Pick:
    """``backend = value`` at ``rel:line``, holding where ``when`` does."""

    value: str
    when: Predicate
    rel: str
    line: int


@dataclass(frozen=True, slots=True)
class _HandBack:
    """An earlier ``backend = helper(...)``: the helper's returns in order,
    (where it is reached, whether it returns the backend), and how the
    helper's argument states follow from the caller's (its option -> the
    caller's option, or a fixed state)."""

    returns: tuple[tuple[Predicate, bool], ...]
    states: tuple[tuple[str, str, bool], ...]  # (helper option, state or caller option, is caller's)

    def hands_back(self, caller: Mapping[str, str]) -> bool:
        options = {}
        for option, value, from_caller in self.states:
            if from_caller:
                if value in caller:  # else: not known, left open
                    options[option] = caller[value]
            else:
                options[option] = value
        ctx = Context(options=options)
        for when, is_backend in self.returns:
            reached = when.evaluate(ctx)
            if reached is Tri.TRUE:
                return is_backend
            if reached is Tri.UNKNOWN:
                return False
        return False


@dataclass(frozen=True, slots=True)
class AutoBackend:
    picks: tuple[Pick, ...]
    kept: tuple[_HandBack, ...] = ()

    def resolve(self, arch: Arch, states: Mapping[str, str]) -> Pick | None:
        """The assignment that holds on ``arch`` for a call with ``states``
        (None: none holds, or which one is not decided)."""
        if not all(k.hands_back(states) for k in self.kept):
            return None
        ctx = Context(arch=arch, options={**states, BACKEND_OPTION: "auto"})
        held = []
        for pick in self.picks:
            value = pick.when.evaluate(ctx)
            if value is Tri.UNKNOWN:
                return None
            if value is Tri.TRUE:
                held.append(pick)
        return held[0] if len(held) == 1 else None


def read_auto_backend(resolver: Resolver, table: ModuleSymbols, fn: FunctionFact,
                      paths: PathReader) -> AutoBackend | None:
    """The function's resolution of ``backend="auto"``, or None when it has none
    this form reads."""
    if BACKEND_OPTION not in fn.params:
        return None
    scope = fn.qualname
    assigns = [a for a in table.scope_assigns.get(scope, []) if a.targets == (BACKEND_OPTION,)]
    arguments = paths.arguments(table, fn)
    picks: list[Pick] = []
    others = []
    first_test = None
    for assign in assigns:
        value = literal(parse_expr(assign.value))
        path = paths.effective_path(table, scope, assign.line, assign.path)
        auto_tests = [i for i in path if i > 0
                      and paths.cond_predicate(table, scope, i) == _AUTO]
        if isinstance(value, str) and auto_tests:
            picks.append(Pick(value, paths.argument_path(table, path, arguments), table.rel,
                              assign.line))
            line = table.facts.cond(auto_tests[0]).line
            first_test = line if first_test is None else min(first_test, line)
        else:
            others.append(assign)
    if not picks or first_test is None:
        return None
    kept = []
    for assign in others:
        if assign.line > first_test:
            return None  # reassigned after the resolution: not read
        hand_back = _hand_back(resolver, table, scope, assign.value, arguments, paths)
        if hand_back is None:
            return None
        kept.append(hand_back)
    return AutoBackend(tuple(picks), tuple(kept))


def _hand_back(resolver: Resolver, table: ModuleSymbols, scope: str, text: str,
               caller_arguments: Mapping[str, str], paths: PathReader) -> _HandBack | None:
    node = parse_expr(text)
    if not isinstance(node, ast.Call) or any(isinstance(a, ast.Starred) for a in node.args) \
            or any(k.arg is None for k in node.keywords):
        return None
    target = resolver.resolve_call(table.module, scope, ast.unparse(node.func))
    found = resolver.function_fact(target.name) if target.kind == "function" else None
    if found is None:
        return None
    helper_table, helper = found
    own = paths.arguments(helper_table, helper)
    positional = [p for p in helper.params if p not in ("self", "cls")]
    bound: dict[str, ast.expr] = dict(zip(positional, node.args))
    bound.update((k.arg, k.value) for k in node.keywords if k.arg is not None)
    backend_param = next((p for p, v in bound.items()
                          if isinstance(v, ast.Name) and v.id == BACKEND_OPTION), None)
    if backend_param is None:
        return None
    # the helper's parameters as this call binds them: a caller's parameter
    # passed through keeps the caller's state (and default), a literal is
    # read as its default, anything else is given
    arguments: dict[str, str] = {}
    states: list[tuple[str, str, bool]] = []
    for param, default in own.items():
        option = argument_option(param)
        value = bound.get(param)
        if value is None:
            arguments[param] = default
            states.append((option, DEFAULT, False))
        elif isinstance(value, ast.Name) and value.id in caller_arguments:
            arguments[param] = caller_arguments[value.id]
            states.append((option, argument_option(value.id), True))
        elif literal(value) is None:
            arguments[param] = default
            states.append((option, NONE, False))
        elif literal(value) is not NOT_LITERAL:
            arguments[param] = ast.unparse(value)
            states.append((option, DEFAULT, False))
        else:
            arguments[param] = default
            states.append((option, GIVEN, False))
    returns = []
    for ret in sorted(helper_table.returns.get(helper.qualname, []), key=lambda r: r.line):
        path = paths.past_raises(helper_table, helper.qualname, paths.effective_path(
            helper_table, helper.qualname, ret.line, ret.path))
        returns.append((paths.argument_path(helper_table, path, arguments),
                        ret.value.strip() == backend_param))
    return _HandBack(tuple(returns), tuple(states))
