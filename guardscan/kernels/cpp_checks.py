"""kernels (form 10): capability checks in the C++/CUDA a JIT module compiles, tied to the Python that calls it.

What it recognises
    A Python function that calls (or takes) an attribute ``NAME`` of a loaded
    module (``get_trtllm_gen_fmha_module().trtllm_paged_attention_decode(...)``,
    ``self._run = module.NAME``) where ``NAME`` is a function that exactly one
    JIT spec generator's C++ sources export to Python (the generator's source
    list: the ``"....cu"`` / ``".cpp"`` literals in its calls and
    assignments, relative to ``data/csrc``). The checks on the exported
    function's unconditional C++ path (``guardscan.cpp.link``) become facts of
    the Python function, kind ``cpp-check`` (tier a), with the check's
    file:line. A reference under a Python condition gives a fact that holds
    only where the condition does.
Why it matters
    FlashInfer 0.7.2's trtllm-gen FMHA runner rejects every arch but 10.0,
    10.3 and 10.7 in its constructor (``fmhaRunner.cuh:37``), below a Python
    API that declares nothing: on sm120 ``--attention-backend trtllm_mla``
    fails there, at run time.
Known limits
    An attribute name exported by several generators is not linked (which
    module is loaded is not known). Source lists built from names at run time
    (``[path / f"{name}.cu" for name in ...]``) are not read. A check passing
    on an arch is positive evidence only as an allow-list, as for Python
    checks (``support.deny_list``).
Example
    ``run_func = get_trtllm_gen_fmha_module().trtllm_paged_attention_decode``
    in ``trtllm_batch_decode_with_kv_cache`` (flashinfer 0.7.2), the
    generator ``gen_trtllm_gen_fmha_module`` compiling
    ``trtllm_fmha_kernel_launcher.cu`` -> ``sm == 100 or sm == 103 or sm ==
    107`` at ``flashinfer/data/include/flashinfer/trtllm/fmha/fmhaRunner.cuh:37``.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from guardscan.cpp.link import CppLibrary
from guardscan.index import Index
from guardscan.index.facts import CondPath, FunctionFact
from guardscan.kernels.model import KernelFact
from guardscan.kernels.paths import negate
from guardscan.kernels.symbols import ModuleSymbols, Resolver
from guardscan.predicate import Predicate, disj

__all__ = ["KIND", "CppChecks"]

KIND = "cpp-check"
#: a source file literal in a JIT spec generator
_SOURCE = re.compile(r"""["']([\w./-]+\.(?:cu|cpp|cc|cxx))["']""")
_ATTRIBUTE = re.compile(r"\.([A-Za-z_]\w*)\b")
#: text a generator's module must hold for its sources to be looked for
_TOKEN = b".cu\""

PathPredicate = Callable[[ModuleSymbols, str, CondPath], Predicate]


class CppChecks:
    """The exports of every JIT spec generator of one library, found on first
    use, and the C++ checks of the Python functions that call them."""

    def __init__(self, index: Index, resolver: Resolver, source_files: tuple[str, ...]) -> None:
        cache = index.cache_dir.parent if index.cache_dir is not None else None
        self.cpp = CppLibrary(index.tree.root, index.tree.package, cache)
        self.index = index
        self.resolver = resolver
        self.source_files = source_files
        self._exports: dict[str, list[tuple[str, list[str]]]] | None = None
        #: the unreadable files the export table read (``CppLibrary.touching``):
        #: each use of the table depends on them
        self._exports_touched: frozenset[str] = frozenset()

    @property
    def exports(self) -> dict[str, list[tuple[str, list[str]]]]:
        """Export name -> the (generator, C++ sources) that export it."""
        if self._exports is not None:
            self.cpp.touched.update(self._exports_touched)
            return self._exports
        self._exports = {}
        with self.cpp.touching() as touched:
            for rel in self.index.grep((_TOKEN.decode(), ".cu'"), within=self.source_files):
                table = self.resolver.symbols(self.index.tree.module_name(rel))
                if table is None:
                    continue
                for qualname in table.functions:
                    sources = self._sources(table, qualname)
                    if not sources:
                        continue
                    generator = f"{table.module}.{qualname}"
                    for name in self.cpp.exports(sources):
                        self._exports.setdefault(name, []).append((generator, sources))
        self._exports_touched = frozenset(touched)
        return self._exports

    def _sources(self, table: ModuleSymbols, qualname: str) -> list[str]:
        texts = [t for c in table.calls.get(qualname, [])
                 for t in (*c.args, *(v for _, v in c.kwargs))]
        texts.extend(a.value for a in table.scope_assigns.get(qualname, []))
        found: list[str] = []
        for text in texts:
            for literal in _SOURCE.findall(text):
                rel = self.cpp.source_rel(literal)
                if rel is not None and rel not in found:
                    found.append(rel)
        return found

    def facts(self, table: ModuleSymbols, fn: FunctionFact,
              path_predicate: PathPredicate) -> list[KernelFact]:
        """The C++ check facts of one Python function."""
        texts = [(c.func, c.line, c.path) for c in table.calls.get(fn.qualname, [])]
        texts.extend((a.value, a.line, a.path) for a in table.scope_assigns.get(fn.qualname, []))
        candidates = [(name, line, path) for text, line, path in texts
                      for name in _ATTRIBUTE.findall(text)]
        if not candidates:
            return []
        exports = self.exports
        function_id = f"{table.module}.{fn.qualname}"
        facts: list[KernelFact] = []
        seen: set[str] = set()
        for name, line, path in candidates:
            owners = exports.get(name, [])
            if name in seen or len(owners) != 1:
                continue
            seen.add(name)
            generator, sources = owners[0]
            for reached in self.cpp.checks_of_export(sources, name):
                predicate = reached.predicate
                if path:
                    predicate = disj(negate(path_predicate(table, fn.qualname, path)), predicate)
                facts.append(KernelFact(
                    function=function_id, kind=KIND, rel=reached.rel, line=reached.check.line,
                    text=reached.check.text, predicate=predicate,
                    note=f"{reached.check.macro}({reached.check.condition[:120]}) on the C++ "
                         f"path of `{name}` ({' -> '.join(reached.path)}), compiled by "
                         f"{generator.rpartition('.')[2]}; called at {table.rel}:{line}"))
        return facts

    def diagnostics_args(self) -> list[tuple[str, str]]:
        """(file, reason) of each C++ file that could not be read."""
        return sorted(self.cpp.failures.items())


def recognise_cpp_checks(checks: CppChecks, table: ModuleSymbols, fn: FunctionFact,
                         path_predicate: PathPredicate) -> list[KernelFact]:
    """The C++ check facts of one Python function (``CppChecks.facts``)."""
    return checks.facts(table, fn, path_predicate)
