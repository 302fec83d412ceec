"""kernels (form 1): ``@supported_compute_capability([...])`` on functions and methods.

What it recognises
    A decorator call that resolves to FlashInfer's
    ``supported_compute_capability`` (by qualified name; an unresolvable
    decorator spelled that way is accepted too), whose argument is a literal
    list / tuple / set of ints or a module-level constant holding one.
Why it matters
    It is FlashInfer's own declaration of the exact capabilities a kernel (or a
    backend's requirement check) supports; ``@backend_requirement`` reads it at
    run time to reject other archs.
Known limits
    Values are ``major * 10 + minor``, read as ``Device("sm", "in", ...)``; a
    computed argument (a function call, a comprehension) is not read and the
    fact is skipped (no claim) rather than guessed.
Example
    ``@supported_compute_capability([100, 103, 110, 120, 121])`` ->
    ``Device("sm", "in", (100, 103, 110, 120, 121))``.
"""

from __future__ import annotations

import ast

from guardscan.index.facts import FunctionFact
from guardscan.kernels.model import KernelFact
from guardscan.kernels.symbols import ModuleSymbols, Resolver
from guardscan.predicate import Device, Predicate
from guardscan.syntax import NOT_LITERAL, as_ints, call_parts, literal, parse_expr

__all__ = [
    "DECORATOR_NAME",
    "TOKENS",
    "names_function",
    "read_capability_list",
    "recognise_decorators",
]

DECORATOR_NAME = "supported_compute_capability"
TOKENS = (DECORATOR_NAME,)


def names_function(resolver: Resolver, table: ModuleSymbols, scope: str, func_text: str,
                   name: str) -> bool:
    """Whether ``func_text`` names FlashInfer's ``name``: resolved by qualified name;
    a callee we cannot follow counts when it is spelled ``name``."""
    target = resolver.resolve_call(table.module, scope, func_text)
    if target.kind == "function":
        return target.name.rpartition(".")[2] == name
    return target.kind in ("unresolved", "external") and func_text.rpartition(".")[2] == name


def read_capability_list(resolver: Resolver, table: ModuleSymbols, scope: str,
                         arg_text: str) -> Predicate | None:
    """``[100, 103]`` or a module constant holding it -> ``Device("sm", "in", ...)``."""
    node = parse_expr(arg_text)
    if node is None:
        return None
    value = literal(node)
    if value is NOT_LITERAL and isinstance(node, (ast.Name, ast.Attribute)):
        target = resolver.resolve_call(table.module, scope, arg_text)
        if target.kind == "constant":
            module, _, name = target.name.rpartition(".")
            owner = resolver.symbols(module)
            assign = owner.module_constant(name) if owner is not None else None
            inner = parse_expr(assign.value) if assign is not None else None
            value = literal(inner) if inner is not None else NOT_LITERAL
    ints = as_ints(value)
    return Device("sm", "in", ints) if ints else None


def recognise_decorators(resolver: Resolver, table: ModuleSymbols, fn: FunctionFact,
                         ) -> list[KernelFact]:
    """The ``supported_compute_capability`` facts on one function."""
    facts = []
    for text, line in fn.decorators:
        call = call_parts(text)
        if call is None:
            continue
        func, args, kwargs = call
        if not names_function(resolver, table, fn.scope, func, DECORATOR_NAME):
            continue
        arg = args[0] if args else kwargs.get("supported_ccs")
        if arg is None:
            continue
        pred = read_capability_list(resolver, table, fn.scope, arg)
        if pred is None:
            continue
        facts.append(KernelFact(
            function=f"{table.module}.{fn.qualname}",
            kind="decorator",
            rel=table.rel,
            line=line,
            text=resolver.line_text(table.rel, line),
            predicate=pred,
        ))
    return facts
