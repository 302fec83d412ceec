"""link (quantization): each ``--quantization`` method's config class, its threshold and its code.

The method tables (``{"fp8": Fp8Config, ...}``, ``TABLE.update({...})``) in the
option's own runtime map each method to its config class (with the keys a
table holds beside the flag's choices: methods SGLang takes from a
checkpoint's ``quant_method`` alone, ``minimax_m3_nvfp4``, kept in
``Links.checkpoint_methods``); the loader's
``capability < quant_config.get_min_capability()`` check, read through each
class, gives a ``quant-gate`` per method. Each method's path
(``link.method_paths``) says which code of the quantization directories it
runs and on which way; ``QuantizationMethods.qualify`` gives every guard
there that condition: ``QuantIs`` of the methods that reach it, so under
``--quantization X`` gates on X's path decide and code only other methods run
is no evidence, for or against. Code no method reaches, code past the path's
budget, and code that other code outside the methods' paths runs too keep an
undecidable condition.
"""

from __future__ import annotations

import ast
import hashlib
import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from guardscan.guards.quant_configs import read_method_tables
from guardscan.link.conditions import option_atoms
from guardscan.link.method_paths import METHOD_PATH_DEPTH, MethodPaths, Reach
from guardscan.link.model import Finding, FindingKind, Found, Hop, HopRole
from guardscan.predicate import (
    And,
    Const,
    Device,
    OptionIs,
    Or,
    Predicate,
    QuantIs,
    Unknown,
    conj,
    disj,
    leaves,
    neg,
    substitute,
)
from guardscan.syntax import parse_expr

if TYPE_CHECKING:
    from guardscan.link.conditions import Conditions
    from guardscan.link.context import LinkContext
    from guardscan.link.recorded import MemoFactory
    from guardscan.link.units import UnitState

__all__ = ["QuantizationMethods"]

#: one method's path: the functions it runs and the classes it builds, each
#: with how (folded), and the functions just past the budget
_Piece = tuple[dict[tuple[str, str], Reach], dict[tuple[str, str], Reach], frozenset[tuple[str, str]]]

#: told each condition a guard was given (where: (rel, scope, variant)), for a
#: runner that records what a unit took from the methods' paths
ContextObserver = Callable[[tuple[str, str, str], Predicate], None]


class QuantizationMethods:
    def __init__(self, ctx: LinkContext, conditions: Conditions,
                 observe: ContextObserver | None = None,
                 memo: MemoFactory | None = None) -> None:
        self.ctx = ctx
        self.conditions = conditions
        self.observe = observe
        self.memo = memo
        #: method -> (rel, config class)
        self.methods: dict[str, tuple[str, str]] = {}
        #: (rel, function) -> {method: how the method's path reaches it}
        self.context: dict[tuple[str, str], dict[str, Reach]] = {}
        #: (rel, class) -> {method: how the method's path builds it}
        self.built: dict[tuple[str, str], dict[str, Reach]] = {}
        #: functions just past the budget of some method's path
        self.past_budget: set[tuple[str, str]] = set()
        #: functions and classes on the paths that other code runs too
        self.escapes: set[tuple[str, str]] = set()
        self.dirs: set[str] = set()
        self._table_of: dict[str, str] = {}
        self._paths: MethodPaths | None = None
        #: each method's path, as its unit found it (for the unit's record)
        self._pieces: dict[str, _Piece] = {}

    def scan(self) -> Found:
        """Map each --quantization method to its config class, and find the
        loader's threshold check read through the class's method (each
        method's path is a unit of its own: ``scan_method``)."""
        quantization, out = self.ctx.quantization, Found()
        if quantization is None:
            return out
        index, vocab, methods_of = self.ctx.index, self.ctx.vocab, self.methods
        methods = set(quantization.choices)
        threshold_methods = self._threshold_methods()
        # with the methods only a checkpoint names: their code runs under them alone
        found, table_of = read_method_tables(index, vocab.value_at, methods, quantization.path,
                                             others=True)
        methods_of.update(found)
        self._table_of.update(table_of)
        for method, (crel, cqual) in sorted(methods_of.items()):
            region = QuantIs(frozenset({method}))
            for tname, (trel, tline, tcond, ttext) in threshold_methods.items():
                value = self._class_method_constant(crel, cqual, tname)
                if value is None:
                    continue
                number, _, vline = value
                gate = Device("sm", "<", number)
                out.findings.append(Finding(
                    FindingKind.QUANT_GATE, trel, tline, conj(region, tcond, gate),
                    (Hop(crel, vline, HopRole.QUANT,
                         f"{method}: {cqual}.{tname}() returns {number}"),),
                    text=ttext))
            self.dirs.add(crel.rsplit("/", 1)[0] + "/")
        return out

    def state(self) -> Any:
        return dict(self.methods), set(self.dirs), dict(self._table_of)

    def restore_state(self, state: Any) -> None:
        methods, dirs, table_of = state
        self.methods, self.dirs, self._table_of = dict(methods), set(dirs), dict(table_of)

    # -- the methods' paths: a unit each, then one for the code run from outside ---------
    # (a change that touches one method's path links that method again, not all)
    @property
    def paths(self) -> MethodPaths:
        if self._paths is None:
            self._paths = MethodPaths(self.ctx, self.conditions, tuple(sorted(self.dirs)),
                                      self.memo)
        return self._paths

    def scan_method(self, method: str) -> Found:
        """The path of ``method`` (after ``scan``): the code it runs, and how."""
        path = self.paths.walk(self.methods[method])
        piece: _Piece = ({key: _folded(reach) for key, reach in path.functions.items()},
                         {key: _folded(reach) for key, reach in path.classes.items()},
                         frozenset(path.past_budget))
        self.add_path(method, piece)
        return Found()

    def method_key(self, method: str) -> tuple[str, ...]:
        """What ``method``'s path starts from (its unit's key, after
        ``scan``): the method, its config class (a method table that maps it
        to another class walks another path) and the quantization packages
        walked."""
        return ("quantization", method, *self.methods[method], *sorted(self.dirs))

    def path_state(self, method: str) -> UnitState:
        """How the unit of ``method``'s path is taken, and restored (added)."""
        return (lambda: self._pieces[method], lambda piece: self.add_path(method, piece))

    def add_path(self, method: str, piece: _Piece) -> None:
        functions, classes, past_budget = piece
        self._pieces[method] = piece
        for func_key, reach in functions.items():
            self.context.setdefault(func_key, {})[method] = reach
        for cls_key, reach in classes.items():
            self.built.setdefault(cls_key, {})[method] = reach
        self.past_budget |= past_budget

    def paths_digest(self) -> str:
        """A digest of the functions and classes on the methods' paths (what
        ``scan_escapes`` starts from): its unit's key, so that a path that
        changes links it again."""
        keys = sorted([*(("f", *k) for k in self.context), *(("c", *k) for k in self.built)])
        return "escapes " + hashlib.sha256(repr((keys, sorted(self.dirs))).encode()
                                           ).hexdigest()[:16]

    def scan_escapes(self) -> Found:
        """After every method's path: what code outside them runs too."""
        self.escapes = self._escapes(self.paths)
        return Found()

    def escapes_state(self) -> UnitState:
        return (lambda: frozenset(self.escapes),
                lambda escapes: setattr(self, "escapes", set(escapes)))

    def qualify(self, rel: str, scope: str, cond: Predicate, evidence: bool = False,
                every_arch: bool = False, whole_way: bool = False) -> Predicate:
        """``cond``, a guard's condition in ``scope`` of ``rel``, with the
        condition under which the quantization methods run that code.

        A gate that tests a backend option is judged where the option is
        used: on the way there only the tests of options and of the device
        count (the checkpoint decides whether a method's code consults the
        option at all, and a checkpoint that does not never uses the choice).
        One that tests the option for its choice (``if backend.is_x(): ...
        raise``) also counts without ``--quantization``: the choice only
        matters under a method that reaches it. Other gates keep every
        condition on the way. ``evidence``: ``cond`` is evidence of support
        (an ``auto`` default), which only the methods' own paths give.
        ``every_arch``: ``cond`` tests no device (``link.everywhere``): it
        says what the method refuses, not what the arch does, so it holds
        only under a ``--quantization`` naming a method that reaches it (a
        choice used outside the methods too, ``lora_triton`` in LoRA's own
        runner, is not refused for an unquantized model by
        ``ModelOptNvFp4FusedMoEMethod.__init__``). ``whole_way``: every test on
        the way counts, the checkpoint's too (a scheme that one kind of
        checkpoint picks, ``QuarkW4A8MXFp4MoE``, refuses nothing for another)."""
        if not self._inside(rel):
            return cond
        variant = _variant(cond, evidence, every_arch)
        if variant == "choice":
            cond = self._default_resolved(cond)
            if whole_way:
                variant = "full"
        return conj(self.condition(rel, scope, variant), cond)

    def escape(self, rel: str, scope: str, cond: Predicate) -> Predicate | None:
        """For a gate ``qualify`` judges on the way the option's tests take
        (the checkpoint's tests left out): ``cond`` with every test on the
        way, the checkpoint's too (``if weight_block_size[1] != 128: return
        triton`` before the option is read), so that the verdict can say
        which checkpoints never reach it. None where nothing was left out."""
        if not self._inside(rel) or _variant(cond, False, False) not in ("choice", "chosen"):
            return None
        full = self.condition(rel, scope, "full")
        if full == self.condition(rel, scope, "choice"):
            return None
        return conj(full, self._default_resolved(cond))

    def _default_resolved(self, cond: Predicate) -> Predicate:
        """A gate that holds for every choice but some (``if backend.is_marlin():
        return`` before it) tests the option's value after its default has been
        resolved at run time (``auto`` may become ``marlin``): for the default
        choice it stays undecided. That test of the default is read where the
        gate's own tests are: where they are shared with an option whose value
        stands in (``link.shared_values``: the draft model's runner, read
        through ``get_moe_runner_backend()``), so is it, and the copy for that
        option tests its own default (``--speculative-moe-runner-backend
        triton`` under ``modelopt_fp4`` meets ``apply``'s refusal whatever the
        main option's ``auto`` becomes)."""
        defaults = {}
        for option in self.ctx.options:
            node = parse_expr(option.default) if option.default else None
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                defaults[option.dest] = node.value
        for dest in sorted({a.option for a in option_atoms(cond)}):
            default = defaults.get(dest)
            tests = [a for a in option_atoms(cond) if a.option == dest]
            if default is None or any(default in a.choices for a in tests):
                continue
            shared = tuple(o for o in tests[0].shared if all(o in a.shared for a in tests))
            cond = conj(cond, disj(neg(OptionIs(dest, frozenset({default}), shared)),
                                   Unknown(f"what {dest} {default} resolves to at run time")))
        return cond

    def condition(self, rel: str, scope: str, variant: str = "full") -> Predicate:
        """When the quantization methods run ``scope`` of ``rel``: ``QuantIs``
        each method whose path reaches it, under the conditions of the way
        there (``variant`` "full": all of them; "choice": those about options
        and the device; "chosen": as "choice", and TRUE without
        ``--quantization``; "evidence": as "chosen", without what is
        undecided). Code no method reaches, or also run from
        elsewhere, keeps an undecidable condition; none blocks by itself."""
        cond = self.condition_unlogged(rel, scope, variant)
        if self.observe is not None:
            self.observe((rel, scope, variant), cond)
        return cond

    def condition_unlogged(self, rel: str, scope: str, variant: str = "full") -> Predicate:
        """``condition``, without noting it for the running unit (to check
        whether a recorded unit still holds)."""
        if not self._inside(rel):
            return Const(True)
        def pick(reach: Reach) -> Predicate:
            return reach.full if variant == "full" else reach.choice
        if variant == "evidence":
            # only what a method's own path runs: nothing undecided
            func = self._function_of(rel, scope)
            reached = self.context[func] if func is not None else {}
            return disj(QuantIs(frozenset(), unset=True),
                        *(conj(QuantIs(frozenset({m})), r.choice)
                          for m, r in sorted(reached.items())))
        alternatives: list[Predicate] = []
        func = self._function_of(rel, scope)
        top = scope.split(".")[0]
        if func is not None:
            for method, reach in sorted(self.context[func].items()):
                alternatives.append(conj(QuantIs(frozenset({method})), pick(reach)))
            if func in self.escapes:
                alternatives.append(Unknown(f"{func[1]}() is also run from code outside "
                                            "the methods' paths"))
        elif (rel, top) in self.built and scope not in ("", top):
            # a method of a built class no path runs: only when something calls it
            built = self.built[(rel, top)]
            alternatives.append(conj(disj(*(conj(QuantIs(frozenset({m})), pick(r))
                                            for m, r in sorted(built.items()))),
                                     Unknown(f"{scope}() is called")))
            if (rel, top) in self.escapes:
                alternatives.append(Unknown(f"{top} is also used outside the methods' paths"))
        elif (rel, scope) in self.past_budget or (rel, top) in self.past_budget:
            alternatives.append(Unknown(f"more than {METHOD_PATH_DEPTH} calls from a "
                                        "method's config class"))
        else:
            alternatives.append(Unknown("code no quantization method's path reaches"))
        cond = disj(*alternatives)
        if variant == "chosen":
            cond = disj(QuantIs(frozenset(), unset=True), cond)
        return cond

    def _inside(self, rel: str) -> bool:
        return any(rel.startswith(d) for d in self.dirs)

    def inside(self, rel: str) -> bool:
        """Whether ``rel`` is code of the quantization methods (runs only under one)."""
        return self._inside(rel)

    def _function_of(self, rel: str, scope: str) -> tuple[str, str] | None:
        """The function on a method's path that ``scope`` is (or is nested in)."""
        parts = scope.split(".")
        for end in range(len(parts), 0, -1):
            key = (rel, ".".join(parts[:end]))
            if key in self.context:
                return key
        return None

    def _escapes(self, paths: MethodPaths) -> set[tuple[str, str]]:
        """Functions on the methods' paths that code outside the quantization
        directories also runs: the module-level functions and classes it
        imports, and what those run in turn (as far as the budget)."""
        index = self.ctx.index
        names: dict[str, set[str]] = {}
        for rel, qualname in [*self.context, *self.built]:
            if "." not in qualname:
                names.setdefault(qualname, set()).add(rel)
        if not names:
            return set()
        outside = [rel for rel in index.tree.files if rel.endswith(".py")
                   and not self._inside(rel)]
        roots: set[tuple[str, str]] = set()
        for rel in index.grep(sorted(names), within=outside):
            facts = index.view(rel)
            if facts is None:
                continue
            imported = {}
            for imp in facts.imports:
                target = index.by_module.get(imp.module)
                if imp.name in names and target in names[imp.name]:
                    imported[imp.local] = (target, imp.name)
            if not imported:
                continue
            # run there (called, or built), not merely tested (``isinstance``)
            for call in facts.calls:
                local = call.func.split(".")[0]
                if local in imported:
                    roots.add(imported[local])
        found: set[tuple[str, str]] = set()
        level = set(roots)
        for _ in range(METHOD_PATH_DEPTH + 1):
            following: set[tuple[str, str]] = set()
            for key in level - found:
                found.add(key)
                if key in self.built:
                    following.update(paths.run_on_build(key))
                if key in self.context:
                    following.update(edge.target for edge in paths.edges(key, None))
            level = following
        return found

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
                        rel, cond.line, self.conditions.path(facts, tuple(others), fact.scope),
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


def _fold_tautology(pred: Predicate) -> Predicate:
    """``not a or a`` is TRUE whatever ``a`` is: Kleene logic alone cannot see it
    (both branches of ``if not x: build(C) ... return`` / ``build(C)``)."""
    parts = set(leaves(pred)) - {Const(True), Const(False)}
    free = sorted((a for a in parts if isinstance(a, Unknown)), key=repr)
    if not free or len(free) > 8 or len(free) != len(parts):
        return pred
    for values in itertools.product((Const(True), Const(False)), repeat=len(free)):
        mapping: dict[Predicate, Predicate] = dict(zip(free, values))
        if substitute(pred, mapping.get) != Const(True):
            return pred
    return Const(True)


def _folded(reach: Reach) -> Reach:
    return Reach(_fold_tautology(reach.full), _fold_tautology(reach.choice))


def _variant(cond: Predicate, evidence: bool, every_arch: bool) -> str:
    """Which of a method's ways to a gate counts (``QuantPaths.qualify``)."""
    if evidence:
        return "evidence"
    if option_atoms(cond):
        return "chosen" if _positive_option_test(cond) and not every_arch else "choice"
    return "full"


def _positive_option_test(pred: Predicate) -> bool:
    """Does ``pred`` require a backend option to hold some choice: one of its
    conjuncts is a test of the option for choices (``backend.is_x() and not
    ok``), as ``not backend.is_marlin() and not ok`` or ``not ok and not
    use_fallback`` are not?"""
    parts = pred.items if isinstance(pred, And) else (pred,)
    return any(isinstance(p, OptionIs) or isinstance(p, Or) and all(
        isinstance(i, OptionIs) for i in p.items) for p in parts)
