"""guards (form): a property of the served model: MLA attention, ``model_type``, ``architectures``.

What it recognises:
    ``runner.use_mla_backend`` (any object's), ``<x>.attention_arch``
    compared with ``AttentionArch.MLA`` (``MHA``, ``SSM``...), and of
    ``<x>.hf_config`` / ``<x>.hf_text_config``: ``.model_type`` compared
    with a string or a tuple of them, ``"Name" in .architectures``, and
    ``.architectures[0]`` compared the same way (also of
    ``(.architectures or [None])``). Each is a ``ModelIs`` atom.
Why it matters:
    ``create_trtllm_mha_backend`` raises for an MLA model, the FA3 factory
    admits capability major 8 only without MLA, the DeepSeek-V4 hooks need
    ``model_type == "deepseek_v41"``: read as unknowns, such a gate was a
    caveat ("could raise depending on ? runner.use_mla_backend") that
    neither said which models it refuses nor could be decided. As a model
    atom it is judged for the common model, with what another model does in
    the verdict's conditions, and decided exactly where ``--model-config``
    names the model (``model_facts``).
Known limits:
    Only through these attribute names: a test of a model property by a
    helper that takes the config as a parameter (``is_deepseek_nsa(config)``
    reading ``config.architectures``) stays unknown, as do other properties
    (``is_hybrid_swa``, head counts, ``kv_lora_rank``). ``architectures[0]``
    is read as "one of the architectures" (a checkpoint names one).
Example:
    ``if runner.use_mla_backend: raise ValueError(...)`` is FALSE for a
    Llama checkpoint and TRUE for DeepSeek-V3's on every arch.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from guardscan.guards.forms.base import Example, GuardForm
from guardscan.guards.values import ConstV, FormValue, PredV, Value
from guardscan.predicate import ModelIs, Predicate, neg

if TYPE_CHECKING:
    from guardscan.guards.interpreter import Interpreter

__all__ = ["HfConfig", "ModelProperties"]

_MLA = ModelIs("attention_arch", frozenset({"MLA"}))
#: the class whose members ``attention_arch`` is compared with
_ARCH_ENUM = "AttentionArch"

_MODEL = "def f(runner, model_config, server_args):\n    pass\n"
_DEEPSEEK = (("architectures", "DeepseekV3ForCausalLM"), ("model_type", "deepseek_v3"),
             ("attention_arch", "MLA"))
_LLAMA = (("architectures", "LlamaForCausalLM"), ("model_type", "llama"),
          ("attention_arch", "MHA"))


@dataclass(frozen=True, slots=True)
class HfConfig(FormValue):
    """``<x>.hf_config``: the model's Hugging Face config; ``text``: its
    language model's part (``hf_text_config``, ``get_text_config()``)."""

    text: bool = False
    #: a function that returns it or ``None`` gives either, by the path taken
    #: (``guards.calls``)
    or_none: ClassVar[bool] = True


@dataclass(frozen=True, slots=True)
class _Property(FormValue):
    """A property of the model: ``model_type``, ``architectures`` (the
    list), ``architecture`` (its first item), ``attention_arch``."""

    prop: str


class ModelProperties(GuardForm):
    __doc__ = __doc__
    name = "model-properties"
    subjects = (_Property,)
    VALID = (
        Example(_MODEL, "runner.use_mla_backend", "TTTTTTTTT", scope="f", model=_DEEPSEEK),
        Example(_MODEL, "runner.use_mla_backend", "FFFFFFFFF", scope="f", model=_LLAMA),
        Example(_MODEL, "model_config.attention_arch == AttentionArch.MLA", "FFFFFFFFF",
                scope="f", model=_LLAMA),
        Example(_MODEL, 'model_config.hf_config.model_type != "deepseek_v41"', "TTTTTTTTT",
                scope="f", model=_DEEPSEEK),
        Example(_MODEL, '"DeepseekV3ForCausalLM" in model_config.hf_config.architectures',
                "TTTTTTTTT", scope="f", model=_DEEPSEEK),
        Example(_MODEL, 'model_config.hf_text_config.architectures[0] in ("A", "B")',
                "FFFFFFFFF", scope="f", model=_LLAMA),
        Example(_MODEL, '(model_config.hf_config.architectures or [None])[0] == '
                '"LlamaForCausalLM"', "TTTTTTTTT", scope="f", model=_LLAMA),
    )
    INVALID = (
        # no model named: unknown
        Example(_MODEL, "runner.use_mla_backend", scope="f"),
        # a property this form does not read
        Example(_MODEL, "model_config.is_hybrid_swa", scope="f", model=_LLAMA),
        Example(_MODEL, 'model_config.model_type == "llama"', scope="f", model=_LLAMA),
    )

    def attribute(self, ctx: Interpreter, base: Value, attr: str) -> Value | None:
        if attr == "use_mla_backend":
            return PredV(_MLA)
        if attr == "attention_arch":
            return _Property("attention_arch")
        if attr in ("hf_config", "hf_text_config"):
            return HfConfig(text=attr == "hf_text_config")
        if isinstance(base, HfConfig) and attr in ("model_type", "architectures"):
            return _Property(attr)
        return None

    def either(self, left: Value, right: Value) -> Value | None:
        # ``config.architectures or [None]``: a config without the list names
        # no architecture, and the stand-in list names none either
        if left == _Property("architectures") and isinstance(right, ConstV) and isinstance(
                right.value, tuple) and all(v is None for v in right.value):
            return left
        return None

    def subscript(self, base: Value, index: Value) -> Value | None:
        if base == _Property("architectures") and index == ConstV(0):
            return _Property("architecture")
        return None

    def compare(self, left: Value, op: str, right: Value, node: ast.AST) -> Predicate | None:
        if not isinstance(left, _Property):
            return None
        if left.prop == "attention_arch":
            members = _members(node)
            if not members or op not in ("==", "!=", "is", "is not", "in", "not in"):
                return None
            pred: Predicate = ModelIs("attention_arch", members)
            return neg(pred) if op in ("!=", "is not", "not in") else pred
        if not isinstance(right, ConstV):
            return None
        value = right.value
        if left.prop == "architectures":
            # ``"Name" in architectures``, turned around by the interpreter
            if op in ("in", "not in") and isinstance(value, str):
                pred = ModelIs("architectures", frozenset({value}))
                return pred if op == "in" else neg(pred)
            return None
        prop = "architectures" if left.prop == "architecture" else left.prop
        names = _strings(value, op)
        if names is None:
            return None
        pred = ModelIs(prop, names)
        return neg(pred) if op in ("!=", "not in") else pred


def _strings(value: object, op: str) -> frozenset[str] | None:
    """The names a comparison with ``value`` by ``op`` tests for."""
    if op in ("==", "!=") and isinstance(value, str):
        return frozenset({value})
    if op in ("in", "not in") and isinstance(value, (tuple, frozenset)) and value and all(
            isinstance(v, str) for v in value):
        return frozenset(value)
    return None


def _members(node: ast.AST) -> frozenset[str]:
    """The ``AttentionArch`` members a comparison names."""
    return frozenset(n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
                     and isinstance(n.value, ast.Name) and n.value.id == _ARCH_ENUM)
