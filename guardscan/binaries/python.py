"""binaries (python): which of a compiled package's libraries a function of its Python reaches.

What it reads: the ``.py`` members of a compiled wheel (read from the zip as
text and parsed with ``ast``; never imported), in the top-level packages that
ship a library (``sgl_kernel/``, ``flash_mla/``, ``deep_ep/``). Per module:
its imports, the extension libraries it imports by name (``from sgl_kernel
import flashmla_ops``, ``import deep_ep._C as _C``: a name that is a ``.so``
member of the same wheel), and per top-level function or class the names it
calls, the extension names it uses and its first ``torch.ops.`` use.

What it answers: ``PackagePython.reach("sgl_kernel.flash_mla_with_kvcache")``
resolves the name through the package's re-exports to its definition, then
follows the package's own calls (to ``MAX_DEPTH``) to the libraries the code
uses:

* an extension name used (``_C.Buffer(...)``): that library;
* a registered op called (``torch.ops.sgl_kernel.fwd_kvcache_mla``): the
  libraries the module imports by name (they register its ops), else every
  library of the top-level package (one of them registers it; which one is
  not read).

It also keeps, per function, what ``binaries.refusals`` reads of it (its
parameters, its top-level tests that return or raise, the one test it
returns), and answers ``PackagePython.refusal``.

Why it matters: SGLang calls ``flash_mla.flash_mla_with_kvcache``, not a
library file; the verdict rule (``binaries.judge``) needs the files whose
fatbins say where that code can run.

Known limits: calls through attributes of objects (``self.runtime.x()``) and
through names passed around are not followed; a string naming a library
(``torch.ops.load_library(path)``) is not read, so such a module falls back
to every library of its package. A function that reaches no library is pure
Python here, and the binaries say nothing about it.

Example::

    >>> p = PackagePython.from_sources({
    ...     "pkg/__init__.py": "from pkg.ops import run\\n",
    ...     "pkg/ops.py": "import torch\\nfrom pkg import _lib\\n"
    ...                   "def run(x):\\n    return torch.ops.pkg.run(x)\\n",
    ... }, libraries=("pkg/_lib.abi3.so",))
    >>> p.reach("pkg.run").libraries
    ('pkg/_lib.abi3.so',)
"""

from __future__ import annotations

import ast
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from guardscan.binaries.refusals import Step, params_of, predicate_of, refusal, steps_of

__all__ = ["MAX_DEPTH", "Hop", "PackagePython", "Reach"]

#: how many of the package's own calls are followed below the one SGLang makes
MAX_DEPTH = 4
#: the most Python members read from one wheel, and the most bytes of one
MAX_MODULES = 2000
MAX_SOURCE_BYTES = 2 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Hop:
    """A line of the package's Python on the way to a library."""

    rel: str
    line: int
    text: str


@dataclass(frozen=True, slots=True)
class Reach:
    """What one function reaches: the library members (sorted), the lines that
    lead there, and how the libraries were found (``imported``: the module
    names them; ``package``: every library of the top-level package)."""

    function: str
    libraries: tuple[str, ...]
    hops: tuple[Hop, ...]
    how: str = ""
    #: a ``return f(...)`` on the way whose ``f`` reaches no library (pure
    #: Python, or another package's code: ``flash_attn_varlen_func_v4``):
    #: another path, so the libraries are not all the call can run
    escape: Hop | None = None


@dataclass
class _Def:
    line: int
    text: str
    calls: list[tuple[str, int]] = field(default_factory=list)
    names: list[tuple[str, int]] = field(default_factory=list)
    ops_line: int = 0
    #: ``return f(...)``: the called name and line
    returns: list[tuple[str, int]] = field(default_factory=list)
    #: for a function: its parameters and top-level statements as
    #: ``binaries.refusals`` reads them, and its one returned test (or "")
    params: tuple[tuple[str, str], ...] = ()
    steps: tuple[Step, ...] = ()
    predicate: str = ""


@dataclass
class _Module:
    name: str
    rel: str
    #: local name -> (dotted name it stands for, line)
    bindings: dict[str, tuple[str, int]] = field(default_factory=dict)
    #: local name -> (library member, line of the import)
    extensions: dict[str, tuple[str, int]] = field(default_factory=dict)
    defs: dict[str, _Def] = field(default_factory=dict)


def _module_name(rel: str) -> tuple[str, bool]:
    parts = list(PurePosixPath(rel).with_suffix("").parts)
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def _stem_module(member: str) -> str:
    """``sgl_kernel/sm90/common_ops.abi3.so`` -> ``sgl_kernel.sm90.common_ops``."""
    path = PurePosixPath(member)
    return ".".join((*path.parent.parts, path.name.split(".", 1)[0]))


def _dotted(node: ast.expr) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


class PackagePython:
    """The Python of a compiled wheel's packages, and the libraries it ships."""

    def __init__(self, modules: dict[str, _Module], libraries: tuple[str, ...]) -> None:
        self._modules = modules
        self.libraries = tuple(sorted(libraries))
        self._by_stem = {_stem_module(m): m for m in self.libraries}
        self.roots = frozenset(m.split("/", 1)[0] for m in self.libraries if "/" in m)

    @classmethod
    def from_sources(cls, sources: Mapping[str, str], libraries: Iterable[str]) -> PackagePython:
        """From member path -> source text (a member that does not parse is left out)."""
        libraries = tuple(libraries)
        stems = {_stem_module(m): m for m in libraries}
        modules: dict[str, _Module] = {}
        for rel, text in sorted(sources.items()):
            module = _read_module(rel, text, stems)
            if module is not None:
                modules[module.name] = module
        return cls(modules, libraries)

    @classmethod
    def from_wheel(cls, wheel: Path, libraries: Iterable[str]) -> PackagePython:
        """The ``.py`` members under the top-level directories that hold a
        library; unreadable members are left out (they reach nothing)."""
        libraries = tuple(libraries)
        roots = {m.split("/", 1)[0] for m in libraries if "/" in m}
        sources: dict[str, str] = {}
        try:
            with zipfile.ZipFile(wheel) as archive:
                for info in archive.infolist():
                    name = info.filename
                    if not name.endswith(".py") or name.split("/", 1)[0] not in roots \
                            or ".." in name.split("/") or info.file_size > MAX_SOURCE_BYTES:
                        continue
                    if len(sources) >= MAX_MODULES:
                        break
                    try:
                        sources[name] = archive.read(info).decode("utf-8", "replace")
                    except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError,
                            RuntimeError):
                        continue
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError):
            return cls({}, libraries)
        return cls.from_sources(sources, libraries)

    def covers(self, target: str) -> bool:
        return target.split(".", 1)[0] in self.roots

    def reach(self, target: str) -> Reach | None:
        """What ``target`` (a dotted name SGLang calls) reaches; None when the
        package's Python does not define it."""
        found = self._resolve(target, 0)
        if found is None:
            return None
        module, name = found
        libraries: set[str] = set()
        hows: set[str] = set()
        hops: list[Hop] = []
        escapes: list[Hop] = []
        self._walk(module, name, 0, libraries, hows, hops, set(), escapes)
        how = "package" if "package" in hows else ("imported" if hows else "")
        return Reach(target, tuple(sorted(libraries)), tuple(hops), how,
                     escapes[0] if escapes else None)

    def refusal(self, target: str, capability: tuple[int, int],
                passed: frozenset[str] | None) -> tuple[Hop, ...] | None:
        """The lines of the capability test ``target`` (a dotted name SGLang
        calls) surely raises on, first thing, on a GPU of ``capability``
        when the caller passes the arguments ``passed``, by keyword or
        position (``"0"``; None: not known); None when there is none
        (``binaries.refusals``)."""
        found = self._resolve(target, 0)
        if found is None:
            return None
        module, name = found
        define = module.defs[name]
        if passed is not None:
            names = [p for p, _ in define.params]
            passed = frozenset(names[int(k)] if k.isdigit() and int(k) < len(names) else k
                               for k in passed)
        helpers = {n: d.predicate for n, d in module.defs.items() if d.predicate}
        raised = refusal(define.steps, define.params, helpers, capability, passed)
        if raised is None:
            return None
        line, test, raise_line, raise_text = raised
        tested = (Hop(module.rel, line, f"if {test}:"[:200]),) if line != raise_line else ()
        return (Hop(module.rel, define.line, define.text), *tested,
                Hop(module.rel, raise_line, raise_text))

    def _target(self, module: _Module, called: str) -> tuple[_Module, str] | None:
        """The package definition ``called`` names in ``module``, if any."""
        if called in module.defs:
            return module, called
        head = called.split(".", 1)[0]
        if head not in module.bindings:
            return None
        rest = called.split(".")[1:]
        found = self._resolve(".".join((module.bindings[head][0], *rest)), 0)
        return found if found is not None and found[1] in found[0].defs else None

    def _escapes(self, module: _Module, called: str) -> bool:
        """Does ``return called(...)`` leave the libraries: a package function
        that reaches none, or a name imported from another package (not torch)?"""
        target = self._target(module, called)
        if target is not None:
            return not self._walk(target[0], target[1], 0, set(), set(), [], set(), [])
        head = called.split(".", 1)[0]
        bound = module.bindings.get(head, ("", 0))[0]
        root = bound.split(".", 1)[0]
        return bool(bound) and root not in ("torch", "", module.name.split(".", 1)[0]) \
            and head not in module.extensions

    def _resolve(self, dotted: str, depth: int) -> tuple[_Module, str] | None:
        if depth > 8:
            return None
        parts = dotted.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            module = self._modules.get(".".join(parts[:cut]))
            if module is None:
                continue
            name, rest = parts[cut], parts[cut + 1:]
            if name in module.defs:
                return module, name  # a class's method is judged by its class
            if name in module.bindings:
                target = module.bindings[name][0]
                return self._resolve(".".join((target, *rest)), depth + 1)
            return None
        return None

    def _walk(self, module: _Module, name: str, depth: int, libraries: set[str],
              hows: set[str], hops: list[Hop], seen: set[tuple[str, str]],
              escapes: list[Hop]) -> bool:
        """Add what ``module.name`` reaches; True when it reaches a library
        (its lines are then in ``hops``, the definition first)."""
        if (module.name, name) in seen or depth > MAX_DEPTH:
            return False
        seen.add((module.name, name))
        define = module.defs[name]
        own: list[Hop] = []
        for used, line in define.names:
            if used in module.extensions:
                member = module.extensions[used][0]
                libraries.add(member)
                hows.add("imported")
                own.append(Hop(module.rel, line, f"{used}: the library {member}"))
        if define.ops_line:
            imported = sorted({m for m, _ in module.extensions.values()})
            if imported:
                libraries.update(imported)
                hows.add("imported")
            else:
                root = module.name.split(".", 1)[0]
                libraries.update(m for m in self.libraries if m.split("/", 1)[0] == root)
                hows.add("package")
            own.append(Hop(module.rel, define.ops_line, "torch.ops: a registered op"))
        below: list[Hop] = []
        for called, line in define.calls:
            target = self._target(module, called)
            if target is None:
                continue
            found: list[Hop] = []
            if self._walk(target[0], target[1], depth + 1, libraries, hows, found, seen,
                          escapes):
                below += [Hop(module.rel, line, f"calls {called}"), *found]
        for called, line in define.returns:
            if self._escapes(module, called):
                escapes.append(Hop(module.rel, line, f"return {called}(...)"))
        if not own and not below:
            return False
        hops += [Hop(module.rel, define.line, define.text), *own, *below]
        return True


def _read_module(rel: str, text: str, stems: Mapping[str, str]) -> _Module | None:
    try:
        tree = ast.parse(text, filename=rel)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    name, is_package = _module_name(rel)
    module = _Module(name, rel)
    package = name if is_package else name.rpartition(".")[0]
    lines = text.splitlines()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".", 1)[0]
                bound = alias.name if alias.asname else local
                module.bindings.setdefault(local, (bound, node.lineno))
                if alias.name in stems and alias.asname:
                    module.extensions[local] = (stems[alias.name], node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, package)
            if base is None:
                continue
            for alias in node.names:
                if alias.name == "*":
                    continue
                local = alias.asname or alias.name
                full = f"{base}.{alias.name}" if base else alias.name
                module.bindings.setdefault(local, (full, node.lineno))
                if full in stems:
                    module.extensions[local] = (stems[full], node.lineno)
    for node in tree.body:
        for item in _definitions(node):
            module.defs[item.name] = _define(item, lines)
    return module


def _definitions(node: ast.stmt) -> list[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef]:
    """Top-level definitions, also those under a module-level ``if``/``try``."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node]
    out: list[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef] = []
    if isinstance(node, (ast.If, ast.Try)):
        blocks = [node.body, node.orelse]
        if isinstance(node, ast.Try):
            blocks += [node.finalbody, *(h.body for h in node.handlers)]
        for block in blocks:
            for child in block:
                out.extend(_definitions(child))
    return out


def _define(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, lines: list[str]
            ) -> _Def:
    text = lines[node.lineno - 1].strip() if 0 < node.lineno <= len(lines) else node.name
    define = _Def(node.lineno, text[:200])
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        define.params = params_of(node)
        define.steps = steps_of(node, lines)
        define.predicate = predicate_of(node)
    for child in ast.walk(node):
        if isinstance(child, ast.Return) and isinstance(child.value, ast.Call):
            returned = _dotted(child.value.func)
            if returned and not returned.startswith(("self.", "cls.")):
                define.returns.append((returned, child.lineno))
        if isinstance(child, ast.Call):
            called = _dotted(child.func)
            if called and not called.startswith(("self.", "cls.")):
                define.calls.append((called, child.lineno))
        elif isinstance(child, ast.Attribute):
            dotted = _dotted(child)
            if dotted.startswith("torch.ops.") and not define.ops_line \
                    and dotted != "torch.ops.load_library":
                define.ops_line = child.lineno
            elif dotted and "." in dotted:
                define.names.append((dotted.split(".", 1)[0], child.lineno))
        elif isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load):
            define.names.append((child.id, child.lineno))
    # one line per extension name is enough evidence
    first: dict[str, int] = {}
    for used, line in define.names:
        first.setdefault(used, line)
    define.names = sorted(first.items(), key=lambda item: item[1])
    return define


def _absolute(node: ast.ImportFrom, package: str) -> str | None:
    if not node.level:
        return node.module or ""
    parts = package.split(".") if package else []
    if node.level - 1 > len(parts):
        return None
    base = parts[:len(parts) - (node.level - 1)]
    if node.module:
        base.append(node.module)
    return ".".join(base)
