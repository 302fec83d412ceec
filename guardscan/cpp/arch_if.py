"""cpp (form: ``#if __CUDA_ARCH__`` with a trap): a function whose code exists for some archs only.

What it recognises
    Inside a function body, ``#if COND`` (with any ``#elif COND2``) whose
    conditions test ``__CUDA_ARCH__`` (or ``defined(__CUDA_ARCH_FEAT_SM90_ALL)``
    and its kin), closed by an ``#else`` that only fails: ``__trap()``,
    ``trap()``, ``asm volatile("trap;")``, ``assert(false)``, ``abort()``,
    with at most ``printf`` and ``return`` beside them, possibly under an
    ``if`` on the thread or block index. It is read as a check asserting
    ``(COND) || (COND2)``: device code compiled for an arch where none holds
    is the stub, and it traps.
Why it matters
    FlashInfer 0.7.2's FP4 KV-cache quantizer (``csrc/fp4_kv_quantization.cu``)
    converts to E2M1 under ``#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >=
    1000)`` and calls ``__trap()`` otherwise: built for sm90 by the JIT, it
    compiles and then aborts the kernel on the GPU.
Known limits
    An ``#else`` that does anything else (a fallback implementation, the
    common case) is no check. ``__CUDA_ARCH__`` values that are not a whole SM
    (``major * 100 + minor * 10``) and ``__CUDA_ARCH_SPECIFIC__`` /
    ``__CUDA_ARCH_FAMILY_SPECIFIC__`` read as unknown. An ``#if`` at file scope
    (around whole definitions) is not read.
Example
    ``#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 1000) ... #else __trap();
    #endif`` -> a check ``defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 1000)``
    -> ``sm >= 100`` (``defined(__CUDA_ARCH__)`` holds for device code).

>>> from guardscan.cpp.facts import read_cpp
>>> src = b'''__device__ int cvt(float x) {
... #if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 1000)
...   return 1;
... #else
...   __trap();
...   return 0;
... #endif
... }'''
>>> [(c.macro, c.condition, c.line) for c in read_cpp("k.cu", src).functions[0].checks]
[('#if __CUDA_ARCH__', '(defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 1000))', 2)]
>>> fallback = src.replace(b"__trap();", b"x = slow(x);")
>>> read_cpp("k.cu", fallback).functions[0].checks
()
"""

from __future__ import annotations

from typing import Any

__all__ = ["MACRO", "arch_if_condition"]

MACRO = "#if __CUDA_ARCH__"
#: calls that end a kernel on the GPU
_TRAPS = frozenset({"__trap", "trap", "abort", "__builtin_trap", "asm_trap"})
#: calls a stub may make beside its trap
_QUIET = frozenset({"printf", "__brkpt"})
_ARCH_NAMES = ("__CUDA_ARCH__", "__CUDA_ARCH_FEAT_SM")


def _text(node: Any) -> str:
    return bytes(node.text or b"").decode("utf-8", "replace")


def arch_if_condition(node: Any) -> str | None:
    """The asserted condition of a ``preproc_if`` node of the trap-stub shape, else None."""
    conditions: list[str] = []
    current = node
    while current is not None and current.type in ("preproc_if", "preproc_elif"):
        cond = current.child_by_field_name("condition")
        if cond is None:
            return None
        conditions.append(" ".join(_text(cond).replace("\\\n", " ").split()))
        current = current.child_by_field_name("alternative")
    if current is None or current.type != "preproc_else":
        return None
    if not any(name in c for c in conditions for name in _ARCH_NAMES):
        return None
    if not _is_trap_stub([c for c in current.named_children if c.type != "comment"]):
        return None
    return " || ".join(f"({c})" for c in conditions)


def _is_trap_stub(statements: list[Any]) -> bool:
    """Every statement fails, prints, returns or nests those; at least one traps."""
    traps = 0
    pending = list(statements)
    while pending:
        node = pending.pop()
        kind = node.type
        if kind == "comment":
            continue
        if kind == "compound_statement":
            pending.extend(node.named_children)
            continue
        if kind == "if_statement":
            body = node.child_by_field_name("consequence")
            if body is None or node.child_by_field_name("alternative") is not None \
                    or not _thread_test(node):
                return False
            pending.append(body)
            continue
        if kind == "return_statement":
            continue
        if kind != "expression_statement" or not node.named_children:
            return False
        call = _trap_kind(node.named_children[0])
        if call is None:
            return False
        traps += call
    return traps > 0


def _thread_test(node: Any) -> bool:
    cond = node.child_by_field_name("condition")
    text = _text(cond) if cond is not None else ""
    return "threadIdx" in text or "blockIdx" in text


def _trap_kind(expr: Any) -> int | None:
    """1 for a trap, 0 for a call a stub may make beside it, None for anything else."""
    if expr.type == "gnu_asm_expression":
        return 1 if "trap" in _text(expr) else None
    if expr.type != "call_expression":
        return None
    fn = expr.child_by_field_name("function")
    name = _text(fn) if fn is not None else ""
    if name in _TRAPS:
        return 1
    if name == "assert":
        args = expr.child_by_field_name("arguments")
        inner = "".join(_text(args).split()) if args is not None else ""
        return 1 if inner in ("(false)", "(0)") else None
    return 0 if name in _QUIET else None
