"""kernels (library): the facts, re-exports and call graph of one FlashInfer tree.

``build_kernel_library(index)`` collects, up front, the facts that a cheap
text pre-filter can find (decorators, backend requirements, JIT specs);
re-exports are followed per name (``resolve``), or all at once on first use of
``exports``. Dispatches, raising checks and call edges need each
function's flow, so they are read per module, the first time a module is
reached from an entry point (``support``, ``expand``), and kept: ``facts``,
``branches``, ``graph`` and ``unresolved`` grow as modules are expanded, and
``complete()`` expands every module for an inventory. Nothing in the scanned
tree is imported or executed.
"""

from __future__ import annotations

import dataclasses
import functools
from collections import Counter
from collections.abc import Iterable

from guardscan.arch import Arch
from guardscan.index import Index
from guardscan.index.facts import CondPath, FunctionFact
from guardscan.kernels import backend_requirement, decorator, jit_spec
from guardscan.kernels.argument_check import recognise_argument_checks
from guardscan.kernels.arguments import argument_options
from guardscan.kernels.artifacts import CubinList, cubin_lists, recognise_artifacts
from guardscan.kernels.auto_backend import read_auto_backend
from guardscan.kernels.backend_requirement import recognise_backend_requirement
from guardscan.kernels.bindings import Bindings
from guardscan.kernels.callers import CallerFiles
from guardscan.kernels.callgraph import Edge, class_edges, function_edges
from guardscan.kernels.check import recognise_checks
from guardscan.kernels.conditions import BACKEND_OPTION, CapabilityReader
from guardscan.kernels.cpp_checks import CppChecks, recognise_cpp_checks
from guardscan.kernels.cubins import CubinSource, recognise_cubin_package
from guardscan.kernels.decorator import recognise_decorators
from guardscan.kernels.dispatch import recognise_dispatch
from guardscan.kernels.exports import collect_exports
from guardscan.kernels.jit_spec import recognise_jit_specs
from guardscan.kernels.model import BackendCheck, Branch, KernelFact
from guardscan.kernels.paths import PathReader
from guardscan.kernels.support import Args, CallerView, Outcome, SupportSolver
from guardscan.kernels.symbols import ModuleSymbols, Resolver
from guardscan.predicate import FALSE, TRUE, Predicate, Tri, conj, disj
from guardscan.results import Evidence
from guardscan.syntax import literal, parse_expr

__all__ = ["EXCLUDED_DIRS", "PREFILTER_TOKENS", "KernelLibrary", "build_kernel_library"]

#: Text that must occur in a file for the up-front facts to be looked for in it.
PREFILTER_TOKENS = (*decorator.TOKENS, *backend_requirement.TOKENS, jit_spec.KEYWORD,
                    "-gencode", "_nvcc_flags")


#: Package subdirectories that hold vendored sources and data, not the library
#: (FlashInfer ships CUTLASS's Python DSL and cubin lists under ``data/``).
EXCLUDED_DIRS = ("data",)


class KernelLibrary:
    """Facts about where each kernel-library function runs, and how to combine them."""

    def __init__(self, index: Index, excluded_dirs: tuple[str, ...] = EXCLUDED_DIRS,
                 cubins: CubinSource | None = None) -> None:
        self.index = index
        #: the cubin package the release pins (``kernels.cubins``), or why none
        self.cubins = cubins
        self.package = index.tree.package
        self.resolver = Resolver(index)
        self.reader = CapabilityReader(index)
        excluded = tuple(f"{self.package}/{d}/" for d in excluded_dirs)
        self.source_files: tuple[str, ...] = tuple(
            rel for rel in index.tree.files
            if rel.startswith(self.package + "/") and not rel.startswith(excluded))
        self.callers = CallerFiles(index, self.source_files)
        self.bindings = Bindings(self.resolver, self.callers.of, self.reader)
        self.paths = PathReader(self.reader, self.bindings)
        self.facts: dict[str, list[KernelFact]] = {}
        import networkx as nx  # here, not at import: a warm scan never builds a library

        self.graph: nx.DiGraph[str] = nx.DiGraph()
        self._exports: dict[str, str] | None = None
        self.unresolved: list[tuple[str, str, str, int]] = []
        self.branches: dict[str, list[Branch]] = {}
        self.backend_checks: dict[str, list[BackendCheck]] = {}
        self._static_done: set[str] = set()
        self._flow_done: set[str] = set()
        #: the unreadable C++ files each module's reading asked for
        #: (``CppLibrary.touching``): whatever reads the module again depends on them
        self._module_touched: dict[str, frozenset[str]] = {}
        self._expanded: set[str] = set()
        self._edges: dict[str, list[Edge]] = {}
        self._table_edges: dict[str, list[Edge]] = {}
        self._capability: dict[str, Predicate | None] = {}
        self._cubin_lists: dict[str, CubinList] | None = None
        #: the C++ checks of the JIT modules' exports (``kernels.cpp_checks``)
        self.cpp_checks = CppChecks(index, self.resolver, self.source_files)
        self._views: dict[str, CallerView | None] = {}
        self._argument_edges: dict[str, list[Edge]] = {}
        self.solver = SupportSolver(self._facts_for, self._edges_of, self.resolver.line_text,
                                    self._caller_view)

    # -- building ------------------------------------------------------------------------
    def scan(self) -> None:
        """Up-front facts, in the files a text pre-filter finds."""
        for rel in self.index.grep(PREFILTER_TOKENS, within=self.source_files):
            self._scan_static(self.index.tree.module_name(rel))

    @property
    def exports(self) -> dict[str, str]:
        """Every re-export of the package's ``__init__`` modules -> its definition.

        Computed on first use: it reads every module something is re-exported
        from (``resolve`` follows one name's chain without it)."""
        if self._exports is None:
            inits = [self.index.tree.module_name(rel) for rel in self.source_files
                     if rel.endswith("/__init__.py")]
            self._exports = collect_exports(self.resolver, inits)
        return self._exports

    def _add(self, fact: KernelFact) -> None:
        self.facts.setdefault(fact.function, []).append(fact)

    def _scan_static(self, module: str) -> None:
        if module in self._static_done:
            return
        self._static_done.add(module)
        table = self.resolver.symbols(module)
        if table is None:
            return
        for fn in table.functions.values():
            function_id = f"{module}.{fn.qualname}"
            for fact in recognise_decorators(self.resolver, table, fn):
                self._add(fact)
            facts, checks = recognise_backend_requirement(self.resolver, table, fn,
                                                          self._capability_of)
            for fact in facts:
                self._add(fact)
            if checks:
                self.backend_checks[function_id] = checks
            for fact in recognise_jit_specs(self.resolver, table, fn, self.paths.path_predicate):
                self._add(fact)

    def _scan_flow(self, module: str) -> None:
        if module in self._flow_done:
            self.cpp_checks.cpp.touched.update(self._module_touched.get(module, ()))
            return
        self._flow_done.add(module)
        with self.cpp_checks.cpp.touching() as touched:
            self._read_flow(module)
        self._module_touched[module] = frozenset(touched)

    def _read_flow(self, module: str) -> None:
        self._scan_static(module)
        table = self.resolver.symbols(module)
        if table is None:
            return
        for fn in table.functions.values():
            function_id = f"{module}.{fn.qualname}"
            dispatch = recognise_dispatch(self.resolver, table, fn, self.paths)
            for fact in dispatch.facts:
                self._add(fact)
            if dispatch.branches:
                self.branches[function_id] = dispatch.branches
            for table_edge in dispatch.edges:
                self._table_edges.setdefault(function_id, []).append(Edge(
                    function_id, table_edge.callee, table.rel, table_edge.line,
                    table_edge.text, True, table_edge.predicate, "table"))
            for fact in recognise_checks(self.resolver, table, fn, self.paths, dispatch.claimed):
                self._add(fact)
            for fact in recognise_artifacts(self.resolver, table, fn, self.cubin_lists,
                                            self.paths.path_predicate):
                self._add(fact)
            self._add_cubin_facts(table, fn, function_id)
            for fact in recognise_cpp_checks(self.cpp_checks, table, fn,
                                             self.paths.path_predicate):
                self._add(fact)

    def _add_cubin_facts(self, table: ModuleSymbols, fn: FunctionFact, function_id: str) -> None:
        """The pinned cubin package's facts (``kernels.cubins``); where none
        decides, its reason joins the notes of the function's fetching JIT specs."""
        facts, notes = recognise_cubin_package(self.resolver, table, fn, self.cubins)
        for fact in facts:
            self._add(fact)
        if notes and function_id in self.facts:
            self.facts[function_id] = [
                dataclasses.replace(f, note=f"{f.note}; {'; '.join(notes)}")
                if f.kind == "jit-spec" and jit_spec.FETCHED in f.note else f
                for f in self.facts[function_id]]

    @property
    def cubin_lists(self) -> dict[str, CubinList]:
        """The package's cubin architecture lists, found on first use (one
        regular-expression pass over the package's text; no file is parsed)."""
        if self._cubin_lists is None:
            self._cubin_lists = cubin_lists(self.index, self.source_files)
        return self._cubin_lists

    def _capability_of(self, function_id: str) -> Predicate | None:
        """The ``supported_compute_capability`` of a (check) function, if declared."""
        if function_id not in self._capability:
            module, _ = self.resolver.split_id(function_id)
            if module is not None:
                self._scan_static(module)
            preds = [f.predicate for f in self.facts.get(function_id, [])
                     if f.kind == "decorator"]
            self._capability[function_id] = conj(*preds) if preds else None
        return self._capability[function_id]

    # -- the call graph, module by module ---------------------------------------------------
    def expand_module(self, module: str) -> None:
        """Read one module's dispatches, checks and call edges (once)."""
        if module in self._expanded:
            self.cpp_checks.cpp.touched.update(self._module_touched.get(module, ()))
            return
        self._expanded.add(module)
        self._scan_flow(module)
        table = self.resolver.symbols(module)
        if table is None:
            return
        for fn in table.functions.values():
            function_id = f"{module}.{fn.qualname}"
            self.graph.add_node(function_id, rel=table.rel, line=fn.line, kind="function")
            edges, unresolved = function_edges(self.resolver, table, fn, self.paths)
            edges.extend(self._table_edges.get(function_id, []))
            self._edges[function_id] = edges
            self.unresolved.extend(unresolved)
            for edge in edges:
                self._add_graph_edge(edge)
        for qualname in table.classes:
            class_id = f"{module}.{qualname}"
            self.graph.add_node(class_id, rel=table.rel, line=table.classes[qualname].line,
                                kind="class")
            edges = class_edges(table, qualname)
            self._edges[class_id] = edges
            for edge in edges:
                self._add_graph_edge(edge)

    def _add_graph_edge(self, edge: Edge) -> None:
        if self.graph.has_edge(edge.caller, edge.callee):
            data = self.graph.edges[edge.caller, edge.callee]
            data["condition"] = disj(data["condition"], edge.condition)
            data["select"] = data["select"] or edge.select
            data["sites"] += 1
            return
        self.graph.add_edge(edge.caller, edge.callee, rel=edge.rel, line=edge.line,
                            path_text=edge.path_text, select=edge.select,
                            condition=edge.condition, kind=edge.kind, sites=1)

    def expand(self, function: str) -> None:
        """Expand the module defining ``function``."""
        module, _ = self.resolver.split_id(function)
        if module is not None:
            self.expand_module(module)

    def complete(self, modules: Iterable[str] | None = None) -> None:
        """Expand every module of the package (or the given ones): an inventory."""
        if modules is None:
            modules = [self.index.tree.module_name(rel) for rel in self.source_files]
        for module in modules:
            self.expand_module(module)

    def _edges_of(self, function: str, backend: str | None) -> list[Edge]:
        self.expand(function)
        return self._with_check(function, self._edges.get(function, []), backend)

    def _with_check(self, function: str, edges: list[Edge], backend: str | None) -> list[Edge]:
        """``edges``, and the chosen backend's check function as a required edge."""
        check = self._chosen_check(function, backend)
        if check is None or not self.resolver.function_fact(check.check):
            return edges
        rel = self.graph.nodes[function]["rel"] if function in self.graph else ""
        return [*edges, Edge(function, check.check, rel, check.line,
                             f"{BACKEND_OPTION} == {check.backend!r}", False, TRUE, "backend")]

    def _chosen_check(self, function: str, backend: str | None) -> BackendCheck | None:
        if backend is None or backend == "auto":
            return None
        for check in self.backend_checks.get(function, []):
            if check.backend == backend:
                return check
        return None

    def _caller_view(self, function: str) -> CallerView | None:
        """What a caller's arguments decide in ``function`` (``support``), read
        the first time a caller with known arguments reaches it."""
        if function not in self._views:
            found = self.resolver.function_fact(function)
            view = None
            if found is not None:
                table, fn = found
                auto = read_auto_backend(self.resolver, table, fn, self.paths)
                # ``backend`` is the backend the call runs where the function
                # never reassigns it, or only hands it back and resolves ``auto``
                first = auto is not None or not any(
                    a.targets == (BACKEND_OPTION,)
                    for a in table.scope_assigns.get(fn.qualname, []))
                view = CallerView(
                    functools.partial(argument_options, fn),
                    tuple(recognise_argument_checks(self.resolver, table, fn, self.paths, first)),
                    auto, functools.partial(self._caller_edges, table, fn, first))
            self._views[function] = view
        return self._views[function]

    def reads_arguments(self, name: str) -> bool:
        """Whether what ``name`` (a public or module path) supports can
        depend on the arguments its caller passes: it has raising checks on
        them, resolves ``backend="auto"``, or a call edge whose condition
        reads differently with them."""
        function = self.constructor(self.resolve(name) or name)
        view = self._caller_view(function)
        if view is None:
            return False
        if view.checks or view.auto is not None:
            return True
        read = view.edges(None) if view.edges is not None else []
        return [e.condition for e in read] != [e.condition for e in self._edges_of(function, None)]

    def _caller_edges(self, table: ModuleSymbols, fn: FunctionFact, backend_first: bool,
                      backend: str | None) -> list[Edge]:
        """``_edges_of``, each call's path read with the caller's arguments."""
        key = f"{table.module}.{fn.qualname}"
        self.expand(key)
        if key not in self._argument_edges:
            arguments = self.paths.arguments(table, fn)
            paths = self.paths

            def condition(scope: str, path: CondPath) -> Predicate:
                return paths.argument_path(table, paths.kept(table, scope, path), arguments,
                                           backend_first)

            edges, _ = function_edges(self.resolver, table, fn, paths, condition)
            self._argument_edges[key] = [*edges, *self._table_edges.get(key, [])]
        return self._with_check(key, self._argument_edges[key], backend)

    def _facts_for(self, function: str, backend: str | None) -> list[KernelFact]:
        """The function's facts; with a chosen backend, its backend-requirement fact
        gives way to that backend's check function (a required edge)."""
        module, _ = self.resolver.split_id(function)
        if module is not None:
            self._scan_flow(module)
        facts = self.facts.get(function, [])
        if backend is None or backend == "auto" or function not in self.backend_checks:
            return facts
        check = self._chosen_check(function, backend)
        out = []
        for fact in facts:
            if fact.kind != "backend-requirement":
                out.append(fact)
            elif check is None:
                out.append(dataclasses.replace(
                    fact, predicate=FALSE,
                    note=f"backend {backend!r} is not in the requirement table"))
            elif not self.resolver.function_fact(check.check):
                out.append(dataclasses.replace(
                    fact, line=check.line, text=self.resolver.line_text(fact.rel, check.line),
                    predicate=check.predicate, note=f"backend {backend!r}: {check.check}"))
        return out

    # -- questions ---------------------------------------------------------------------------
    def resolve(self, dotted: str) -> str | None:
        """A public or module path name -> the function (or class) that defines it."""
        if self._exports is not None and dotted in self._exports:
            return self._exports[dotted]
        target = self.resolver.resolve_dotted(dotted)
        return target.name if target.kind in ("function", "class") else None

    def default_backend(self, function: str) -> str | None:
        """The literal default of the function's ``backend`` parameter, if any."""
        found = self.resolver.function_fact(function)
        if found is None:
            return None
        default = dict(found[1].defaults).get(BACKEND_OPTION)
        value = literal(parse_expr(default)) if default else None
        return value if isinstance(value, str) else None

    def outcome(self, function: str, arch: Arch, backend: str | None = None,
                args: Args = None) -> Outcome:
        """``support`` with its caveats (FALSE facts on calls made only
        sometimes); ``args``: the arguments the caller passes, when known
        (``kernels.arguments``)."""
        function_id = self.constructor(self.resolve(function) or function)
        if backend is None:
            backend = self.default_backend(function_id)
        return self.solver.solve(function_id, arch, backend, args)

    def constructor(self, name: str) -> str:
        """A class's ``__init__`` when ``name`` is a class that defines one
        (calling the class runs it: ``CuteDslMoEWrapper(...)`` meets the
        ``@supported_compute_capability`` on its ``__init__``), else ``name``."""
        init = f"{name}.__init__"
        return init if self.resolver.function_fact(init) is not None else name

    def public_delegate(self, function: str, outcome: Outcome) -> str | None:
        """The first function below ``function`` on the outcome's chain that the
        package's root ``__init__`` exports (by qualified name): the answer is
        then that public building block's (``block_scale_interleave`` under
        ``shuffle_matrix_sf_a``), shared by every API that calls it."""
        function_id = self.resolve(function) or function
        for callee in outcome.through:
            if callee == function_id:
                continue
            short = callee.rpartition(".")[2]
            if not short.startswith("_") and self.resolve(f"{self.package}.{short}") == callee:
                return callee
        return None

    def support(self, function: str, arch: Arch, backend: str | None = None,
                ) -> tuple[Tri, list[Evidence]]:
        """TRUE / FALSE / UNKNOWN for ``function`` on ``arch`` with its evidence chain.

        ``backend`` (FlashInfer's own ``backend=`` argument, e.g. ``"cudnn"``)
        narrows a ``@backend_requirement`` fact to that backend and decides the
        function's ``backend == ...`` branches; when not given, the parameter's
        literal default is used (``backend="auto"`` -> the union of backends),
        as a caller that does not pass it gets. Callees are judged without it.
        """
        result = self.outcome(function, arch, backend)
        return result.value, list(result.chain)

    def counts(self) -> Counter[str]:
        """Facts per kind (of the modules read so far)."""
        return Counter(f.kind for facts in self.facts.values() for f in facts)


def build_kernel_library(index: Index, cubins: CubinSource | None = None) -> KernelLibrary:
    """The kernel library of ``index``'s tree (FlashInfer), ready for ``support``."""
    library = KernelLibrary(index, cubins=cubins)
    library.scan()
    return library
