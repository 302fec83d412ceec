"""link (alias tables): a table of deprecated choices and what they become, applied to the options a hook names.

What it recognises
    A function of the option hooks that builds a dict of string constants,
    every key and every value a choice of one option, reads it by
    subscript, and declares the result as server arguments::

        aliases = {"compressed": "dsv4", "tokenspeed_mla": "cutedsl_mla"}
        for attr in ("attention_backend", "decode_attention_backend"):
            old = getattr(server_args, attr, None)
            if old in aliases:
                renamed[attr] = aliases[old]
        declare_resolution(server_args, "_handle_deprecated_args", **renamed)

    Each key is a ``rename`` finding (``verdict.rename``) of every option the
    function names as a string whose choices hold the key and its value.

Why it matters
    The rewritten choice never reaches its own code: ``tokenspeed_mla`` runs
    as ``cutedsl_mla``, with that choice's gates. Read choice by choice, the
    alias has no code of its own and stays ``unknown``.

Known limits
    Only a literal table in the function that uses it, a function that calls
    ``declare_resolution`` (or ``setattr``) and names the option as a string;
    a table read in another function, or built from parts, is not read. One
    later rewrite of one option's result is read, written as a constant under
    a test of that result (``if renamed.get("prefill_attention_backend") ==
    "cutedsl_mla": renamed["prefill_attention_backend"] = "trtllm_mla"``:
    ``--prefill-attention-backend tokenspeed_mla`` becomes ``trtllm_mla``).
    Any other condition on the rewrite (in the loop) is not read: the table's
    rewrite is taken to hold for every launch.

Example
    sglang 0.5.23 ``arg_groups/serving_hook.py:304``: ``--attention-backend
    tokenspeed_mla`` is judged as ``cutedsl_mla``.
"""

from __future__ import annotations

import ast
import re

from guardscan.index import Index
from guardscan.index.observe import FactsView
from guardscan.link.model import Finding, FindingKind, Hop, HopRole
from guardscan.predicate import OptionIs
from guardscan.results import OptionInfo
from guardscan.syntax import parse_expr

__all__ = ["alias_table_renames", "string_table"]

_DECLARES = re.compile(r"\b(?:declare_resolution|setattr)\s*\(")

#: ``renamed.get("dest") == "value"`` or ``renamed["dest"] == "value"``
_RESULT_IS = re.compile(
    r"\s*(\w+)(?:\.get\(\s*|\[\s*)([\"'])(\w+)\2\s*[)\]]\s*==\s*([\"'])(\w+)\4\s*")


def string_table(text: str) -> dict[str, str] | None:
    """A dict literal of string constants, or None.

    >>> string_table('{"compressed": "dsv4", "tokenspeed_mla": "cutedsl_mla"}')
    {'compressed': 'dsv4', 'tokenspeed_mla': 'cutedsl_mla'}
    >>> string_table('{"a": 1}') is None, string_table("dict(a='b')") is None
    (True, True)
    """
    node = parse_expr(text)
    if not isinstance(node, ast.Dict) or not node.keys:
        return None
    out: dict[str, str] = {}
    for key, value in zip(node.keys, node.values, strict=True):
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)
                and isinstance(value, ast.Constant) and isinstance(value.value, str)):
            return None
        out[key.value] = value.value
    return out


def _function_text(index: Index, facts: FactsView, scope: str) -> str:
    func = facts.function(scope)
    if func is None:
        return ""
    return "\n".join(index.line_text(facts.rel, n) for n in range(func.line, func.end_line + 1))


def alias_table_renames(index: Index, facts: FactsView, options: tuple[OptionInfo, ...],
                        ) -> list[Finding]:
    """The ``rename`` findings of the alias tables in one file."""
    out: list[Finding] = []
    for assign in facts.assigns:
        if len(assign.targets) != 1 or not assign.scope or not assign.value.startswith("{"):
            continue
        table = string_table(assign.value)
        if not table:
            continue
        name = assign.targets[0]
        text = _function_text(index, facts, assign.scope)
        if f"{name}[" not in text or not _DECLARES.search(text):
            continue
        for option in options:
            choices = set(option.choices)
            if not (set(table) | set(table.values())) <= choices or \
                    not re.search(rf"[\"']{option.dest}[\"']", text):
                continue
            for old, new in sorted(table.items()):
                hops: tuple[Hop, ...] = (Hop(facts.rel, assign.line, HopRole.LINK,
                                         f"{option.dest} {old} is rewritten to {new}"),)
                later = _later_rewrite(facts, assign.scope, option.dest, new)
                if later is not None and later[1] in choices:
                    line, then = later
                    hops = (*hops, Hop(facts.rel, line, HopRole.LINK,
                                       f"then {option.dest} {new} is rewritten to {then}"))
                    new = then
                out.append(Finding(FindingKind.RENAME, facts.rel, assign.line,
                                   OptionIs(option.dest, frozenset({old})), hops, choice=old,
                                   option=option.dest, text=f"{option.dest} = {new}",
                                   target=(option.dest, new)))
    return out


def _later_rewrite(facts: FactsView, scope: str, dest: str, value: str,
                   ) -> tuple[int, str] | None:
    """(line, value) of a constant written over ``dest``'s result in
    ``scope`` under a test that the result is ``value``, or None."""
    for assign in facts.assigns:
        if assign.scope != scope or len(assign.targets) != 1 or not assign.path:
            continue
        target = re.fullmatch(r"(\w+)\[\s*([\"'])(\w+)\2\s*\]", assign.targets[0])
        new = parse_expr(assign.value)
        if target is None or target.group(3) != dest or not (
                isinstance(new, ast.Constant) and isinstance(new.value, str)):
            continue
        signed = assign.path[-1]
        test = _RESULT_IS.fullmatch(facts.cond(signed).text) if signed > 0 else None
        if test is not None and test.group(1) == target.group(1) and \
                test.group(3) == dest and test.group(5) == value:
            return assign.line, new.value
    return None
