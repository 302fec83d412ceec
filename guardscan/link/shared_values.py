"""link (shared values): an option whose value the tree stores where another option's value is read, so that code testing the one serves the other too.

What it recognises
    Two options modelled by one enum (``--moe-runner-backend`` and
    ``--speculative-moe-runner-backend`` share ``MoeRunnerBackend``,
    ``options.catalog.link_enums``), where a module assigns a call of the
    second option's getter to a name or attribute that the same module also
    assigns from the first option's value::

        moe.runner_backend = resolve_moe_runner_backend(exec_moe.moe_runner_backend)
        ...
        @contextmanager
        def speculative_moe_runner_backend_context():
            moe.runner_backend = get_speculative_moe_runner_backend()

    The getter of the first (``get_moe_runner_backend()``, which returns
    ``moe.runner_backend``) then hands out either option's value: the
    draft model's MoE layers are built while the speculative value stands
    in for the main one. An enum test read as a test of the first option
    (``get_moe_runner_backend().is_hpc_ops()``) is marked as shared
    (``OptionIs.shared``, ``guards.option_tests``), and once every unit has
    linked, the gates, imports, selections, platform calls and kernel calls
    found under such a test are copied to the second option, the marked
    tests read as tests of it and a hop at the assignment first
    (``share_links``). The first option's own findings are unchanged.
    Two readings built on such a test are marked alike: a followed call's
    refusal read with the value the caller hands over (``link.bound_gates``:
    ``MoeRunner(moe_runner_backend, config)``, where the arguments do not
    name the second option), and the test of the default that a
    quantization method's refusal adds (``link.quantization``: what
    ``auto`` resolves to at run time), so that the copy tests the second
    option's own value throughout. The other options' values with which a
    copied gate may not raise (``not blocked with --moe-a2a-backend
    flashinfer_megamoe``) name the option that stands in for that one
    where it is stored in the same module as the second option (the draft
    model's all-to-all backend beside its MoE runner).
Why it matters
    Enum tests were read as tests of the first option alone, so the draft
    model's options got none of the gates of the code they run:
    ``--speculative-moe-runner-backend hpc_ops`` was ``unknown`` on every
    arch while ``MoeRunner.__init__`` refuses it off SM90; under
    ``--quantization modelopt_fp4`` its ``triton`` was ``unknown`` where
    the NVFP4 method's ``apply`` refuses it (sglang 0.5.23).
Known limits
    Only a getter called with no arguments whose name holds the second
    option's name, stored under the same target text (or the same
    attribute name) in the same module as the first option's value. Only
    enum predicate calls are marked: a comparison with an enum member, a
    test of the option's text in a server-argument hook, or the value
    handed through parameters to a test in the callee's own branches,
    stays the first option's, and holds at its default while the second
    is judged. Whether a test reads the stored value is told by its text
    (the receiver or the arguments do not name the second option), so a
    test of ``server_args.moe_runner_backend`` itself is marked too. A
    default the first option's code resolves (``auto`` becomes a runner on
    an arch) is not copied: the second option's own ``auto`` falls back
    otherwise. The second option is taken as not given while any other is
    judged. Options stored in the same module are taken to stand in
    together: a draft worker that enters only the runner's context
    (sglang 0.5.23's ``multi_layer_eagle_worker_v2.py``) keeps the main
    all-to-all backend.
Example
    >>> sorted(shared_targets(
    ...     [("moe.runner_backend", "resolve(exec_moe.moe_runner_backend)"),
    ...      ("moe.runner_backend", "get_speculative_moe_runner_backend()"),
    ...      ("moe.a2a_backend", "MoeA2ABackend(exec_moe.moe_a2a_backend)")],
    ...     "moe_runner_backend", "speculative_moe_runner_backend"))
    ['runner_backend']
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from guardscan.link.model import FindingKind, Hop, HopRole, Links
from guardscan.predicate import OptionIs, Predicate, leaves, substitute

if TYPE_CHECKING:
    from guardscan.index import Index

__all__ = ["share_links", "shared_options", "shared_targets"]


class _Enum(Protocol):
    @property
    def option_dests(self) -> Sequence[str]: ...


def shared_options(index: Index, enums: Iterable[_Enum]
                   ) -> dict[str, tuple[tuple[str, str, int], ...]]:
    """For each option read through an enum (the enum's first, shortest
    dest, as ``link.option_model`` ties it), the options of the same enum
    whose values the tree stores where its value is read, each with the
    file and line of that assignment."""
    pairs: list[tuple[str, str]] = []
    for enum in enums:
        dests = tuple(enum.option_dests)
        if len(dests) < 2:
            continue
        primary = min(dests, key=lambda d: (len(d), d))
        pairs.extend((primary, other) for other in sorted(dests) if other != primary)
    if not pairs:
        return {}
    names = "|".join(re.escape(other) for _, other in pairs)
    rels = index.grep_re(rb"=\s*[\w.]*(?:" + names.encode() + rb")\w*\s*\(\s*\)")
    out: dict[str, dict[str, tuple[str, int]]] = {}
    for rel in rels:
        facts = index.view(rel)
        if facts is None:
            continue
        stores = [(target, assign.value, assign.line) for assign in facts.assigns
                  for target in assign.targets]
        for primary, other in pairs:
            if other in out.get(primary, {}):
                continue
            lines = shared_targets([(t, v) for t, v, _ in stores], primary, other)
            if lines:
                line = min(n for t, v, n in stores if t.strip().rsplit(".", 1)[-1] in lines
                           and other in v)
                out.setdefault(primary, {})[other] = (rel, line)
    return {primary: tuple((other, *at) for other, at in sorted(others.items()))
            for primary, others in sorted(out.items())}


#: the findings a shared test gives the option that stands in too: code that
#: runs, or refuses to, for the value (not a default resolved, a help text, or
#: a hook's rewrite of the option itself)
_COPIED = frozenset({FindingKind.GATE, FindingKind.IMPORT, FindingKind.SELECT,
                     FindingKind.PLATFORM})


def share_links(links: Links, shared: dict[str, tuple[tuple[str, str, int], ...]],
                choices: dict[str, tuple[str, ...]], into: Links | None = None) -> None:
    """Give each option that stands in for another a copy of the findings and
    kernel calls made under a test of that one marked as shared
    (``OptionIs.shared``): the test read as a test of the option standing
    in, with a hop at the assignment that puts its value there. The copies
    go into ``links`` (or ``into``)."""
    into = links if into is None else into
    for primary, others in shared.items():
        for other, rel, line in others:
            if other not in choices:
                continue
            hop = Hop(rel, line, HopRole.LINK,
                      f"{other} stands in for {primary} where {primary} is read")
            rename = _renamer(primary, other, frozenset(choices[other]))
            # the options that stand in beside it, stored in the same module
            # (the draft model's all-to-all backend beside its MoE runner)
            beside = {p: o for p, pairs in shared.items() for o, at, _ in pairs
                      if at == rel and o in choices}
            for finding in list(links.findings):
                if finding.option != primary or finding.kind not in _COPIED:
                    continue
                cond = rename(finding.condition)
                if cond is not None:
                    escape = rename(finding.escape) if finding.escape is not None else None
                    into.findings.append(replace(
                        finding, option=other, condition=cond, hops=(hop, *finding.hops),
                        escape=escape, target=_targets_beside(finding.target, beside)))
            for call in list(links.kernel_calls):
                if call.option != primary:
                    continue
                cond = rename(call.condition)
                if cond is not None:
                    into.kernel_calls.append(replace(call, option=other, condition=cond,
                                                     hops=(hop, *call.hops)))


def _targets_beside(target: tuple[str, ...], beside: dict[str, str]) -> tuple[str, ...]:
    """A gate's ``dest=value`` targets (``link.bound_gates``: values of other
    options with which it may not raise), each option that another stands in
    for beside the copied one named as that one.

    >>> _targets_beside(("moe_a2a_backend=megamoe",), {"moe_a2a_backend": "spec_a2a"})
    ('spec_a2a=megamoe',)
    """
    out = []
    for item in target:
        dest, sep, value = item.partition("=")
        out.append(f"{beside[dest]}={value}" if sep and dest in beside else item)
    return tuple(out)


def _renamer(primary: str, other: str, choices: frozenset[str]
             ) -> Callable[[Predicate], Predicate | None]:
    """``pred`` with its shared tests of ``primary`` read as tests of
    ``other`` (None where it has none)."""
    def atom(a: Predicate) -> Predicate | None:
        if isinstance(a, OptionIs) and a.option == primary and other in a.shared:
            return OptionIs(other, a.choices & choices)
        return None

    def rename(pred: Predicate) -> Predicate | None:
        if not any(isinstance(a, OptionIs) and a.option == primary and other in a.shared
                   for a in leaves(pred)):
            return None
        return substitute(pred, atom)
    return rename


def shared_targets(stores: Iterable[tuple[str, str]], primary: str, other: str) -> set[str]:
    """The targets (by their last attribute name) that ``stores`` (target,
    value text) fill both from ``primary``'s value and from a call of
    ``other``'s getter."""
    getter = re.compile(r"[\w.]*" + re.escape(other) + r"\w*\s*\(\s*\)")
    named = re.compile(r"(?<!\w)" + re.escape(primary) + r"(?!\w)")
    from_other: set[str] = set()
    from_primary: set[str] = set()
    for target, value in stores:
        key = target.strip().rsplit(".", 1)[-1]
        if getter.fullmatch(value.strip()):
            from_other.add(key)
        elif named.search(value) and other not in value:
            from_primary.add(key)
    return from_other & from_primary
