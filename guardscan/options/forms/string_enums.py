"""options (form: string enums): string enums that model an option's choices,
``class MoeRunnerBackend(Enum): FLASHINFER_TRTLLM = "flashinfer_trtllm"``, and
their predicate methods (``is_flashinfer_trtllm``), which the link stage reads
as tests of a choice. The catalog ties them to options (``link_enums``)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial

from guardscan.index.extract import dotted
from guardscan.index.facts import ClassFact, FileFacts, FunctionFact
from guardscan.options.enum_classes import EnumReader
from guardscan.options.forms.base import FormContext, OptionForm
from guardscan.options.model import MIN_ENUM_OVERLAP, EnumInfo
from guardscan.results import OptionInfo
from guardscan.syntax import literal, parse_expr

__all__ = [
    "FORM",
    "EnumContext",
    "enum_member_sets",
    "find_enums",
    "recognise_enum",
    "recognise_enum_predicate",
]

# Text pre-filter: a file is parsed only when it mentions ``Enum`` and one of
# its classes, read as text (:func:`enum_member_sets`), has ``NAME = "value"``
# lines whose values overlap some option's choices by the linking threshold.
_ENUM_CLASS = re.compile(rb"^([ \t]*)class\s+\w+\s*\(([^)]*Enum[^)]*)\)\s*:", re.MULTILINE)
_MEMBER_LINE = re.compile(
    rb"""^([ \t]+)([A-Za-z]\w*)\s*=\s*[rRuU]?(["'])([^"'\\]*)\3\s*(?:#.*)?$""")


def recognise_enum(reader: EnumReader, facts: FileFacts, cls: ClassFact) -> EnumInfo | None:
    """A string enum and the predicate methods it (or a mixin base) defines.

    What it recognises:
        A class whose bases reach ``enum.Enum`` / ``enum.StrEnum`` (by
        qualified name, through aliases and in-tree enum bases), with members
        ``NAME = "value"``. Methods of the class and of its in-tree mixin
        bases are read by :func:`recognise_enum_predicate`.
    Why it matters:
        SGLang turns ``--moe-runner-backend`` into ``MoeRunnerBackend`` and
        then tests ``backend.is_flashinfer_trtllm()`` instead of comparing
        strings; the link stage must know which choices each test means.
    Known limits:
        Members with computed values (``auto()``, expressions) are not read;
        an enum without any string member is not returned. Int enums are not
        string enums.
    Example:
        ``class MoeRunnerBackend(Enum): AUTO = "auto"; FLASHINFER_TRTLLM =
        "flashinfer_trtllm"`` with ``def is_flashinfer_trtllm(self): return
        self == MoeRunnerBackend.FLASHINFER_TRTLLM``.
    """
    members = reader.members(facts, cls)
    if members is None:
        return None
    qualname = f"{facts.module}.{cls.qualname}"
    context = EnumContext(reader, qualname, cls.qualname.rpartition(".")[2], tuple(members),
                           reader.methods(facts, cls))
    predicates = []
    for name, (method_facts, method, _) in sorted(context.methods.items(),
                                                  key=lambda kv: (kv[1][0].rel, kv[1][1].line)):
        values = recognise_enum_predicate(context, method_facts, method)
        if values is not None:
            predicates.append((name, values))
    return EnumInfo(qualname, facts.rel, cls.line, tuple(members), tuple(predicates))


@dataclass
class EnumContext:
    reader: EnumReader
    qualname: str
    name: str
    members: tuple[tuple[str, str], ...]
    methods: dict[str, tuple[FileFacts, FunctionFact, str]]
    memo: dict[str, frozenset[str] | None] = field(default_factory=dict)

    @property
    def values(self) -> frozenset[str]:
        return frozenset(v for _, v in self.members)


def recognise_enum_predicate(context: EnumContext, facts: FileFacts,
                             method: FunctionFact) -> frozenset[str] | None:
    """The values for which an enum method returns true.

    What it recognises:
        A method whose body is one unconditional ``return`` of a test of
        ``self``: ``self == E.M`` / ``self is E.M`` / ``!=``;
        ``self in (E.A, E.B)`` / ``not in``; ``self.value == E.M.value`` or
        ``== "literal"``; ``self.value.startswith("p")`` / ``endswith`` (over
        the member values); calls of other such predicates
        (``self.is_marlin()``); ``and`` / ``or`` / ``not`` of these. In an
        ``and``, parts that do not test ``self`` (an environment flag) are
        left out: the values are those the method can be true for.
    Why it matters:
        ``if backend.is_flashinfer_trtllm():`` is how SGLang code selects a
        choice; mapping the method to ``{"flashinfer_trtllm"}`` lets the link
        stage find the code a choice runs.
    Known limits:
        Bodies with branches, several returns, or tests it cannot read give
        None (the method is skipped), never a guess.
    Example:
        ``def is_lora(self): return self.value in (MoeRunnerBackend.LORA_CUTEDSL.value,
        MoeRunnerBackend.LORA_TRITON.value)`` -> ``{"lora_cutedsl", "lora_triton"}``.
    """
    if method.name in context.memo:
        return context.memo[method.name]
    context.memo[method.name] = None  # cycle guard
    result: frozenset[str] | None = None
    decorators = {d.split("(")[0].rpartition(".")[2] for d, _ in method.decorators}
    if method.params and method.params[0] == "self" and not decorators & {
            "staticmethod", "classmethod"}:
        returns = [r for r in facts.returns if r.scope == method.qualname]
        branches = any(s == method.qualname for s in facts.cond_scope)
        if len(returns) == 1 and not returns[0].path and not branches:
            result = _test_values(context, facts, parse_expr(returns[0].value))
    context.memo[method.name] = result
    return result


def _mentions_self(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Name) and n.id == "self" for n in ast.walk(node))


def _is_self_value(node: ast.AST) -> bool:
    if isinstance(node, ast.Name) and node.id == "self":
        return True
    return (isinstance(node, ast.Attribute) and node.attr in ("value", "_value_")
            and isinstance(node.value, ast.Name) and node.value.id == "self")


def _member_refs(context: EnumContext, facts: FileFacts, node: ast.AST,
                 ) -> frozenset[str] | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return frozenset({node.value}) & context.values
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        out: set[str] = set()
        for element in node.elts:
            part = _member_refs(context, facts, element)
            if part is None:
                return None
            out |= part
        return frozenset(out)
    if isinstance(node, ast.Attribute) and node.attr == "value":
        return _member_refs(context, facts, node.value)
    if isinstance(node, ast.Attribute) and isinstance(node.value, (ast.Name, ast.Attribute)):
        owner = dotted(node.value)
        if owner is None:
            return None
        by_name = dict(context.members)
        if node.attr not in by_name:
            return None
        if owner.rpartition(".")[2] == context.name or owner == "cls" or \
                context.reader.names.qualname(facts.module, node.value) == context.qualname:
            return frozenset({by_name[node.attr]})
    return None


def _test_values(context: EnumContext, facts: FileFacts,
                 node: ast.AST | None) -> frozenset[str] | None:
    everything = context.values
    if node is None:
        return None
    if isinstance(node, ast.BoolOp):
        parts = [(p, _test_values(context, facts, p) if _mentions_self(p) else None)
                 for p in node.values]
        if isinstance(node.op, ast.And):
            tested = [values for p, values in parts if _mentions_self(p)]
            known = [values for values in tested if values is not None]
            if not tested or len(known) != len(tested):
                return None
            out = everything
            for values in known:
                out = out & values
            return out
        if any(values is None for _, values in parts):
            return None
        return frozenset().union(*(v for _, v in parts if v is not None))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = _test_values(context, facts, node.operand)
        return None if inner is None else everything - inner
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left, op, right = node.left, node.ops[0], node.comparators[0]
        if not _is_self_value(left) and _is_self_value(right) and isinstance(
                op, (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)):
            left, right = right, left
        if not _is_self_value(left):
            return None
        refs = _member_refs(context, facts, right)
        if refs is None:
            return None
        if isinstance(op, (ast.Eq, ast.Is)) and len(refs) <= 1 \
                and not isinstance(right, (ast.Tuple, ast.List, ast.Set)):
            return refs
        if isinstance(op, (ast.NotEq, ast.IsNot)) and len(refs) <= 1 \
                and not isinstance(right, (ast.Tuple, ast.List, ast.Set)):
            return everything - refs
        if isinstance(op, ast.In):
            return refs
        if isinstance(op, ast.NotIn):
            return everything - refs
        return None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.keywords:
        target, method = node.func.value, node.func.attr
        if method in ("startswith", "endswith") and _is_self_value(target) and len(node.args) == 1:
            affix = literal(node.args[0])
            affixes = (affix,) if isinstance(affix, str) else affix
            if isinstance(affixes, tuple) and all(isinstance(a, str) for a in affixes):
                return frozenset(v for v in everything
                                 if getattr(v, method)(affixes))
            return None
        if isinstance(target, ast.Name) and target.id == "self" and not node.args \
                and method in context.methods:
            method_facts, method_fact, _ = context.methods[method]
            return recognise_enum_predicate(context, method_facts, method_fact)
    return None


def find_enums(context: FormContext, options: Sequence[OptionInfo]) -> list[EnumInfo]:
    """String enums that could model an option, and the others in their files.

    A file is parsed only when it mentions ``Enum`` and one of its classes,
    read as text, has ``NAME = "value"`` lines whose values overlap some
    option's choices by the linking threshold. The recogniser then decides
    from facts; enums that a text reading cannot see (values built by
    expressions) are not looked for, as they could not be linked anyway.
    """
    index = context.index
    choice_sets = [frozenset(o.choices) for o in options if o.choices]
    if not choice_sets:
        return []
    out = []
    for rel in index.grep(["Enum"]):
        member_sets = index.text_answer(rel, enum_member_sets)
        if not any(_overlaps(values, choice_sets) for values in member_sets):
            continue
        facts = context.facts_or_report(rel)
        if facts is None:
            continue
        for cls in facts.classes:
            info = context.guarded(facts.rel, cls.line, cls.qualname,
                                   partial(recognise_enum, context.enum_reader, facts, cls))
            if info is not None:
                out.append(info)
    out.sort(key=lambda e: (e.rel, e.line))
    return out


def _overlaps(values: frozenset[str], choice_sets: Sequence[frozenset[str]]) -> bool:
    return any(len(values & c) >= MIN_ENUM_OVERLAP * len(values | c) for c in choice_sets)


def enum_member_sets(data: bytes) -> tuple[frozenset[str], ...]:
    """``_class_string_members``, as a value (for ``Index.text_answer``)."""
    return tuple(_class_string_members(data))


def _class_string_members(data: bytes) -> Iterator[frozenset[str]]:
    """For each class whose bases name an ``...Enum``, the string values of
    ``NAME = "value"`` lines at the first indentation of its body."""
    for header in _ENUM_CLASS.finditer(data):
        outer = len(header.group(1).expandtabs())
        body: int | None = None
        values: set[str] = set()
        for following in data[header.end():].split(b"\n")[1:]:
            stripped = following.strip()
            if not stripped or stripped.startswith(b"#"):
                continue
            indent = len(following) - len(following.lstrip())
            if indent <= outer:
                break
            if body is None:
                body = indent
            if indent != body or b"=" not in following:
                continue
            member = _MEMBER_LINE.match(following)
            if member is not None:
                values.add(member.group(4).decode("utf-8", "replace"))
        if values:
            yield frozenset(values)


FORM = OptionForm("string enums", (recognise_enum, recognise_enum_predicate),
                  find_enums=find_enums)
