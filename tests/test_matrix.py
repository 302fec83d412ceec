"""``guardscan matrix``: the model (rows, cells, changes between releases, as
``compare`` finds them), the JSON and Markdown renderers, the release list a
range names, the command line's formats, errors and exit codes, and the
page's markup (its script is tested in a browser: test_matrix_browser.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fixturetree import fixture
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from guardscan.arch import parse_arch_list
from guardscan.cli import main
from guardscan.driver import ScanOptions
from guardscan.matrix import build_matrix, scan_targets
from guardscan.matrix import releases as releases_module
from guardscan.matrix.html import cell_id
from guardscan.matrix.releases import release_specs, select_versions

OLD, NEW = fixture("diff_old"), fixture("diff_new")


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_cache: Path) -> None:
    """An empty $GUARDSCAN_CACHE_DIR for every test (conftest.tmp_cache)."""


def scanned(jobs: int = 1) -> Any:
    base = ScanOptions(archs=parse_arch_list(["sm90,sm120"]), kernels=False, offline=True)
    return scan_targets([str(OLD), str(NEW)], base, jobs=jobs)


def test_rows_cells_and_changes() -> None:
    both = scanned()
    assert [s.error for s in both] == ["", ""]
    matrix = build_matrix([(s.target, s.result) for s in both])
    assert [r.label for r in matrix.releases] == ["sglang 0.1.0", "sglang 0.2.0"]
    assert matrix.archs == ["sm90", "sm120"]
    # the newest release's order first, then what only the older one has
    assert [(r.option, r.choice) for r in matrix.rows][:6] == [
        ("--moe-runner-backend", "auto"), ("--moe-runner-backend", "triton"),
        ("--moe-runner-backend", "x"), ("--moe-runner-backend", "y"),
        ("--moe-runner-backend", "v"), ("--moe-runner-backend", "w")]
    assert ("--old-only-backend", "a") in [(r.option, r.choice) for r in matrix.rows]
    cell = matrix.cell(1, "--moe-runner-backend", "x", "sm120")
    assert cell is not None and cell.verdict.value == "supported"
    assert matrix.cell(1, "--moe-runner-backend", "w", "sm120") is None  # removed in 0.2.0
    assert [(c.cell.option, c.cell.choice, c.cell.arch, c.cell.old.verdict.value,
             c.cell.new.verdict.value, c.direction) for c in matrix.changes] == [
        ("--moe-runner-backend", "x", "sm120", "blocked", "supported", "better"),
        ("--attention-backend", "triton", "sm90", "unknown", "supported", "other"),
        ("--attention-backend", "triton", "sm120", "unknown", "blocked", "worse")]


def test_the_pool_gives_what_one_process_gives() -> None:
    serial, pooled = scanned(jobs=1), scanned(jobs=2)
    assert [s.result.to_json() for s in pooled] == [s.result.to_json() for s in serial]


def test_a_target_that_cannot_be_scanned_is_one_line(tmp_path: Path) -> None:
    base = ScanOptions(archs=parse_arch_list(["sm90"]), kernels=False, offline=True)
    out = scan_targets([str(OLD), str(tmp_path / "missing")], base, jobs=1)
    assert out[0].result is not None and out[1].result is None
    assert out[1].error.startswith("no such file or directory: ")
    assert "\n" not in out[1].error


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["matrix", *argv, "-q", "-j", "1"])
    out, err = capsys.readouterr()
    return int(code), out, err


def test_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, str(OLD), str(NEW), "--arch", "sm90,sm120", "--no-kernels",
                          "--format", "json")
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert list(data) == ["schema", "guardscan", "archs", "quantization", "releases", "failed",
                          "changes"]
    assert data["schema"] == 1 and data["archs"] == ["sm90", "sm120"] and data["failed"] == []
    assert [r["label"] for r in data["releases"]] == ["sglang 0.1.0", "sglang 0.2.0"]
    assert data["releases"][0]["target"] == {"package": "sglang", "version": "0.1.0",
                                             "path": "sglang"}
    assert len(data["releases"][1]["backends"]) == 13 * 2
    first = data["changes"][0]
    assert {k: first[k] for k in ("option", "choice", "arch", "from", "to", "direction")} == {
        "option": "--moe-runner-backend", "choice": "x", "arch": "sm120",
        "from": "sglang 0.1.0", "to": "sglang 0.2.0", "direction": "better"}
    assert first["old"]["verdict"] == "blocked"
    assert (first["old"]["deciding"]["path"], first["old"]["deciding"]["line"]) == (
        "sglang/srt/layers/moe/runner.py", 14)
    assert (first["new"]["deciding"]["path"], first["new"]["deciding"]["line"]) == (
        "sglang/srt/layers/moe/runner.py", 17)
    assert data["changes"][1]["old"] == {"verdict": "unknown", "deciding": None}


def test_markdown_lines(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, str(OLD), str(NEW), "--arch", "sm90,sm120", "--no-kernels")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "# guardscan matrix: sglang 0.1.0, sglang 0.2.0"
    assert "| `--moe-runner-backend` | `x` | blocked | supported |" in lines
    assert ("- `--attention-backend triton` on sm120: sglang 0.1.0 unknown -> sglang 0.2.0 "
            "blocked (worse)") in lines


def test_html_is_self_contained(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    page = tmp_path / "m.html"
    code, out, err = _run(capsys, str(OLD), str(NEW), "--arch", "sm90,sm120", "--no-kernels",
                          "-o", str(page))
    assert (code, out, err) == (0, "", "")
    html = page.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>")
    # nothing to fetch: no external script, style, image or font
    for needle in ("<script src", "<link", "<img", "url(", "@import", "http://", "https://"):
        assert needle not in html, needle
    assert html.count('<section class="view"') == 3  # two releases and the history
    assert html.count('class="chip changed') == 3
    assert 'id="cell:sglang_0.2.0:--moe-runner-backend:x:sm120"' in html


def test_html_never_lets_tree_text_become_markup(tmp_path: Path) -> None:
    """Source text is escaped in the markup, and inside the embedded JSON
    ``<`` cannot close the script element."""
    from guardscan.matrix.html import _json_script

    assert "</script>" not in _json_script({"text": "</script><script>alert(1)</script>"})
    assert json.loads(_json_script({"t": "a</b>&"})) == {"t": "a</b>&"}


def test_cell_ids() -> None:
    both = scanned()
    matrix = build_matrix([(s.target, s.result) for s in both])
    assert cell_id(matrix.releases[1], "--fp8-gemm-backend", "z", "sm90") == (
        "cell:sglang_0.2.0:--fp8-gemm-backend:z:sm90")


def test_format_from_the_extension(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    for name, start in (("m.json", "{"), ("m.md", "# guardscan matrix"),
                        ("m.htm", "<!DOCTYPE html>")):
        code, _, _ = _run(capsys, str(NEW), "--arch", "sm90", "--no-kernels", "-o",
                          str(tmp_path / name))
        assert code == 0
        assert (tmp_path / name).read_text(encoding="utf-8").startswith(start), name


@pytest.mark.parametrize(("argv", "message"), [
    ([], ("guardscan: error: nothing to scan: give targets (sglang==0.5.20 sglang==0.5.23, a "
          "checkout) or --releases RANGE\n")),
    (["--releases", "banana", "--offline"],
     ("guardscan: error: --releases 'banana' is not a version range (e.g. '>=0.5.19' or "
      "'>=0.5.9,<0.5.20')\n")),
    ([str(NEW), "--jobs", "0"], "guardscan: error: --jobs 0: give 1 or more\n"),
    ([str(NEW), "--arch", "sm75"],
     ("guardscan: error: not a known architecture 'sm75': sm75 (Turing) is older than any "
      "architecture guardscan judges (sm80 and newer; guardscan archs lists them)\n")),
])
def test_usage_errors(argv: list[str], message: str,
                      capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["matrix", *argv, "--no-kernels"])
    out, err = capsys.readouterr()
    assert (code, out, err) == (2, "", message)


def test_a_failed_target_is_named_and_the_rest_written(capsys: pytest.CaptureFixture[str],
                                                       tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    code, out, err = _run(capsys, str(NEW), str(missing), "--arch", "sm90", "--no-kernels",
                          "--format", "json")
    assert code == 2
    data = json.loads(out)
    assert [r["label"] for r in data["releases"]] == ["sglang 0.2.0"]
    assert [f["target"] for f in data["failed"]] == [str(missing)]
    assert err.startswith(f"guardscan: error: not scanned: {missing}: no such file or ")
    assert err.count("\n") == 1


def test_offline_releases_come_from_the_download_cache(tmp_path: Path) -> None:
    for version in ("0.5.19", "0.5.20", "0.5.21rc1", "0.5.9"):
        folder = tmp_path / "wheels" / f"sglang=={version}"
        folder.mkdir(parents=True)
        (folder / f"sglang-{version}-py3-none-any.whl").write_bytes(b"")
    (tmp_path / "wheels" / "other").mkdir()
    (tmp_path / "wheels" / "other" / "flashinfer_python-0.6.3-py3-none-any.whl").write_bytes(b"")
    assert release_specs("sglang", ">=0.5.10", cache_dir=tmp_path, offline=True) == [
        "sglang==0.5.19", "sglang==0.5.20"]
    with pytest.raises(Exception, match=r"^no sglang release in the download cache \(--offline\) "
                                        r"matches --releases '>=0.6'; newest 0.5.21rc1$"):
        release_specs("sglang", ">=0.6", cache_dir=tmp_path, offline=True)


def test_select_versions() -> None:
    versions = [Version(v) for v in ("0.5.9", "0.5.19", "0.5.20", "0.5.21rc1", "0.5.15.post1")]
    assert [str(v) for v in select_versions(versions, SpecifierSet(">=0.5.15"))] == [
        "0.5.15.post1", "0.5.19", "0.5.20"]
    assert [str(v) for v in select_versions(versions, SpecifierSet(">=0.5.21rc1"))] == [
        "0.5.21rc1"]


def test_the_index_listing_is_read_from_pip(monkeypatch: pytest.MonkeyPatch) -> None:
    class Done:
        returncode = 0
        stdout = "sglang (0.5.23)\nAvailable versions: 0.5.23, 0.5.22, 0.5.9, 0.5.10.post1\n"
        stderr = ""

    seen: list[list[str]] = []

    def fake_run(command: list[str], **kwargs: object) -> Done:
        seen.append(command)
        return Done()

    monkeypatch.setattr(releases_module.subprocess, "run", fake_run)
    assert release_specs("sglang", ">=0.5.10") == [
        "sglang==0.5.10.post1", "sglang==0.5.22", "sglang==0.5.23"]
    assert seen[0][1:5] == ["-m", "pip", "index", "versions"]


def test_progress_on_a_terminal(monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:
    import io
    import sys

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    for jobs in ("1", "2"):
        terminal = Terminal()
        monkeypatch.setattr(sys, "stderr", terminal)
        code = main(["matrix", str(OLD), str(NEW), "--arch", "sm90", "--no-kernels",
                     "--format", "json", "-j", jobs])
        monkeypatch.undo()
        assert code == 0 and json.loads(capsys.readouterr().out)["releases"]
        parts = [p for p in terminal.getvalue().split("\r") if p.startswith("guardscan: ")]
        assert parts and all(p.startswith("guardscan: matrix: ") for p in parts), parts
        assert "2 of 2 done" in parts[-1]
        assert "\n" not in terminal.getvalue()
        assert terminal.getvalue().endswith("\r\033[K")
