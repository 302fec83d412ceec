"""Docs generated from docstrings must not drift, and every recogniser carries
the documented headings (STYLE.md, "Docs")."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from guardscan import kernels, options
from guardscan.guards.forms import REGISTRY as GUARD_FORMS
from guardscan.guards.forms import GuardForm

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "gen_docs.py"


def _gen_docs() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_docs", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen_docs = _gen_docs()


def test_generated_docs_are_up_to_date() -> None:
    run = subprocess.run([sys.executable, str(SCRIPT), "--check"], cwd=ROOT,
                         capture_output=True, text=True, check=False)
    assert run.returncode == 0, (
        "docs/ drifted from the docstrings; run `python scripts/gen_docs.py`\n"
        + run.stdout + run.stderr)


@pytest.mark.parametrize("recogniser", options.RECOGNISERS, ids=lambda r: r.__name__)
def test_option_recognisers_document_themselves(recogniser: object) -> None:
    doc = getattr(recogniser, "__doc__", None)
    assert gen_docs.missing_headings(doc) == [], (
        f"{getattr(recogniser, '__name__', recogniser)} needs the headings "
        f"{', '.join(h + ':' for h in gen_docs.HEADINGS)}\n{doc}")


def test_headings_in_order() -> None:
    """The headings come in the documented order in every option recogniser."""
    for recogniser in options.RECOGNISERS:
        doc = recogniser.__doc__ or ""
        positions = [doc.index(f"{heading}:") for heading in gen_docs.HEADINGS]
        assert positions == sorted(positions), recogniser.__name__


def test_every_recogniser_is_on_the_page() -> None:
    page = (ROOT / "docs" / "guard-forms.md").read_text(encoding="utf-8")
    for recogniser in options.RECOGNISERS:
        assert f"### `{recogniser.__name__}`" in page


@pytest.mark.parametrize("form", GUARD_FORMS, ids=[f.name for f in GUARD_FORMS])
def test_every_guard_form_is_on_the_page(form: GuardForm) -> None:
    """Every registered guard form has its own section, from its own docstring."""
    page = (ROOT / "docs" / "guard-forms.md").read_text(encoding="utf-8")
    name = form.name
    assert f"### `{name}`" in page, f"guard form {name} is missing from docs/guard-forms.md"
    section = page.split(f"### `{name}`", 1)[1].split("\n### ", 1)[0]
    assert f"`{type(form).__name__}`" in section
    for heading in gen_docs.HEADINGS:
        assert f"**{heading}**" in section, (name, heading)


@pytest.mark.parametrize("form", GUARD_FORMS, ids=[f.name for f in GUARD_FORMS])
def test_guard_forms_document_themselves(form: GuardForm) -> None:
    doc = type(form).__doc__
    assert gen_docs.missing_headings(doc) == [], (
        f"{type(form).__name__} needs the headings "
        f"{', '.join(h + ':' for h in gen_docs.HEADINGS)}\n{doc}")
    positions = [(doc or "").index(f"{heading}:") for heading in gen_docs.HEADINGS]
    assert positions == sorted(positions), type(form).__name__


def test_check_fails_on_drift(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = _gen_docs()
    monkeypatch.setattr(module, "DOCS", tmp_path)
    monkeypatch.setattr(module, "ROOT", tmp_path.parent)
    assert module.main(["--check"]) == 1  # nothing written yet
    assert module.main([]) == 0
    assert module.main(["--check"]) == 0
    page = tmp_path / "verdicts.md"
    page.write_text(page.read_text(encoding="utf-8") + "edited by hand\n", encoding="utf-8")
    assert module.main(["--check"]) == 1


@pytest.mark.parametrize(("doc", "expected"), [
    (("Summary.\n\n    What it recognises:\n        ``x``\n        more\n    Example:\n"
      "        ``y``\n"),
     "Summary.\n\n**What it recognises**\n\n``x``\nmore\n\n**Example**\n\n``y``\n"),
    ("Title\n\nblocked\n    A gate raises.\nunknown\n    Nothing known.\n",
     "Title\n\n**blocked**\n\nA gate raises.\n\n**unknown**\n\nNothing known.\n"),
    ("See :func:`recognise_enum`.\n\n* a bullet\n  continued\n",
     "See `recognise_enum`.\n\n* a bullet\n  continued\n"),
    ("Table:\n\n    a.py  form\n    b.py  form\n\nAfter.\n",
     "Table:\n\n    a.py  form\n    b.py  form\n\nAfter.\n"),
])
def test_docstring_markdown(doc: str, expected: str) -> None:
    assert gen_docs.docstring_markdown(doc) == expected


def test_help_blocks_are_filled() -> None:
    page = "x\n<!-- begin: guardscan --help -->\nstale\n<!-- end: guardscan --help -->\n"
    filled = gen_docs.fill_help_blocks(page)
    assert "stale" not in filled
    assert "usage: guardscan" in filled and "--fail-on VERDICT" in filled
    assert filled.endswith("```\n<!-- end: guardscan --help -->\n")


@pytest.mark.parametrize("recogniser", kernels.RECOGNISERS,
                         ids=lambda r: r.__name__)
def test_every_kernel_form_is_documented(recogniser: object) -> None:
    """Every kernel-fact form ``guardscan.kernels.RECOGNISERS`` publishes has its
    section in docs/guard-forms.md, with the docstring headings."""
    page = (ROOT / "docs" / "guard-forms.md").read_text(encoding="utf-8")
    section = page.split("## Kernel library", 1)[1]
    name = getattr(recogniser, "__name__", "")
    assert f"### `{name}`" in section
    body = section.split(f"### `{name}`", 1)[1].split("\n### ", 1)[0]
    assert "**What it recognises**" in body and "**Known limits**" in body, body[:400]
