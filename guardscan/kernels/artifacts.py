"""kernels (form 8): precompiled artifacts a module loads, read from cubin architecture lists.

What it recognises
    A module-level constant holding a literal tuple or list of cubin
    architecture names (``"Sm100a"``, ``"Sm100f"``, ``"sm_103a"``,
    ``"sm100f"``), named (by qualified name, through imports) in an argument
    of a call the function makes, or in a value it assigns: the function
    builds or loads a module that carries kernels for those archs only.
    Several such names in one argument are alternatives (``RUBIN_CUBIN_ARCHS
    if enable_rubin else BLACKWELL_CUBIN_ARCHS``): the fact is their union.
    ``Sm100a`` is exactly 10.0, ``Sm100f`` the 10.x family, a bare ``Sm100``
    10.x from 10.0 up (as for ``compute_`` flags, ``jit_spec.gencode_predicate``).
Why it matters
    A JIT spec says what may *compile*; the cubins a module ships say which
    kernels *exist*. They bound what the JIT spec claims: FlashInfer 0.7.2
    compiles its trtllm-gen MoE module for majors ``[10, 12]`` but filters the
    batched-GEMM kernel manifest to ``BLACKWELL_CUBIN_ARCHS``, so on sm120 the
    runner finds no kernel. This fact outranks a JIT spec (``SPECIFICITY``) and,
    unlike a capability declaration, never gives way to one.
Known limits
    Only module-level constants are read: a class attribute
    (``ArtifactPath.DSL_FMHA_ARCHS``), a list built at run time, or a list named
    only in a loop or a comparison gives no fact. A call under a condition
    gives a fact that holds only where the condition does (unknown conditions
    make it UNKNOWN). A name that only looks like a cubin arch
    (``"sm_90"``-style strings in an unrelated table) is read the same way, so
    a wrong list errs toward FALSE only where the function passes it on.
Example
    ``write_filtered_metainfo(..., RUBIN_CUBIN_ARCHS if enable_rubin else
    BLACKWELL_CUBIN_ARCHS)`` in ``gen_trtllm_gen_fused_moe_sm100_module``, with
    ``BLACKWELL_CUBIN_ARCHS = ("Sm100a", "Sm100f", "Sm103a")`` and
    ``RUBIN_CUBIN_ARCHS = ("Sm107a",)`` -> ``capability major == 10 or
    capability == 10.7`` at the ``RUBIN_CUBIN_ARCHS if ...`` line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from guardscan.index import Index
from guardscan.index.facts import CondPath, FunctionFact
from guardscan.kernels.jit_spec import gencode_predicate
from guardscan.kernels.model import KernelFact
from guardscan.kernels.paths import negate
from guardscan.kernels.symbols import ModuleSymbols, Resolver
from guardscan.predicate import Predicate, disj
from guardscan.syntax import literal, parse_expr

__all__ = ["ARCH_NAME", "CubinList", "arch_name_predicate", "cubin_lists",
           "recognise_artifacts"]

#: A cubin architecture name: ``Sm100a``, ``sm_103a``, ``sm100f``, ``Sm120``.
ARCH_NAME = re.compile(r"^[Ss][Mm]_?(\d{2,3})([af]?)$")
#: A module-level assignment (at column 0, annotated or not) of a tuple or
#: list literal whose first item is a quoted arch name; the literal is read
#: from the match, so finding the lists parses no file.
_ASSIGNED_LIST = (rb"(?m)^([A-Za-z_]\w*)(?:[ \t]*:[^=\n]+)?[ \t]*=[ \t]*"
                  rb"([\(\[]\s*[\"'][Ss][Mm]_?\d{2,3}[af]?[\"'][^\)\]]*[\)\]])")
_DOTTED = re.compile(r"[A-Za-z_][\w.]*")
_SCAN_LINES = 40

PathPredicate = Callable[[ModuleSymbols, str, CondPath], Predicate]


@dataclass(frozen=True, slots=True)
class CubinList:
    """A module constant naming the cubin architectures a module carries."""

    name: str  # qualified: flashinfer.jit.trtllm_gen_metainfo.BLACKWELL_CUBIN_ARCHS
    archs: tuple[str, ...]
    predicate: Predicate
    rel: str
    line: int


def arch_name_predicate(name: str) -> Predicate | None:
    """The archs a cubin built for ``name`` runs on (``None``: not an arch name)."""
    found = ARCH_NAME.match(name)
    if found is None:
        return None
    return gencode_predicate(f"compute_{found.group(1)}{found.group(2)}")


def cubin_lists(index: Index, files: Iterable[str]) -> dict[str, CubinList]:
    """Every module constant of ``files`` that holds a literal list of cubin
    architecture names, by qualified name. A name assigned such a list twice
    in one module is left out (which one holds is not known)."""
    pattern = re.compile(_ASSIGNED_LIST)
    found: dict[str, CubinList] = {}
    twice: set[str] = set()
    for rel in index.grep_re(_ASSIGNED_LIST, within=files):
        data = index.data(rel) or b""
        module = index.tree.module_name(rel)
        for match in pattern.finditer(data):
            name, text = match.group(1).decode(), match.group(2).decode("utf-8", "replace")
            node = parse_expr(text)
            value = literal(node) if node is not None else None
            if not isinstance(value, (tuple, list)) or not value or not all(
                    isinstance(v, str) for v in value):
                continue
            preds = [arch_name_predicate(str(v)) for v in value]
            if any(p is None for p in preds):
                continue
            qualified = f"{module}.{name}"
            if qualified in found:
                twice.add(qualified)
            line = data.count(b"\n", 0, match.start()) + 1
            found[qualified] = CubinList(
                qualified, tuple(str(v) for v in value),
                disj(*[p for p in preds if p is not None]), rel, line)
    return {name: entry for name, entry in found.items() if name not in twice}


def _find_line(resolver: Resolver, rel: str, start: int, name: str) -> int:
    pattern = re.compile(rf"\b{re.escape(name)}\b")
    for line in range(start, start + _SCAN_LINES):
        if pattern.search(resolver.line_text(rel, line)):
            return line
    return start


def recognise_artifacts(resolver: Resolver, table: ModuleSymbols, fn: FunctionFact,
                        lists: dict[str, CubinList],
                        path_predicate: PathPredicate) -> list[KernelFact]:
    """The cubin-list facts of one function: one per argument (or assigned
    value) that names a cubin list."""
    if not lists:
        return []
    short = {q.rpartition(".")[2] for q in lists}
    function_id = f"{table.module}.{fn.qualname}"
    texts: list[tuple[str, int, CondPath]] = []
    for call in table.calls.get(fn.qualname, []):
        texts.extend((a, call.line, call.path) for a in call.args)
        texts.extend((v, call.line, call.path) for _, v in call.kwargs)
    texts.extend((a.value, a.line, a.path) for a in table.scope_assigns.get(fn.qualname, []))
    facts: list[KernelFact] = []
    seen: set[tuple[int, tuple[str, ...]]] = set()
    for text, line, path in texts:
        named: list[CubinList] = []
        for dotted in dict.fromkeys(_DOTTED.findall(text)):
            if dotted.rpartition(".")[2] not in short:
                continue
            target = resolver.resolve_call(table.module, fn.qualname, dotted)
            if target.kind == "constant" and target.name in lists \
                    and lists[target.name] not in named:
                named.append(lists[target.name])
        if not named:
            continue
        at = _find_line(resolver, table.rel, line, named[0].name.rpartition(".")[2])
        key = (at, tuple(c.name for c in named))
        if key in seen:
            continue
        seen.add(key)
        predicate = disj(*(c.predicate for c in named))
        if path:
            predicate = disj(negate(path_predicate(table, fn.qualname, path)), predicate)
        what = " or ".join(
            f"{'/'.join(c.archs)} ({c.name.rpartition('.')[2]}, {c.rel}:{c.line})"
            for c in named)
        facts.append(KernelFact(
            function=function_id, kind="artifacts", rel=table.rel, line=at,
            text=resolver.line_text(table.rel, at), predicate=predicate,
            note=f"loads precompiled cubins for {what} only",
        ))
    return facts
