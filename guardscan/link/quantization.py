"""link (quantization): each ``--quantization`` method's config class, its threshold and its code.

The method tables (``{"fp8": Fp8Config, ...}``, ``TABLE.update({...})``) in the
option's own runtime map each method to its config class; the loader's
``capability < quant_config.get_min_capability()`` check, read through each
class, gives a ``quant-gate`` per method; and the classes a config builds
mark code that runs only under that method (``QuantizationMethods.condition``).
"""

from __future__ import annotations

import ast
import itertools
import re
from typing import TYPE_CHECKING, Any

from guardscan.guards import ClassV
from guardscan.link.model import Finding, FindingKind, Hop, HopRole
from guardscan.predicate import (
    Const,
    Device,
    Predicate,
    QuantIs,
    Unknown,
    atoms,
    conj,
    disj,
    substitute,
)
from guardscan.syntax import parse_expr

if TYPE_CHECKING:
    from guardscan.link.context import LinkContext

__all__ = ["QuantizationMethods"]

#: Per-layer dispatch (``isinstance(layer, FusedMoE)``,
#: ``self.is_layer_excluded(prefix)``) says which layers get a class, not whether
#: the method uses it: such branch tests are taken as met, either way.
_PER_LAYER = re.compile(r"\b(isinstance\(|layer|prefix)")


class QuantizationMethods:
    def __init__(self, ctx: LinkContext) -> None:
        self.ctx = ctx
        #: (rel, class) -> {method: condition under which the method's config builds it}
        self.context: dict[tuple[str, str], dict[str, Predicate]] = {}
        self.dirs: set[str] = set()
        self._table_of: dict[str, str] = {}

    def scan(self) -> None:
        """Map each --quantization method to its config class, then find (a) the
        loader's threshold check read through the class's method, (b) gates in the
        classes the config instantiates."""
        quantization = self.ctx.quantization
        if quantization is None:
            return
        index, vocab, links = self.ctx.index, self.ctx.vocab, self.ctx.links
        methods = set(quantization.choices)
        threshold_methods = self._threshold_methods()
        # Another runtime in the same wheel (sglang/multimodal_gen beside
        # sglang/srt) has its own method tables, with same-named config classes
        # that mean something else: only the option's own runtime counts.
        option_parts = quantization.path.split("/")
        runtime_depth = min(2, len(option_parts) - 1)
        for rel in index.grep([f'"{m}"' for m in sorted(methods)][:400]):
            if "quantization" not in rel or _shared_prefix(rel, quantization.path) < \
                    runtime_depth:
                continue
            facts = index.view(rel)
            if facts is None:
                continue
            # ``TABLE = {"fp8": Fp8Config, ...}`` and ``TABLE.update({"mxfp4": ...})``
            tables = [(a.value, a.scope, a.line) for a in facts.assigns]
            tables += [(c.args[0], c.scope, c.line) for c in facts.calls
                       if c.func.endswith(".update") and len(c.args) == 1]
            for text, scope, line in tables:
                node = parse_expr(text)
                if not isinstance(node, ast.Dict):
                    continue
                for key, val in zip(node.keys, node.values):
                    if not (isinstance(key, ast.Constant) and key.value in methods):
                        continue
                    cls = vocab.value_at(val, rel, scope, line)
                    if not isinstance(cls, ClassV):
                        continue
                    method = str(key.value)
                    known = links.quant_methods.get(method)
                    # several method tables (e.g. a second runtime in the same wheel):
                    # keep the one nearest the --quantization option's definition
                    if known is None or _shared_prefix(rel, quantization.path) > \
                            _shared_prefix(self._table_of[method], quantization.path):
                        links.quant_methods[method] = (cls.rel, cls.qualname)
                        self._table_of[method] = rel
        for method, (crel, cqual) in sorted(links.quant_methods.items()):
            region = QuantIs(frozenset({method}))
            for tname, (trel, tline, tcond, ttext) in threshold_methods.items():
                value = self._class_method_constant(crel, cqual, tname)
                if value is None:
                    continue
                number, _, vline = value
                gate = Device("sm", "<", number)
                links.findings.append(Finding(
                    FindingKind.QUANT_GATE, trel, tline, conj(region, tcond, gate),
                    (Hop(crel, vline, HopRole.QUANT,
                         f"{method}: {cqual}.{tname}() returns {number}"),),
                    text=ttext))
            self.dirs.add(crel.rsplit("/", 1)[0] + "/")
            for qrel, qscope, built_when in self._classes_of(crel, cqual):
                known_when = self.context.setdefault((qrel, qscope), {})
                known_when[method] = disj(known_when[method], built_when) \
                    if method in known_when else built_when

    def state(self) -> Any:
        return (dict(self.ctx.links.quant_methods), {k: dict(v) for k, v in self.context.items()},
                set(self.dirs), dict(self._table_of))

    def restore_state(self, state: Any) -> None:
        methods, context, dirs, table_of = state
        self.ctx.links.quant_methods = dict(methods)
        self.context = {k: dict(v) for k, v in context.items()}
        self.dirs, self._table_of = set(dirs), dict(table_of)

    def condition(self, rel: str, scope: str) -> Predicate:
        """Code of a quantization method runs only under that method: the
        constructors of classes a method's config instantiates get ``QuantIs``;
        their other methods also need to be called (undecidable here); other code
        beside them gets an undecidable condition. None blocks a choice by itself."""
        cond = self.condition_unlogged(rel, scope)
        log = self.ctx.units.quant_log
        if log is not None:
            log.append(((rel, scope), cond))
        return cond

    def condition_unlogged(self, rel: str, scope: str) -> Predicate:
        """``condition``, without noting it for the running unit (to check
        whether a recorded unit still holds)."""
        top = scope.split(".")[0]
        methods = self.context.get((rel, top))
        if methods:
            built = disj(*(conj(QuantIs(frozenset({m})), c) for m, c in sorted(
                methods.items())))
            if scope in (top, f"{top}.__init__"):
                return built
            # another method of the class: runs only when something calls it
            return conj(built, Unknown(f"{scope}() is called"))
        if any(rel.startswith(d) for d in self.dirs):
            return Unknown("code used only by some quantization method")
        return Const(True)

    def _threshold_methods(self) -> dict[str, tuple[str, int, Predicate, str]]:
        """Methods compared with the device capability in a raising check:
        ``if capability < quant_config.get_min_capability(): raise``."""
        index, vocab = self.ctx.index, self.ctx.vocab
        found: dict[str, tuple[str, int, Predicate, str]] = {}
        for rel in index.grep(["capability"]):
            if "quantization" in rel and "loader" not in rel:
                continue
            facts = index.view(rel)
            if facts is None:
                continue
            for fact in facts.raises:
                for signed in fact.path:
                    cond = facts.cond(signed)
                    node = parse_expr(cond.text)
                    if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(
                            node.ops[0], (ast.Lt, ast.LtE)) and isinstance(
                            node.comparators[0], ast.Call) and isinstance(
                            node.comparators[0].func, ast.Attribute)):
                        continue
                    left = vocab.value_at(node.left, rel, fact.scope, cond.line)
                    if getattr(left, "kind", None) != "sm":
                        continue
                    others = [s for s in fact.path if s != signed]
                    found[node.comparators[0].func.attr] = (
                        rel, cond.line, self.ctx.conditions.path(facts, tuple(others), fact.scope),
                        cond.text)
        return found

    def _class_method_constant(self, rel: str, cls: str, method: str,
                               ) -> tuple[int, str, int] | None:
        facts = self.ctx.index.view(rel)
        if facts is None:
            return None
        for ret in facts.in_scope("returns", f"{cls}.{method}"):
            node = parse_expr(ret.value)
            if isinstance(node, ast.Constant) and isinstance(node.value, int):
                return node.value, rel, ret.line
        return None

    def _classes_of(self, rel: str, cls: str) -> list[tuple[str, str, Predicate]]:
        """The config class and the classes its methods instantiate, each with
        the condition it is built under. ``isinstance(layer, X)`` tests pick a
        class per layer kind and are taken as met; other conditions stay."""
        out: list[tuple[str, str, Predicate]] = [(rel, cls, Const(True))]
        facts = self.ctx.index.view(rel)
        if facts is None:
            return out
        found: dict[tuple[str, str], Predicate] = {}
        for call in facts.in_tree("calls", cls):
            if not call.scope.startswith(cls + "."):
                continue
            if call.func in ("isinstance", "issubclass", "type"):
                continue
            # built here (``C(...)``) or handed to a builder (``build(Moe=C)``)
            texts = [call.func, *call.args, *(v for _, v in call.kwargs)]
            for position, text in enumerate(texts):
                if position and not re.fullmatch(r"[\w.]+", text):
                    continue
                if parse_expr(text) is None:
                    continue
                value = self.ctx.vocab.value(text, rel, call.scope, call.line)
                if not isinstance(value, ClassV) or (value.rel, value.qualname) == (rel, cls):
                    continue
                kept = tuple(p for p in call.path
                             if not _PER_LAYER.search(facts.cond(p).text))
                cond = self.ctx.conditions.path(facts, kept, call.scope)
                key = (value.rel, value.qualname)
                found[key] = disj(found[key], cond) if key in found else cond
        out.extend((r, q, _fold_tautology(c)) for (r, q), c in found.items())
        return out


def _fold_tautology(pred: Predicate) -> Predicate:
    """``not a or a`` is TRUE whatever ``a`` is: Kleene logic alone cannot see it
    (both branches of ``if not x: build(C) ... return`` / ``build(C)``)."""
    free = sorted({a for a in atoms(pred) if isinstance(a, Unknown)}, key=repr)
    if not free or len(free) > 8 or len(free) != len(set(atoms(pred)) - {Const(True),
                                                                           Const(False)}):
        return pred
    for values in itertools.product((Const(True), Const(False)), repeat=len(free)):
        mapping: dict[Predicate, Predicate] = dict(zip(free, values))
        if substitute(pred, mapping.get) != Const(True):
            return pred
    return Const(True)


def _shared_prefix(a: str, b: str) -> int:
    """How many leading path parts ``a`` and ``b`` share."""
    count = 0
    for x, y in zip(a.split("/"), b.split("/")):
        if x != y:
            break
        count += 1
    return count
