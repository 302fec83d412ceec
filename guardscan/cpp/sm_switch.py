"""cpp (form: a switch on the SM): cases for some archs, a default that throws.

What it recognises
    ``switch (Q) { case 90: ... case 100: case 103: ... default: THROW }``
    where ``Q`` is an SM value or the capability major/minor (the names the
    function's facts tie to the device, or ``getSMVersion()`` itself), every
    case label is a number or a constant, and the default fails:
    ``throw ...``, ``TVM_FFI_THROW(...)``, ``TLLM_THROW(...)``, a check macro
    on ``false``, ``abort()``. It is read as a check asserting ``Q == 90 || Q
    == 100 || Q == 103``.
Why it matters
    A dispatch by SM that throws for every other value says, in one place,
    which archs the code was written for: sm120 reaching the default fails at
    run time with "Unsupported SM".
Known limits
    A switch without a failing default, or with a default that does anything
    else first, is no check. A case label that is neither a number nor a
    constant read in the module's files makes its part unknown (the whole
    condition is then read by ``link.condition_predicate``).
Example
    ``switch (sm) { case 100: case 103: run(); break; default:
    TVM_FFI_THROW(ValueError) << "Unsupported SM"; }`` with ``int sm =
    getSMVersion();`` -> a check ``sm == 100 || sm == 103``.

>>> from guardscan.cpp.facts import read_cpp
>>> src = b'''void run(int n) {
...   int sm = getSMVersion();
...   switch (sm) {
...     case 100: case 103: launch(n); break;
...     default: TVM_FFI_THROW(ValueError) << "Unsupported SM " << sm;
...   }
... }'''
>>> [(c.macro, c.condition, c.line) for c in read_cpp("k.cu", src).functions[0].checks]
[('switch', 'sm == 100 || sm == 103', 3)]
>>> read_cpp("k.cu", src.replace(b'TVM_FFI_THROW(ValueError) << "Unsupported SM " << sm;',
...                               b"fallback(n);")).functions[0].checks
()
"""

from __future__ import annotations

from typing import Any

__all__ = ["MACRO", "switch_condition"]

MACRO = "switch"
#: calls (or the head of a ``<<`` chain) that throw
_THROWS = frozenset({"TVM_FFI_THROW", "TLLM_THROW", "FLASHINFER_ERROR", "TORCH_CHECK_NOT_IMPLEMENTED",
                     "abort", "__trap", "std::abort"})
_FALSE = frozenset({"false", "0"})


def _text(node: Any) -> str:
    return bytes(node.text or b"").decode("utf-8", "replace")


def switch_condition(node: Any, device_names: set[str], check_macros: frozenset[str]) -> str | None:
    """The asserted condition of a ``switch_statement`` of the throwing-default shape, else None."""
    cond = node.child_by_field_name("condition")
    body = node.child_by_field_name("body")
    if cond is None or body is None:
        return None
    quantity = _text(cond).strip().strip("()").strip()
    if quantity not in device_names and not quantity.rpartition("::")[2].startswith(
            ("getSMVersion(", "get_sm_version(")):
        return None
    labels: list[str] = []
    default_fails = False
    for case in body.named_children:
        if case.type != "case_statement":
            continue
        value = case.child_by_field_name("value")
        statements = [c for c in case.named_children if c != value and c.type != "comment"]
        if value is None:
            default_fails = bool(statements) and _fails(statements[0], check_macros)
        else:
            labels.append(_text(value).strip())
    if not default_fails or not labels:
        return None
    return " || ".join(f"{quantity} == {label}" for label in labels)


def _fails(statement: Any, check_macros: frozenset[str]) -> bool:
    if statement.type == "throw_statement":
        return True
    if statement.type == "compound_statement":
        inner = [c for c in statement.named_children if c.type != "comment"]
        return bool(inner) and _fails(inner[0], check_macros)
    if statement.type != "expression_statement" or not statement.named_children:
        return False
    expr = statement.named_children[0]
    while expr.type == "binary_expression":  # TVM_FFI_THROW(E) << "..." << x
        left = expr.child_by_field_name("left")
        if left is None:
            return False
        expr = left
    if expr.type != "call_expression":
        return False
    fn = expr.child_by_field_name("function")
    name = _text(fn) if fn is not None else ""
    if name in _THROWS:
        return True
    args = expr.child_by_field_name("arguments")
    first = args.named_children[0] if args is not None and args.named_children else None
    return name in check_macros and first is not None and _text(first).strip() in _FALSE
