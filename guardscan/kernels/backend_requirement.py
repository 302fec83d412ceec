"""kernels (form 2): ``@backend_requirement({"cudnn": check, ...}, common_check=...)``, per-backend checks.

What it recognises
    A decorator that resolves to FlashInfer's ``backend_requirement``, whose
    first argument (or ``backend_checks=``) is a dict literal, or a module
    constant holding one, mapping backend names to check functions. Each check's
    own ``@supported_compute_capability`` gives that backend's archs; the
    function runs where *some* backend runs (the union), and with an empty
    table where ``common_check``'s decorator says.
Why it matters
    The wrapper raises ``BackendSupportedError`` before the kernel runs when the
    chosen backend's check does not list the device's capability, so this is
    FlashInfer's per-backend arch contract; ``support(..., backend="cudnn")``
    narrows the fact to that backend.
Known limits
    A check function without the decorator makes its backend UNKNOWN (the
    wrapper would return False for it, but we do not claim FALSE from an absent
    decorator). Problem-size checks inside the check functions are not read.
Example
    ``@backend_requirement({"cudnn": _cudnn_req, "trtllm": _trtllm_req})`` with
    ``@supported_compute_capability([100, 103, 110, 120, 121])`` on ``_cudnn_req``
    and ``([100, 103])`` on ``_trtllm_req`` -> ``sm in [100, 103, 110, 120, 121]``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from guardscan.index.facts import FunctionFact
from guardscan.kernels.decorator import names_function
from guardscan.kernels.model import BackendCheck, KernelFact
from guardscan.kernels.symbols import ModuleSymbols, Resolver
from guardscan.predicate import Device, Predicate, Unknown, disj
from guardscan.syntax import parse_expr, segment

__all__ = ["DECORATOR_NAME", "TOKENS", "recognise_backend_requirement"]

DECORATOR_NAME = "backend_requirement"
TOKENS = (DECORATOR_NAME,)

#: function id -> its ``supported_compute_capability`` predicate (None if it has none)
CapabilityOf = Callable[[str], Predicate | None]


def union(preds: list[Predicate]) -> Predicate:
    """The union of per-backend predicates; ``sm in`` lists merge into one list."""
    sms: set[int] = set()
    rest: list[Predicate] = []
    for pred in preds:
        if isinstance(pred, Device) and pred.quantity == "sm" and pred.op == "in" and isinstance(
                pred.value, tuple):
            sms.update(v for v in pred.value if isinstance(v, int))
        else:
            rest.append(pred)
    merged = [Device("sm", "in", tuple(sorted(sms)))] if sms else []
    return disj(*merged, *rest)


def _table_node(resolver: Resolver, table: ModuleSymbols, scope: str, decorator_text: str,
                node: ast.expr | None, line: int,
                ) -> tuple[ast.Dict, str, int, ModuleSymbols] | None:
    """The dict literal (inline, or a module constant), the text its positions are
    relative to, and that text's first line."""
    if isinstance(node, ast.Dict):
        return node, decorator_text, line, table
    if isinstance(node, (ast.Name, ast.Attribute)):
        target = resolver.resolve_call(table.module, scope, segment(decorator_text, node))
        if target.kind == "constant":
            module, _, name = target.name.rpartition(".")
            owner = resolver.symbols(module)
            assign = owner.module_constant(name) if owner is not None else None
            value = parse_expr(assign.value) if assign is not None else None
            if owner is not None and assign is not None and isinstance(value, ast.Dict):
                return value, assign.value, assign.line, owner
    return None


def recognise_backend_requirement(resolver: Resolver, table: ModuleSymbols, fn: FunctionFact,
                                  capability_of: CapabilityOf,
                                  ) -> tuple[list[KernelFact], list[BackendCheck]]:
    """The backend-requirement fact of one function and its per-backend checks."""
    for text, line in fn.decorators:
        call = parse_expr(text)
        if not isinstance(call, ast.Call):
            continue
        if not names_function(resolver, table, fn.scope, segment(text, call.func),
                              DECORATOR_NAME):
            continue
        keywords = {k.arg: k.value for k in call.keywords if k.arg}
        table_node = call.args[0] if call.args else keywords.get("backend_checks")
        common_node = keywords.get("common_check") or (
            call.args[1] if len(call.args) > 1 else None)
        common_text = segment(text, common_node) if common_node is not None else ""
        found = _table_node(resolver, table, fn.scope, text, table_node, line)
        if found is None:
            return [], []
        node, source, first_line, owner = found
        scope = fn.scope if owner is table else ""
        checks: list[BackendCheck] = []
        for key, value in zip(node.keys, node.values):
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                continue
            check_text = segment(source, value)
            target = resolver.resolve_call(owner.module, scope, check_text)
            check_id = target.name if target.kind == "function" else check_text
            pred = capability_of(check_id) if target.kind == "function" else None
            if pred is None:
                pred = Unknown(f"backend {key.value!r}: {check_text} declares no capabilities")
            checks.append(BackendCheck(key.value, check_id, pred, first_line + key.lineno - 1))
        notes = [f"{c.backend}: {c.predicate.describe()}" for c in checks]
        if checks:
            predicate = union([c.predicate for c in checks])
        else:
            common = resolver.resolve_call(table.module, fn.scope, common_text or "")
            common_pred = capability_of(common.name) if common.kind == "function" else None
            if common_pred is None:
                return [], []
            predicate = common_pred
            notes.append(f"common_check {common_text}: {common_pred.describe()}")
        fact = KernelFact(
            function=f"{table.module}.{fn.qualname}",
            kind="backend-requirement",
            rel=table.rel,
            line=line,
            text=resolver.line_text(table.rel, line),
            predicate=predicate,
            note="; ".join(notes),
        )
        return [fact], checks
    return [], []
