"""kernels (form 7): the call graph inside the kernel library.

What it recognises
    Calls in each function, resolved by qualified name through the module's
    imports (module-level and function-local), same-module definitions,
    ``self.method`` / ``cls.method`` in a class (and its in-tree bases), module
    attribute calls (``jit_env.get()`` where ``jit_env`` is an imported module),
    and class instantiation (to ``__init__``). Calls in a class body nested in a
    function run when the function does, so they count as the function's own; a
    nested function or a nested class's methods (closures, runner classes a
    ``get_*_module()`` returns) are ``defines`` edges: called later, maybe. In a
    function with a ``backend`` parameter, calls inside a literal dict keyed by
    backend names (``{"cudnn": lambda: ..., "trtllm": lambda: ...}``) are taken
    only when that backend is.
Why it matters
    The arch facts sit on JIT spec generators and check functions several hops
    below the public entry points SGLang calls.
Known limits
    Calls through values (``module.run()``, ``fn()`` for a parameter) are not
    followed; callee names that should be in the package but cannot be found
    are listed in ``unresolved``, never guessed. Each edge carries the condition
    of its call site (``select`` when that condition is about the device).
Example
    ``trtllm_fp4_block_scale_moe`` -> ``get_trtllm_moe_sm100_module`` ->
    ``gen_trtllm_gen_fused_moe_sm100_module``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from guardscan.index.facts import CallFact, CondPath, FunctionFact
from guardscan.kernels.conditions import BACKEND_OPTION
from guardscan.kernels.paths import PathReader
from guardscan.kernels.symbols import ModuleSymbols, Resolver
from guardscan.predicate import TRUE, OptionIs, Predicate, Unknown, conj
from guardscan.syntax import dotted, is_sm_string, parse_expr

__all__ = ["Edge", "class_edges", "function_edges"]


@dataclass(frozen=True, slots=True)
class Edge:
    caller: str
    callee: str
    rel: str
    line: int
    path_text: str
    select: bool  # the call sits in a capability branch
    condition: Predicate  # when the call is made
    kind: str  # call | defines | table | init


def _own_scopes(table: ModuleSymbols, fn: FunctionFact) -> set[str]:
    """The function's scope plus the bodies of classes nested in it (run with it)."""
    scopes = {fn.qualname}
    frontier = [fn.qualname]
    while frontier:
        current = frontier.pop()
        for klass in table.classes.values():
            if klass.scope == current and klass.qualname not in scopes:
                scopes.add(klass.qualname)
                frontier.append(klass.qualname)
    return scopes


def _backend_keyed_calls(table: ModuleSymbols, fn: FunctionFact) -> dict[tuple[int, str], str]:
    """(line, callee text) -> backend, for calls inside ``{"name": ...}`` dict values."""
    if BACKEND_OPTION not in fn.params:
        return {}
    keyed: dict[tuple[int, str], str] = {}
    for assign in table.scope_assigns.get(fn.qualname, []):
        if not assign.value.lstrip().startswith("{"):
            continue
        node = parse_expr(assign.value)
        if not isinstance(node, ast.Dict):
            continue
        for key, value in zip(node.keys, node.values):
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)) or (
                    is_sm_string(key.value)):
                continue
            for sub in ast.walk(value):
                if isinstance(sub, ast.Call):
                    func = dotted(sub.func)
                    if func is not None:
                        keyed[(assign.line + sub.lineno - 1, func)] = key.value
    return keyed


def _callee(resolver: Resolver, table: ModuleSymbols, call: CallFact) -> tuple[str | None, bool]:
    """(function id or None, unresolved?) for one call site."""
    target = resolver.resolve_call(table.module, call.scope, call.func)
    if target.kind == "function":
        return target.name, False
    if target.kind == "class":
        module, qualname = resolver.split_id(target.name)
        owner = resolver.symbols(module) if module else None
        if owner is not None:
            init = resolver.find_method(owner, qualname, "__init__")
            if init is not None and init.kind == "function":
                return init.name, False
        return None, False
    return None, target.kind == "unresolved"


def function_edges(resolver: Resolver, table: ModuleSymbols, fn: FunctionFact,
                   paths: PathReader,
                   condition: Callable[[str, CondPath], Predicate] | None = None,
                   ) -> tuple[list[Edge], list[tuple[str, str, str, int]]]:
    """Outgoing edges of one function, and the callees that could not be
    resolved; ``condition``: how a call's path reads (default: as the
    library's facts read it, ``PathReader.path_predicate``)."""
    caller = f"{table.module}.{fn.qualname}"
    scopes = _own_scopes(table, fn)
    keyed = _backend_keyed_calls(table, fn)
    edges: list[Edge] = []
    unresolved: list[tuple[str, str, str, int]] = []
    for call in (c for scope in sorted(scopes) for c in table.calls.get(scope, [])):
        callee, missing = _callee(resolver, table, call)
        if missing:
            unresolved.append((caller, call.func, table.rel, call.line))
        if callee is None:
            continue
        path = paths.effective_path(table, call.scope, call.line, call.path)
        when = condition(call.scope, path) if condition is not None \
            else paths.path_predicate(table, call.scope, path)
        backend = keyed.get((call.line, call.func))
        if backend is not None:
            when = conj(when, OptionIs(BACKEND_OPTION, frozenset({backend})))
        edges.append(Edge(
            caller, callee, table.rel, call.line, paths.path_text(table, call.scope, path),
            paths.mentions_device(table, call.scope, path), when, "call",
        ))
    later = Unknown(f"defined in {fn.name}, called later")
    for nested in table.functions.values():
        if nested.scope in scopes and nested.qualname != fn.qualname:
            edges.append(Edge(caller, f"{table.module}.{nested.qualname}", table.rel,
                              nested.line, "", False, later, "defines"))
    return edges, unresolved


def class_edges(table: ModuleSymbols, class_qualname: str) -> list[Edge]:
    """A class runs its ``__init__``; its other methods are called later, maybe."""
    caller = f"{table.module}.{class_qualname}"
    edges = []
    for method in table.functions.values():
        if method.scope != class_qualname:
            continue
        is_init = method.name == "__init__"
        edges.append(Edge(caller, f"{table.module}.{method.qualname}", table.rel, method.line, "",
                          False, TRUE if is_init else Unknown(f"method {method.name}"),
                          "init" if is_init else "defines"))
    return edges
