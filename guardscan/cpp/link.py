"""cpp (link): from a JIT module's sources to the capability checks on an exported function's path.

What it recognises
    The files a JIT module compiles (its spec's source list) and the headers
    they include (``#include "..."`` / ``<flashinfer/...>``, found under the
    wheel's ``data/include`` and ``data/csrc``, to ``MAX_INCLUDE_DEPTH``), the
    functions they export to Python, and from an exported function, through
    the calls it makes unconditionally (a constructor reached through
    ``std::make_shared<T>``, ``new T``, or ``T x(...)`` included), to
    ``MAX_CALL_DEPTH`` hops, each capability check made on that path. The
    check's condition becomes a ``Predicate``: ``mSM == kSM_100`` with
    ``mSM`` initialised from ``getSMVersion()`` and ``constexpr int32_t kSM_100
    = 100`` in an included header -> ``sm == 100``.
Why it matters
    The C++ check is the kernel library's own word on where the kernel runs;
    it is read before any GPU is touched.
Known limits
    Calls are resolved by spelling (a qualified ``Class::method``, a short
    name defined at most ``MAX_DEFINITIONS`` times in the module's files),
    never by type; a virtual call, a function pointer or a callee in a file
    not included is not followed. Conditional calls and checks are left out:
    such a check holds only under conditions not decided here (errs toward
    ``unknown``). An operand the reader cannot tie to the device makes its
    part of the condition UNKNOWN.
Example
    ``TVM_FFI_DLL_EXPORT_TYPED_FUNC(trtllm_paged_attention_decode, ...)`` ->
    ``trtllm_paged_attention_launcher`` -> ``TllmGenFmhaRunnerCache::get`` ->
    ``TllmGenFmhaRunner`` (constructor) -> ``FLASHINFER_CHECK(mSM == kSM_100
    || mSM == kSM_103 || mSM == kSM_107, ...)`` at ``fmhaRunner.cuh:37`` ->
    ``sm == 100 or sm == 103 or sm == 107``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from guardscan.cpp.facts import (
    CppCall,
    CppCheck,
    CppExport,
    CppFileFacts,
    CppFunction,
    _parser,
    _text,
    read_cpp,
)
from guardscan.predicate import TRUE, Device, Predicate, Unknown, conj, disj, flip_op, neg

__all__ = ["MAX_CALL_DEPTH", "CppLibrary", "ReachedCheck", "condition_predicate"]

MAX_INCLUDE_DEPTH = 4
MAX_CALL_DEPTH = 6
MAX_DEFINITIONS = 3
MAX_MODULE_FILES = 400
_SCHEMA = 2  # 2: #if __CUDA_ARCH__ stubs, SM switches, kernel launches
_CUDA_ARCH = "__CUDA_ARCH__"
_ARCH_FEATURE = re.compile(r"__CUDA_ARCH_FEAT_SM(\d+)_ALL")
_COMPARE = frozenset({"==", "!=", "<", "<=", ">", ">="})


@dataclass(frozen=True, slots=True)
class ReachedCheck:
    """A check on an export's path: where, what it asserts, the path's hops."""

    rel: str
    check: CppCheck
    predicate: Predicate
    path: tuple[str, ...]  # function names from the export down


def _facts_json(facts: CppFileFacts) -> dict[str, object]:
    return {"schema": _SCHEMA, **asdict(facts)}


def _facts_from_json(data: Any) -> CppFileFacts | None:
    try:
        assert data.pop("schema") == _SCHEMA
        return CppFileFacts(
            data["rel"],
            tuple(CppFunction(f["name"], f["owner"], f["line"],
                              tuple(CppCall(**c) for c in f["calls"]),
                              tuple(CppCheck(**c) for c in f["checks"]),
                              tuple(f["sm_names"]), tuple(f["major_names"]),
                              tuple(f["minor_names"])) for f in data["functions"]),
            tuple(CppExport(**e) for e in data["exports"]), tuple(data["includes"]),
            tuple((str(a), int(b)) for a, b in data["constants"]), data["failed"])
    except Exception:  # noqa: BLE001 - a corrupt cache entry is a miss
        return None


class CppLibrary:
    """The C++/CUDA text of one kernel-library tree, read on demand, facts
    cached per file content under ``<cache>/cpp/``."""

    def __init__(self, root: Path, package: str, cache_dir: Path | None = None) -> None:
        self.root = root
        self.package = package
        self.data_dir = f"{package}/data"
        self.cache_dir = cache_dir / "cpp" if cache_dir is not None else None
        self._facts: dict[str, CppFileFacts | None] = {}
        #: where each ``#include`` of a file's directory leads (``_include``):
        #: the same headers are included from many sources, each candidate
        #: path a ``stat``
        self._includes: dict[tuple[str, str], str | None] = {}
        #: (rel, reason) of files that could not be read
        self.failures: dict[str, str] = {}
        #: the unreadable files asked for (again or for the first time) since
        #: ``touching`` began: what a computation depended on (``kernels.judge``)
        self.touched: set[str] = set()

    # -- files ---------------------------------------------------------------------------
    @property
    def facts_read(self) -> list[str]:
        """The files whose facts this library holds (read, or loaded from the cache)."""
        return [rel for rel, facts in self._facts.items() if facts is not None]

    def _read(self, rel: str) -> bytes | None:
        path = self.root / rel
        try:
            if not path.is_file() or path.is_symlink():
                return None
            return path.read_bytes()
        except OSError:
            return None

    def facts(self, rel: str) -> CppFileFacts | None:
        """The facts of ``rel`` (tree-relative), None when there is no such file."""
        if rel in self._facts:
            known = self._facts[rel]
            if known is not None and known.failed:
                self.touched.add(rel)
            return known
        data = self._read(rel)
        found: CppFileFacts | None = None
        if data is not None:
            key = hashlib.sha256(rel.encode() + b"\0" + data).hexdigest()
            found = self._cached(key)
            if found is None:
                found = read_cpp(rel, data)
                self._store(key, found)
            if found.failed:
                self.failures[rel] = found.failed
                self.touched.add(rel)
        self._facts[rel] = found
        return found

    @contextmanager
    def touching(self) -> Iterator[set[str]]:
        """The unreadable files asked for while the block runs (a set filled
        as it runs); they count for the enclosing block too."""
        outer, self.touched = self.touched, set()
        mine = self.touched
        try:
            yield mine
        finally:
            outer.update(mine)
            self.touched = outer

    def _cached(self, key: str) -> CppFileFacts | None:
        if self.cache_dir is None:
            return None
        try:
            return _facts_from_json(json.loads(
                (self.cache_dir / key[:2] / f"{key}.json").read_text(encoding="utf-8")))
        except (OSError, ValueError):
            return None

    def _store(self, key: str, facts: CppFileFacts) -> None:
        if self.cache_dir is None:
            return
        path = self.cache_dir / key[:2] / f"{key}.json"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            temp = path.with_suffix(f".{os.getpid()}.tmp")
            temp.write_text(json.dumps(_facts_json(facts)), encoding="utf-8")
            os.replace(temp, path)
        except OSError:
            pass

    def source_rel(self, source: str) -> str | None:
        """A JIT spec's source (``trtllm_fmha_kernel_launcher.cu``, relative to
        ``data/csrc``, or a path under ``data/``) as a tree-relative path."""
        clean = PurePosixPath(source.lstrip("/"))
        if ".." in clean.parts:
            return None
        for base in (f"{self.data_dir}/csrc", self.data_dir):
            rel = f"{base}/{clean}"
            if (self.root / rel).is_file():
                return rel
        return None

    def _include(self, name: str, current: str) -> str | None:
        here = PurePosixPath(current).parent
        key = (name, str(here))
        if key not in self._includes:
            self._includes[key] = self._find_include(name, here)
        return self._includes[key]

    def _find_include(self, name: str, here: PurePosixPath) -> str | None:
        clean = PurePosixPath(name)
        candidates = [here / clean, *(PurePosixPath(self.data_dir) / d / clean for d in (
            "include", "csrc", "csrc/nv_internal", "csrc/nv_internal/include"))]
        for candidate in candidates:
            parts: list[str] = []
            for part in candidate.parts:
                if part == "..":
                    if not parts:
                        break
                    parts.pop()
                elif part != ".":
                    parts.append(part)
            else:
                rel = "/".join(parts)
                if rel.startswith(self.data_dir + "/") and (self.root / rel).is_file():
                    return rel
        return None

    def module_files(self, sources: Iterable[str]) -> list[str]:
        """The sources and the headers they include, breadth first, bounded."""
        seen: list[str] = []
        frontier = [(rel, 0) for rel in sources]
        while frontier and len(seen) < MAX_MODULE_FILES:
            rel, depth = frontier.pop(0)
            if rel in seen:
                continue
            seen.append(rel)
            facts = self.facts(rel)
            if facts is None or depth >= MAX_INCLUDE_DEPTH:
                continue
            for name in facts.includes:
                found = self._include(name, rel)
                if found is not None and found not in seen:
                    frontier.append((found, depth + 1))
        return seen

    # -- questions -----------------------------------------------------------------------
    def exports(self, sources: Iterable[str]) -> dict[str, tuple[str, CppExport]]:
        """What the source files export to Python: name -> (file, export)."""
        found: dict[str, tuple[str, CppExport]] = {}
        for rel in sources:
            facts = self.facts(rel)
            for export in facts.exports if facts is not None else ():
                found.setdefault(export.name, (rel, export))
        return found

    def checks_of_export(self, sources: list[str], name: str) -> list[ReachedCheck]:
        """The capability checks made on every call of export ``name``."""
        exported = self.exports(sources).get(name)
        if exported is None:
            return []
        files = self.module_files(sources)
        table: dict[str, list[tuple[str, CppFunction]]] = {}
        constants: dict[str, int] = {}
        class_sm: dict[str, set[str]] = {}
        for rel in files:
            facts = self.facts(rel)
            if facts is None:
                continue
            constants.update(dict(facts.constants))
            for fn in facts.functions:
                table.setdefault(fn.name, []).append((rel, fn))
                if fn.owner:
                    table.setdefault(f"{fn.owner}::{fn.name}", []).append((rel, fn))
                    class_sm.setdefault(fn.owner, set()).update(fn.sm_names)
        start = exported[1].function.rpartition("::")[2]
        reached: list[ReachedCheck] = []
        seen: set[tuple[str, int]] = set()
        frontier: list[tuple[str, CppFunction, tuple[str, ...]]] = [
            (rel, fn, (fn.name,)) for rel, fn in table.get(start, [])[:MAX_DEFINITIONS]]
        while frontier:
            rel, fn, path = frontier.pop(0)
            if (rel, fn.line) in seen:
                continue
            seen.add((rel, fn.line))
            sm = set(fn.sm_names) | class_sm.get(fn.owner, set())
            for check in fn.checks:
                if check.conditional:
                    continue
                pred = condition_predicate(check.condition, sm, set(fn.major_names),
                                           set(fn.minor_names), constants)
                if pred is not None:
                    reached.append(ReachedCheck(rel, check, pred, path))
            if len(path) > MAX_CALL_DEPTH:
                continue
            for call in fn.calls:
                if call.conditional:
                    continue
                defs = table.get(call.callee) or table.get(call.callee.rpartition("::")[2], [])
                if len(defs) > MAX_DEFINITIONS:
                    continue
                frontier.extend((r, f, (*path, f.name)) for r, f in defs)
        return reached


def condition_predicate(text: str, sm: set[str], major: set[str], minor: set[str],
                        constants: dict[str, int]) -> Predicate | None:
    """The archs where ``text`` (a C++ condition) holds; None when it is not
    about the device."""
    source = f"bool guardscan_condition = ({text});".encode()
    root = _parser().parse(source).root_node
    init = next((n for n in _nodes(root) if n.type == "init_declarator"), None)
    value = init.child_by_field_name("value") if init is not None else None
    if value is None:
        return None
    reader = _Condition(sm, major, minor, constants)
    pred = reader.read(value)
    return pred if reader.device else None


def _nodes(node: Any) -> Iterable[Any]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(current.children)


class _Condition:
    def __init__(self, sm: set[str], major: set[str], minor: set[str],
                 constants: dict[str, int]) -> None:
        self.quantities = {**{n: "sm" for n in sm}, **{n: "major" for n in major},
                           **{n: "minor" for n in minor}}
        self.constants = constants
        self.device = False

    def read(self, node: Any) -> Predicate:
        kind = node.type
        if kind == "call_expression" and _text(node).startswith("defined"):
            return self._defined(node)
        if kind == "parenthesized_expression" and node.named_children:
            return self.read(node.named_children[0])
        if kind == "unary_expression" and _text(node).startswith("!") and node.named_children:
            return neg(self.read(node.named_children[-1]))
        if kind == "binary_expression":
            op = node.child_by_field_name("operator")
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if op is not None and left is not None and right is not None:
                symbol = _text(op)
                if symbol == "||":
                    return disj(self.read(left), self.read(right))
                if symbol == "&&":
                    return conj(self.read(left), self.read(right))
                if symbol in _COMPARE:
                    found = self._compare(left, symbol, right)
                    if found is not None:
                        return found
        return Unknown(f"C++ condition `{_text(node)[:80]}`")

    def _defined(self, node: Any) -> Predicate:
        """``defined(__CUDA_ARCH__)`` holds in device code; ``defined(__CUDA_ARCH_FEAT_SM90_ALL)``
        on that SM only (its ``a`` target)."""
        name = _text(node)[len("defined"):].strip().strip("()").strip()
        if name == _CUDA_ARCH:
            self.device = True
            return TRUE
        feature = _ARCH_FEATURE.fullmatch(name)
        if feature is not None:
            self.device = True
            return Device("sm", "==", int(feature.group(1)))
        return Unknown(f"C++ condition `{_text(node)[:80]}`")

    def _quantity(self, node: Any) -> str | None:
        text = _text(node).strip()
        if text == _CUDA_ARCH:
            return "cuda_arch"
        if text in self.quantities:
            return self.quantities[text]
        if node.type == "field_expression":
            field = node.child_by_field_name("field")
            name = _text(field) if field is not None else ""
            if name in ("major", "minor"):
                return name
        if node.type == "call_expression":
            from guardscan.cpp.facts import SM_CALLS

            fn = node.child_by_field_name("function")
            if fn is not None and _text(fn).rpartition("::")[2] in SM_CALLS:
                return "sm"
        return None

    def _number(self, node: Any) -> int | None:
        text = _text(node).strip()
        if node.type == "number_literal":
            try:
                return int(text.rstrip("uUlL"), 0)
            except ValueError:
                return None
        return self.constants.get(text.rpartition("::")[2])

    def _compare(self, left: Any, op: str, right: Any) -> Predicate | None:
        quantity, value = self._quantity(left), self._number(right)
        if quantity is None:
            quantity, value, op = self._quantity(right), self._number(left), flip_op(op)
        if quantity is None or value is None:
            return None
        self.device = True
        if quantity == "cuda_arch":  # major * 100 + minor * 10
            if value % 10:
                return Unknown(f"__CUDA_ARCH__ {op} {value}")
            return Device("sm", op, value // 10)
        return Device(quantity, op, value)
