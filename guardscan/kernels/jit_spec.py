"""kernels (form 3): JIT spec generators and the archs they compile for.

What it recognises
    (a) a call in the function passing ``supported_major_versions=[10, 11]``
    (``current_compilation_context.get_nvcc_flags_list(...)`` or any spec
    builder) -> ``Device("major", "in", (10, 11))``; (b) a reference to a
    constant whose value holds ``-gencode=arch=compute_100a,...`` flags
    (``sm100a_nvcc_flags``, resolved by qualified name into ``jit/core.py``) or
    such a flag written in the function -> the union of those targets:
    ``compute_100a`` is exactly 10.0, ``compute_100f`` / ``compute_100`` the
    10.x family from 10.0 up.
Why it matters
    ``get_nvcc_flags_list`` raises "No supported CUDA architectures found" when
    the device's major is not listed, and a module built only for sm_100a has
    no code for sm_120: the kernel cannot load there.
Known limits
    A JIT spec says what *compiles*, not which kernels exist (cubin lists and
    C++ launcher checks have the last word); the note says so, and a more
    specific fact on the path wins. When the generator fetches precompiled
    kernels at run time (``get_artifact(...)``, FlashInfer's artifact loader,
    read by its name), their architectures are not in the source: the spec
    can still exclude an arch, but admitting one decides nothing (errs toward
    ``unknown``). A call under a condition gives a fact that
    holds only when the condition does (``not cond or majors``), so unknown
    conditions make it UNKNOWN. Architecture lists filtered from
    ``CompilationContext.TARGET_CUDA_ARCHS`` by hand are not read.
Example
    ``nvcc_flags = current_compilation_context.get_nvcc_flags_list(
    supported_major_versions=[10])`` in ``gen_trtllm_gen_fused_moe_sm100_module``
    -> ``capability major in [10]`` at the ``supported_major_versions=[10]`` line.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from guardscan.index.facts import CondPath, FunctionFact
from guardscan.kernels.model import KernelFact
from guardscan.kernels.paths import negate
from guardscan.kernels.symbols import ModuleSymbols, Resolver
from guardscan.predicate import Device, Predicate, conj, disj
from guardscan.syntax import as_ints, literal, parse_expr

__all__ = ["ARTIFACT_LOADER", "FETCHED", "KEYWORD", "TOKENS", "gencode_predicate",
           "recognise_jit_specs"]

#: FlashInfer's loader of precompiled kernels downloaded at run time
#: (``flashinfer.artifacts.get_artifact``): a spec whose generator calls it
#: builds a module around cubins the wheel does not hold
ARTIFACT_LOADER = "get_artifact"
#: the note a JIT spec fact carries when its generator fetches them
FETCHED = "kernels fetched at run time"

KEYWORD = "supported_major_versions"
TOKENS = (KEYWORD, "_nvcc_flags", "-gencode", "compute_")

_KEYWORD_LINE = re.compile(rf"\b{KEYWORD}\s*=")
_GENCODE = re.compile(r"compute_(\d{2,3})([af]?)\b")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_SCAN_LINES = 40

PathPredicate = Callable[[ModuleSymbols, str, CondPath], Predicate]


def gencode_predicate(text: str) -> Predicate | None:
    """The archs ``compute_NNN[a|f]`` targets in ``text`` run on (their union)."""
    preds: list[Predicate] = []
    for digits, suffix in _GENCODE.findall(text):
        major, minor = int(digits[:-1]), int(digits[-1])
        if suffix == "a":
            preds.append(Device("cap", "==", (major, minor)))
        elif minor == 0:
            preds.append(Device("major", "==", major))
        else:
            preds.append(conj(Device("major", "==", major), Device("minor", ">=", minor)))
    return disj(*preds) if preds else None


def _find_line(resolver: Resolver, rel: str, start: int, pattern: re.Pattern[str]) -> int:
    for line in range(start, start + _SCAN_LINES):
        text = resolver.line_text(rel, line)
        if pattern.search(text):
            return line
    return start


def _conditional(pred: Predicate, path: CondPath, table: ModuleSymbols, scope: str,
                 path_predicate: PathPredicate) -> Predicate:
    if not path:
        return pred
    return disj(negate(path_predicate(table, scope, path)), pred)


def recognise_jit_specs(resolver: Resolver, table: ModuleSymbols, fn: FunctionFact,
                        path_predicate: PathPredicate) -> list[KernelFact]:
    """The JIT-spec facts of one function."""
    function_id = f"{table.module}.{fn.qualname}"
    facts: list[KernelFact] = []
    texts: list[tuple[str, int]] = []
    fetched = any(call.func.rsplit(".", 1)[-1] == ARTIFACT_LOADER
                  for call in table.calls.get(fn.qualname, []))
    for call in table.calls.get(fn.qualname, []):
        texts.extend((a, call.line) for a in call.args)
        texts.extend((v, call.line) for _, v in call.kwargs)
        for name, value in call.kwargs:
            if name != KEYWORD:
                continue
            node = parse_expr(value)
            majors = as_ints(literal(node)) if node is not None else None
            if not majors:
                continue
            line = _find_line(resolver, table.rel, call.line, _KEYWORD_LINE)
            facts.append(KernelFact(
                function=function_id, kind="jit-spec", rel=table.rel, line=line,
                text=resolver.line_text(table.rel, line),
                predicate=_conditional(Device("major", "in", majors), call.path, table,
                                       fn.qualname, path_predicate),
                note=f"{call.func}({KEYWORD}={list(majors)})" + (
                    f"; {FETCHED}" if fetched else ""),
            ))
    texts.extend((a.value, a.line) for a in table.scope_assigns.get(fn.qualname, []))
    texts.extend((r.value, r.line) for r in table.returns.get(fn.qualname, []))
    gencode = _gencode_fact(resolver, table, fn, function_id, texts)
    if gencode is not None:
        facts.append(gencode)
    return facts


def _gencode_fact(resolver: Resolver, table: ModuleSymbols, fn: FunctionFact, function_id: str,
                  texts: list[tuple[str, int]]) -> KernelFact | None:
    """Flags constants (or literal ``-gencode`` flags) the function compiles with."""
    constants = _gencode_constants(resolver, table, "")
    if fn.qualname in table.imports:
        constants = {**constants, **_gencode_constants(resolver, table, fn.qualname)}
    if not constants and not any("compute_" in text for text, _ in texts):
        return None
    preds: list[Predicate] = []
    sources: list[str] = []
    first: tuple[int, str] | None = None
    for text, line in sorted(texts, key=lambda item: item[1]):
        found: list[tuple[str, Predicate, str]] = []
        direct = gencode_predicate(text) if "-gencode" in text or "arch=compute_" in text else None
        if direct is not None:
            found.append(("compute_", direct, "written here"))
        if constants:
            for name in dict.fromkeys(_IDENT.findall(text)):
                if name in constants:
                    found.append((name, *constants[name]))
        for name, pred, where in found:
            preds.append(pred)
            sources.append(f"{name} ({where})")
            if first is None:
                pattern = re.compile(re.escape(name))
                first = (_find_line(resolver, table.rel, line, pattern), name)
    if not preds or first is None:
        return None
    line = first[0]
    return KernelFact(
        function=function_id, kind="jit-spec", rel=table.rel, line=line,
        text=resolver.line_text(table.rel, line), predicate=disj(*preds),
        note=f"compiles with {', '.join(dict.fromkeys(sources))}",
    )


def _gencode_constants(resolver: Resolver, table: ModuleSymbols,
                       scope: str) -> dict[str, tuple[Predicate, str]]:
    """Names visible at ``scope`` (its imports, and module-level names) that hold
    ``-gencode`` flags: name -> (archs, where defined). Once per module."""
    key = ("gencode-constants", table.module, scope)
    if key not in resolver.cache:
        names = set(table.imports.get(scope, {}))
        if scope == "":
            names |= set(table.assigns.get("", {}))
        found: dict[str, tuple[Predicate, str]] = {}
        for name in names:
            constant = _constant_gencode(resolver, table, scope, name)
            if constant is not None:
                found[name] = constant
        resolver.cache[key] = found
    cached: dict[str, tuple[Predicate, str]] = resolver.cache[key]  # type: ignore[assignment]
    return cached


def _constant_gencode(resolver: Resolver, table: ModuleSymbols, scope: str,
                      name: str) -> tuple[Predicate, str] | None:
    target = resolver.resolve_call(table.module, scope, name)
    if target.kind != "constant":
        return None
    module, _, const = target.name.rpartition(".")
    owner = resolver.symbols(module)
    assign = owner.module_constant(const) if owner is not None else None
    if owner is None or assign is None:
        return None
    pred = gencode_predicate(assign.value)
    return (pred, f"{owner.rel}:{assign.line}") if pred is not None else None
