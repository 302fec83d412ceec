"""guards (form): the model's config tested by its class: ``isinstance(config, Qwen3NextConfig | ...)``.

What it recognises:
    ``isinstance(<x>.hf_config, C)`` (and of ``hf_text_config`` or
    ``<x>.hf_config.get_text_config()``), ``C`` a class of the tree, a
    tuple of them or their union ``A | B``. Transformers builds a
    checkpoint's config as the class registered for its ``model_type``, so
    the test holds exactly for the model types of ``C`` and of every class
    of the tree derived from it: each class's ``model_type = "..."``
    attribute (its own, else its nearest base's in the tree). The config
    compared with ``None`` is not None, and is true as a condition; with
    ``guards.calls`` a helper that returns the config where such a test
    holds and ``None`` otherwise (``hybrid_gdn_config(model_config)``)
    becomes ``model_type in {...}`` when compared with ``None``.
Why it matters:
    SGLang routes hybrid models by their config class: on Blackwell,
    ``attn_backend_wrapper`` admits only a few attention backends for a
    hybrid GDN model (Qwen3-Next, Qwen3.5), under
    ``hybrid_gdn_config(runner.model_config) is not None``. Read as an
    unknown, every attention choice on Blackwell carried a caveat that
    depended on it for every model, and a Qwen3-Next checkpoint could not
    decide it. As a ``ModelIs`` atom it is false for the common model, the
    family is named in the verdict's conditions, and ``--model-config``
    decides it.
Known limits:
    A class outside the tree (transformers' own) or one with no
    ``model_type`` in the tree leaves the test unknown. Subclasses are
    found by a text search of the tree for ``class X(... C ...)`` and the
    base resolved in the file that names it, at most ``_DEPTH`` levels and
    ``_MOST`` classes. The text config is the checkpoint's
    ``text_config`` (``llm_config``, ``language_config``) where it has one
    with a ``model_type``, else the file's top level (``model_facts``).
Example:
    ``isinstance(model_config.hf_config.get_text_config(), Qwen3NextConfig)``
    is TRUE for a checkpoint whose text model type is ``qwen3_next`` or that
    of a subclass (``qwen3_5_text``), FALSE for Llama's, on every arch.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from guardscan.guards.forms.base import Example, GuardForm, builtin_name
from guardscan.guards.forms.model_properties import HfConfig
from guardscan.guards.values import ClassV, ConstV, FormValue, PredV, TupleV, Value
from guardscan.predicate import FALSE, TRUE, ModelIs, Predicate
from guardscan.syntax import parse_expr

if TYPE_CHECKING:
    from guardscan.guards.interpreter import Interpreter

__all__ = ["ModelConfigClasses"]

#: subclasses followed this many levels down, at most this many classes in all
_DEPTH = 4
_MOST = 64

_CONFIGS = (
    ("sglang/srt/configs/qwen3_next.py",
     ('class PretrainedConfig:\n    pass\n\n\n'
      'class Qwen3NextConfig(PretrainedConfig):\n    model_type = "qwen3_next"\n')),
    ("sglang/srt/configs/qwen3_5.py",
     ('from sglang.srt.configs.qwen3_next import Qwen3NextConfig\n\n\n'
      'class Qwen3_5TextConfig(Qwen3NextConfig):\n    model_type = "qwen3_5_text"\n\n\n'
      'class Qwen3_5MoeTextConfig(Qwen3_5TextConfig):\n    pass\n')),
)
_HELPER = (
    "from sglang.srt.configs.qwen3_next import Qwen3NextConfig\n"
    "from transformers import LlamaConfig\n\n\n"
    "def hybrid(model_config):\n"
    "    config = model_config.hf_config.get_text_config()\n"
    "    if isinstance(config, Qwen3NextConfig):\n"
    "        return config\n"
    "    return None\n\n\n"
    "def f(runner):\n    pass\n"
)
_QWEN_TEXT = (("architectures", "Qwen3_5ForConditionalGeneration"), ("model_type", "qwen3_5"),
              ("text_model_type", "qwen3_5_text"))
_LLAMA = (("architectures", "LlamaForCausalLM"), ("model_type", "llama"),
          ("text_model_type", "llama"))


@dataclass(frozen=True, slots=True)
class _TextConfigOf(FormValue):
    """``<config>.get_text_config``, not yet called."""


@dataclass(frozen=True, slots=True)
class _Classes(FormValue):
    """``A | B``: classes of the tree, as ``isinstance`` takes them."""

    classes: tuple[ClassV, ...]


class ModelConfigClasses(GuardForm):
    __doc__ = __doc__
    name = "model-config-classes"
    builtins = frozenset({"isinstance"})
    subjects = (HfConfig,)
    VALID = (
        Example(_HELPER, "hybrid(runner.model_config) is not None", "TTTTTTTTT", scope="f",
                files=_CONFIGS, model=_QWEN_TEXT),
        Example(_HELPER, "hybrid(runner.model_config) is not None", "FFFFFFFFF", scope="f",
                files=_CONFIGS, model=_LLAMA),
        Example(_HELPER, "isinstance(runner.model_config.hf_config, (Qwen3NextConfig,))",
                "FFFFFFFFF", scope="f", files=_CONFIGS, model=_QWEN_TEXT),
        Example(_HELPER, "not isinstance(runner.hf_text_config, Qwen3NextConfig | Qwen3NextConfig)",
                "FFFFFFFFF", scope="f", files=_CONFIGS, model=_QWEN_TEXT),
    )
    INVALID = (
        # no model named: unknown
        Example(_HELPER, "hybrid(runner.model_config) is not None", scope="f", files=_CONFIGS),
        # a class outside the tree
        Example(_HELPER, "isinstance(runner.model_config.hf_config, LlamaConfig)", scope="f",
                files=_CONFIGS, model=_LLAMA),
        # not the model's config
        Example(_HELPER, "isinstance(runner, Qwen3NextConfig)", scope="f", files=_CONFIGS,
                model=_LLAMA),
    )

    def attribute(self, ctx: Interpreter, base: Value, attr: str) -> Value | None:
        if isinstance(base, HfConfig) and attr == "get_text_config":
            return _TextConfigOf()
        return None

    def call_value(self, ctx: Interpreter, callee: Value, args: list[Value],
                   kwargs: dict[str, Value]) -> Value | None:
        if isinstance(callee, _TextConfigOf) and not args and not kwargs:
            return HfConfig(text=True)
        return None

    def binop(self, op: ast.operator, left: Value, right: Value) -> Value | None:
        if not isinstance(op, ast.BitOr):
            return None
        items = [_class_list(left), _class_list(right)]
        if any(i is None for i in items):
            return None
        return _Classes(tuple(c for i in items for c in i or ()))

    def call(self, ctx: Interpreter, path: str, args: list[Value],
             kwargs: dict[str, Value]) -> Value | None:
        if builtin_name(path) != "isinstance" or len(args) != 2 or kwargs or \
                not isinstance(args[0], HfConfig):
            return None
        classes = _class_list(args[1])
        if not classes:
            return None
        types: set[str] = set()
        for cls in classes:
            found = _model_types(ctx, cls)
            if found is None:
                return None
            types |= found
        prop = "text_model_type" if args[0].text else "model_type"
        return PredV(ModelIs(prop, frozenset(types)))

    def compare(self, left: Value, op: str, right: Value, node: ast.AST) -> Predicate | None:
        if isinstance(left, HfConfig) and right == ConstV(None) and op in (
                "is", "is not", "==", "!="):
            return TRUE if op in ("is not", "!=") else FALSE
        return None

    def truth(self, value: Value) -> Predicate | None:
        return TRUE if isinstance(value, HfConfig) else None


def _class_list(value: Value) -> tuple[ClassV, ...] | None:
    if isinstance(value, ClassV):
        return (value,)
    if isinstance(value, _Classes):
        return value.classes
    if isinstance(value, TupleV) and value.items and all(
            isinstance(i, ClassV) for i in value.items):
        return tuple(i for i in value.items if isinstance(i, ClassV))
    return None


def _model_types(ctx: Interpreter, cls: ClassV) -> set[str] | None:
    """The model types of ``cls`` and the tree's classes derived from it
    (None: one of them has none the tree gives)."""
    out: set[str] = set()
    seen = {cls}
    level = [cls]
    for _ in range(_DEPTH):
        below: list[ClassV] = []
        for each in level:
            own = _model_type(ctx, each)
            if own is None:
                return None
            out.add(own)
            below += [c for c in _subclasses(ctx, each) if c not in seen]
        seen.update(below)
        if len(seen) > _MOST:
            return None
        if not below:
            return out
        level = below
    return None


def _model_type(ctx: Interpreter, cls: ClassV, depth: int = _DEPTH) -> str | None:
    """``cls.model_type``: its own, else its nearest base's in the tree."""
    value = ctx.names.class_attr(cls, "model_type")
    if isinstance(value, ConstV) and isinstance(value.value, str):
        return value.value
    facts = ctx.index.view(cls.rel)
    if facts is None or depth <= 0:
        return None
    for fact in facts.classes:
        if fact.qualname == cls.qualname:
            for base in fact.bases:
                found = _resolve(ctx, cls.rel, base, fact.line)
                if found is not None:
                    return _model_type(ctx, found, depth - 1)
    return None


def _subclasses(ctx: Interpreter, cls: ClassV) -> list[ClassV]:
    """Classes of the tree whose bases name ``cls``."""
    name = cls.qualname.rsplit(".", 1)[-1]
    pattern = rb"class\s+\w+\s*\([^)]*\b" + re.escape(name.encode()) + rb"\b"
    out = []
    # the name first (a plain search of the tree's text is three times
    # faster than the class pattern), then the pattern in the files found
    for rel in ctx.index.grep_re(pattern, within=ctx.index.grep([name])):
        facts = ctx.index.view(rel)
        if facts is None:
            continue
        for fact in facts.classes:
            if any(b.rsplit(".", 1)[-1] == name and _resolve(ctx, rel, b, fact.line) == cls
                   for b in fact.bases):
                out.append(ClassV(rel, fact.qualname))
    return out


def _resolve(ctx: Interpreter, rel: str, text: str, line: int) -> ClassV | None:
    node = parse_expr(text)
    if not isinstance(node, (ast.Name, ast.Attribute)):
        return None
    value = ctx.value_of(node, rel, "", line, {})
    return value if isinstance(value, ClassV) else None
