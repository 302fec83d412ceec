"""Hostile and broken input: each case ends in a diagnostic (a ``file-*`` entry
of the JSON ``diagnostics``) or in ONE error line on stderr with exit code 2,
never a traceback, and loses nothing else: a good file next to the bad one
keeps its verdicts.

The good file is roles_gate's runner (``x`` is blocked below SM100 by a gate);
bad files are added next to it. Big and odd files are made in tmp_path.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixturetree import fixture, line_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import guardscan.acquire.wheel as wheel_mod
from guardscan.acquire import AcquireError, acquire
from guardscan.arch import parse_arch_list
from guardscan.cli import main
from guardscan.driver import ScanOptions, analyse
from guardscan.index import MAX_FILE_BYTES
from guardscan.index.extract import extract_facts, source_lines
from guardscan.results import ExitCode, ScanResult

GATE = fixture("roles_gate")
RUNNER = "sglang/srt/layers/moe/runner.py"
MOE = "sglang/srt/layers/moe"
#: Hostile files carry this line so that the option's text pre-filter picks
#: them up and they really are parsed (not just passed over).
BAIT = b'if server_args.moe_runner_backend == "x": pass\n'


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_cache: Path) -> None:
    """An empty $GUARDSCAN_CACHE_DIR for every test (conftest.tmp_cache)."""


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A writable copy of roles_gate: the good files."""
    root = tmp_path / "tree"
    shutil.copytree(GATE, root)
    return root


def scan(root: Path | str, cache: Path | None = None) -> ScanResult:
    with tempfile.TemporaryDirectory(prefix="guardscan-hostile-") as scratch:
        return analyse(ScanOptions(
            target=str(root), archs=parse_arch_list(["sm90", "sm100"]),
            options=["--moe-runner-backend"], kernels=False, use_cache=cache is not None,
            offline=True, cache_dir=cache or Path(scratch))).result


def assert_gate_kept(result: ScanResult) -> None:
    """The good runner's gate still decides x: nothing else was lost."""
    found = {b.arch: b for b in result.backends if b.choice == "x"}
    assert found["sm90"].verdict.value == "blocked", found["sm90"]
    assert found["sm100"].verdict.value == "supported", found["sm100"]
    gate_line = line_of(GATE / RUNNER, "raise ValueError")
    assert (RUNNER, gate_line) in {(e.path, e.line) for e in found["sm90"].evidence}


def diagnostics_of(result: ScanResult, rel: str) -> list[tuple[str, str]]:
    return [(d.code, d.message) for d in result.diagnostics if d.path == rel]


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main([*argv, "--no-kernels", "--offline", "-q"])
    out, err = capsys.readouterr()
    return int(code), out, err


def assert_one_error_line(code: int, out: str, err: str, *needles: str) -> None:
    assert "Traceback" not in err and "Traceback" not in out
    assert code == ExitCode.USAGE, (code, err)
    assert out == ""
    assert len(err.splitlines()) == 1, err
    assert err.startswith("guardscan: error: "), err
    for needle in needles:
        assert needle in err, (needle, err)


@pytest.fixture
def time_limit() -> Iterator[None]:
    """Fail instead of hanging (a fifo or device read would block forever)."""
    def expired(signum: int, frame: object) -> None:
        raise TimeoutError("the scan hung")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(30)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


# -- bad source files --------------------------------------------------------------

DEPTH = 5000

BAD_FILES: dict[str, tuple[bytes, str, str]] = {
    # name: (content, diagnostic code, words in its message)
    "syntax_error": (BAIT + b"def f(:\n    pass\n", "file-failed", "syntax error"),
    "python2_print": (BAIT + b'print "x"\n', "file-failed", "syntax error"),
    "python2_except": (BAIT + b"try:\n    pass\nexcept Exception, e:\n    pass\n",
                       "file-failed", "syntax error"),
    "python2_exec": (BAIT + b'exec "x = 1"\n', "file-failed", "syntax error"),
    "non_utf8_bytes": (BAIT + b'name = "\xff\xfe\xc3\x28"\n', "file-failed", "utf-8"),
    "latin1_without_cookie": (BAIT + 'name = "caf\xe9"\n'.encode("latin-1"), "file-failed",
                              "utf-8"),
    "unknown_coding_cookie": (b"# -*- coding: klingon -*-\n" + BAIT, "file-failed",
                              "klingon"),
    "null_bytes": (BAIT + b"x = 1\x00\ny = 2\n", "file-failed", "null bytes"),
    "binary_codec_cookie": (b"# coding: rot13\n" + BAIT, "file-failed", "rot13"),
    "deep_unary": (BAIT + b"y = " + b"-" * DEPTH + b"1\n", "file-failed", "nested"),
    "deep_binop": (BAIT + b"y = 1" + b" + 1" * DEPTH + b"\n", "file-failed", "nested"),
    "deep_parens": (BAIT + b"y = " + b"(" * DEPTH + b"1" + b")" * DEPTH + b"\n",
                    "file-failed", "nested"),
    "deep_calls": (BAIT + b"y = f" + b"()" * DEPTH + b"\n", "file-failed", "nested"),
    "deep_attributes": (BAIT + b"y = a" + b".b" * DEPTH + b"\n", "file-failed", "nested"),
    "deep_blocks": (BAIT + b"".join(b" " * i + b"if a:\n" for i in range(DEPTH // 50))
                    + b" " * (DEPTH // 50) + b"pass\n", "file-failed", "indent"),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_file_is_a_diagnostic(name: str, tree: Path) -> None:
    content, code, words = BAD_FILES[name]
    rel = f"{MOE}/{name}.py"
    (tree / rel).write_bytes(content)
    result = scan(tree)
    found = diagnostics_of(result, rel)
    assert [c for c, _ in found] == [code], (content[:200], found)
    assert words.lower() in found[0][1].lower(), found
    assert_gate_kept(result)


@pytest.mark.parametrize("name", ["syntax_error", "python2_print", "deep_unary", "null_bytes"])
def test_bad_file_through_the_cli(name: str, tree: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    """The JSON contract carries the diagnostic; exit 0; stderr silent."""
    content, code, _ = BAD_FILES[name]
    rel = f"{MOE}/{name}.py"
    (tree / rel).write_bytes(content)
    status, out, err = cli(capsys, str(tree), "--format", "json", "--arch", "sm90")
    assert status == 0 and err == "", err
    diagnostics = json.loads(out)["diagnostics"]
    assert {"path": rel, "code": code}.items() <= next(
        d for d in diagnostics if d["path"] == rel).items()


def test_gates_in_odd_but_valid_encodings_and_line_ends(tree: Path) -> None:
    """Old Mac line ends, a UTF-8 BOM, a PEP 263 cookie and CRLF are valid
    Python: the gate in each still decides, at the right line."""
    runner = (GATE / RUNNER).read_text(encoding="utf-8")
    gate_line = line_of(GATE / RUNNER, "raise ValueError")
    variants = {
        "cr": runner.replace("\n", "\r").encode(),
        "crlf": runner.replace("\n", "\r\n").encode(),
        "bom": b"\xef\xbb\xbf" + runner.encode(),
        "latin1": ("# -*- coding: latin-1 -*-\n" + runner.replace(
            "raise ValueError(\"", "raise ValueError(\"d\xe9j\xe0 ")).encode("latin-1"),
    }
    for name, data in variants.items():
        (tree / RUNNER).write_bytes(data)
        result = scan(tree)
        assert diagnostics_of(result, RUNNER) == [], (name, result.diagnostics)
        sm90 = next(b for b in result.backends if b.choice == "x" and b.arch == "sm90")
        assert sm90.verdict.value == "blocked", (name, sm90)
        expected = gate_line + (1 if name == "latin1" else 0)
        assert sm90.evidence[-1].line == expected, (name, sm90.evidence)


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("prefix", ["", "\ufeff", "# -*- coding: latin-1 -*-\n"])
def test_extracted_text_is_exact_whatever_the_encoding(newline: str, prefix: str) -> None:
    """Facts keep exact source slices: the same however the file is encoded."""
    source = ('x = "\xe9\xe9"; y = is_sm100_supported()\n'
              'if backend == "\xe9" and not is_sm100_supported():\n'
              '    raise ValueError("\xe9")\n')
    encoding = "latin-1" if "latin-1" in prefix else "utf-8"
    data = (prefix + source).replace("\n", newline).encode(encoding)
    facts = extract_facts(data, "m.py", "m", False)
    offset = 1 if "coding" in prefix else 0
    assert [(c.text, c.line) for c in facts.conds] == [
        ('backend == "\xe9" and not is_sm100_supported()', 2 + offset)]
    assert [(a.targets, a.value) for a in facts.assigns] == [
        (("x",), '"\xe9\xe9"'), (("y",), "is_sm100_supported()")]
    assert [(r.exc, r.line) for r in facts.raises] == [('ValueError("\xe9")', 3 + offset)]


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("prefix", ["", "\ufeff", "# -*- coding: latin-1 -*-\n"])
def test_source_lines_match_ast_lines(newline: str, prefix: str) -> None:
    """Evidence text comes from the same lines ast numbers, decoded the same way."""
    source = 'x = "\xe9"\nif backend == "\xe9":\n    raise ValueError("\xe9")\n'
    encoding = "latin-1" if "latin-1" in prefix else "utf-8"
    lines = source_lines((prefix + source).replace("\n", newline).encode(encoding))
    offset = 1 if "coding" in prefix else 0
    assert lines[offset:offset + 3] == ['x = "\xe9"', 'if backend == "\xe9":',
                                        '    raise ValueError("\xe9")']
    assert source_lines(b"a = 1\n\xff\xfe = 2\n")[1] == "\ufffd\ufffd = 2"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300) | st.text(max_size=200).map(lambda t: t.encode("utf-8")))
def test_any_bytes_are_facts_or_a_failed_outcome(data: bytes) -> None:
    from guardscan.index.extract import index_source

    outcome = index_source(BAIT + data, "m.py", "m", False)
    assert outcome.status in ("analysed", "failed")
    assert (outcome.facts is not None) == (outcome.status == "analysed")


def test_huge_file_is_skipped(tree: Path) -> None:
    rel = f"{MOE}/generated_table.py"
    line = BAIT + b"TABLE = [" + b"1, " * 30 + b"]\n"
    size = 50 * 1024 * 1024
    with (tree / rel).open("wb") as stream:
        for _ in range(size // len(line) + 1):
            stream.write(line)
    assert (tree / rel).stat().st_size > MAX_FILE_BYTES
    result = scan(tree)
    found = diagnostics_of(result, rel)
    assert [c for c, _ in found] == ["file-skipped"], found
    assert str(MAX_FILE_BYTES) in found[0][1]
    assert_gate_kept(result)


# -- odd file system entries -----------------------------------------------------------


def test_symlink_loops_fifos_and_devices(tree: Path, time_limit: None) -> None:
    moe = tree / MOE
    (moe / "loop").symlink_to("..")  # a directory loop
    (moe / "self").symlink_to("self")  # a link to itself (not *.py: not a module)
    (moe / "me.py").symlink_to("me.py")
    (moe / "a.py").symlink_to("b.py")  # a file loop
    (moe / "b.py").symlink_to("a.py")
    (moe / "gone.py").symlink_to("nowhere.py")
    (moe / "zero.py").symlink_to("/dev/zero")  # reading it never ends
    os.mkfifo(moe / "fifo.py")  # reading it blocks
    (moe / "alias.py").symlink_to("runner.py")  # a good link: read through
    tree_ = acquire(str(tree))
    skipped = dict(tree_.skipped)
    assert skipped == {
        f"{MOE}/loop": "symlinked directory, not followed",
        f"{MOE}/a.py": "broken or looping symlink",
        f"{MOE}/b.py": "broken or looping symlink",
        f"{MOE}/gone.py": "broken or looping symlink",
        f"{MOE}/me.py": "broken or looping symlink",
        f"{MOE}/zero.py": "not a regular file",
        f"{MOE}/fifo.py": "not a regular file",
    }
    assert f"{MOE}/alias.py" in tree_.files
    assert not any("/loop/" in rel for rel in tree_.files)
    result = scan(tree)
    assert_gate_kept(result)


def test_skipped_paths_are_diagnostics(tree: Path, time_limit: None) -> None:
    (tree / MOE / "loop").symlink_to("..")
    os.mkfifo(tree / MOE / "fifo.py")
    result = scan(tree)
    assert diagnostics_of(result, f"{MOE}/loop")
    assert diagnostics_of(result, f"{MOE}/fifo.py")
    assert_gate_kept(result)


def _chmod_blocks(path: Path) -> bool:
    return not os.access(path, os.R_OK)


def test_unreadable_file(tree: Path) -> None:
    rel = f"{MOE}/secret.py"
    (tree / rel).write_bytes(BAIT)
    (tree / rel).chmod(0)
    try:
        if not _chmod_blocks(tree / rel):
            pytest.skip("chmod 000 does not stop this user (root) from reading; "
                        "test_unreadable_file_simulated covers the path")
        result = scan(tree)
    finally:
        (tree / rel).chmod(stat.S_IRUSR | stat.S_IWUSR)
    found = diagnostics_of(result, rel)
    assert [c for c, _ in found] == ["file-failed"] and "unreadable" in found[0][1], found
    assert_gate_kept(result)


def test_unreadable_file_simulated(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rel = f"{MOE}/secret.py"
    (tree / rel).write_bytes(BAIT)
    secret = (tree / rel).resolve()
    real_read_bytes = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        if self.resolve() == secret:
            raise PermissionError(13, "Permission denied", str(self))
        return real_read_bytes(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    result = scan(tree)
    found = diagnostics_of(result, rel)
    assert found == [("file-failed", "unreadable: Permission denied")], found
    assert_gate_kept(result)


def test_unreadable_dir(tree: Path) -> None:
    locked = tree / "sglang/srt/locked"
    locked.mkdir()
    (locked / "m.py").write_bytes(BAIT)
    locked.chmod(0)
    try:
        if not _chmod_blocks(locked):
            pytest.skip("chmod 000 does not stop this user (root) from listing; "
                        "test_unreadable_dir_simulated covers the path")
        assert ("sglang/srt/locked", "unreadable directory: Permission denied") in \
            acquire(str(tree)).skipped
        result = scan(tree)
    finally:
        locked.chmod(stat.S_IRWXU)
    assert_gate_kept(result)


def test_unreadable_dir_simulated(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    locked = tree / "sglang/srt/locked"
    locked.mkdir()
    (locked / "m.py").write_bytes(BAIT)
    real_scandir = os.scandir

    def scandir(path: Any = ".") -> Any:
        if isinstance(path, (str, os.PathLike)) and Path(path).resolve() == locked.resolve():
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    acquired = acquire(str(tree))
    assert ("sglang/srt/locked", "unreadable directory: Permission denied") in acquired.skipped
    assert not any(rel.startswith("sglang/srt/locked/") for rel in acquired.files)
    assert_gate_kept(scan(tree))


# -- targets that are not usable ---------------------------------------------------------


def make_wheel(path: Path, members: dict[str, bytes | str],
               compression: int = zipfile.ZIP_DEFLATED) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", compression) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def gate_wheel(directory: Path, extra: dict[str, bytes | str] | None = None) -> Path:
    members: dict[str, bytes | str] = {
        rel.relative_to(GATE).as_posix(): rel.read_bytes()
        for rel in sorted((GATE / "sglang").rglob("*.py"))}
    members["sglang-1.0.dist-info/METADATA"] = "Metadata-Version: 2.1\nName: sglang\nVersion: 1.0\n"
    members.update(extra or {})
    return make_wheel(directory / "sglang-1.0-py3-none-any.whl", members)


def test_wheel_that_is_not_a_zip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wheel = tmp_path / "sglang-1.0-py3-none-any.whl"
    wheel.write_bytes(b"#!/bin/sh\necho this is no wheel\n")
    assert_one_error_line(*cli(capsys, str(wheel)), "not a zip file")


def test_truncated_wheel(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = gate_wheel(tmp_path / "good").read_bytes()
    wheel = tmp_path / "sglang-1.0-py3-none-any.whl"
    wheel.write_bytes(good[: len(good) // 2])
    assert_one_error_line(*cli(capsys, str(wheel)), str(wheel))


def _headers_of(data: bytearray, name: bytes) -> tuple[int, int]:
    """Offsets of member ``name``'s central directory header and local header."""
    at = 0
    while (at := data.find(b"PK\x01\x02", at)) >= 0:
        length = int.from_bytes(data[at + 28:at + 30], "little")
        if bytes(data[at + 46:at + 46 + length]) == name:
            return at, int.from_bytes(data[at + 42:at + 46], "little")
        at += 4
    raise LookupError(name)


def _damage(kind: str, data: bytearray) -> bytes:
    name = b"sglang/__init__.py"
    central, local = _headers_of(data, name)
    if kind == "deflate-stream":  # zlib.error, not BadZipFile
        start = local + 30 + len(name)
        for offset in range(start + 4, start + 40):
            data[offset] ^= 0x5A
    elif kind == "zip-version":  # NotImplementedError while reading the directory
        data[central + 6] = 0xFF
    elif kind == "encrypted":  # RuntimeError: password required
        data[central + 8] |= 0x01
        data[local + 6] |= 0x01
    elif kind == "compression-method":  # NotImplementedError on open
        data[central + 10] = 99
        data[local + 8] = 99
    elif kind == "name-not-utf8":  # UnicodeDecodeError while reading the directory
        data[central + 9] |= 0x08  # the UTF-8 flag (bit 11)
        data[central + 46 + len(name) - 3] = 0xFF
    return bytes(data)


@pytest.mark.parametrize("kind", ["deflate-stream", "zip-version", "encrypted",
                                  "compression-method", "name-not-utf8"])
def test_damaged_wheel(kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wheel = gate_wheel(tmp_path / "good", {"sglang/__init__.py": b"x = 1\n" * 2000})
    damaged = tmp_path / "sglang-1.0-py3-none-any.whl"
    damaged.write_bytes(_damage(kind, bytearray(wheel.read_bytes())))
    assert_one_error_line(*cli(capsys, str(damaged)), "wheel")


def test_zip_bomb_wheel_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   tmp_cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(wheel_mod, "MAX_EXTRACT_BYTES", 1024 * 1024)
    wheel = gate_wheel(tmp_path, {f"sglang/bomb{i}.py": b"\n" * (4 * 1024 * 1024)
                                  for i in range(3)})
    assert wheel.stat().st_size < 200 * 1024  # small on disk, 12 MB inflated
    assert_one_error_line(*cli(capsys, str(wheel), "--cache-dir", str(tmp_cache)),
                          "refusing wheel", "limit")
    leftovers = list((tmp_cache / "trees").iterdir()) if (tmp_cache / "trees").exists() else []
    assert leftovers == [], "a refused wheel must leave no tree in the cache"


def test_zip_bomb_with_lying_sizes_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              tmp_cache: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """The central directory claims a tiny member; inflating it says otherwise."""
    monkeypatch.setattr(wheel_mod, "MAX_EXTRACT_BYTES", 1024 * 1024)
    wheel = gate_wheel(tmp_path, {"sglang/bomb.py": b"\n" * (4 * 1024 * 1024)})
    data = bytearray(wheel.read_bytes())
    real = (4 * 1024 * 1024).to_bytes(4, "little")
    assert data.count(real) == 2  # local header and central directory entry
    wheel.write_bytes(bytes(data).replace(real, (100).to_bytes(4, "little")))
    code, out, err = cli(capsys, str(wheel), "--cache-dir", str(tmp_cache))
    assert_one_error_line(code, out, err)
    assert "refusing wheel" in err or "corrupt wheel" in err, err


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(min_value=0), st.integers(min_value=1, max_value=255)),
                min_size=1, max_size=8))
def test_damaged_wheels_are_acquired_or_refused(flips: list[tuple[int, int]]) -> None:
    """Whatever bytes a wheel is damaged in, acquire returns a tree or raises
    AcquireError (one line for the user), and nothing else."""
    with tempfile.TemporaryDirectory(prefix="guardscan-fuzz-") as scratch:
        base = Path(scratch)
        data = bytearray(gate_wheel(base / "good").read_bytes())
        for where, mask in flips:
            data[where % len(data)] ^= mask
        wheel = base / "sglang-1.0-py3-none-any.whl"
        wheel.write_bytes(bytes(data))
        try:
            acquire(str(wheel), cache_dir=base / "cache")
        except AcquireError as exc:
            assert "\n" not in str(exc)


@pytest.mark.parametrize("kind", ["other-package", "sglang-without-options", "plain-file",
                                  "other-package-dir", "other-wheel"])
def test_not_sglang(kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "target"
    if kind == "other-package":
        (target / "numpy").mkdir(parents=True)
        (target / "numpy/__init__.py").write_text("x = 1\n")
    elif kind == "sglang-without-options":
        (target / "sglang").mkdir(parents=True)
        (target / "sglang/__init__.py").write_text("")
        (target / "sglang/utils.py").write_text("def helper():\n    return 1\n")
    elif kind == "plain-file":
        target = tmp_path / "notes.txt"
        target.write_text("hello\n")
    elif kind == "other-package-dir":
        target = tmp_path / "numpy"
        target.mkdir()
        (target / "__init__.py").write_text("")
    else:
        target = make_wheel(tmp_path / "requests-2.0-py3-none-any.whl", {
            "requests/__init__.py": "x = 1\n",
            "requests-2.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: requests\n"
                                               "Version: 2.0\n"})
    for command in ([str(target)], ["explain", "x", str(target)]):
        code, out, err = cli(capsys, *command)
        assert_one_error_line(code, out, err)
        assert "sglang" in err.lower() or "SGLang" in err, err


def test_empty_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert_one_error_line(*cli(capsys, str(empty)), "no sglang package found")


def test_target_that_is_a_symlink_loop(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    assert_one_error_line(*cli(capsys, str(loop)), str(loop))


@pytest.mark.parametrize("target", ["/tmp/no\nsuch\rdir", "sglang==1.0\nsecond line",
                                    "sglang==0.0.0.post999\n"])
def test_line_ends_in_a_target_stay_on_one_line(target: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert_one_error_line(*cli(capsys, target))


def test_unparsable_server_args_names_the_file(tree: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Options unreadable -> nothing to judge: one line that says which file."""
    server_args = tree / "sglang/srt/server_args.py"
    server_args.write_text(server_args.read_text(encoding="utf-8") + "print 'py2'\n",
                           encoding="utf-8")
    assert_one_error_line(*cli(capsys, str(tree)), "sglang/srt/server_args.py", "syntax error")


# -- specs and the network ----------------------------------------------------------------


def test_spec_offline_without_a_cached_wheel(capsys: pytest.CaptureFixture[str]) -> None:
    assert_one_error_line(*cli(capsys, "sglang==0.0.0.post999"), "offline", "sglang==0.0.0.post999")


def fake_pip(monkeypatch: pytest.MonkeyPatch, output: str) -> list[list[str]]:
    calls: list[list[str]] = []

    def run(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        calls.append(command)
        return subprocess.CompletedProcess(command, 1, stdout="", stderr=output)

    monkeypatch.setattr(subprocess, "run", run)  # what acquire calls pip with
    return calls


def test_spec_pip_cannot_find(monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    calls = fake_pip(monkeypatch, (
        "ERROR: Could not find a version that satisfies the requirement sglang==0.0.0.post999 "
        "(from versions: 0.5.9, 0.5.23)\n"
        "ERROR: No matching distribution found for sglang==0.0.0.post999\n"))
    code = main(["sglang==0.0.0.post999", "--no-kernels", "-q"])
    out, err = capsys.readouterr()
    assert_one_error_line(int(code), out, err, "no matching wheel", "sglang==0.0.0.post999")
    pip = [c for c in calls if "pip" in c]  # not the nvidia-smi query of a scan without --arch
    assert pip and "--only-binary=:all:" in pip[0] and "--no-deps" in pip[0]


def test_no_network_simulated(monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    fake_pip(monkeypatch, (
        "WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None))"
        " after connection broken by 'NewConnectionError('<HTTPSConnection object>: Failed to "
        "establish a new connection: [Errno -3] Temporary failure in name resolution')': "
        "/simple/sglang/\n"
        "ERROR: Could not find a version that satisfies the requirement sglang==0.5.9 "
        "(from versions: none)\nERROR: No matching distribution found for sglang==0.5.9\n"))
    code = main(["sglang==0.5.9", "--no-kernels", "-q"])
    out, err = capsys.readouterr()
    assert_one_error_line(int(code), out, err, "no network?", "sglang==0.5.9")


def test_no_network_real_pip(monkeypatch: pytest.MonkeyPatch,
                             capsys: pytest.CaptureFixture[str]) -> None:
    """A real pip against an index that refuses connections (no config, no
    find-links, one retry so that pip says why)."""
    for name in list(os.environ):
        if name.startswith("PIP_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_RETRIES", "1")
    monkeypatch.setenv("PIP_TIMEOUT", "5")
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    code = main(["sglang==0.0.0.post999", "--no-kernels", "-q"])
    out, err = capsys.readouterr()
    assert_one_error_line(int(code), out, err, "sglang==0.0.0.post999")
    assert "no network?" in err or "Connection refused" in err, err


def test_kernel_library_unreachable_keeps_the_scan(tree: Path, monkeypatch: pytest.MonkeyPatch,
                                                   tmp_cache: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The target pins a FlashInfer that cannot be downloaded: SGLang-only
    verdicts with a note, exit 0."""
    (tree / "pyproject.toml").write_text(
        '[project]\nname = "sglang"\nversion = "1.0"\n'
        'dependencies = ["flashinfer_python==0.0.0.post999"]\n', encoding="utf-8")
    fake_pip(monkeypatch, "ERROR: Failed to establish a new connection: "
                          "[Errno 101] Network is unreachable\n")
    code = main([str(tree), "--format", "json", "--arch", "sm90,sm100", "-q",
                 "--option", "--moe-runner-backend", "--cache-dir", str(tmp_cache)])
    out, err = capsys.readouterr()
    assert code == 0 and err == "", err
    data = json.loads(out)
    assert any("kernel library not read" in note and "no network?" in note
               for note in data["notes"]), data["notes"]
    verdicts = {(b["choice"], b["arch"]): b["verdict"] for b in data["backends"]}
    assert verdicts[("x", "sm90")] == "blocked" and verdicts[("x", "sm100")] == "supported"


# -- hostile metadata ---------------------------------------------------------------------


@pytest.mark.parametrize("pyproject", [
    b"[project\nname = ",
    b"\xff\xfe[project]\n",
    b"a = " + b"[" * 5000 + b"]" * 5000 + b"\n",
    b'[project]\nversion = 3\ndependencies = "not a list"\n',
])
def test_hostile_pyproject_is_ignored(pyproject: bytes, tree: Path) -> None:
    (tree / "pyproject.toml").write_bytes(pyproject)
    assert_gate_kept(scan(tree))


@pytest.mark.parametrize("version_py", [
    b"__version__ = " + b"-" * 5000 + b"1\n",
    b"__version__ = '1.0'\x00\n",
    b"\xff\xfe__version__ = 1\n",
    b"__version__ = " + b"(" * 5000 + b"1" + b")" * 5000 + b"\n",
])
def test_hostile_version_file_is_ignored(version_py: bytes, tree: Path) -> None:
    (tree / "sglang/version.py").write_bytes(version_py)
    acquired = acquire(str(tree))
    assert acquired.version is None
    assert_gate_kept(scan(tree))


def test_hostile_top_level_txt(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "thing-1.0-py3-none-any.whl", {
        "thing/__init__.py": "",
        "thing-1.0.dist-info/METADATA": "Name: thing\nVersion: 1.0\n",
        "thing-1.0.dist-info/top_level.txt": b"\xff\xfe\nthing\n"})
    assert acquire(str(wheel), cache_dir=tmp_path / "cache").package == "thing"


def test_graph_file_that_cannot_be_written(tree: Path, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, str(tree), "--graph", str(tmp_path / "no/such/dir/g.json"))
    assert code == ExitCode.USAGE and "Traceback" not in err
    assert len(err.splitlines()) == 1 and "cannot write" in err, err
    code, out, err = cli(capsys, str(tree), "--graph", str(tmp_path / "g.svg"))
    assert_one_error_line(code, out, err, ".svg")


def test_every_error_is_one_line_in_a_subprocess(tmp_path: Path) -> None:
    """End to end through the interpreter: no traceback reaches the user."""
    wheel = tmp_path / "sglang-1.0-py3-none-any.whl"
    wheel.write_bytes(b"not a zip")
    result = subprocess.run([sys.executable, "-m", "guardscan", str(wheel), "--no-kernels"],
                            capture_output=True, text=True, timeout=60, check=False,
                            env={**os.environ, "GUARDSCAN_CACHE_DIR": str(tmp_path / "c")})
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert "Traceback" not in result.stderr

