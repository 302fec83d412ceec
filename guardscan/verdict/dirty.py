"""verdicts (dirty): which choices' verdicts a changed finding or kernel call can change, for the incremental scan.
"""

from __future__ import annotations

from collections.abc import Iterable

from guardscan.link import (
    GATE_KINDS,
    FindingKind,
    Links,
)
from guardscan.link.shared_values import share_links
from guardscan.predicate import (
    OptionIs,
    Predicate,
    leaves,
)
from guardscan.results import OptionInfo
from guardscan.verdict.values import calling_choices, choices_about, unset_while_judging

__all__ = ['dirty_choices']


def dirty_choices(changed: Links, options: Iterable[OptionInfo], quantization: str | None,
                  links: Links | None = None) -> dict[str, set[str]]:
    """The choices (by option dest) whose verdicts can read one of the
    ``changed`` findings or kernel calls: by the rules of ``judge``, a gate
    counts for the choices it is about, a default, doc or select for its
    choice, an import gate for every choice, a kernel call for the choices
    it is handed or singles out (``values.calling_choices``, without ``links``
    every choice); and a choice that sets another option (an alias in ``links``, all of this
    scan's findings) reads whatever that option's choice reads."""
    dirty = _dirty_direct(changed, options, quantization, links)
    aliases = [f for f in (*(links.findings if links is not None else ()), *changed.findings)
               if f.kind in (FindingKind.ALIAS, FindingKind.RENAME) and f.option and f.choice
               and len(f.target) == 2]
    for alias in aliases:
        dest, value = alias.target
        if value in dirty.get(dest, ()):
            dirty.setdefault(str(alias.option), set()).add(str(alias.choice))
    return dirty


def named_choices(cond: Predicate, dest: str, choices: Iterable[str]) -> set[str]:
    """The choices of ``dest`` that the condition's tests of it name.

    >>> from guardscan.predicate import conj, neg
    >>> gate = conj(OptionIs("moe", frozenset({"marlin", "x"})), neg(OptionIs("a", frozenset({"b"}))))
    >>> sorted(named_choices(neg(gate), "moe", ("marlin", "triton")))
    ['marlin']
    """
    named = {c for a in leaves(cond) if isinstance(a, OptionIs) and a.option == dest
             for c in a.choices}
    return named.intersection(choices)


def _dirty_direct(changed: Links, options: Iterable[OptionInfo], quantization: str | None,
                  links: Links | None = None) -> dict[str, set[str]]:
    dirty: dict[str, set[str]] = {}
    options = list(options)
    by_dest = {o.dest: o for o in options}
    for finding in changed.findings:
        if finding.option is None:  # a method-wide quantization gate
            if finding.kind == FindingKind.QUANT_GATE and quantization is not None:
                for each in options:
                    dirty.setdefault(each.dest, set()).update(choices_about(
                        finding.condition, each.dest, each.choices, quantization))
            continue
        opt = by_dest.get(finding.option)
        if opt is None:
            continue
        if finding.kind in GATE_KINDS:
            dirty.setdefault(opt.dest, set()).update(choices_about(
                finding.condition, opt.dest, opt.choices, quantization))
            if quantization is None:
                # without a method, a gate that spares a choice by naming it
                # (``not backend in {marlin}``) can set another method's gate
                # aside for it (``checkpoint.exempting_methods``)
                dirty[opt.dest].update(named_choices(finding.condition, opt.dest, opt.choices))
        elif finding.kind == FindingKind.IMPORT or finding.choice is None:
            dirty.setdefault(opt.dest, set()).update(opt.choices)
        else:
            dirty.setdefault(opt.dest, set()).add(finding.choice)
    for call in changed.kernel_calls:
        opt = by_dest.get(str(call.option))
        if opt is None:
            continue
        dirty.setdefault(opt.dest, set()).update(
            calling_choices(call, opt.dest, opt.choices, quantization,
                            unset_while_judging(links, opt.dest)) if links is not None
            else opt.choices)
    # an option that stands in for another gets copies of the findings made
    # under its marked tests (``link.shared_values``), after the units: its
    # choices read the changed ones as they read their copies
    copies = Links()
    seen: set[tuple[str, str]] = set()
    for pred in [*(f.condition for f in changed.findings),
                 *(c.condition for c in changed.kernel_calls)]:
        for atom in leaves(pred):
            if isinstance(atom, OptionIs):
                for other in atom.shared:
                    if other in by_dest and (atom.option, other) not in seen:
                        seen.add((atom.option, other))
    for primary, other in sorted(seen):
        share_links(changed, {primary: ((other, "", 0),)},
                    {other: by_dest[other].choices}, into=copies)
    if copies.findings or copies.kernel_calls:
        for dest, choices in _dirty_direct(copies, options, quantization, links).items():
            dirty.setdefault(dest, set()).update(choices)
    return dirty
