"""Docs generated from the code must not drift: the pages generated from
docstrings (every recogniser carries the documented headings), the --help
blocks, and every output the README and docs/ show, produced by running the
command its marker names (scripts/gen_docs.py). What stays written by hand is
checked against the code: the exit codes, the commands shown, the hook."""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import realtrees

from guardscan import kernels, options
from guardscan.guards.forms import REGISTRY as GUARD_FORMS
from guardscan.guards.forms import GuardForm

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "gen_docs.py"


def _gen_docs() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_docs", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


gen_docs = _gen_docs()


def _run_check(*flags: str) -> subprocess.CompletedProcess[str]:
    """``gen_docs.py --check`` in its own process, on the suite's shared cache
    (the suite points $GUARDSCAN_CACHE_DIR elsewhere; the script must not follow)."""
    env = {**os.environ, "GUARDSCAN_TEST_CACHE": str(realtrees.shared_cache_dir())}
    return subprocess.run([sys.executable, str(SCRIPT), "--check", *flags], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=False, timeout=1800)


def test_generated_docs_are_up_to_date() -> None:
    """The docstring pages, the --help blocks, and every output of a command on
    a fixture tree (the outputs on real releases: the next test)."""
    run = _run_check("--skip-real")
    assert run.returncode == 0, (
        "docs/ drifted from the code; run `python scripts/gen_docs.py`\n"
        + run.stdout + run.stderr)


@pytest.mark.real
def test_release_outputs_are_up_to_date() -> None:
    """Every output shown of a command on a real release (sglang==0.5.9, ...)."""
    run = _run_check("--real-only")
    assert run.returncode == 0, (
        "an output of a real release drifted; run `python scripts/gen_docs.py`\n"
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


# -- output blocks -------------------------------------------------------------------------
@pytest.mark.parametrize(("command", "argvs", "exit_code"), [
    ("guardscan x --arch sm120", [["guardscan", "x", "--arch", "sm120"]], 0),
    ('guardscan --arch "RTX PRO 6000" x | head -3 # exit 1',
     [["guardscan", "--arch", "RTX PRO 6000", "x"]], 1),
    ("cp -r fixtures/a fork && guardscan gate fork >/dev/null",
     [["cp", "-r", "fixtures/a", "fork"], ["guardscan", "gate", "fork"]], 0),
    ("cat .guardscan.json", [["cat", ".guardscan.json"]], 0),
])
def test_output_markers_are_read(command: str, argvs: list[list[str]], exit_code: int) -> None:
    shown = gen_docs.parse_shown(command)
    assert [list(step.argv) for step in shown.steps] == argvs
    assert shown.exit == exit_code
    assert "# exit" not in shown.text


@pytest.mark.parametrize("command", [
    "rm -rf fixtures", "guardscan x; guardscan y", "guardscan x | grep y",
    "guardscan x > out.txt", "guardscan x # later", "",
])
def test_output_markers_run_nothing_else(command: str) -> None:
    with pytest.raises(gen_docs.DocError):
        gen_docs.parse_shown(command)


def test_a_release_spec_makes_an_output_real() -> None:
    assert gen_docs.parse_shown("guardscan diff sglang==0.5.9 fixtures/x").real
    assert not gen_docs.parse_shown("guardscan fixtures/x --option --moe-runner-backend").real
    assert gen_docs.parse_shown("guardscan x --flashinfer=flashinfer-python==0.6.3").real


def test_long_commands_wrap_between_a_flag_and_the_next() -> None:
    shown = gen_docs.display("guardscan check --arch sm120 sglang==0.5.9 -- sglang serve "
                             "--model-path m --moe-runner-backend flashinfer_trtllm "
                             "--fp4-gemm-backend flashinfer_cudnn", width=60)
    lines = shown.splitlines()
    assert all(len(line) <= 60 for line in lines), shown
    assert lines[0].startswith("$ guardscan check") and lines[0].endswith(" \\")
    assert "    --moe-runner-backend flashinfer_trtllm \\" in lines
    assert shlex.split(shown[2:].replace("\\\n", " ")) == shlex.split(
        "guardscan check --arch sm120 sglang==0.5.9 -- sglang serve --model-path m "
        "--moe-runner-backend flashinfer_trtllm --fp4-gemm-backend flashinfer_cudnn")


def _page(tmp_path: Path, *commands: str) -> str:
    return "".join(f"x\n<!-- begin: output {c} -->\nstale\n<!-- end: output -->\n"
                   for c in commands)


def test_outputs_are_run_in_page_order_without_local_paths(tmp_path: Path) -> None:
    """A session runs a page's commands in order in its scratch directory (the
    lock file the first writes, the second reads), and shows no local path."""
    session = gen_docs.Session(tmp_path / "page.md", tmp_path / "cache")
    page = _page(tmp_path,
                 "guardscan baseline --arch sm120 --no-kernels fixtures/diff_old -q",
                 "guardscan baseline --check fixtures/diff_new # exit 1",
                 "guardscan fixtures/diff_new --arch sm120 --no-kernels | head -1")
    filled = gen_docs.fill_blocks(page, session)
    assert "stale" not in filled
    assert "$ guardscan baseline --check fixtures/diff_new\n" in filled
    assert ("fixtures/diff_new/sglang/srt/layers/attention/backend.py:12: "
            "--attention-backend triton on sm120: unknown -> blocked") in filled
    assert "```console\n$ guardscan fixtures/diff_new --arch sm120 --no-kernels | head -1\n" \
           "guardscan 0.1.0: sglang 0.2.0, on sm120" in filled
    for local in (str(tmp_path), str(ROOT), str(Path.home())):
        assert local not in filled


def test_an_exit_status_the_marker_does_not_say_is_an_error(tmp_path: Path) -> None:
    session = gen_docs.Session(tmp_path / "page.md", tmp_path / "cache")
    with pytest.raises(gen_docs.DocError, match="exited 2, the marker says 0"):
        gen_docs.fill_blocks(_page(tmp_path, "guardscan fixtures/none --arch sm120"), session)


def test_real_outputs_are_kept_when_asked(tmp_path: Path) -> None:
    page = _page(tmp_path, "guardscan sglang==0.5.9 --arch sm120")
    session = gen_docs.Session(tmp_path / "page.md", tmp_path / "cache")
    assert gen_docs.fill_blocks(page, session, real=False) == page


def test_the_subcommand_list_names_every_subcommand() -> None:
    from guardscan.commands import SUBCOMMANDS

    lines = gen_docs.subcommand_lines().splitlines()
    assert [line.split("`")[1] for line in lines] == [f"guardscan {n}" for n in SUBCOMMANDS]


# -- what is written by hand, against the code -------------------------------------------
README = ROOT / "README.md"


def test_readme_set_up_commands() -> None:
    """The two commands of a fresh machine; CI runs the second as written."""
    text = README.read_text(encoding="utf-8")
    assert ("    python3 -m venv .venv && .venv/bin/pip install -q . && "
            ".venv/bin/guardscan sglang==0.5.9 --arch sm120\n") in text
    assert ('    python3 -m venv .venv && .venv/bin/pip install -q ".[test]" && '
            ".venv/bin/python -m pytest -q\n") in text


def test_readme_exit_codes_are_the_exit_code_enum() -> None:
    from guardscan.results import ExitCode

    rows = re.findall(r"^\| (\d+) \| `(\w+)` \|", README.read_text(encoding="utf-8"),
                      re.MULTILINE)
    assert [(int(code), name) for code, name in rows] == [(e.value, e.name) for e in ExitCode]


def _shown_commands() -> list[tuple[str, str]]:
    """(page, command) for every ``guardscan ...`` command the README and docs/
    show by hand: lines of ``sh`` blocks and of indented code, the ``$`` lines
    of ``console`` blocks, continuation lines joined; usage synopses
    (``[...]``, ``<...>``, ``...``) and generated outputs (their commands ran)
    left out."""
    out = []
    for page in [README, *sorted((ROOT / "docs").glob("*.md"))]:
        fence: str | None = None
        pending = ""
        generated = False
        for line in page.read_text(encoding="utf-8").splitlines():
            if line.startswith(("<!-- begin: output ", "<!-- end: output")):
                generated = line.startswith("<!-- begin:")
                continue
            if generated:
                continue
            if line.lstrip().startswith("```"):
                fence = None if fence is not None else line.strip()[3:] or "text"
                continue
            if fence in ("sh", "bash"):
                code = line.strip()
            elif fence == "console":
                code = line.strip() if pending else line.removeprefix("$ ") \
                    if line.startswith("$ ") else ""
            elif fence is None and line.startswith("    "):
                code = line[4:]
            else:
                continue
            if pending:
                code, pending = pending + " " + code.strip(), ""
            if code.endswith("\\"):
                pending = code[:-1].strip()
                continue
            code = code.removeprefix(".venv/bin/").split(" && ")[-1]
            if not code.startswith("guardscan ") or re.search(r"\[|<|\.\.\.", code):
                continue
            out.append((page.relative_to(ROOT).as_posix(), code))
    return out


@pytest.mark.parametrize(("page", "command"), _shown_commands())
def test_every_command_shown_is_one_guardscan_takes(page: str, command: str) -> None:
    """The flags in a command a page shows are flags of that command's parser."""
    from guardscan import cli, commands

    words = shlex.split(command.split(" # ", 1)[0])
    for stop in ("|", "&&", ">/dev/null", "2>/dev/null", "2>&1"):
        if stop in words:
            words = words[:words.index(stop)]
    argv = cli._glue_option_values(words[1:])
    sub = argv[0] if argv and argv[0] in commands.SUBCOMMANDS else None
    parser = commands.load(sub).build_parser() if sub else cli.build_parser()
    rest = argv[1:] if sub else argv
    if sub == "check":
        rest = rest[:rest.index("--")] if "--" in rest else rest
    try:
        if sub == "check":
            parser.parse_args(rest)
        else:
            parser.parse_intermixed_args(rest)
    except SystemExit:
        pytest.fail(f"{page}: `{command}` is not a command guardscan takes")


def test_pre_commit_page_matches_the_hook() -> None:
    """docs/pre-commit.md describes .pre-commit-hooks.yaml as it is, and its
    `repo: local` hook is the same hook."""
    yaml = pytest.importorskip("yaml")
    [hook] = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    page = (ROOT / "docs" / "pre-commit.md").read_text(encoding="utf-8")
    assert f"`entry: {hook['entry']}`, `language: {hook['language']}`" in page
    assert f"`files: '{hook['files']}'`" in page
    for key in ("pass_filenames", "require_serial"):
        assert f"`{key}: {str(hook[key]).lower()}`" in page
    [block] = [b for b in re.findall(r"```yaml\n(.*?)```", page, re.DOTALL)
               if "repo: local" in b]
    [local_hook] = yaml.safe_load(block)["repos"][0]["hooks"]
    for key in ("id", "name", "entry", "pass_filenames", "require_serial", "files"):
        assert local_hook[key] == hook[key], key
    assert "rev: v0.1.0" not in page
