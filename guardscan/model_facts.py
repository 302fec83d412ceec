"""verdict inputs (the model): which model a launch serves, and what a gate that tests it comes to.

Some of SGLang's gates test the model, not the GPU: ``create_trtllm_mla_backend``
raises ``"trtllm_mla backend can only be used with MLA models"`` unless
``runner.use_mla_backend``; the FA3 factory admits capability major 8 only
for a model without MLA; the DeepSeek-V4 hooks require ``model_type ==
"deepseek_v41"``. The guard interpreter reads those tests as ``ModelIs``
atoms (``guards.forms.model_properties``); this module says what they come
to when a verdict is judged:

- **without a model** (the scan, ``explain``): for the common model, one of
  no special architecture and without MLA attention, so every ``ModelIs``
  is false, except what the choice itself is for (``needs``: a choice whose
  own gate rejects every other model on every arch, ``trtllm_mla`` and MLA,
  is judged for the models it takes). What another model would do is said
  in the verdict's conditions (``verdict.values``: ``blocked with an MLA
  model``), as for a mode option's other values;
- **with a model** (``--model-config FILE``, or in ``check`` a local
  ``--model-path`` holding a ``config.json``): each atom from that file,
  read as JSON, never through transformers. ``architectures`` and
  ``model_type`` are read as written; ``attention_arch`` as the scanned
  release's own ``ModelConfig`` derives it: the ``self.attention_arch =
  AttentionArch.X`` assignments of ``configs/model_config.py`` and the
  ``if`` / ``elif`` tests above them, evaluated on the file
  (``"DeepseekV3ForCausalLM" in self.hf_config.architectures``,
  ``getattr(self.hf_text_config, "kv_lora_rank", None) is not None``).
  A test it cannot evaluate there leaves every branch it guards possible,
  and the atom unknown where the branches disagree.

Known limits: the text config of a multimodal checkpoint is taken from
``text_config``, ``llm_config`` or ``language_config``, else the file's top
level (``text_model_type``: its ``model_type``, which a test of the config's
class reads, ``guards.forms.model_config_classes``); SGLang's per-model
config classes (which may rename keys) are not read; any other property
stays an unknown guard.

>>> mla = ModelIs("attention_arch", frozenset({"MLA"}))
>>> ModelView().test(mla), ModelView(needs=(mla,)).test(mla)
(<Tri.FALSE: 'false'>, <Tri.TRUE: 'true'>)
>>> facts = ModelFacts("config.json", "deepseek_v3", ("DeepseekV3ForCausalLM",), frozenset({"MLA"}))
>>> ModelView(facts).test(mla), ModelView(facts).test(ModelIs("model_type", frozenset({"llama"})))
(<Tri.TRUE: 'true'>, <Tri.FALSE: 'false'>)
>>> phrase(mla), phrase(ModelIs("model_type", frozenset({"deepseek_v41"})))
('an MLA model', 'a model of model_type deepseek_v41')
>>> phrase(ModelIs("architectures", frozenset({"A", "B", "C"})))
'a model of 3 architectures (A, B, ...)'
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from guardscan.predicate import ModelIs, Predicate, Tri, leaves

__all__ = ["MODEL_CONFIG_FILE", "ModelFacts", "ModelView", "attention_archs", "mentions_model",
           "phrase", "read_model"]

#: where the release's ModelConfig derives ``attention_arch`` (under the package)
MODEL_CONFIG_FILE = "srt/configs/model_config.py"

#: at most this many architectures named in a condition (``explain`` shows all)
_NAMED = 2

#: where a multimodal checkpoint keeps its language model's config
_TEXT_CONFIG_KEYS = ("text_config", "llm_config", "language_config")


@dataclass(frozen=True, slots=True)
class ModelFacts:
    """What a model's ``config.json`` says, as the scanned release reads it:
    ``attention_arch`` the values the release's ModelConfig can give it for
    this file (None: the release's derivation was not found)."""

    config: str
    model_type: str | None
    architectures: tuple[str, ...]
    attention_arch: frozenset[str] | None = None
    #: the model type of its language model's part (``text_config``...), else
    #: ``model_type``
    text_model_type: str | None = None

    def test(self, atom: ModelIs) -> Tri:
        if atom.prop in ("model_type", "text_model_type"):
            held = self.model_type if atom.prop == "model_type" else self.text_model_type
            return Tri.UNKNOWN if held is None else Tri.of(held in atom.values)
        if atom.prop == "architectures":
            return Tri.of(any(a in atom.values for a in self.architectures))
        if atom.prop == "attention_arch" and self.attention_arch:
            if self.attention_arch <= atom.values:
                return Tri.TRUE
            return Tri.FALSE if not self.attention_arch & atom.values else Tri.UNKNOWN
        return Tri.UNKNOWN

    def key(self) -> tuple[object, ...]:
        """What decides a verdict, for the result cache's key."""
        return (self.model_type, self.architectures,
                tuple(sorted(self.attention_arch)) if self.attention_arch is not None else None,
                self.text_model_type)

    def describe(self) -> str:
        arch = ", ".join(self.architectures) or "no architectures"
        attention = "/".join(sorted(self.attention_arch)) if self.attention_arch else "unknown"
        return (f"{self.config}: {arch} (model_type {self.model_type or 'not given'}, "
                f"attention {attention})")


@dataclass(frozen=True, slots=True)
class ModelView:
    """The model a verdict is judged for: ``facts`` when the launch names
    one, else the common model (every ``ModelIs`` false), except the atoms
    in ``needs``, taken as holding (what the choice is for, or the other
    model a condition tries)."""

    facts: ModelFacts | None = None
    needs: tuple[ModelIs, ...] = ()

    def test(self, atom: ModelIs) -> Tri:
        if atom in self.needs:
            return Tri.TRUE
        if self.facts is not None:
            return self.facts.test(atom)
        return Tri.FALSE


def phrase(atom: ModelIs) -> str:
    """The models ``atom`` holds for, as a condition names them."""
    names = ", ".join(sorted(atom.values))
    if atom.prop == "attention_arch":
        if atom.values == {"MLA"}:
            return "an MLA model"
        return f"a model with {' or '.join(sorted(atom.values))} attention"
    if atom.prop == "architectures":
        if len(atom.values) == 1:
            return f"a {names} model"
        if len(atom.values) > _NAMED:
            shown = ", ".join(sorted(atom.values)[:_NAMED])
            return f"a model of {len(atom.values)} architectures ({shown}, ...)"
        return f"a model of {{{names}}}"
    prop = "model_type" if atom.prop == "model_type" else "text model_type"
    if len(atom.values) > _NAMED:
        shown = ", ".join(sorted(atom.values)[:_NAMED])
        return f"a model of {len(atom.values)} {prop}s ({shown}, ...)"
    return f"a model of {prop} {names}" if len(atom.values) == 1 else (
        f"a model of {prop} in {{{names}}}")


def read_model(path: Path, package_root: Path | None) -> ModelFacts | str:
    """The facts of the model whose ``config.json`` is ``path``, with the
    attention the release under ``package_root`` derives for it (None: not
    derived); a string says why the file could not be read."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        return f"could not be read ({exc.__class__.__name__})"
    except json.JSONDecodeError as exc:
        return f"is not JSON (line {exc.lineno})"
    if not isinstance(data, dict):
        return "is not a JSON object"
    archs = data.get("architectures")
    architectures = tuple(a for a in archs if isinstance(a, str)) if isinstance(
        archs, list) else ()
    model_type = data.get("model_type")
    attention = None
    if package_root is not None:
        source = package_root / MODEL_CONFIG_FILE
        try:
            text = source.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            text = None
        if text is not None:
            attention = attention_archs(text, data)
    model_type = model_type if isinstance(model_type, str) else None
    text_type = _text_config(data).get("model_type")
    return ModelFacts(str(path), model_type, architectures, attention,
                      text_type if isinstance(text_type, str) else model_type)


# -- the release's derivation of attention_arch --------------------------------

#: a value the small evaluator below cannot tell
_UNSURE = object()


def attention_archs(source: str, config: Mapping[str, object]) -> frozenset[str] | None:
    """The values ``self.attention_arch`` can end with, for ``config``, in
    the ModelConfig of ``source`` (each method that assigns it walked from
    its start: a test this module cannot evaluate keeps both ways); None
    where no method assigns it, or the source does not parse.

    >>> src = '''class ModelConfig:
    ...     def _derive(self):
    ...         if "DeepseekV3ForCausalLM" in self.hf_config.architectures or (
    ...             getattr(self.hf_text_config, "kv_lora_rank", None) is not None
    ...             and "Pixtral" in self.hf_config.architectures):
    ...             self.attention_arch = AttentionArch.MLA
    ...         else:
    ...             if is_pure_ssm:
    ...                 self.attention_arch = AttentionArch.SSM
    ...             else:
    ...                 self.attention_arch = AttentionArch.MHA
    ... '''
    >>> sorted(attention_archs(src, {"architectures": ["DeepseekV3ForCausalLM"]}))
    ['MLA']
    >>> sorted(attention_archs(src, {"architectures": ["LlamaForCausalLM"]}))
    ['MHA', 'SSM']
    >>> sorted(attention_archs(src, {"architectures": ["Pixtral"], "text_config": {"kv_lora_rank": 512}}))
    ['MLA']
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _assigns(node):
            found |= {v for v in _walk(node.body, frozenset({""}), config) if v}
    return frozenset(found) or None


def _assigns(func: ast.AST) -> bool:
    return any(isinstance(n, ast.Assign) and _arch_value(n) is not None for n in ast.walk(func))


def _arch_value(node: ast.Assign) -> str | None:
    """``X`` of ``self.attention_arch = AttentionArch.X``."""
    if len(node.targets) == 1 and isinstance(node.targets[0], ast.Attribute) and \
            node.targets[0].attr == "attention_arch" and isinstance(node.value, ast.Attribute):
        return node.value.attr
    return None


def _walk(body: Iterable[ast.stmt], state: frozenset[str],
          config: Mapping[str, object]) -> frozenset[str]:
    """The values the attribute can hold after ``body`` ("" for unset)."""
    for stmt in body:
        if isinstance(stmt, ast.Assign) and (value := _arch_value(stmt)) is not None:
            state = frozenset({value})
        elif isinstance(stmt, ast.If):
            test = _truth(_eval(stmt.test, config))
            if test is True:
                state = _walk(stmt.body, state, config)
            elif test is False:
                state = _walk(stmt.orelse, state, config)
            else:
                state = _walk(stmt.body, state, config) | _walk(stmt.orelse, state, config)
        elif isinstance(stmt, (ast.With, ast.Try)):
            state = _walk(stmt.body, state, config)
    return state


def _text_config(config: Mapping[str, object]) -> Mapping[str, object]:
    for key in _TEXT_CONFIG_KEYS:
        inner = config.get(key)
        if isinstance(inner, dict):
            return inner
    return config


def _config_of(node: ast.expr, config: Mapping[str, object]) -> Mapping[str, object] | None:
    """The part of the file ``self.hf_config`` / ``self.hf_text_config`` is."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
            node.value.id == "self":
        if node.attr == "hf_config":
            return config
        if node.attr == "hf_text_config":
            return _text_config(config)
    return None


def _truth(value: object) -> bool | None:
    if value is _UNSURE:
        return None
    try:
        return bool(value)
    except Exception:  # noqa: BLE001 - any value of a JSON file
        return None


def _eval(node: ast.expr, config: Mapping[str, object]) -> object:
    """The value of a test over the config file, or ``_UNSURE``."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.BoolOp):
        results = [_truth(_eval(v, config)) for v in node.values]
        stop = isinstance(node.op, ast.Or)
        if stop in results:
            return stop
        return _UNSURE if None in results else not stop
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = _truth(_eval(node.operand, config))
        return _UNSURE if inner is None else not inner
    if isinstance(node, ast.Attribute):
        part = _config_of(node.value, config)
        if part is not None:
            return part.get(node.attr, _UNSURE)
        return _UNSURE
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            node.func.id in ("getattr", "hasattr") and len(node.args) >= 2:
        part = _config_of(node.args[0], config)
        key = node.args[1]
        if part is None or not isinstance(key, ast.Constant) or not isinstance(key.value, str):
            return _UNSURE
        if node.func.id == "hasattr":
            return key.value in part
        default = _eval(node.args[2], config) if len(node.args) > 2 else _UNSURE
        return part.get(key.value, default)
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left, right = _eval(node.left, config), _eval(node.comparators[0], config)
        if left is _UNSURE or right is _UNSURE:
            return _UNSURE
        op = node.ops[0]
        try:
            if isinstance(op, ast.In):
                return left in right  # type: ignore[operator]
            if isinstance(op, ast.NotIn):
                return left not in right  # type: ignore[operator]
            if isinstance(op, (ast.Is, ast.Eq)):
                return left == right if isinstance(op, ast.Eq) else left is right
            if isinstance(op, (ast.IsNot, ast.NotEq)):
                return left != right if isinstance(op, ast.NotEq) else left is not right
        except TypeError:
            return _UNSURE
    return _UNSURE


def mentions_model(pred: Predicate) -> bool:
    """Whether ``pred`` tests a property of the model (a ``ModelIs`` leaf):
    a failure that does is kept as a gate like a device-tested one.

    >>> from guardscan.predicate import Unknown, conj
    >>> mentions_model(conj(ModelIs("attention_arch", frozenset({"MLA"})), Unknown("x")))
    True
    """
    return any(isinstance(a, ModelIs) for a in leaves(pred))
