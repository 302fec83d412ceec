"""options (catalog): the backend options of one tree, their choices,
platform labels and enums, from every registered option-definition form.

:func:`build_catalog` asks the forms of ``forms.FORMS`` for their step in
turn: definitions (one per flag, see :func:`_dedupe`), then the extensions of
the choice constants those definitions read, then the platform labels of the
choices (shared across options by ``shared_labels``), then the enums, which :func:`link_enums` ties to the options across
all enum forms.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from guardscan.index import Index
from guardscan.messages import diagnostic
from guardscan.options.forms import FORMS, Extensions, FormContext
from guardscan.options.model import (
    MIN_ENUM_OVERLAP,
    QUANTIZATION_FLAG,
    EnumInfo,
    OptionCatalog,
    OptionDefinition,
)
from guardscan.options.platforms import recognise_comment_platforms, recognise_help_platforms
from guardscan.options.shared_labels import share_platform_labels
from guardscan.options.values import ChoiceReader, ChoiceValues, recognise_choice_expression
from guardscan.results import Diagnostic, OptionInfo

__all__ = ["build_catalog", "link_enums"]


def build_catalog(index: Index, *, all_backends: bool = True) -> OptionCatalog:
    """Every backend option of the tree (flag ending in ``-backend``, with
    finite choices), ``--quantization``, and the string enums that model them.

    ``all_backends=False`` drops the choices that the tree labels as for a
    non-CUDA platform only (see ``OptionInfo.platforms``); options left with
    no choices are dropped too.
    """
    context = FormContext.of(index)
    diagnostics = context.diagnostics
    reader = ChoiceReader(context.names, context.enum_reader)

    found = [definition for form in FORMS if form.find_definitions is not None
             for definition in form.find_definitions(context)]
    modes = _modes([d for d in found if d.mode], {d.flag for d in found if not d.mode})
    found = _dedupe([d for d in found if not d.mode], diagnostics)

    # Choices: read once to learn which constants matter, find their
    # extensions in one pass over the tree, then read again with them.
    first = [_choices_of(reader, f) for f in found]
    roots: set[tuple[str, str]] = set().union(*(v.roots for v in first)) if first else set()
    extensions: Extensions = {}
    for form in FORMS:
        if form.find_extensions is not None:
            for root, added in form.find_extensions(context, roots).items():
                extensions.setdefault(root, []).extend(added)
    reader.reset(extensions)
    read = [_choices_of(reader, f) for f in found] if extensions else first

    options: list[OptionInfo] = []
    aliases: dict[str, str] = {}
    line_cache: dict[str, list[str]] = {}
    for definition, values in zip(found, read):
        if not values.complete:
            reason = "; ".join(values.problems) or "unknown form"
            code = "partial-choices" if values.items else "unresolved-choices"
            diagnostics.append(diagnostic(definition.rel, definition.line, code,
                                           flag=definition.flag, reason=reason,
                                           count=len(values.items)))
        if not values.items:
            continue
        choices = tuple(values.items)
        sources = [(definition.rel, definition.line)] + values.sources
        labels: dict[str, str] = {}
        for rel, line in sources:
            for choice, platform in recognise_comment_platforms(index, rel, line, choices,
                                                                line_cache):
                labels.setdefault(choice, platform)
        for choice, platform in recognise_help_platforms(definition.help, choices):
            labels.setdefault(choice, platform)
        platforms = tuple((c, labels[c]) for c in choices if c in labels)
        options.append(OptionInfo(
            flag=definition.flag,
            dest=definition.dest,
            choices=choices,
            path=definition.rel,
            line=definition.line,
            help=definition.help,
            default=definition.default,
            platforms=platforms,
        ))
        for alias in definition.aliases:
            aliases[alias] = definition.flag

    found_enums = [enum for form in FORMS if form.find_enums is not None
                   for enum in form.find_enums(context, [*options, *modes])]
    enums = link_enums(found_enums, [*options, *modes])

    shared = share_platform_labels([o for o in options if o.flag != QUANTIZATION_FLAG])
    options = [o for o in options if o.flag == QUANTIZATION_FLAG] + shared
    if not all_backends:
        options = [_cuda_only(o) for o in options]
        options = [o for o in options if o.choices]
    quantization = next((o for o in options if o.flag == QUANTIZATION_FLAG), None)
    backend_options = sorted((o for o in options if o.flag != QUANTIZATION_FLAG),
                             key=lambda o: (o.path, o.line))
    return OptionCatalog(
        options=backend_options,
        enums=enums,
        quantization=quantization,
        diagnostics=sorted(set(diagnostics)),
        aliases=aliases,
        modes=modes,
    )


def _modes(found: list[OptionDefinition], taken: set[str]) -> list[OptionInfo]:
    """Mode options, one per flag (the first definition), none that shares a
    flag with a backend option."""
    out: dict[str, OptionInfo] = {}
    for d in sorted(found, key=lambda d: (d.rel, d.line)):
        if d.flag in taken or d.flag in out:
            continue
        out[d.flag] = OptionInfo(flag=d.flag, dest=d.dest, choices=d.literal_choices,
                                 path=d.rel, line=d.line, help=d.help, default=d.default)
    return list(out.values())


def link_enums(enums: Sequence[EnumInfo], options: Sequence[OptionInfo]) -> list[EnumInfo]:
    """Tie each option to the enum(s) that model its choices.

    What it recognises:
        For each option, the enums whose value set overlaps its choices best
        by Jaccard index, when that is at least 0.5; ties keep every enum.
        An enum's ``option_dests`` are the options that chose it, so one enum
        can model several options (``--moe-runner-backend`` and
        ``--speculative-moe-runner-backend`` share ``MoeRunnerBackend``, even
        when the draft option's list is a little shorter).
    Why it matters:
        Enum predicates (``is_flashinfer_trtllm``) only say which choice they
        test once the enum is tied to an option.
    Known limits:
        Overlap is a heuristic: an enum that also lists internal values
        (``CUSTOMIZED``) still links; two options with the same choices but
        different enums would each take the better overlap.
    Example:
        ``MoeA2ABackend`` (13 values) and ``--moe-a2a-backend`` (12 choices,
        all members) overlap 12/13 and link.
    """
    chosen: dict[str, list[str]] = {}
    for option in options:
        choices = set(option.choices)
        if not choices:
            continue
        scored = []
        for enum in enums:
            values = set(enum.values)
            union = values | choices
            score = len(values & choices) / len(union) if union else 0.0
            scored.append((score, enum.qualname))
        if not scored:
            continue
        best = max(score for score, _ in scored)
        if best < MIN_ENUM_OVERLAP:
            continue
        for score, qualname in scored:
            if score == best:
                chosen.setdefault(qualname, [])
                if option.dest not in chosen[qualname]:
                    chosen[qualname].append(option.dest)
    return [replace(e, option_dests=tuple(chosen.get(e.qualname, ()))) for e in enums]


def _cuda_only(option: OptionInfo) -> OptionInfo:
    other = {choice for choice, _ in option.platforms}
    return replace(option, choices=tuple(c for c in option.choices if c not in other),
                   platforms=())


def _choices_of(reader: ChoiceReader, definition: OptionDefinition) -> ChoiceValues:
    if definition.choices_text is None:
        return ChoiceValues(list(definition.literal_choices))
    return recognise_choice_expression(reader, definition.choices_text, definition.module,
                                       definition.scope, definition.line)


def _dedupe(found: list[OptionDefinition],
            diagnostics: list[Diagnostic]) -> list[OptionDefinition]:
    """One definition per flag. A flag defined twice (a deprecated alias, a
    second CLI in the same package) keeps the definition with choices from
    the module that defines the most backend options (the server's own
    parser), and says so."""
    per_module: dict[str, int] = {}
    for definition in found:
        per_module[definition.module.rpartition(".")[0]] = \
            per_module.get(definition.module.rpartition(".")[0], 0) + 1
    by_flag: dict[str, list[OptionDefinition]] = {}
    for definition in found:
        by_flag.setdefault(definition.flag, []).append(definition)
    out = []
    for flag, group in by_flag.items():
        group.sort(key=lambda d: (-per_module[d.module.rpartition(".")[0]], d.rel, d.line))
        kept = group[0]
        for other in group[1:]:
            diagnostics.append(diagnostic(other.rel, other.line, "duplicate-option", flag=flag,
                                           kept=f"{kept.rel}:{kept.line}"))
        out.append(kept)
    out.sort(key=lambda d: (d.rel, d.line))
    return out


