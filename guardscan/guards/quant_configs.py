"""guards (quantization configs): a method object's config, as the loader builds it for ``--quantization``.

What it recognises
    A quantization method's code reads its config through the object its
    config class hands it (``Fp8LinearMethod(self)`` in
    ``Fp8Config.get_quant_method``), and the config's attributes come from the
    checkpoint through ``from_config``::

        class Fp8Config(QuantizationConfig):
            def __init__(self, ..., use_mxfp8=False):
                self.use_mxfp8 = use_mxfp8
            @classmethod
            def from_config(cls, config):
                quant_method = cls.get_from_keys(config, ["quant_method"])
                use_mxfp8 = "mxfp8" in quant_method
                return cls(..., use_mxfp8=use_mxfp8)

        class Fp8LinearMethod(LinearMethodBase):
            def __init__(self, quant_config):
                self.use_mxfp8 = getattr(quant_config, "use_mxfp8", False)

    Read here, in order:

    - a parameter of a class's ``__init__``, where the class is built in its
      own directory as ``K(self)`` inside a method of a config class of the
      method tables (``{"fp8": Fp8Config, "mxfp8": Fp8Config, ...}``): the
      config object (``ConfigV``) under ``QuantIs`` of the methods whose
      class that is, one alternative per such class; a site in a config
      class's method that passes something else is unknown under that
      class's methods, a site elsewhere unknown under an undecided condition,
      and so is every method that builds it some other way;
    - an attribute of the config object: its class's ``__init__`` sets it
      once, unconditionally, from its parameters, bound as ``from_config``'s
      ``return cls(...)`` binds them, unless ``from_config`` sets it on the
      object it built (``quant_config.is_w4a16 = ...``), which then holds; an attribute neither the class nor its
      bases in the tree ever set is absent (``getattr``'s default);
    - ``cls.get_from_keys(config, ["quant_method"])`` in ``from_config``: the
      checkpoint's ``quant_method``, read as the ``--quantization`` value.

Why it matters
    Under ``--quantization fp8``, ``use_mxfp8`` is False, so
    ``Fp8LinearMethod.__init__`` takes the block-FP8 dispatch, whose explicit
    backends raise off their architectures. Left open, the MXFP8 branch beside
    it hid every one of those gates.
Known limits
    Under ``--quantization X`` the checkpoint's ``quant_method`` is read as
    ``X``, the common case that the loader checks (``_verify_quantization``);
    a checkpoint of a method ``X`` declares compatible (``modelopt`` for
    ``modelopt_fp4``), or an online requantization, is not told apart.
    Without ``--quantization`` the method, so the config, is the checkpoint's
    and stays unknown. A config built elsewhere than by ``from_config`` and
    used through its own methods (ModelOpt's inner ``Fp8Config(...)``) is not
    seen as such: its sites are unknown alternatives.
Example
    ``Fp8LinearMethod``'s ``self.use_mxfp8 and not self.convert_mxfp8_to_block``
    reads as ``quantization in {mxfp8} and ...``: false under ``fp8``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING

from guardscan.guards.instance_attrs import enclosing_class
from guardscan.guards.values import AltV, ClassV, ConfigV, OptV, UnkV, Value
from guardscan.index import Index
from guardscan.index.observe import FactsView, Reads
from guardscan.predicate import Predicate, QuantIs, Unknown, neg
from guardscan.syntax import parse_expr

if TYPE_CHECKING:
    from guardscan.guards.interpreter import Interpreter

__all__ = ["ABSENT", "QuantConfigs", "read_method_tables", "shared_prefix", "substring_choices"]

#: what ``get_from_keys`` reads for the checkpoint's method
_METHOD_KEY = "quant_method"
_KEY_READERS = ("get_from_keys", "get_from_keys_or")
#: a marker: the attribute is set nowhere (``getattr`` gives its default)
ABSENT = UnkV("attribute never set")


def read_method_tables(index: Index, class_at: Callable[[ast.expr, str, str, int], Value],
                       methods: set[str], option_path: str, others: bool = False,
                       ) -> tuple[dict[str, tuple[str, str]], dict[str, str]]:
    """Each method's config class from the method tables (``TABLE = {"fp8":
    Fp8Config}``, ``TABLE.update({...})``) of the option's own runtime:
    (method -> (rel, class), method -> the table's file). Another runtime in
    the same wheel (``sglang/multimodal_gen`` beside ``sglang/srt``) has its
    own tables; where several tables name a method, the one nearest the
    option's definition wins. ``others``: also the table's other string keys,
    in a table that names at least two of ``methods`` (a method a checkpoint
    selects by its ``quant_method`` that the flag does not offer:
    ``minimax_m3_nvfp4``)."""
    methods_of: dict[str, tuple[str, str]] = {}
    table_of: dict[str, str] = {}
    runtime_depth = min(2, len(option_path.split("/")) - 1)
    for rel in index.grep([f'"{m}"' for m in sorted(methods)][:400]):
        if "quantization" not in rel or shared_prefix(rel, option_path) < runtime_depth:
            continue
        facts = index.view(rel)
        if facts is None:
            continue
        tables = [(a.value, a.scope, a.line) for a in facts.assigns]
        tables += [(c.args[0], c.scope, c.line) for c in facts.calls
                   if c.func.endswith(".update") and len(c.args) == 1]
        for text, scope, line in tables:
            node = parse_expr(text)
            if not isinstance(node, ast.Dict):
                continue
            named = sum(isinstance(k, ast.Constant) and k.value in methods for k in node.keys)
            for key, val in zip(node.keys, node.values):
                if not (isinstance(key, ast.Constant) and isinstance(key.value, str) and (
                        key.value in methods or others and named >= 2)):
                    continue
                cls = class_at(val, rel, scope, line)
                if not isinstance(cls, ClassV):
                    continue
                method = str(key.value)
                if method not in methods_of or shared_prefix(rel, option_path) > \
                        shared_prefix(table_of[method], option_path):
                    methods_of[method] = (cls.rel, cls.qualname)
                    table_of[method] = rel
    return methods_of, table_of


def shared_prefix(a: str, b: str) -> int:
    """How many leading path parts ``a`` and ``b`` share."""
    count = 0
    for x, y in zip(a.split("/"), b.split("/")):
        if x != y:
            break
        count += 1
    return count


class QuantConfigs:
    """Config objects of the quantization methods, for the interpreter."""

    def __init__(self, interpreter: Interpreter) -> None:
        self.interpreter = interpreter
        self._classes: tuple[dict[tuple[str, str], frozenset[str]], Reads] | None \
            = None
        self._params: dict[tuple[str, str, str], tuple[Value | None, Reads]] = {}

    def clear(self) -> None:
        self._classes = None
        self._params.clear()

    # -- the method tables ---------------------------------------------------------
    def config_classes(self) -> dict[tuple[str, str], frozenset[str]]:
        """(rel, config class) -> the methods the tables map to it."""
        interp = self.interpreter
        options = interp.options
        recorder = interp.stack.recorder
        if self._classes is None:
            classes: dict[tuple[str, str], frozenset[str]] = {}
            saved = recorder.open()
            try:
                if options.quantization and options.quantization_path:
                    methods = set(options.dests.get(options.quantization, ()))
                    found, _ = read_method_tables(
                        interp.index, lambda node, rel, scope, line: interp.value_of(
                            node, rel, scope, line, {}), methods, options.quantization_path)
                    for method, key in found.items():
                        classes[key] = classes.get(key, frozenset()) | {method}
            finally:
                self._classes = (classes, recorder.close(saved))
        else:
            recorder.add(self._classes[1])
        return self._classes[0]

    # -- a method object's parameter ----------------------------------------------
    def init_param(self, facts: FactsView, scope: str, name: str) -> Value | None:
        """``name``, a parameter of ``K.__init__``, as K's construction sites
        in its own directory bind it (None: not such a parameter)."""
        func = facts.function(scope)
        if func is None or not func.cls or func.name != "__init__" or not self.interpreter.options \
                .quantization:
            return None
        key = (facts.rel, func.cls, name)
        recorder = self.interpreter.stack.recorder
        known = self._params.get(key)
        if known is not None:
            recorder.add(known[1])
            return known[0]
        saved = recorder.open()
        try:
            value = self._init_param(facts, func.cls, list(func.params), name)
        finally:
            self._params[key] = (value, recorder.close(saved))
        return value

    def _init_param(self, facts: FactsView, cls: str, params: list[str], name: str
                    ) -> Value | None:
        classes = self.config_classes()
        directory = facts.rel.rsplit("/", 1)[0] + "/"
        if not any(rel.startswith(directory) for rel, _ in classes):
            return None
        positional = params[1:] if params and params[0] == "self" else params
        if name not in positional:
            return None
        position = positional.index(name)
        short = cls.rsplit(".", 1)[-1]
        interp = self.interpreter
        index = interp.index
        within = [rel for rel in index.tree.files if rel.startswith(directory)
                  and "/" not in rel[len(directory):]]
        alternatives: list[tuple[Predicate, Value]] = []
        covered: set[str] = set()
        for rel in index.grep([f"{short}("], within):
            site_facts = index.view(rel)
            if site_facts is None:
                continue
            for call in site_facts.calls:
                if call.func.rsplit(".", 1)[-1] != short or not call.scope:
                    continue
                func_node = parse_expr(call.func)
                callee = interp.value_of(func_node, rel, call.scope, call.line, {}) \
                    if func_node is not None else None
                if callee != ClassV(facts.rel, cls):
                    continue
                arg = call.args[position] if position < len(call.args) else dict(
                    call.kwargs).get(name)
                owner = enclosing_class(site_facts, call.scope)
                methods = classes.get((rel, owner), frozenset())
                built = UnkV(f"{short}({arg}) at {rel}:{call.line}")
                if methods and arg == "self":
                    covered |= methods
                    alternatives.append((QuantIs(methods), ConfigV(rel, owner)))
                elif methods:
                    # another config's methods build it with something else
                    alternatives.append((QuantIs(methods), built))
                else:
                    alternatives.append((Unknown(f"{short} built at {rel}:{call.line}"), built))
        if not covered:
            return None
        alternatives.append((neg(QuantIs(frozenset(covered))),
                             UnkV(f"{short} built by another method")))
        return AltV(tuple(alternatives))

    # -- the config object's attributes ---------------------------------------------
    def attribute(self, config: ConfigV, attr: str) -> Value:
        """``config.attr``: set once by its class's ``__init__`` from what
        ``from_config`` passes; ``ABSENT`` when nothing in the tree sets it."""
        interp = self.interpreter
        facts = interp.index.view(config.rel)
        if facts is None:
            return UnkV("config file not analysed")
        init = f"{config.qualname}.__init__"
        target = f"self.{attr}"
        later = [a for a in facts.in_scope("assigns", f"{config.qualname}.from_config")
                 if any(t.endswith(f".{attr}") and t != target for t in a.targets)]
        if later:
            # ``quant_config.is_w4a16 = quant_method == "W4A16_NVFP4"`` on the
            # object built, before it is returned
            node = parse_expr(later[-1].value)
            if len(later) != 1 or later[0].path or node is None:
                return UnkV(f"{config.qualname}.{attr} is set by from_config")
            return interp.value_of(node, config.rel, f"{config.qualname}.from_config",
                                   later[0].line, {})
        sets = [a for a in facts.in_tree("assigns", config.qualname) if target in a.targets]
        if not sets:
            return ABSENT if not self._set_by_bases(facts, config.qualname, target) else \
                UnkV(f"{config.qualname}.{attr} is set by a base class")
        if len(sets) != 1 or sets[0].scope != init or sets[0].path:
            return UnkV(f"{config.qualname}.{attr} is set on several paths")
        node = parse_expr(sets[0].value)
        if node is None:
            return UnkV(f"{config.qualname}.{attr}")
        return interp.value_of(node, config.rel, init, sets[0].line,
                               self._built_with(facts, config.qualname))

    def _set_by_bases(self, facts: FactsView, cls: str, target: str) -> bool:
        """Whether a base class of the tree (or one not read) may set ``target``."""
        interp = self.interpreter
        for klass in facts.classes:
            if klass.qualname != cls:
                continue
            for base in klass.bases:
                node = parse_expr(base)
                value = interp.value_of(node, facts.rel, "", klass.line, {}) \
                    if node is not None else UnkV("base")
                if not isinstance(value, ClassV):
                    return not base.endswith(("ABC", "object"))
                bfacts = interp.index.view(value.rel)
                if bfacts is None or any(target in a.targets for a in bfacts.in_tree(
                        "assigns", value.qualname)) or self._set_by_bases(
                        bfacts, value.qualname, target):
                    return True
        return False

    def _built_with(self, facts: FactsView, cls: str) -> dict[str, Value]:
        """``__init__``'s parameters as ``from_config``'s ``return cls(...)``
        binds them (its defaults for the rest)."""
        interp = self.interpreter
        init = facts.function(f"{cls}.__init__")
        if init is None:
            return {}
        env: dict[str, Value] = {}
        for pname, default in init.defaults:
            node = parse_expr(default)
            if node is not None:
                env[pname] = interp.value_of(node, facts.rel, init.qualname, init.line, {})
        scope = f"{cls}.from_config"
        returns = [r for r in facts.in_scope("returns", scope)]
        calls = [parse_expr(r.value) for r in returns]
        if len(calls) != 1 or not isinstance(calls[0], ast.Call) or not (
                isinstance(calls[0].func, ast.Name) and calls[0].func.id in (
                    "cls", cls.rsplit(".", 1)[-1])):
            return {p: UnkV(f"{p} as the config is built") for p in init.params if p != "self"}
        call, line = calls[0], returns[0].line
        params = [p for p in init.params if p != "self"]
        for pname, arg in zip(params, call.args):
            env[pname] = interp.value_of(arg, facts.rel, scope, line, {})
        for keyword in call.keywords:
            if keyword.arg:
                env[keyword.arg] = interp.value_of(keyword.value, facts.rel, scope, line, {})
        return env

    def getattr_value(self, base: Value, attr: str, default: Value | None) -> Value | None:
        """``getattr(base, "attr"[, default])`` of a config object (None: not one)."""
        if isinstance(base, AltV):
            parts = [(c, self.getattr_value(v, attr, default)) for c, v in base.alternatives]
            if not any(isinstance(v, ConfigV) for _, v in base.alternatives):
                return None
            out = tuple((c, v if v is not None else UnkV(f"getattr(.., {attr!r})"))
                        for c, v in parts)
            first = out[0][1]
            return first if all(v == first for _, v in out) else AltV(out)
        if not isinstance(base, ConfigV):
            return None
        value = self.attribute(base, attr)
        if value == ABSENT:
            return default if default is not None else UnkV(f"no attribute {attr}")
        return value

    # -- the checkpoint's method ------------------------------------------------------
    def checkpoint_field(self, node: ast.Call, scope: str) -> Value | None:
        """``cls.get_from_keys(config, ["quant_method"])`` in ``from_config``:
        the checkpoint's method, read as the ``--quantization`` value."""
        options = self.interpreter.options
        func = node.func
        if not (options.quantization and scope.endswith(".from_config")
                and isinstance(func, ast.Attribute) and func.attr in _KEY_READERS
                and len(node.args) >= 2):
            return None
        keys = node.args[1]
        if isinstance(keys, (ast.List, ast.Tuple)) and len(keys.elts) == 1 and isinstance(
                keys.elts[0], ast.Constant) and keys.elts[0].value == _METHOD_KEY:
            return OptV(options.quantization)
        return None


def substring_choices(needle: str, choices: tuple[str, ...]) -> frozenset[str]:
    """The choices ``needle`` is part of (``"mxfp8" in quantization``)."""
    return frozenset(c for c in choices if needle in c)

