"""options (form: choice-list extensions): calls that add literal choices to
the choice constants an option reads, ``ATTENTION_BACKEND_CHOICES.extend([...])``
or a helper such as ``add_attention_backend_choices(["x"])`` that forwards to
one."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from functools import partial

from guardscan.index import Index
from guardscan.index.extract import dotted
from guardscan.index.facts import CallFact, FileFacts
from guardscan.names import Names, identifier_targets
from guardscan.options.forms.base import Extensions, FormContext, Guard, OptionForm, unguarded
from guardscan.options.values import (
    MUTATORS,
    ChoiceExtension,
    literal_strings,
    mutator_values,
)
from guardscan.syntax import parse_expr

__all__ = ["FORM", "find_extensions", "recognise_choice_extensions"]


def recognise_choice_extensions(index: Index, names: Names,
                                roots: Iterable[tuple[str, str]],
                                guarded: Guard = unguarded) -> Extensions:
    """Find the calls in the tree that add literal choices to choice constants.

    What it recognises:
        ``CONST.extend([...])`` / ``.append("x")`` / ``.add("x")`` /
        ``.insert(i, "x")`` / ``.update({...})`` on a module-level constant,
        anywhere in the tree (the name followed through imports); helper
        functions that only forward their parameter, ``def add_x(choices):
        CONST.extend(choices)``, and bound-method aliases, ``add_x =
        CONST.extend``, when the tree calls them with literal arguments.
    Why it matters:
        SGLang exposes these helpers so platforms can add backends; a choice
        added by code in the tree is a real choice of that release.
    Known limits:
        Only literal arguments count: an extension point that nothing in the
        tree calls adds nothing (out-of-tree plugins are not seen), and
        ``register(name)`` style calls with a variable are ignored. Conditions
        around the call are not evaluated (a choice added on one platform
        only is still listed).
    Example:
        ``add_attention_backend_choices(["my_backend"])`` in any module, with
        ``def add_attention_backend_choices(choices):
        ATTENTION_BACKEND_CHOICES.extend(choices)`` in ``server_args.py``,
        adds ``"my_backend"`` to ``--attention-backend``.
    """
    roots = sorted(set(roots))
    if not roots:
        return {}
    # helpers and aliases that forward to a root's mutator:
    # (module, name) -> (root, method, parameter position)
    adders: dict[tuple[str, str], tuple[tuple[str, str], str, int]] = {}
    for root in roots:
        module, constant = root
        facts = names.facts(module)
        if facts is None:
            continue
        calls_by_scope: dict[str, list[CallFact]] = {}
        for call in facts.calls:
            if call.scope and call.func.startswith(f"{constant}."):
                calls_by_scope.setdefault(call.scope, []).append(call)
        for func in facts.functions:
            if func.scope or not func.params:
                continue
            for call in calls_by_scope.get(func.qualname, ()):
                head, _, method = call.func.rpartition(".")
                if head != constant or method not in MUTATORS:
                    continue
                position = 1 if MUTATORS[method] == "second" else 0
                if len(call.args) > position and call.args[position] in func.params:
                    adders[(module, func.name)] = (root, method,
                                                   func.params.index(call.args[position]))
        for assign in facts.assigns:
            if assign.scope:
                continue
            value = " ".join(assign.value.split()).strip("() ")
            head, _, method = value.rpartition(".")
            if head == constant and method in MUTATORS:
                for target in identifier_targets(assign.targets):
                    adders[(module, target)] = (root, method, -1)
    tokens = sorted({f"{constant}." for _, constant in roots} | {name for _, name in adders})
    adder_names = {name for _, name in adders}
    root_set = set(roots)
    found: Extensions = {}
    for rel in index.grep(tokens):
        facts = index.facts(rel)
        if facts is None:
            continue
        for call in facts.calls:
            last = call.func.rpartition(".")[2]
            if last not in MUTATORS and last not in adder_names:
                continue
            callee = parse_expr(call.func)
            if callee is None or dotted(callee) is None:
                continue
            hit = guarded(rel, call.line, call.func,
                          partial(_extension_of_call, names, facts, call, callee, root_set,
                                  adders))
            if hit is not None:
                root, values = hit
                extension = ChoiceExtension(tuple(values), rel, call.line)
                if extension not in found.setdefault(root, []):
                    found[root].append(extension)
    for extensions in found.values():
        extensions.sort(key=lambda e: (e.rel, e.line))
    return found


def _extension_of_call(names: Names, facts: FileFacts, call: CallFact, func: ast.AST,
                       roots: set[tuple[str, str]],
                       adders: dict[tuple[str, str], tuple[tuple[str, str], str, int]],
                       ) -> tuple[tuple[str, str], list[str]] | None:
    if isinstance(func, ast.Attribute) and func.attr in MUTATORS:
        target = names.resolve(facts.module, func.value, call.scope)
        if target is not None and target.kind == "assign" and not target.scope \
                and (target.module, target.name) in roots:
            values = mutator_values(call, func.attr)
            return ((target.module, target.name), values) if values else None
    binding = names.resolve(facts.module, func, call.scope)
    if binding is None or binding.kind not in ("function", "assign") or binding.scope:
        return None
    adder = adders.get((binding.module, binding.name))
    if adder is None:
        return None
    root, method, position = adder
    kind = MUTATORS[method]
    if position < 0:  # a bound-method alias takes the mutator's own arguments
        values = mutator_values(call, method)
    else:
        text = call.args[position] if len(call.args) > position else None
        values = literal_strings(parse_expr(text), single=kind != "many") if text else None
    return (root, values) if values else None


def find_extensions(context: FormContext, roots: Iterable[tuple[str, str]]) -> Extensions:
    """Extensions of the choice constants ``roots``, each call site behind
    the context's guard. The text pre-filter is built from the roots: a file
    is parsed only when it names ``CONST.`` or one of the helpers found."""
    return recognise_choice_extensions(context.index, context.names, roots, context.guarded)


FORM = OptionForm("choice-list extensions", (recognise_choice_extensions,),
                  find_extensions=find_extensions)
