"""``guardscan cache``: what the cache holds, ``clean``, ``--older-than``, and the size
limit (guardscan.memo.disk), on a temporary cache directory."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from guardscan.cli import main
from guardscan.memo import disk

DAY = 86400


def _file(path: Path, size: int, days_old: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    stamp = time.time() - days_old * DAY
    os.utime(path, (stamp, stamp))


@pytest.fixture()
def cache(tmp_path: Path) -> Path:
    """One entry of each kind but binaries, each of its own age and size."""
    root = tmp_path / "cache"
    _file(root / "wheels/sglang==0.5.23/sglang-0.5.23-py3-none-any.whl", 5000, 40)
    _file(root / "trees/sglang-0.5.23-py3-none-any-abc/sglang/__init__.py", 300, 40)
    _file(root / "trees/sglang-0.5.23-py3-none-any-abc/sglang/srt/x.py", 700, 40)
    for folder, days in (("wheels/sglang==0.5.23", 40), ("trees/sglang-0.5.23-py3-none-any-abc",
                                                         40)):
        stamp = time.time() - days * DAY
        os.utime(root / folder, (stamp, stamp))
    _file(root / "facts/ab/ab12.pickle", 100, 2)
    _file(root / "facts/cd/cd34.pickle", 200, 0)
    _file(root / "results/k1.pickle", 50, 10)
    _file(root / "results/k1.reads.pickle", 25, 1)
    _file(root / "kernels/k2.pickle", 10, 0)
    return root


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["cache", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_summary_per_kind(cache: Path, capsys: pytest.CaptureFixture[str],
                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GUARDSCAN_CACHE_LIMIT", raising=False)
    code, out, err = _run(capsys, "--cache-dir", str(cache), "--format", "json")
    assert (code, err) == (0, "")
    rows = {r["kind"]: (r["entries"], r["bytes"]) for r in json.loads(out)["kinds"]}
    assert rows == {"wheels": (1, 5000), "trees": (1, 1000), "facts": (2, 300),
                    "results": (1, 75), "kernels": (1, 10), "binaries": (0, 0)}
    assert json.loads(out)["limit_bytes"] == 4 << 30
    code, out, _ = _run(capsys, "--cache-dir", str(cache))
    lines = out.splitlines()
    assert lines[1:] == [
        "kind        entries        size  oldest",
        "wheels            1     4.9 KiB  40 days",
        "trees             1      1000 B  40 days",
        "facts             2       300 B  2 days",
        "results           1        75 B  1 day",
        "kernels           1        10 B  0 hours",
        "binaries          0         0 B  -",
        "total                   6.2 KiB",
    ]
    assert lines[0].endswith("(limit 4.0 GiB, $GUARDSCAN_CACHE_LIMIT)")


def test_clean_a_kind(cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "clean", "trees", "facts", "--cache-dir", str(cache))
    assert code == 0
    assert out.splitlines()[:2] == ["removed 1 trees entries, 1000 B",
                                    "removed 2 facts entries, 300 B"]
    assert not (cache / "trees/sglang-0.5.23-py3-none-any-abc").exists()
    assert not list((cache / "facts").rglob("*.pickle"))
    assert (cache / "wheels/sglang==0.5.23/sglang-0.5.23-py3-none-any.whl").is_file()


def test_clean_older_than(cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "clean", "--older-than", "5", "--dry-run",
                        "--cache-dir", str(cache))
    assert code == 0
    assert out.splitlines()[:2] == ["would remove 1 wheels entries, 4.9 KiB",
                                    "would remove 1 trees entries, 1000 B"]
    assert (cache / "trees/sglang-0.5.23-py3-none-any-abc").exists()
    _run(capsys, "clean", "--older-than", "1.5", "--cache-dir", str(cache))
    left = sorted(p.relative_to(cache).as_posix() for p in cache.rglob("*")
                  if p.is_file() and not p.name.startswith("."))
    # the result's record was used a day ago, so the result stays with it
    assert left == ["facts/cd/cd34.pickle", "kernels/k2.pickle", "results/k1.pickle",
                    "results/k1.reads.pickle"]


@pytest.mark.parametrize(("args", "message"), [
    (["clean", "bogus"], ("guardscan: error: not a kind of cache entry: bogus; kinds: wheels, "
                         "trees, facts, results, kernels, binaries (and 'clean' first to "
                         "remove)\n")),
    (["clean", "--older-than", "-1"], ("guardscan: error: --older-than: not a number of days: "
                                      "-1.0\n")),
    (["--dry-run"], "guardscan: error: --dry-run goes with clean\n"),
])
def test_bad_usage_is_one_line_and_exit_2(cache: Path, capsys: pytest.CaptureFixture[str],
                                          args: list[str], message: str) -> None:
    assert _run(capsys, *args, "--cache-dir", str(cache))[::2] == (2, message)


def test_bad_limit_is_a_usage_error(cache: Path, capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GUARDSCAN_CACHE_LIMIT", "lots")
    assert _run(capsys, "--cache-dir", str(cache))[::2] == (
        2, ("guardscan: error: $GUARDSCAN_CACHE_LIMIT: not a size: 'lots' (bytes, or a number "
           "with K, M, G or T)\n"))


def test_missing_cache_is_empty(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "--cache-dir", str(tmp_path / "none"), "--format", "json")
    assert code == 0
    assert [r["entries"] for r in json.loads(out)["kinds"]] == [0, 0, 0, 0, 0, 0]


@pytest.mark.parametrize(("text", "size"), [("0", 0), ("500M", 500 << 20), ("4G", 4 << 30),
                                            ("1.5K", 1536), ("2GiB", 2 << 30), ("12", 12)])
def test_parse_size(text: str, size: int) -> None:
    assert disk.parse_size(text) == size


def test_enforce_removes_oldest_first_and_spares_what_is_kept(cache: Path) -> None:
    tree = cache / "trees/sglang-0.5.23-py3-none-any-abc"
    removed = disk.enforce(cache, cap=1200, keep=[tree])
    # 6,385 bytes: the wheel (40 days) goes, the tree as old is kept, then the
    # facts of two days ago, the result (its newest part a day old) and the
    # newest facts, until 1,010 bytes are left
    assert [(e.kind, e.name) for e in removed] == [
        ("wheels", "sglang==0.5.23"), ("facts", "ab12.pickle"), ("results", "k1"),
        ("facts", "cd34.pickle")]
    assert tree.is_dir()
    assert sum(e.size for e in disk.entries(cache)) == 1010
    assert disk.enforce(cache, cap=0) == []


def test_after_write_checks_at_most_every_interval(cache: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GUARDSCAN_CACHE_LIMIT", "6000")
    started = time.time()
    assert [e.kind for e in disk.after_write(cache, started)] == ["wheels"]
    assert (cache / ".limit-checked").is_file()
    _file(cache / "facts/ef/ef56.pickle", 9000, 0)
    assert disk.after_write(cache, started) == []  # checked a moment ago
    tree = cache / "trees/sglang-0.5.23-py3-none-any-abc"
    os.utime(tree)  # a tree used anew: checked at once
    assert [e.name for e in disk.after_write(cache, started, keep=[tree])] == [
        "ab12.pickle", "k1", "cd34.pickle", "k2.pickle", "ef56.pickle"]


def test_a_tree_extracted_again_has_the_same_stat(tmp_path: Path) -> None:
    """Cleaning trees keeps stored results valid: the files come back with the
    wheel's member times, not the extraction's."""
    import zipfile

    from guardscan.acquire import acquire

    wheel = tmp_path / "sglang-0.0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name in ("sglang/__init__.py", "sglang/srt/x.py"):
            archive.writestr(zipfile.ZipInfo(name, date_time=(2024, 5, 6, 7, 8, 10)), "x = 1\n")
    cache = tmp_path / "cache"

    def stats() -> dict[str, tuple[int, int]]:
        tree = acquire(str(wheel), cache_dir=cache, offline=True)
        return {rel: (tree.path_of(rel).stat().st_size, tree.path_of(rel).stat().st_mtime_ns)
                for rel in tree.files}

    first = stats()
    assert first["sglang/srt/x.py"] == (6, int(time.mktime((2024, 5, 6, 7, 8, 10, 0, 0, -1)))
                                        * 10**9)
    # the tree, and the wheel's sha256 remembered by its stat
    assert [e.kind for e in disk.entries(cache) if disk.remove(e)] == ["trees", "binaries"]
    assert stats() == first


def test_a_moved_cache_still_answers(tmp_path: Path) -> None:
    """A tree extracted from a wheel lives in the cache, and is keyed by its
    path inside it: the cache moved elsewhere (a CI cache restored under
    another path) reuses the stored result instead of linking afresh."""
    import shutil
    import zipfile

    from fixturetree import fixture

    from guardscan.driver import ScanOptions, analyse

    package = fixture("roles_gate") / "sglang"
    wheel = tmp_path / "sglang-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path in sorted(package.rglob("*.py")):
            archive.write(path, f"sglang/{path.relative_to(package).as_posix()}")
        archive.writestr("sglang-1.0.dist-info/METADATA",
                         "Metadata-Version: 2.1\nName: sglang\nVersion: 1.0\n")
        archive.writestr("sglang-1.0.dist-info/RECORD", "")

    def scan(cache: Path) -> tuple[str, str]:
        analysis = analyse(ScanOptions(target=str(wheel), kernels=False, offline=True,
                                       cache_dir=cache))
        return analysis.cache, json.dumps(analysis.result.to_json(), sort_keys=True)

    first, reference = scan(tmp_path / "a")
    assert first == "no stored result"
    assert disk.tree_key(next((tmp_path / "a" / "trees").iterdir()), tmp_path / "a") \
        .startswith("<cache>/trees/sglang-1.0-py3-none-any-")
    shutil.move(tmp_path / "a", tmp_path / "b")
    moved, result = scan(tmp_path / "b")
    assert moved.startswith("reused"), moved
    assert result == reference
    assert disk.tree_key(package, tmp_path / "b") == str(package)  # outside the cache
