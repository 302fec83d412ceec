"""The link model's names: finding kinds and hop roles print, serialise and
compare as the plain strings they replaced, and one map gives a hop's
evidence role; the shared help-text segment parser."""

from __future__ import annotations

import json
import pickle
import re
from pathlib import Path

import pytest

from guardscan.helptext import help_segments
from guardscan.link import FindingKind, HopRole, evidence_role
from guardscan.results import Role


@pytest.mark.parametrize("member", [*FindingKind, *HopRole])
def test_a_name_prints_and_serialises_as_its_value(member: FindingKind | HopRole) -> None:
    assert f"{member}" == str(member) == member.value
    assert json.dumps(member) == json.dumps(member.value)
    assert member == member.value and hash(member) == hash(member.value)
    assert member.value in {member} and member in {member.value}
    assert pickle.loads(pickle.dumps(member)) is member


def test_every_finding_kind_of_the_docs() -> None:
    assert {k.value for k in FindingKind} == {
        "gate", "default", "select", "quant-gate", "import", "doc", "alias", "rename",
        "requires", "platform"}


def test_hop_roles_map_to_evidence_roles() -> None:
    # what verdicts have always shown: a definition is part of its guard; a
    # call, an import or a method's config class only leads to the deciding line
    expected = {"link": "link", "call": "link", "guard": "guard", "definition": "guard",
                "import": "link", "quant": "link"}
    assert {r.value: evidence_role(r) for r in HopRole} == expected
    assert {r.value: evidence_role(r.value) for r in HopRole} == expected
    assert all(isinstance(r.evidence_role, Role) for r in HopRole)


HELP = ("Backend: 'triton' (fallback, widely compatible), 'aiter' (ROCm only), "
        "\"ascend\" (NPU specific), `x` (for AMD GPUs), 'fi' (SM100 (B200) only), "
        "'unlisted' (SM90), 'triton' (again)")
CHOICES = ["triton", "aiter", "ascend", "x", "fi"]


def test_help_segments_as_link_reads_them() -> None:
    link_pattern = r"'([\w\-.]+)'\s*\(((?:[^()]|\([^()]*\))*)\)"
    expected = [(m.group(1), m.group(2)) for m in re.finditer(link_pattern, HELP)
                if m.group(1) in CHOICES]
    assert help_segments(HELP, CHOICES) == expected
    assert ("fi", "SM100 (B200) only") in expected and ("triton", "again") in expected


def test_help_segments_as_options_read_them() -> None:
    options_pattern = r"""(['"`])([\w.\-]+)\1\s*\(([^()]*)\)"""
    expected = [(m.group(2), m.group(3)) for m in re.finditer(options_pattern, HELP)
                if m.group(2) in CHOICES]
    assert help_segments(HELP, CHOICES, quotes="'\"`", nested=False) == expected
    assert ("ascend", "NPU specific") in expected and all(c != "fi" for c, _ in expected)


def test_a_recorded_memo_hit_counts_as_read_by_the_unit_that_asks(tmp_path: Path) -> None:
    """``link.recorded.RecordedMemo``: what a shared entry read of the facts
    and asked the vocabulary is recorded by every unit that takes it from the
    memo, not only the first, so a replayed record is never incomplete."""
    from fixturetree import make_tree

    from guardscan.acquire import acquire
    from guardscan.guards import Vocabulary
    from guardscan.index import Index
    from guardscan.link.recorded import RecordedMemo

    rel = "sglang/srt/layers/runner.py"
    root = make_tree(tmp_path, {rel: "LIMIT = 4\n\n\nclass Runner:\n    pass\n"})
    index = Index(acquire(str(root)))
    vocab = Vocabulary(index)
    memo: RecordedMemo[str] = RecordedMemo(index, vocab)
    computed: list[int] = []

    def compute() -> str:
        computed.append(1)
        facts = index.view(rel)
        assert facts is not None
        classes = [c.qualname for c in facts.classes]
        return f"{classes}: {vocab.value('LIMIT', rel, '', 5)}"

    def unit() -> tuple[str, tuple[object, ...], list[object]]:
        saved = index.recorder.open()
        with vocab.noting_questions() as asked:
            value = memo.get("key", compute)
        reads = index.recorder.decode(index.recorder.close(saved, merge=False))
        return value, reads, list(asked)

    first, second = unit(), unit()
    assert computed == [1]
    # the same value, questions and reads (a record of reads is a set: its
    # order is not part of it)
    assert (first[0], set(first[1]), first[2]) == (second[0], set(second[1]), second[2])
    value, reads, asked = second
    assert value.startswith("['Runner']: ") and "4" in value, value
    assert asked == [("v", "LIMIT", rel, "", 5)]
    assert (rel, ("kind", "classes")) in reads
