"""options (form: annotated fields): class fields annotated with CLI
metadata, ``moe_runner_backend: A[str, Arg(choices=...)] = "auto"`` (SGLang
0.5.23 ``srt/arg_groups/fields/*.py``), with the tree's own field-to-flag rule
(``arg_utils._field_to_cli_name``)."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from guardscan.index.facts import AssignFact, FileFacts
from guardscan.messages import diagnostic
from guardscan.names import Names
from guardscan.options.forms.base import FormContext, OptionForm
from guardscan.options.model import OptionDefinition, is_catalog_flag, string_value
from guardscan.options.values import choice_item
from guardscan.results import Diagnostic
from guardscan.syntax import literal, parse_expr

__all__ = [
    "DEFAULT_CLI_NAME_RULE",
    "FORM",
    "CliNameRule",
    "find_fields",
    "recognise_annotated_field",
    "recognise_cli_name_rule",
]

# Text pre-filter: a file is parsed only when its bytes hold ``_backend: A[``
# (or ``quantization: A[``) for ``Annotated`` or a name the tree binds to it,
# or a ``cli_name="--x-backend"`` argument. It may let through more than the
# recogniser accepts, never less for the usual spellings.
_FIELD_TOKENS = ("_backend", "quantization", "cli_name")
_ANNOTATED_ALIAS = re.compile(rb"^(\w+)\s*=\s*(?:typing\.|typing_extensions\.)?Annotated\s*$",
                              re.MULTILINE)
_CLI_NAME_TEXT = re.compile(rb"""cli_name\s*=\s*["']--[\w-]*-backend["']""")

#: Qualified names of the typing forms read in a field's annotation.
_ANNOTATED = frozenset({"typing.Annotated", "typing_extensions.Annotated"})
_OPTIONAL = frozenset({"typing.Optional"})
_UNION = frozenset({"typing.Union"})
_LITERAL = frozenset({"typing.Literal", "typing_extensions.Literal"})
_LIST_TYPES = frozenset({"typing.List", "list", "typing.Sequence", "typing.Tuple", "tuple"})


@dataclass(frozen=True, slots=True)
class CliNameRule:
    """A field-name -> flag rule read from the tree (``_field_to_cli_name``)."""

    steps: tuple[tuple[str, tuple[str, ...]], ...]  # ("prefix", (s,)) / ("replace", (a, b)) ...
    where: str = ""

    def apply(self, name: str) -> str:
        value = name
        for op, args in self.steps:
            if op == "prefix":
                value = args[0] + value
            elif op == "suffix":
                value = value + args[0]
            elif op == "replace":
                value = value.replace(args[0], args[1])
            elif op in ("lower", "upper", "strip", "lstrip", "rstrip"):
                value = getattr(value, op)(*args)
        return value


#: argparse's own convention, used when the tree defines no rule of its own.
DEFAULT_CLI_NAME_RULE = CliNameRule((("replace", ("_", "-")), ("prefix", ("--",))))


def recognise_cli_name_rule(names: Names, module: str,
                            diagnostics: list[Diagnostic]) -> CliNameRule:
    """How the tree turns a field name into its command-line flag.

    What it recognises:
        A module-level function in the module that defines the ``Arg``
        metadata class, named ``*cli_name*``, taking one parameter and
        returning one expression built from string literals, the parameter,
        ``+``, f-strings and ``.replace(a, b)`` / ``.lower()`` / ``.strip()``.
    Why it matters:
        0.5.23 fields have no flag in the source unless ``cli_name=`` is given;
        the flag comes from ``arg_utils._field_to_cli_name``, whose rule is
        the tree's, not ours.
    Known limits:
        Other shapes of the rule give a ``cli-name-rule`` diagnostic and the
        argparse convention (``"--" + name.replace("_", "-")``), which is
        also used when no such function is found.
    Example:
        ``def _field_to_cli_name(name): return "--" + name.replace("_", "-")``
        makes ``moe_runner_backend`` the flag ``--moe-runner-backend``.
    """
    facts = names.facts(module)
    if facts is None:
        return DEFAULT_CLI_NAME_RULE
    for func in facts.functions:
        if func.scope or "cli_name" not in func.name or len(func.params) != 1:
            continue
        returns = [r for r in facts.returns if r.scope == func.qualname]
        steps = _string_steps(parse_expr(returns[0].value), func.params[0]) \
            if len(returns) == 1 and not returns[0].path else None
        if steps is None:
            diagnostics.append(diagnostic(facts.rel, func.line, "cli-name-rule",
                                           name=func.name, module=module))
            return DEFAULT_CLI_NAME_RULE
        return CliNameRule(tuple(steps), f"{facts.rel}:{func.line}")
    return DEFAULT_CLI_NAME_RULE


def _string_steps(node: ast.AST | None, param: str) -> list[tuple[str, tuple[str, ...]]] | None:
    if isinstance(node, ast.Name) and node.id == param:
        return []
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = literal(node.left), literal(node.right)
        if isinstance(left, str):
            inner = _string_steps(node.right, param)
            return None if inner is None else [*inner, ("prefix", (left,))]
        if isinstance(right, str):
            inner = _string_steps(node.left, param)
            return None if inner is None else [*inner, ("suffix", (right,))]
        return None
    if isinstance(node, ast.JoinedStr):
        values = node.values
        holes = [i for i, v in enumerate(values) if isinstance(v, ast.FormattedValue)]
        if len(holes) != 1:
            return None
        hole = values[holes[0]]
        assert isinstance(hole, ast.FormattedValue)
        inner = _string_steps(hole.value, param)
        before = "".join(str(v.value) for v in values[: holes[0]] if isinstance(v, ast.Constant))
        after = "".join(str(v.value) for v in values[holes[0] + 1:] if isinstance(v, ast.Constant))
        if inner is None or hole.format_spec is not None or hole.conversion != -1:
            return None
        return [*inner, ("prefix", (before,)), ("suffix", (after,))]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.keywords:
        args = [literal(a) for a in node.args]
        if not all(isinstance(a, str) for a in args):
            return None
        method = node.func.attr
        if method == "replace" and len(args) == 2 or method in (
                "lower", "upper") and not args or method in ("strip", "lstrip", "rstrip"):
            inner = _string_steps(node.func.value, param)
            return None if inner is None else [*inner, (method, tuple(str(a) for a in args))]
    return None


_ARG_META_FIELDS = frozenset({"choices", "cli_name", "no_cli"})


def recognise_annotated_field(names: Names, facts: FileFacts, assign: AssignFact,
                              rules: Callable[[str], CliNameRule]) -> OptionDefinition | None:
    """A class field annotated with CLI metadata that defines a backend option.

    What it recognises:
        ``name: A[T, Arg(help=..., choices=EXPR, cli_name="--...")] = default``
        and ``name: A[Literal["a", "b"], "help text"] = default`` in a class
        body, where ``A`` resolves to ``typing.Annotated`` (directly or through
        an alias such as ``A = Annotated`` in another module). The metadata is
        the first string, or the first call of a class whose own fields include
        ``choices`` / ``cli_name`` (the tree's ``Arg``). The flag is
        ``cli_name=`` or the tree's field-to-flag rule; ``no_cli=True`` fields
        have no flag and are skipped. Choices are ``choices=`` (which wins, as
        in the tree's ``arg_utils``) or the ``Literal[...]`` values, through
        ``Optional[...]`` / ``X | None``. The dest is the field name.
    Why it matters:
        SGLang 0.5.23 declares its server options as msgspec Struct fields in
        ``srt/arg_groups/fields/*.py`` and derives argparse calls at run time.
    Known limits:
        Fields registered by code (``fields=[...]`` subsets, dynamic classes)
        are read as declared. Aliases (``aliases=[...]``) are kept for
        ``by_flag`` lookups only.
    Example:
        ``moe_runner_backend: A[str, Arg(help="Choose the runner backend for
        MoE.", choices=MOE_RUNNER_BACKEND_CHOICES, resolvable=True)] = "auto"``
        is ``--moe-runner-backend`` with the choices of that constant.
    """
    if not assign.annotation or not assign.scope or len(assign.targets) != 1:
        return None
    field_name = assign.targets[0]
    if not field_name.isidentifier():
        return None
    node = parse_expr(assign.annotation)
    if not isinstance(node, ast.Subscript):
        return None
    if names.qualname(facts.module, node.value, "") not in _ANNOTATED:
        return None
    parts = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
    if len(parts) < 2:
        return None
    inner, metadata = parts[0], parts[1:]
    help_text = ""
    kwargs: dict[str, ast.expr] = {}
    meta_module: str | None = None
    for item in metadata:
        text = string_value(item)
        if text is not None:
            help_text = text
            break
        if isinstance(item, ast.Call):
            meta_module = _arg_meta_module(names, facts.module, item)
            if meta_module is not None:
                kwargs = {k.arg: k.value for k in item.keywords if k.arg}
                if item.args:
                    first = string_value(item.args[0])
                    help_text = first or ""
                help_text = string_value(kwargs.get("help")) or help_text
                break
    else:
        return None
    if literal(kwargs.get("no_cli")) is True:
        return None
    cli_name = literal(kwargs.get("cli_name"))
    rule = rules(meta_module) if meta_module is not None else DEFAULT_CLI_NAME_RULE
    flag = cli_name if isinstance(cli_name, str) else rule.apply(field_name)
    if not is_catalog_flag(flag):
        return None
    choices_node = kwargs.get("choices")
    if choices_node is not None and literal(choices_node) is None:
        choices_node = None
    literal_choices: tuple[str, ...] = ()
    if choices_node is None:
        found = _literal_values(names, facts.module, inner)
        if found is None:
            return None  # free-form: no finite choices
        literal_choices = found
    aliases = literal(kwargs.get("aliases"))
    return OptionDefinition(
        flag=flag,
        dest=field_name,
        rel=facts.rel,
        line=assign.line,
        module=facts.module,
        scope=assign.scope,
        choices_text=ast.unparse(choices_node) if choices_node is not None else None,
        literal_choices=literal_choices,
        help=help_text,
        default=assign.value or None,
        aliases=tuple(a for a in aliases if isinstance(a, str))
        if isinstance(aliases, (list, tuple)) else (),
    )


def _arg_meta_module(names: Names, module: str, call: ast.Call) -> str | None:
    """The module defining the metadata class of ``call``, when that class is
    the CLI metadata kind (its fields include ``choices`` or ``cli_name``); a
    call that resolves nowhere counts when it passes such keywords."""
    binding = names.resolve(module, call.func)
    found = names.class_fact(binding) if binding is not None else None
    if found is None:
        keywords = {k.arg for k in call.keywords}
        return module if keywords & (_ARG_META_FIELDS | {"help"}) else None
    facts, cls = found
    fields = {t for a in facts.assigns if a.scope == cls.qualname for t in a.targets}
    return facts.module if fields & _ARG_META_FIELDS else None


def _literal_values(names: Names, module: str, node: ast.expr) -> tuple[str, ...] | None:
    """Values of ``Literal[...]`` inside ``T`` (through Optional / Union / ``| None``
    / ``List[...]``); None when ``T`` is no Literal."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        parts = [node.left, node.right]
        real = [p for p in parts if not (isinstance(p, ast.Constant) and p.value is None)]
        return _literal_values(names, module, real[0]) if len(real) == 1 else None
    if not isinstance(node, ast.Subscript):
        return None
    kind = names.qualname(module, node.value)
    elements = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
    if kind in _LITERAL:
        items = [choice_item(literal(e)) for e in elements]
        return tuple(i for i in items if i is not None)
    if kind in _OPTIONAL and len(elements) == 1:
        return _literal_values(names, module, elements[0])
    if kind in _UNION:
        real = [e for e in elements
                if not (isinstance(e, ast.Constant) and e.value is None)
                and not (isinstance(e, ast.Name) and e.id == "None")]
        return _literal_values(names, module, real[0]) if len(real) == 1 else None
    if kind in _LIST_TYPES and len(elements) == 1:
        return _literal_values(names, module, elements[0])
    return None


def find_fields(context: FormContext) -> list[OptionDefinition]:
    """Annotated fields, in files whose text has ``_backend: <Annotated or an
    alias of it>[`` (or ``quantization: ...[``, as formatters write them), or
    a ``cli_name="--x-backend"`` argument. Aliases are the names
    bound by a module-level ``X = Annotated`` anywhere in the tree."""
    index, names, diagnostics = context.index, context.names, context.diagnostics
    aliases = {b"Annotated", b"typing.Annotated"}
    for rel in index.grep(["Annotated"]):
        aliases.update(index.findall(rel, _ANNOTATED_ALIAS))
    field_tokens = [name + b": " + alias + b"["
                    for name in (b"_backend", b"quantization") for alias in sorted(aliases)]
    field_text = re.compile(b"|".join([*(re.escape(t) for t in field_tokens),
                                       _CLI_NAME_TEXT.pattern]))
    rules: dict[str, CliNameRule] = {}

    def rule_for(module: str) -> CliNameRule:
        if module not in rules:
            rules[module] = recognise_cli_name_rule(names, module, diagnostics)
        return rules[module]

    out = []
    for rel in index.grep(_FIELD_TOKENS):
        if not index.search(rel, field_text):
            continue
        facts = context.facts_or_report(rel)
        if facts is None:
            continue
        classes = names.class_scopes(facts)
        for assign in facts.assigns:
            if assign.annotation and assign.scope in classes:
                option = context.guarded(facts.rel, assign.line, " ".join(assign.targets),
                                         partial(recognise_annotated_field, names, facts, assign,
                                                 rule_for))
                if option is not None:
                    out.append(option)
    return out


FORM = OptionForm("annotated fields", (recognise_annotated_field, recognise_cli_name_rule),
                  find_definitions=find_fields)
