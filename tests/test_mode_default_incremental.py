"""A commit that changes only a mode option's default: the cached (incremental)
scan must give exactly what a scan of the changed tree from scratch gives.

A mode option (``catalog.modes``: ``--gemm-mode`` in fixtures/flow_mode_option)
is never judged, but while a backend is judged it holds its default
(``link.collect.default_choices`` into ``Links.defaults``), so a gate that
tests it together with a backend choice is decided by that default:

    if get_fp8_gemm_backend().is_z() and get_gemm_mode().enable_fast():
        if not is_sm100_supported():
            raise RuntimeError("z in fast mode needs SM100")

With ``--gemm-mode`` defaulting to ``auto`` (fast), ``--fp8-gemm-backend z`` is
blocked off SM100; with ``precise`` the gate never raises. Unlike a backend
option's default, a mode's default is not in ``RecordingUnits.context()``, and
the gate's finding (its condition names the mode's values, not its default) is
the same before and after the edit, so nothing marks ``z`` dirty. These tests
check that the stored verdicts are not reused all the same.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from fixturetree import FIXTURES, verdict_of, verdicts

from guardscan.arch import parse_arch
from guardscan.cli import main
from guardscan.driver import Analysis, ScanOptions, analyse

ARCHS = ("sm90", "sm100", "sm120")
FLAG = "--fp8-gemm-backend"
SERVER_ARGS = "sglang/srt/server_args.py"
#: the mode option's default, before and after the commit (only this changes)
OLD_DEFAULT = '            default="auto",\n'
NEW_DEFAULT = '            default="precise",\n'


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / "flow_mode_option", root)
    for path in root.rglob("*.py"):  # written long ago: never racily clean
        os.utime(path, (1_600_000_000, 1_600_000_000))
    return root


def _change_mode_default(root: Path) -> None:
    """``--gemm-mode``'s ``default="auto"`` becomes ``default="precise"``: the
    one line of the commit (the ``ServerArgs`` field is left as it is)."""
    path = root / SERVER_ARGS
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    where = [i for i, line in enumerate(lines) if line == OLD_DEFAULT]
    assert len(where) == 1, where
    assert '"--gemm-mode"' in lines[where[0] - 3], lines[where[0] - 3]
    lines[where[0]] = NEW_DEFAULT
    path.write_text("".join(lines), encoding="utf-8")
    stat = path.stat()  # a new mtime even where the clock is coarse
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10_000_000))


def _analyse(root: Path, cache: Path, use_cache: bool = True) -> Analysis:
    return analyse(ScanOptions(target=str(root), archs=[parse_arch(a) for a in ARCHS],
                               kernels=False, offline=True, cache_dir=cache,
                               use_cache=use_cache))


def _json(analysis: Analysis) -> str:
    return json.dumps(analysis.result.to_json(), indent=2, sort_keys=True)


def _row(analysis: Analysis, choice: str) -> tuple[str, ...]:
    table = verdicts(analysis.result, FLAG)
    return tuple(table[(choice, arch)] for arch in ARCHS)


def test_a_mode_default_change_rejudges_what_it_decides(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    cache = tmp_path / "cache"

    first = _analyse(root, cache)
    assert first.cache == "no stored result"
    # at the default `auto` (fast) the gate raises for z off SM100
    assert _row(first, "z") == ("blocked", "supported", "blocked")
    assert verdict_of(first.result, "z", "sm120", FLAG).conditions == (
        "not blocked with --gemm-mode precise",)

    _change_mode_default(root)

    # the changed tree from scratch: a fresh cache dir, and no cache at all
    fresh = _analyse(root, tmp_path / "fresh-cache")
    assert fresh.cache == "no stored result"
    assert _json(fresh) == _json(_analyse(root, tmp_path / "none", use_cache=False))
    # not vacuous: at the new default `precise` the gate never raises, so z's
    # verdicts change on every arch (and no condition is left to name)
    assert _row(fresh, "z") == ("unknown", "unknown", "unknown")
    assert verdict_of(fresh.result, "z", "sm120", FLAG).conditions == ()
    assert _row(fresh, "cutlass") == _row(first, "cutlass") == ("unknown",) * 3

    # the same cache: server_args.py was read whole, so the stored result does
    # not stand; linking is incremental (units replayed) and judging reuses
    # what nothing changed for
    incremental = _analyse(root, cache)
    assert incremental.index is not None, incremental.cache
    assert SERVER_ARGS in incremental.cache, incremental.cache
    replayed, _ran = incremental.units
    assert replayed > 0, incremental.units

    stale = {key: (value, verdicts(fresh.result, FLAG)[key])
             for key, value in verdicts(incremental.result, FLAG).items()
             if verdicts(fresh.result, FLAG)[key] != value}
    assert stale == {}, f"incremental vs fresh, (choice, arch): (cached, fresh): {stale}"
    assert _row(incremental, "z") == ("unknown", "unknown", "unknown")
    assert _json(incremental) == _json(fresh)


def test_the_command_line_gives_the_same_json_cached_and_fresh(tmp_path: Path) -> None:
    """The same commit through ``guardscan --format json -o FILE --cache-dir``."""
    root = _tree(tmp_path)

    def scan(cache: Path, out: Path) -> dict[str, object]:
        arch_args = [part for arch in ARCHS for part in ("--arch", arch)]
        code = main([str(root), *arch_args, "--format", "json", "-o", str(out),
                     "--cache-dir", str(cache), "--no-kernels", "--offline", "-q"])
        assert code == 0
        data: dict[str, object] = json.loads(out.read_text(encoding="utf-8"))
        return data

    def z_verdicts(data: dict[str, object]) -> dict[str, str]:
        rows = data["backends"]
        assert isinstance(rows, list)
        return {r["arch"]: r["verdict"] for r in rows if r["option"] == FLAG and r["choice"] == "z"}

    before = scan(tmp_path / "cache", tmp_path / "before.json")
    assert z_verdicts(before) == {"sm90": "blocked", "sm100": "supported", "sm120": "blocked"}
    _change_mode_default(root)
    fresh = scan(tmp_path / "fresh-cache", tmp_path / "fresh.json")
    assert z_verdicts(fresh) == {"sm90": "unknown", "sm100": "unknown", "sm120": "unknown"}
    cached = scan(tmp_path / "cache", tmp_path / "cached.json")
    assert z_verdicts(cached) == z_verdicts(fresh)
    assert cached == fresh
