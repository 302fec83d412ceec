"""Every registered guard form's VALID and INVALID examples, expanded into tests
(as Fixit expands a rule's examples): each snippet is written into a tiny tree,
the guard is read at the end of it, and its truth on every standard arch must
be the row the form states (all ``U`` for an INVALID example: the form must
not claim it). A form without examples fails."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixturetree import make_tree

from guardscan.acquire import acquire
from guardscan.arch import standard_archs
from guardscan.guards import Vocabulary
from guardscan.guards.forms import REGISTRY, Example, GuardForm
from guardscan.guards.forms.base import EXAMPLE_FILE
from guardscan.index import Index
from guardscan.model_facts import ModelFacts, ModelView
from guardscan.predicate import Context, Tri

ARCHS = standard_archs()
CHAR = {Tri.TRUE: "T", Tri.FALSE: "F", Tri.UNKNOWN: "U"}
ALL_UNKNOWN = "U" * len(ARCHS)

CASES = [
    pytest.param(form, kind, example, id=f"{form.name}-{kind}-{number}")
    for form in REGISTRY
    for kind, examples in (("valid", form.VALID), ("invalid", form.INVALID))
    for number, example in enumerate(examples)
]


def truth_row(tmp_path: Path, example: Example) -> tuple[str, str]:
    root = make_tree(tmp_path, {EXAMPLE_FILE: example.source, **dict(example.files)},
                     server_args=False)
    vocabulary = Vocabulary(Index(acquire(str(root))))
    line = len(example.source.splitlines()) + 1
    resolved = vocabulary.predicate(example.guard, EXAMPLE_FILE, example.scope, line)
    model = None
    if example.model:
        given = dict(example.model)
        model = ModelView(ModelFacts("config.json", given.get("model_type"),
                                     tuple(filter(None, given.get("architectures", "").split(","))),
                                     frozenset({given["attention_arch"]})
                                     if "attention_arch" in given else None,
                                     given.get("text_model_type", given.get("model_type"))))
    row = "".join(CHAR[resolved.predicate.evaluate(Context(arch=a, model=model))] for a in ARCHS)
    return row, resolved.predicate.describe()


@pytest.mark.parametrize(("form", "kind", "example"), CASES)
def test_form_example(tmp_path: Path, form: GuardForm, kind: str, example: Example) -> None:
    row, meaning = truth_row(tmp_path, example)
    expected = example.row if kind == "valid" else ALL_UNKNOWN
    assert row == expected, (
        f"{form.name} {kind} example\n{example.source}\nguard: {example.guard}\n"
        f"expected {expected}\nactual   {row}  ({meaning})")


def test_valid_examples_decide_something() -> None:
    """A VALID example that decides nothing would prove nothing about its form."""
    for form in REGISTRY:
        for example in form.VALID:
            assert set(example.row) != {"U"} and len(example.row) == len(ARCHS), (
                form.name, example.guard)


@pytest.mark.parametrize("form", REGISTRY, ids=[f.name for f in REGISTRY])
def test_every_form_has_examples(form: GuardForm) -> None:
    assert form.VALID, f"{form.name} has no VALID examples"
    assert form.INVALID, f"{form.name} has no INVALID examples"


def test_form_names_are_unique() -> None:
    names = [f.name for f in REGISTRY]
    assert len(names) == len(set(names)), names
