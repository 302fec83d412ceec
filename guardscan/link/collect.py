"""link (driver): every finding for every option, unit by unit, in the order a scan from scratch runs them.

Also ``option_model``: what the vocabulary needs from the catalog to read
tests of an option as ``OptionIs`` atoms.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence
from functools import partial
from typing import Protocol

from guardscan.guards import OptionModel, Vocabulary
from guardscan.index import Index
from guardscan.link.conditions import Conditions
from guardscan.link.context import LinkContext
from guardscan.link.dict_registries import DictRegistries, choice_keys
from guardscan.link.gates import Gates
from guardscan.link.help_claims import help_claims
from guardscan.link.model import Links, default_choices
from guardscan.link.named import NamedModules
from guardscan.link.quantization import QuantizationMethods
from guardscan.link.regions import RegisteredRegions
from guardscan.link.units import Units
from guardscan.results import OptionInfo

__all__ = ["EnumModel", "collect_links", "default_choices", "option_model", "unset_twins"]


class EnumModel(Protocol):
    """What linking reads of an enum that models an option's choices
    (``options.EnumInfo``)."""

    @property
    def qualname(self) -> str: ...
    @property
    def rel(self) -> str: ...
    @property
    def members(self) -> Sequence[tuple[str, str]]: ...
    @property
    def predicates(self) -> Sequence[tuple[str, frozenset[str]]]: ...
    @property
    def option_dests(self) -> Sequence[str]: ...


def option_model(options: Iterable[OptionInfo], enums: Iterable[EnumModel],
                 quantization: OptionInfo | None) -> OptionModel:
    """What the vocabulary needs to recognise option tests, from the catalog."""
    model = OptionModel()
    for opt in options:
        model.dests[opt.dest] = opt.choices
    if quantization is not None:
        model.dests[quantization.dest] = quantization.choices
        model.quantization = quantization.dest
        model.quantization_path = quantization.path
    for enum in enums:
        qualname = str(enum.qualname)
        short = qualname.rsplit(".", 1)[-1]
        dests = tuple(enum.option_dests)
        primary = min(dests, key=len) if dests else None
        for method, values in enum.predicates:
            model.enum_predicates.setdefault(method, []).append(
                (short, primary, frozenset(values)))
        if primary is None:
            continue
        model.enum_dests[short] = primary
        model.enum_dests[qualname] = primary
        for dest in dests:
            model.dest_enums.setdefault(dest, []).append((str(enum.rel), short))
        for member, value in enum.members:
            model.enum_members[f"{short}.{member}"] = value
    return model


def collect_links(index: Index, vocab: Vocabulary, options: list[OptionInfo],
                  quantization: OptionInfo | None, enum_names: Iterable[str] = (),
                  enum_methods: Iterable[str] = (),
                  kernel_packages: Iterable[str] = ("flashinfer",),
                  units: Units | None = None,
                  modes: Sequence[OptionInfo] = ()) -> Links:
    """Every finding for every option, from the files that can hold one, unit
    by unit through ``units`` (the plain runner when None; the driver may pass
    one that records and replays units, see ``guardscan.link.units``). Each
    part is handed the inputs and exactly the parts it calls on; each unit
    returns what it found, which goes into the links here."""
    ctx = LinkContext.of(index, vocab, options, quantization, kernel_packages)
    units = units if units is not None else Units()
    conditions = Conditions(index, vocab)
    quant = QuantizationMethods(ctx, conditions, units.took_context, units.recorded_memo)
    units.bind(ctx, quant.condition_unlogged)
    gates = Gates(ctx, conditions, quant, units.already_followed, units.part,
                  units.recorded_memo)
    links = Links()
    tokens = sorted({o.dest for o in options} | set(enum_names) | set(enum_methods))
    candidates = index.grep(tokens) if tokens else []
    candidates = _with_indirect(index, candidates, tokens)
    registering = index.grep_re(rb"@[\w.]*register\w*\(\s*[\"']")
    # tables keyed by choices, in files that name an option (the lookup by the
    # option's value is there: ``QKV_BACKEND_IMPL[get_mm().mm_attention_backend]``)
    tables = index.grep(choice_keys(ctx), within=candidates)
    if units.cold:
        index.prefetch(candidates)  # cold: parse on every core
    elif index.after_prefetch is not None:
        index.after_prefetch()
    links.add(units.unit(("quantization",), quant.scan, (quant.state, quant.restore_state)))
    for method in sorted(quant.methods):
        links.add(units.unit(quant.method_key(method), partial(quant.scan_method, method),
                             quant.path_state(method)))
    # keyed by the functions and classes on the paths: what it starts from
    links.add(units.unit(("quantization", quant.paths_digest()), quant.scan_escapes,
                         quant.escapes_state()))
    # the per-file text goes; the whole tree's buffer (a temporary file, 68 MB
    # for sglang 0.5.23) stays, or is built once needed, for the pre-filters
    # that following calls and subclass searches ask
    index.release_text(keep_whole=True)
    quant_files = sorted({rel for rel, _ in quant.context} - set(candidates))
    for rel in [*candidates, *quant_files]:
        links.add(units.unit(("file", rel), partial(gates.scan_file, rel)))
    for rel in candidates:
        links.add(units.unit(("follow", rel), partial(gates.follow_region_calls, rel)))
    registered = RegisteredRegions(ctx, gates)
    for rel in registering:
        links.add(units.unit(("registered", rel), partial(registered.scan, rel)))
    dicts = DictRegistries(ctx, registered)
    for rel in tables:
        links.add(units.unit(("table", rel), partial(dicts.scan, rel)))
    named = NamedModules(ctx, conditions, registered, quant)
    for dest, choice, rel in named.modules():
        links.add(units.unit(("named", dest, choice, rel), partial(named.scan, dest, choice, rel)))
    links.findings.extend(help_claims(options))
    links.quant_methods = dict(quant.methods)
    links.checkpoint_methods = frozenset(quant.methods) - frozenset(
        quantization.choices if quantization is not None else ())
    links.unset = unset_twins(options)
    # while judging, the other options and the mode options hold their defaults
    links.defaults = default_choices([*options, *modes])
    for others in vocab.options.shared.values():
        for other in others:
            # not given (the default of such an option: it falls back to the
            # value it stands in for), its tests hold for none of its choices
            links.defaults.setdefault(other, "")
    links.modes = {m.dest: (m.flag, m.choices) for m in modes}
    units.finish()
    return links


def _with_indirect(index: Index, candidates: list[str], tokens: list[str]) -> list[str]:
    """The candidate files, and those that call a function of theirs whose
    returned value is computed from an option (``def m3_fp8_enabled(cfg):
    return cfg.attention_backend == "trtllm_mha" and ...``): the option's value
    reaches a test there without the option being named (one level deep)."""
    if not candidates or not tokens:
        return candidates
    wanted = set(tokens)
    names: set[str] = set()
    for rel in candidates:
        for name, words in index.text_answer(rel, returned_words):
            # a distinctive name: a short or private one (``_backend``,
            # ``signature``) would make half the tree a candidate
            if wanted.intersection(words) and len(name) >= 12 and not name.startswith("_"):
                names.add(name)
    if not names:
        return candidates
    found = set(candidates) | set(index.grep(sorted(names)))
    order = {rel: i for i, rel in enumerate(index.tree.files)}
    return sorted(found, key=lambda rel: order.get(rel, len(order)))


_DEF = re.compile(rb"^([ \t]*)(?:async[ \t]+)?def[ \t]+(\w+)", re.MULTILINE)
_RETURN = re.compile(rb"^([ \t]*)return\b([^\n]*(?:\n\1[ \t]+[^\n]*)*)", re.MULTILINE)
_WORD = re.compile(rb"[A-Za-z_]\w*")


def returned_words(data: bytes) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(function, the words of its ``return`` statements) for each module-level
    function of a file's text that returns something (methods are called
    through an object, not by a name another file can be searched for), read
    from the text alone (a text query the result cache asks again of changed
    bytes)."""
    defs = [(m.start(), len(m.group(1)), m.group(2).decode()) for m in _DEF.finditer(data)]
    if not defs:
        return ()
    out: dict[str, set[str]] = {}
    starts = [d[0] for d in defs]
    for match in _RETURN.finditer(data):
        indent = len(match.group(1))
        position = bisect.bisect_right(starts, match.start()) - 1
        while position >= 0 and defs[position][1] >= indent:
            position -= 1
        if position < 0 or defs[position][1] != 0:
            continue
        words = out.setdefault(defs[position][2], set())
        # (short words are never an option's name, enum or method: kept out of
        # the answer, which the result cache stores)
        words.update(w.decode() for w in _WORD.findall(match.group(2)) if len(w) >= 6)
    return tuple((name, tuple(sorted(words))) for name, words in sorted(out.items()) if words)


def unset_twins(options: Sequence[OptionInfo]) -> dict[str, tuple[str, ...]]:
    """For each option, its twins (the same set of choices) whose default is
    unset: a split option such as ``--prefill-attention-backend`` falls back to
    its base when not given, so judging one choice of either takes the others
    as not given."""
    out: dict[str, tuple[str, ...]] = {}
    for opt in options:
        twins = tuple(o.dest for o in options if o.dest != opt.dest and len(o.choices) > 1
                      and set(o.choices) == set(opt.choices)
                      and (o.default or "None").strip() == "None")
        if twins:
            out[opt.dest] = twins
    return out
