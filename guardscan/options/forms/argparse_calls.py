"""options (form: argparse calls): ``parser.add_argument("--x-backend",
choices=...)`` calls that define a backend option (SGLang 0.5.9
``srt/server_args.py``; a few options of later releases)."""

from __future__ import annotations

import ast
import re
from functools import partial

from guardscan.index.facts import CallFact, FileFacts
from guardscan.messages import diagnostic
from guardscan.names import Names, identifier_targets
from guardscan.options.forms.base import FormContext, OptionForm
from guardscan.options.model import (
    QUANTIZATION_FLAG,
    OptionDefinition,
    flag_to_dest,
    is_catalog_flag,
    string_value,
)
from guardscan.results import Diagnostic
from guardscan.syntax import literal, parse_expr, short

__all__ = ["FORM", "find_argparse", "recognise_argparse_option"]

# Text pre-filter: a file is parsed only when its bytes hold an ``add_argument``
# call whose option strings start with a ``--x-backend`` (or ``--quantization``)
# literal. It may let through more than the recogniser accepts, never less for
# the usual spellings.
_ARGPARSE_TOKENS = ("-backend", QUANTIZATION_FLAG)
_ARGPARSE_TEXT = re.compile(
    rb"""add_argument\(\s*(?:["'][\w-]+["']\s*,\s*)*["'](?:--[\w-]*-backend|--quantization)["']""")


def recognise_argparse_option(names: Names, facts: FileFacts, call: CallFact,
                              diagnostics: list[Diagnostic]) -> OptionDefinition | None:
    """An ``add_argument`` call that defines a backend option.

    What it recognises:
        ``<parser>.add_argument("--x-backend", ..., choices=EXPR, default=...,
        dest="...", help="...")`` where a long option string ends in
        ``-backend`` (or is ``--quantization``). The flag is the first long
        option string, the dest is ``dest=`` or the flag without dashes with
        ``-`` -> ``_`` (argparse's rule). A default ``Cls.attr`` is read from
        that class attribute (the 0.5.9 ``default=ServerArgs.x`` idiom).
    Why it matters:
        SGLang 0.5.9 defines every server option this way; 0.5.23 still
        registers a few (``--sampling-backend``) by hand.
    Known limits:
        An option name that is not a string literal is not recognised (an
        ``unresolved-flag`` diagnostic is given when the call mentions
        ``backend``). Calls with no ``choices=`` are free-form and skipped.
    Example:
        ``parser.add_argument("--fp4-gemm-backend", type=str,
        choices=FP4_GEMM_RUNNER_BACKEND_CHOICES, default=ServerArgs.fp4_gemm_runner_backend,
        dest="fp4_gemm_runner_backend", help="...")``
    """
    if call.func.rpartition(".")[2] != "add_argument":
        return None
    strings: list[str] = []
    for text in call.args:
        value = literal(parse_expr(text))
        if not isinstance(value, str):
            if "backend" in " ".join(call.args):
                shown = short(f"add_argument({', '.join(call.args)})", 70)
                diagnostics.append(diagnostic(facts.rel, call.line, "unresolved-flag",
                                               text=shown))
            return None
        strings.append(value)
    long_flags = [s for s in strings if s.startswith("--")]
    flags = long_flags or strings
    if not flags:
        return None
    kwargs = dict(call.kwargs)
    if not any(is_catalog_flag(f) for f in flags):
        return _mode_option(facts, call, flags, kwargs)
    if literal(parse_expr(kwargs.get("choices", "None"))) is None:
        return None  # free-form: no finite choices
    flag = flags[0]
    dest = literal(parse_expr(kwargs.get("dest", "")))
    return OptionDefinition(
        flag=flag,
        dest=dest if isinstance(dest, str) else flag_to_dest(flag),
        rel=facts.rel,
        line=call.line,
        module=facts.module,
        scope=call.scope,
        choices_text=kwargs.get("choices"),
        help=string_value(parse_expr(kwargs.get("help", ""))) or "",
        default=_default_text(names, facts.module, call.scope, kwargs.get("default")),
        aliases=tuple(s for s in strings if s != flag),
    )


def _mode_option(facts: FileFacts, call: CallFact, flags: list[str],
                 kwargs: dict[str, str]) -> OptionDefinition | None:
    """A mode option: ``add_argument("--deepep-mode", choices=["normal",
    "low_latency", "auto"], default="auto")``, literal choices and a literal
    default among them."""
    choices = literal(parse_expr(kwargs.get("choices", "None")))
    default = literal(parse_expr(kwargs.get("default", "None")))
    if not isinstance(choices, (list, tuple)) or len(choices) < 2 or \
            not all(isinstance(c, str) for c in choices) or default not in choices:
        return None
    dest = literal(parse_expr(kwargs.get("dest", "")))
    return OptionDefinition(
        flag=flags[0], dest=dest if isinstance(dest, str) else flag_to_dest(flags[0]),
        rel=facts.rel, line=call.line, module=facts.module, scope=call.scope,
        choices_text=None, literal_choices=tuple(choices), default=repr(default), mode=True)


def _default_text(names: Names, module: str, scope: str, text: str | None) -> str | None:
    """The default as source text; ``Cls.attr`` is replaced by that class
    attribute's own default when the tree defines it."""
    if text is None:
        return None
    node = parse_expr(text)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        binding = names.resolve(module, node, scope)
        if binding is not None and binding.kind == "classattr":
            facts = names.facts(binding.module)
            if facts is not None:
                for assign in facts.assigns:
                    if assign.scope == binding.scope and assign.value \
                            and binding.name in identifier_targets(assign.targets):
                        return assign.value
    return text


def find_argparse(context: FormContext) -> list[OptionDefinition]:
    """argparse options, in files whose text has ``add_argument("--x-backend"``
    (or ``--quantization``) as the call's first option strings."""
    index, names, diagnostics = context.index, context.names, context.diagnostics
    out = []
    for rel in index.grep(_ARGPARSE_TOKENS, within=index.grep(["add_argument"])):
        if not index.search(rel, _ARGPARSE_TEXT):
            continue
        facts = context.facts_or_report(rel)
        if facts is None:
            continue
        for call in facts.calls:
            if call.func.endswith("add_argument"):
                option = context.guarded(facts.rel, call.line, call.func,
                                         partial(recognise_argparse_option, names, facts, call,
                                                 diagnostics))
                if option is not None:
                    out.append(option)
    return out


FORM = OptionForm("argparse calls", (recognise_argparse_option,),
                  find_definitions=find_argparse)
