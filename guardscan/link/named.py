"""link (named modules): modules named for a choice, and what they select, bind under a guard and call.

``layers/moe/moe_runner/flashinfer_trtllm.py`` runs only for
``--moe-runner-backend flashinfer_trtllm`` when its directories name the
option. In such a module: device tests that pick between two implementations
are ``select`` findings; names bound only under a device guard and used
outside it are ``import`` findings; calls into the kernel library are the
choice's own ``KernelCall``\\ s. A method or a function nothing in the tree
calls is an entry point, run for the choice; a public function that the tree
calls, and uses in no other way, runs only where its callers call it (their
branch tests, the registration of the function that calls it, the
quantization methods that run that code): ``layers/moe/flashinfer_cutedsl_moe.py``
holds the DeepEP-only v1 path of ``flashinfer_cutedsl``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from guardscan.guards import ExtV, FuncV
from guardscan.index.observe import FactsView
from guardscan.link.backend_argument import literal_backend
from guardscan.link.ifexp import conditional_calls
from guardscan.link.kernel_args import call_arguments
from guardscan.link.model import Finding, FindingKind, Found, Hop, HopRole, KernelCall
from guardscan.link.regions import dest_tokens, renamed
from guardscan.model_facts import mentions_model
from guardscan.predicate import (
    And,
    Const,
    Device,
    Not,
    OptionIs,
    Or,
    Predicate,
    Unknown,
    atoms,
    conj,
    disj,
    mentions_capability,
    mentions_device,
    neg,
)
from guardscan.syntax import parse_expr

if TYPE_CHECKING:
    from guardscan.link.conditions import Conditions
    from guardscan.link.context import LinkContext
    from guardscan.link.quantization import QuantizationMethods
    from guardscan.link.regions import RegisteredRegions

__all__ = ["NamedModules"]


class NamedModules:
    def __init__(self, ctx: LinkContext, conditions: Conditions,
                 registered: RegisteredRegions | None = None,
                 quant: QuantizationMethods | None = None) -> None:
        self.ctx = ctx
        self.conditions = conditions
        self.registered = registered
        self.quant = quant
        self._ifexp: dict[str, dict[int, list[tuple[str, str, bool]]]] = {}

    def modules(self) -> list[tuple[str, str, str]]:
        """(dest, choice, rel) for modules named for a choice inside the option's package."""
        files = self.ctx.index.tree.files
        by_stem: dict[str, list[tuple[str, list[str]]]] = {}
        for rel in files:
            parts = rel[:-3].split("/")
            stem = parts[-1]
            for name in {stem, stem.removesuffix("_backend"), stem.removesuffix("_moe")}:
                by_stem.setdefault(name, []).append((rel, parts[:-1]))
        order = {rel: i for i, rel in enumerate(files)}
        found: list[tuple[str, str, str]] = []
        for opt in self.ctx.options:
            tokens = dest_tokens(opt.dest)
            hits: list[tuple[str, int, str]] = []
            for position, choice in enumerate(opt.choices):
                for rel, dirs in by_stem.get(choice, ()):
                    stem = rel[:-3].rsplit("/", 1)[-1]
                    if stem in (choice, f"{choice}_backend", f"{choice}_moe") and any(
                            t in part for part in dirs for t in tokens):
                        hits.append((rel, position, choice))
            # in the order of the files, then of the choices
            found.extend((opt.dest, choice, rel) for rel, _, choice in sorted(
                set(hits), key=lambda h: (order[h[0]], h[1])))
        return found

    def scan(self, dest: str, choice: str, rel: str) -> Found:
        out = Found()
        self.scan_selects(dest, choice, rel, out)
        self.scan_guarded_names(dest, choice, rel, out)
        self.scan_module_kernel_calls(dest, choice, rel, out)
        return out

    def scan_selects(self, dest: str, choice: str, rel: str, out: Found) -> None:
        ctx = self.ctx
        facts = ctx.index.view(rel)
        if facts is None:
            return
        raising_paths = {abs(s) for r in facts.raises for s in r.path}
        used: set[int] = set()
        for group in (facts.imports, facts.assigns, facts.calls, facts.functions,
                      facts.returns):
            for fact in group:
                used.update(fact.path)
        for index, cond in enumerate(facts.conds, start=1):
            if cond.kind not in ("if", "elif") or index in raising_paths:
                continue
            if index not in used or -index not in used:
                continue  # picks nothing: code on one side only
            scope = facts.cond_scope[index - 1]
            pred = self.conditions.cond(facts, index, scope)
            if mentions_device(pred) and any(isinstance(a, Device) for a in atoms(pred)):
                out.findings.append(Finding(
                    FindingKind.SELECT, rel, cond.line, pred,
                    (Hop(rel, 1, HopRole.LINK, f"module named for {choice}"),),
                    option=dest, choice=choice, text=cond.text))

    def scan_module_kernel_calls(self, dest: str, choice: str, rel: str, out: Found) -> None:
        """Calls into the kernel library from a module named for the choice."""
        ctx = self.ctx
        facts = ctx.index.view(rel)
        if facts is None:
            return
        region = OptionIs(dest, frozenset({choice}))
        link = Hop(rel, 1, HopRole.LINK, f"module named for {choice}")
        # when each scope runs, asked once per scope (its calls share it)
        when: dict[str, Predicate] = {}

        def called_when(scope: str) -> Predicate:
            known = when.get(scope)
            if known is None:
                known = when[scope] = self._called_when(facts, scope, dest)
            return known

        for call in facts.calls:
            if parse_expr(call.func) is None:
                continue
            callee = ctx.vocab.value(call.func, rel, call.scope, call.line)
            if isinstance(callee, FuncV) and callee.rel != rel:
                # a wrapper elsewhere in the tree (``kernels/ops/.../flash_mla_interface``):
                # the kernel calls it makes are the choice's, one level down
                cond = conj(region, self.conditions.path(facts, call.path, call.scope),
                            called_when(call.scope))
                hops = (link, Hop(rel, call.line, HopRole.CALL, call.func))
                self._wrapper_kernel_calls(dest, choice, callee, cond, hops, out)
                self._wrapper_gates(dest, callee, cond, hops, out)
                continue
            if isinstance(callee, ExtV) and callee.path.split(".")[0] in ctx.kernel_packages:
                cond = conj(region, self.conditions.path(facts, call.path, call.scope),
                            called_when(call.scope))
                out.kernel_calls.append(KernelCall(
                    dest, cond, callee.path, rel, call.line,
                    (link, Hop(rel, call.line, HopRole.CALL, call.func)),
                    literal_backend(ctx.vocab, facts, call), choice, True,
                    args=call_arguments(ctx, facts, call, self.registered, (dest, choice))))

    def _wrapper_kernel_calls(self, dest: str, choice: str, callee: FuncV, region: Predicate,
                              hops: tuple[Hop, ...], out: Found) -> None:
        """Calls into a compiled package made in ``callee``'s body (not deeper)."""
        ctx = self.ctx
        facts = ctx.index.view(callee.rel)
        if facts is None:
            return
        for call in facts.in_tree("calls", callee.qualname):
            if parse_expr(call.func) is None:
                continue
            target = ctx.vocab.value(call.func, callee.rel, call.scope, call.line)
            if not isinstance(target, ExtV):
                continue
            root = target.path.split(".")[0]
            # the compiled packages only: followed this way, FlashInfer's calls
            # through shared wrappers changed verdicts that its direct calls decide
            if root not in ctx.kernel_packages or root == "flashinfer":
                continue
            cond = conj(region, self.conditions.path(facts, call.path, call.scope))
            out.kernel_calls.append(KernelCall(
                dest, cond, target.path, callee.rel, call.line,
                (*hops, Hop(callee.rel, call.line, HopRole.CALL, call.func)),
                literal_backend(ctx.vocab, facts, call), choice, True))

    def _wrapper_gates(self, dest: str, callee: FuncV, region: Predicate,
                       hops: tuple[Hop, ...], out: Found) -> None:
        """Device-tested failures in the body of a function elsewhere in the
        tree that the module calls (not deeper): the DeepGEMM wrapper's call
        through ``deep_gemm``, which only ``if ENABLE_JIT_DEEPGEMM:`` imports,
        fails for ``--moe-runner-backend deep_gemm`` where that is false."""
        facts = self.ctx.index.view(callee.rel)
        if facts is None:
            return
        conditions = self.conditions
        for scope, line, text, gate, path in conditions.failure_conditions(facts,
                                                                            callee.qualname):
            if not mentions_device(gate) and not mentions_model(gate):
                continue
            out.findings.append(Finding(
                FindingKind.GATE, callee.rel, line, conj(region, gate),
                (*hops, *conditions.guard_hops(facts, path, scope, line)), option=dest,
                text=text))

    def _called_when(self, facts: FactsView, scope: str, dest: str) -> Predicate:
        """When a private function of the module (``_forward_trtllm``) runs: the
        paths of its calls in the module (``if self.decode_impl == "trtllm":
        return self._forward_trtllm(...)``), one level up. Methods are the
        module's entry points, run for the choice; so is a public function,
        unless every use of it in the tree is a call: then it runs where its
        callers call it (``flashinfer_cutedsl_moe_masked`` only from the
        function registered for ``--moe-a2a-backend deepep``)."""
        name = scope.rsplit(".", 1)[-1]
        if scope and "." not in scope and not name.startswith("_"):
            return self._callers_call(facts.rel, scope, dest)
        if not scope or not name.startswith("_") or name.startswith("__"):
            return Const(True)
        sites = [c for c in facts.calls if c.scope != scope and (
            c.func == name or c.func.endswith("." + name))]
        if not sites:
            return Unknown(f"{name}() is called")
        conditions = self.conditions
        branches = self._conditional_calls(facts.rel)
        return disj(*(conj(conditions.path(facts, c.path, c.scope), *(
            Unknown(test) if in_body else neg(Unknown(test))
            for called, test, in_body in branches.get(c.line, ()) if called == name))
            for c in sites))

    def _callers_call(self, rel: str, scope: str, dest: str) -> Predicate:
        """Where a public function of a module named for a choice is called:
        each call's branch tests, under the registration of the function
        that makes it (``@register_fused_func("deepep", "x")``) or of the
        quantization methods that run it; TRUE when a use of it is not a
        call this reader places. Only the callers' tests of options, methods
        and the device narrow it: a test of the data (``isinstance(quant_info,
        Fp4Info)``) is taken as passing, as for any entry point. For a twin option
        (``--speculative-moe-runner-backend``) the callers' tests of the
        option it twins read as tests of the twin: the same code serves it."""
        sites = self.ctx.vocab.callers(rel, scope)
        if sites is None:
            return Const(True)
        pred = disj(*(conj(self._in_method(caller, within, may_hold(where)),
                           self._registered_when(caller, within))
                      for caller, within, _, where in sites))
        if self.registered is not None:
            main = min([dest, *self.registered.twins(dest)], key=lambda d: (len(d), d))
            if main != dest:
                pred = renamed(pred, main, dest)
        return pred

    def _in_method(self, rel: str, scope: str, where: Predicate) -> Predicate:
        """A call's branch tests, where it lies in a quantization method's code:
        under the methods that run it (``QuantizationMethods.qualify``)."""
        return self.quant.qualify(rel, scope, where) if self.quant is not None else where

    def _registered_when(self, rel: str, scope: str) -> Predicate:
        """The registrations a function of ``rel`` runs under (its own, or its
        enclosing function's; each twin option's), TRUE when it has none."""
        if self.registered is None or not scope:
            return Const(True)
        top = scope.split(".", 1)[0]
        regions = [region for _, _, qualname, _, region, _ in self.registered.regions(rel)
                   if qualname in (scope, top)]
        return disj(*regions) if regions else Const(True)

    def _conditional_calls(self, rel: str) -> dict[int, list[tuple[str, str, bool]]]:
        """The calls of ``rel`` in a branch of a conditional expression (its
        facts, which the caller read, change whenever its source does)."""
        cache = self._ifexp
        if rel not in cache:
            try:
                data = self.ctx.index.tree.path_of(rel).read_bytes()
            except OSError:
                data = b""
            cache[rel] = conditional_calls(data)
        return cache[rel]

    def scan_guarded_names(self, dest: str, choice: str, rel: str, out: Found) -> None:
        """Names bound only under a device guard, used in the choice's module."""
        ctx = self.ctx
        facts = ctx.index.view(rel)
        if facts is None:
            return
        bindings: dict[str, list[tuple[int, tuple[int, ...]]]] = {}
        for imp in facts.imports:
            if not imp.scope:
                bindings.setdefault(imp.local, []).append((imp.line, imp.path))
        for func in facts.functions:
            if not func.scope:
                bindings.setdefault(func.name, []).append((func.line, func.path))
        for assign in facts.assigns:
            if not assign.scope:
                for target in assign.targets:
                    bindings.setdefault(target, []).append((assign.line, assign.path))
        region = OptionIs(dest, frozenset({choice}))
        for name, sites in bindings.items():
            guarded = [(line, path) for line, path in sites if path]
            if not guarded or len(guarded) != len(sites):
                continue  # bound unconditionally somewhere
            line, path = guarded[0]
            if any(_exclusive(path, other) for _, other in guarded[1:]):
                continue  # bound in both branches: a select, not an import gate
            bound_when = self.conditions.path(facts, path, "")
            if not mentions_capability(bound_when):
                continue
            guard_texts = {facts.cond(s).text for s in path}
            for call in facts.calls:
                if call.func != name and not call.func.startswith(name + "."):
                    continue
                if guard_texts & {facts.cond(s).text for s in call.path}:
                    continue  # used under the same guard
                hops = (Hop(rel, 1, HopRole.LINK, f"module named for {choice}"),
                        *self.conditions.guard_hops(facts, path, ""),
                        Hop(rel, line, HopRole.IMPORT, f"{name} bound only when "
                            f"{bound_when.describe()}"))
                out.findings.append(Finding(
                    FindingKind.IMPORT, rel, call.line, conj(region, neg(bound_when)), hops,
                    option=dest, text=f"{name} used"))
                break


def _exclusive(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """Do two paths take opposite sides of some branch?"""
    return any(-i in b for i in a)


def may_hold(pred: Predicate) -> Predicate:
    """``pred`` with each undecidable test taken the way that lets it hold
    (``Unknown`` atoms TRUE, or FALSE under a ``not``): what it says of
    options, methods and the device only.

    >>> from guardscan.predicate import OptionIs
    >>> deepep = OptionIs("moe_a2a_backend", frozenset({"deepep"}))
    >>> may_hold(conj(deepep, neg(Unknown("x is None")))) == deepep
    True
    >>> may_hold(neg(disj(Unknown("cached"), deepep))).describe()
    'not moe_a2a_backend == deepep'
    >>> may_hold(neg(conj(Unknown("cached"), deepep))).describe()
    'always'
    """
    if isinstance(pred, And):
        return conj(*(may_hold(p) for p in pred.items))
    if isinstance(pred, Or):
        return disj(*(may_hold(p) for p in pred.items))
    if isinstance(pred, Not):
        return neg(_may_fail(pred.item))
    return Const(True) if isinstance(pred, Unknown) else pred


def _may_fail(pred: Predicate) -> Predicate:
    """``pred`` with each undecidable test taken the way that lets it fail."""
    if isinstance(pred, And):
        return conj(*(_may_fail(p) for p in pred.items))
    if isinstance(pred, Or):
        return disj(*(_may_fail(p) for p in pred.items))
    if isinstance(pred, Not):
        return neg(may_hold(pred.item))
    return Const(False) if isinstance(pred, Unknown) else pred
