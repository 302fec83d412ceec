"""binaries: the fatbin reader on crafted files, nvcc's own fatbins, hostile input, the
cache, and (marker ``real``) the compiled packages sglang 0.5.23 pins."""

from __future__ import annotations

import dataclasses
import doctest
import importlib
import importlib.util
import io
import json
import os
import re
import zipfile
from pathlib import Path
from types import ModuleType

import pytest
import realtrees
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import guardscan.binaries
from guardscan.acquire import AcquireError, SourceTree
from guardscan.binaries import cache as cache_mod
from guardscan.binaries import compat, driver, elf, packages, source
from guardscan.binaries.__main__ import main as cli_main
from guardscan.binaries.library import read_library, read_library_file
from guardscan.binaries.model import (
    ENTRY_FIELDS,
    FatbinEntry,
    LibraryFacts,
    ReadFailure,
    outcome_from_json,
)
from guardscan.binaries.source import BytesSource, ForwardSource
from guardscan.binaries.wheel_members import library_members, open_member, safe_member_name

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "binaries"


def _load_script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


make = _load_script("make_binary_fixtures")


def facts(outcome: object) -> LibraryFacts:
    assert isinstance(outcome, LibraryFacts), f"expected facts, got {outcome!r}"
    return outcome


def listing(outcome: LibraryFacts) -> list[tuple[str, str, str]]:
    return [(e.section, e.kind, e.target) for e in outcome.entries]


class _BytesReader:
    """A forward-only stream over bytes, as a zip member's inflater is."""

    def __init__(self, data: bytes) -> None:
        self._stream = io.BytesIO(data)

    def read(self, n: int = -1, /) -> bytes:
        return self._stream.read(n)

    def close(self) -> None:
        self._stream.close()


def stream_of(data: bytes, name: str = "x.so") -> ForwardSource:
    return ForwardSource(lambda: _BytesReader(data), len(data), name)


# --------------------------------------------------------------------------
# The docstrings' examples, and the committed fixtures against their builder


@pytest.mark.parametrize("module", ["model", "source", "elf", "fatbin", "library",
                                    "wheel_members", "cache", "driver", "packages", "compat",
                                    "python", "pinned", "judge"])
def test_docstring_examples(module: str) -> None:
    mod = importlib.import_module(f"guardscan.binaries.{module}")
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{module} has no example"
    assert result.failed == 0


def test_compiled_rule_examples() -> None:
    from guardscan.verdict.rules import compiled

    result = doctest.testmod(compiled, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0


def test_fixtures_match_their_builder() -> None:
    assert make.drifted() == [], "run python scripts/make_binary_fixtures.py"


# --------------------------------------------------------------------------
# A valid library: SASS and PTX of several architectures and variants

VALID_LISTING = [
    (".nv_fatbin", "sass", "sm_80"),
    (".nv_fatbin", "ptx", "compute_80"),
    (".nv_fatbin", "sass", "sm_90a"),
    (".nv_fatbin", "ptx", "compute_90a"),
    (".nv_fatbin", "sass", "sm_100f"),
    (".nv_fatbin", "ptx", "compute_100f"),
    (".nv_fatbin", "sass", "sm_120a"),
    ("__nv_relfatbin", "sass", "sm_75"),
]


def test_valid_library_entries() -> None:
    got = facts(read_library_file(str(FIXTURES / "valid.so")))
    assert listing(got) == VALID_LISTING
    assert got.fatbin_sections == (".nv_fatbin", "__nv_relfatbin")
    assert got.containers == 3
    assert got.sass_targets == ("sm_80", "sm_90a", "sm_100f", "sm_120a")
    assert got.ptx_targets == ("compute_80", "compute_90a", "compute_100f")
    assert got.relocatable_targets == ("sm_75",)
    assert got.sass_sms == frozenset({80, 90, 100, 120})
    assert got.ptx_sms == frozenset({80, 90, 100})
    assert got.compressions == ("lz4", "zstd")
    by_target = {e.target: e for e in got.entries}
    assert by_target["compute_90a"].compression == "zstd"
    assert by_target["compute_100f"].compression == "lz4"
    assert by_target["compute_100f"].uncompressed_size == len(make._PTX_100F)
    assert by_target["sm_100f"].header_size == 112
    assert [e.elf_sm for e in got.entries if e.kind == "sass"] == [80, 90, 100, 120, 75]
    assert [e.container for e in got.entries] == [0, 0, 0, 0, 1, 1, 1, 0]
    assert got.entries[0].offset == 16


def test_valid_library_read_as_a_stream_in_one_pass() -> None:
    data = (FIXTURES / "valid.so").read_bytes()
    stream = stream_of(data)
    got = facts(read_library(stream))
    assert got == facts(read_library(BytesSource(data, name="x.so")))
    assert stream.passes == 1


def test_stream_with_a_tiny_window_restarts_and_agrees(monkeypatch: pytest.MonkeyPatch) -> None:
    # a window smaller than the distance from the section table back to the
    # fatbin forces reads behind it: the stream starts again, the facts stand
    monkeypatch.setattr(source, "WINDOW", 64)
    monkeypatch.setattr(source, "CHUNK", 32)
    data = (FIXTURES / "valid.so").read_bytes()
    stream = stream_of(data)
    assert listing(facts(read_library(stream))) == VALID_LISTING
    assert stream.passes >= 2


def _decoy_library() -> bytes:
    """A .rodata holding a complete fatbin container (a library may embed
    one for cuModuleLoadData), then the real .nv_fatbin."""
    decoy = make.container(make.entry(make.SASS, 61, make.PLAIN, make.cubin(61)))
    real = make.container(make.entry(make.SASS, 90, make.ARCH_SPECIFIC, make.cubin(90)))
    return make.library([(".rodata", decoy), (".nv_fatbin", real)])


def test_fatbin_outside_its_sections_is_not_read() -> None:
    data = _decoy_library()
    stream = stream_of(data)
    got = facts(read_library(stream))
    assert listing(got) == [(".nv_fatbin", "sass", "sm_90a")]
    assert stream.passes == 1
    assert got == facts(read_library(BytesSource(data, name="x.so")))


def _swallowing_decoy(payload_size: int) -> bytes:
    decoy_entry = make.entry(make.SASS, 61, make.PLAIN, make.cubin(61),
                             payload_size=payload_size)
    decoy = make.container(decoy_entry, body_size=payload_size + 128)
    real = make.container(make.entry(make.SASS, 100, make.FAMILY, make.cubin(100)))
    return make.library([(".text", decoy), (".nv_fatbin", real)])


def test_a_decoy_that_swallows_the_section_start_costs_a_second_pass(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # a magic in .text whose first entry claims a payload running over the
    # real section, out of the stream's window: the single pass cannot vouch
    # for the section, so it is walked again, exactly. The window (300 bytes)
    # holds the section-name table when the section table is read, not the
    # real section's start once the decoy has been walked.
    monkeypatch.setattr(source, "WINDOW", 300)
    monkeypatch.setattr(source, "CHUNK", 32)
    probe = _swallowing_decoy(0)
    table_at = int.from_bytes(probe[40:48], "little")
    body_start = 64 + 16
    data = _swallowing_decoy(table_at - body_start - 128 - 8)
    sections = {s.name: s.offset for s in elf.read_sections(
        BytesSource(data), elf.read_header(BytesSource(data)))}
    assert table_at - sections[".shstrtab"] < 300 < table_at + 32 - sections[".nv_fatbin"]
    stream = stream_of(data)
    got = facts(read_library(stream))
    assert listing(got) == [(".nv_fatbin", "sass", "sm_100f")]
    assert stream.passes == 2


def test_a_library_without_fatbin_is_host_code() -> None:
    got = facts(read_library(BytesSource(make.library([(".text", b"\xc3")]), name="h.so")))
    assert got.fatbin_sections == () and got.entries == () and got.sass_targets == ()


def test_a_fatbin_file_reads_as_one_loadable_section() -> None:
    data = make.valid_fatbin()
    got = facts(read_library(BytesSource(data, name="x.fatbin")))
    assert listing(got) == VALID_LISTING[:-1]


def test_facts_round_trip_through_json() -> None:
    got = facts(read_library_file(str(FIXTURES / "valid.so")))
    assert outcome_from_json(json.loads(json.dumps(got.to_json()))) == got
    assert outcome_from_json(json.loads(json.dumps(got.to_json(compact=True)))) == got
    assert ENTRY_FIELDS == tuple(f.name for f in dataclasses.fields(FatbinEntry))
    failure = ReadFailure("x.so", "truncated", (10, 4))
    assert outcome_from_json(json.loads(json.dumps(failure.to_json()))) == failure


# --------------------------------------------------------------------------
# nvcc's own fatbins, against cuobjdump's listing of them (fixtures/binaries/cuobjdump.txt)

_LISTED = re.compile(r"^(ELF|PTX) file\s+\d+:\s+\S*?\.(sm_\d+[a-z]?)\.(cubin|ptx)$")


def recorded_listing(name: str) -> list[str]:
    """What cuobjdump listed for ``name``, as ``sass:sm_90a`` / ``ptx:compute_90a``."""
    out, inside = [], False
    for line in (FIXTURES / "cuobjdump.txt").read_text().splitlines():
        if line.startswith("## "):
            inside = line.startswith(f"## {name}:")
            continue
        match = _LISTED.match(line.strip())
        if inside and match:
            kind, target, _ext = match.groups()
            out.append(f"ptx:{target.replace('sm_', 'compute_')}" if kind == "PTX"
                       else f"sass:{target}")
    return out


def cuobjdump_spelling(entry: FatbinEntry) -> str:
    # cuobjdump lists a family SASS target without its f (sm_100f as sm_100)
    if entry.kind == "sass" and entry.variant == "f":
        return f"sass:sm_{entry.sm}"
    return f"{entry.kind}:{entry.target}"


@pytest.mark.parametrize("name", ["nvcc_zstd.fatbin", "nvcc_lz4.fatbin"])
def test_nvcc_fatbins_agree_with_cuobjdump(name: str) -> None:
    got = facts(read_library_file(str(FIXTURES / name)))
    expected = recorded_listing(name)
    ours = [cuobjdump_spelling(e) for e in sorted(got.entries, key=lambda e: e.kind != "sass")]
    assert ours == expected, f"{name}: ours {ours}, cuobjdump {expected}"


def test_nvcc_fatbin_variants_and_compression() -> None:
    zstd = facts(read_library_file(str(FIXTURES / "nvcc_zstd.fatbin")))
    assert zstd.sass_targets == ("sm_80", "sm_90a", "sm_100f", "sm_120a")
    assert zstd.ptx_targets == ("compute_80", "compute_90a", "compute_100f")
    assert {e.compression for e in zstd.entries} == {"zstd"}
    lz4 = facts(read_library_file(str(FIXTURES / "nvcc_lz4.fatbin")))
    assert [(e.target, e.compression) for e in lz4.entries] == [("sm_90a", ""),
                                                                ("compute_90a", "lz4")]


def test_valid_fixture_against_cuobjdump_except_the_variant_it_reads_from_the_cubin() -> None:
    got = facts(read_library_file(str(FIXTURES / "valid.so")))
    ours = [cuobjdump_spelling(e) for e in sorted(got.entries, key=lambda e: e.kind != "sass")]
    # the minimal cubins lack the .nv.compat attribute cuobjdump names `a` from
    # (see make_binary_fixtures.cubin); the entry headers carry it
    ours = [t.replace("sm_90a", "sm_90").replace("sm_120a", "sm_120") if t.startswith("sass")
            else t for t in ours]
    assert ours == recorded_listing("valid.so")


# --------------------------------------------------------------------------
# Hostile input: one failure value each, never an exception, nothing written

HOSTILE = {
    "truncated.so": ("truncated", (2252 + 100, 2252)),
    "fatbin_overrun.so": ("fatbin-overrun", (0, 1 << 40, 272, ".nv_fatbin")),
    "size_claim.so": ("size-claim", (16, 64 << 30, 2 << 30)),
    "not_elf.so": ("not-elf", ("b'#!/b'",)),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_file_is_one_failure(name: str) -> None:
    got = read_library_file(str(FIXTURES / name))
    assert isinstance(got, ReadFailure), got
    assert (got.code, got.args) == HOSTILE[name]
    assert got.reason  # the template fills


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_file_as_a_stream_is_the_same_failure(name: str) -> None:
    data = (FIXTURES / name).read_bytes()
    got = read_library(stream_of(data, name))
    assert isinstance(got, ReadFailure)
    assert (got.code, got.args) == HOSTILE[name]


def _tree_listing(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def test_unsafe_member_names_are_refused_and_nothing_lands_outside_the_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    wheel = tmp_path / "pkg-1.0-py3-none-any.whl"
    wheel.write_bytes((FIXTURES / "unsafe_members.whl").read_bytes())
    before = _tree_listing(tmp_path)
    got = driver.read_wheel(wheel, cache_dir=tmp_path / "cache")
    by_name = {o.path: o for o in got.libraries}
    assert set(by_name) == {"../escape.so", "/absolute.so", "pkg/good.so"}
    for unsafe in ("../escape.so", "/absolute.so"):
        failure = by_name[unsafe]
        assert isinstance(failure, ReadFailure)
        assert (failure.code, failure.args) == ("unsafe-member", (unsafe,))
    assert listing(facts(by_name["pkg/good.so"])) == VALID_LISTING
    created = _tree_listing(tmp_path) - before
    assert created and all(p.startswith("cache") for p in created), created
    assert not any(p.endswith(".partial") for p in created)
    assert list(work.iterdir()) == []


def test_safe_member_names() -> None:
    for good in ("sgl_kernel/flash_ops.abi3.so", "a/b/c.so.1", "x..y/lib.so"):
        assert safe_member_name(good), good
    for bad in ("../x.so", "a/../../x.so", "/x.so", "a\\b.so", "C:/x.so", "a\0.so", ""):
        assert not safe_member_name(bad), bad


def test_a_wheel_that_is_no_zip_is_one_failure(tmp_path: Path) -> None:
    wheel = tmp_path / "bad-1.0-py3-none-any.whl"
    wheel.write_bytes(b"not a zip at all")
    got = driver.read_wheel(wheel, cache_dir=tmp_path / "cache")
    assert len(got.libraries) == 1
    assert got.libraries[0].code == "bad-zip"  # type: ignore[union-attr]


def _library_variants() -> st.SearchStrategy[bytes]:
    data = (FIXTURES / "valid.so").read_bytes()
    cut = st.integers(0, len(data)).map(lambda n: data[:n])
    flip = st.tuples(st.integers(0, len(data) - 1), st.integers(0, 255)).map(
        lambda p: data[:p[0]] + bytes([p[1]]) + data[p[0] + 1:])
    return st.one_of(cut, flip)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_library_variants())
def test_damaged_libraries_never_raise(data: bytes) -> None:
    for outcome in (read_library(BytesSource(data, name="x.so")),
                    read_library(stream_of(data))):
        assert isinstance(outcome, (LibraryFacts, ReadFailure))
        if isinstance(outcome, ReadFailure):
            assert outcome.reason


# --------------------------------------------------------------------------
# Zip members: stored (random access), deflated (a stream), other (zipfile's stream)


@pytest.mark.parametrize("compression", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED,
                                         zipfile.ZIP_BZIP2])
def test_wheel_members_by_compression(tmp_path: Path, compression: int) -> None:
    wheel = tmp_path / "w-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", compression=compression) as archive:
        archive.writestr("w/lib.so", (FIXTURES / "valid.so").read_bytes())
        archive.writestr("w/readme.txt", "not a library")
    got = driver.read_wheel(wheel, cache_dir=tmp_path / "cache")
    assert [o.path for o in got.libraries] == ["w/lib.so"]
    assert listing(facts(got.libraries[0])) == VALID_LISTING
    with zipfile.ZipFile(wheel) as archive:
        (info,) = library_members(archive)
        with open_member(wheel, archive, info) as member:
            assert member.random_access == (compression == zipfile.ZIP_STORED)


# --------------------------------------------------------------------------
# The cache: per wheel sha256, reused, merged, atomic


def _two_library_wheel(path: Path) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("p/a.so", (FIXTURES / "valid.so").read_bytes())
        archive.writestr("p/b.so", make.library([(".text", b"\xc3")]))
    return path


def test_cache_is_reused_and_merged_by_member(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    wheel = _two_library_wheel(tmp_path / "p-1.0-py3-none-any.whl")
    cache = tmp_path / "cache"
    only_a = driver.read_wheel(wheel, cache, patterns=["p/a.so"])
    assert [o.path for o in only_a.libraries] == ["p/a.so"]
    stored = json.loads(cache_mod.facts_path(cache, only_a.sha256).read_text())
    assert set(stored["libraries"]) == {"p/a.so"}
    both = driver.read_wheel(wheel, cache)
    assert [o.path for o in both.libraries] == ["p/a.so", "p/b.so"]

    def refuse(*args: object, **kwargs: object) -> list[object]:
        skip = kwargs.get("skip", frozenset())
        assert skip == frozenset({"p/a.so", "p/b.so"}), "a cached member was read again"
        return []

    monkeypatch.setattr(driver, "read_members", refuse)
    assert driver.read_wheel(wheel, cache) == both
    assert list((cache / "binaries").glob("*.partial")) == []


def test_cache_of_another_schema_is_ignored(tmp_path: Path) -> None:
    wheel = _two_library_wheel(tmp_path / "p-1.0-py3-none-any.whl")
    cache = tmp_path / "cache"
    first = driver.read_wheel(wheel, cache)
    path = cache_mod.facts_path(cache, first.sha256)
    data = json.loads(path.read_text())
    data["schema"] = -1
    path.write_text(json.dumps(data))
    assert cache_mod.load_facts(cache, first.sha256) is None
    path.write_text("{not json")
    assert driver.read_wheel(wheel, cache) == first


def test_wheel_hash_is_remembered_by_stat(tmp_path: Path) -> None:
    wheel = _two_library_wheel(tmp_path / "p-1.0-py3-none-any.whl")
    cache = tmp_path / "cache"
    sha = cache_mod.wheel_sha256(wheel, cache)
    (memo,) = (cache / "binaries" / "stat").iterdir()
    assert memo.read_text() == sha
    memo.write_text("f" * 64)  # the memo, not the file, answers while the stat holds
    assert cache_mod.wheel_sha256(wheel, cache) == "f" * 64
    assert cache_mod.wheel_sha256(wheel, None) == sha


# --------------------------------------------------------------------------
# Which entries a GPU could load: CUDA's compatibility rules, as a truth table


def _entry(kind: str, sm: int, variant: str = "", section: str = ".nv_fatbin") -> FatbinEntry:
    return FatbinEntry(section, 0, 0, 2 if kind == "sass" else 1, sm, variant, 0, 64, 0, "",
                       0, 0, (1, 8), None)


RUNS_ON = [
    # (kind, sm, variant, device major, minor, loads)
    ("sass", 80, "", 8, 0, True), ("sass", 80, "", 8, 6, True), ("sass", 80, "", 8, 9, True),
    ("sass", 86, "", 8, 0, False), ("sass", 80, "", 9, 0, False),
    ("sass", 90, "a", 9, 0, True), ("sass", 90, "", 10, 0, False),
    ("sass", 100, "", 10, 3, True), ("sass", 100, "f", 10, 3, True),
    ("sass", 100, "f", 12, 0, False), ("sass", 103, "a", 10, 0, False),
    ("sass", 103, "a", 10, 3, True), ("sass", 120, "", 12, 1, True),
    ("sass", 120, "a", 12, 1, False), ("sass", 121, "", 12, 0, False),
    ("ptx", 80, "", 12, 0, True), ("ptx", 90, "", 8, 9, False), ("ptx", 90, "a", 10, 0, False),
    ("ptx", 90, "a", 9, 0, True), ("ptx", 100, "f", 10, 3, True),
    ("ptx", 100, "f", 11, 0, False), ("ptx", 120, "", 12, 1, True),
    ("ptx", 100, "", 12, 0, True),
]


@pytest.mark.parametrize(("kind", "sm", "variant", "major", "minor", "loads"), RUNS_ON)
def test_entry_runs_on(kind: str, sm: int, variant: str, major: int, minor: int,
                       loads: bool) -> None:
    assert compat.entry_runs_on(_entry(kind, sm, variant), major, minor) is loads


def test_relocatable_entries_never_load() -> None:
    assert not compat.entry_runs_on(_entry("sass", 90, section="__nv_relfatbin"), 9, 0)


def test_loadable_entries_of_the_valid_fixture() -> None:
    got = facts(read_library_file(str(FIXTURES / "valid.so")))
    assert [e.target for e in compat.loadable_entries(got, 12, 0)] == ["compute_80", "sm_120a"]
    assert [e.target for e in compat.loadable_entries(got, 12, 1)] == ["compute_80"]
    assert [e.target for e in compat.loadable_entries(got, 10, 3)] == ["compute_80", "sm_100f",
                                                                       "compute_100f"]


# --------------------------------------------------------------------------
# The packages a release pins, and their download


def _tree(*requires: str) -> SourceTree:
    return SourceTree(root=Path("."), package="sglang", version="0", files=(),
                      origin="test", requires=requires)


def test_pinned_compiled_reads_the_release_requirements() -> None:
    tree = _tree("sglang-kernel==0.4.10", "sgl-flash-mla==1.0.0", "torch==2.14.1",
                 "sgl_deep_gemm==0.2.3.post2", "sgl-deep-ep==0.1.2.post1",
                 'sgl-kernel==0.3.0; extra == "old"')
    assert packages.pinned_compiled(tree) == [
        "sglang-kernel==0.4.10", "sgl-kernel==0.3.0", "sgl-flash-mla==1.0.0",
        "sgl-deep-gemm==0.2.3.post2", "sgl-deep-ep==0.1.2.post1"]
    assert packages.pinned_compiled(_tree("torch")) == []


def test_download_compiled_uses_the_cache_quietly(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[bool] = []
    wheel = tmp_path / "sglang_kernel-0.4.10-cp310-abi3-manylinux2014_x86_64.whl"

    def fake(requirement: object, spec: str, cache: Path, *, offline: bool) -> Path:
        calls.append(offline)
        if offline and not wheel.exists():
            raise AcquireError("offline and no cached wheel")
        wheel.write_bytes(b"")
        return wheel

    monkeypatch.setattr(packages, "wheel_for_spec", fake)
    monkeypatch.setattr(packages, "_TICK_S", 0.01)
    progress = io.StringIO()
    assert packages.download_compiled("sglang-kernel==0.4.10", tmp_path,
                                      progress=progress) == wheel
    assert calls == [True, False]
    assert "guardscan: fetching sglang-kernel==0.4.10" in progress.getvalue()
    quiet = io.StringIO()
    assert packages.download_compiled("sglang-kernel==0.4.10", tmp_path, progress=quiet) == wheel
    assert quiet.getvalue() == "" and calls == [True, False, True]
    wheel.unlink()
    with pytest.raises(AcquireError):
        packages.download_compiled("sglang-kernel==0.4.10", tmp_path, offline=True)
    assert calls == [True, False, True, True]


# --------------------------------------------------------------------------
# The command line


def test_cli_prints_each_library(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    status = cli_main(["--cache-dir", str(tmp_path), str(FIXTURES / "valid.so"),
                       str(FIXTURES / "unsafe_members.whl")])
    out = capsys.readouterr().out
    assert status == 2  # two members were refused
    assert "SASS sm_80 sm_90a sm_100f sm_120a; PTX compute_80 compute_90a compute_100f" in out
    assert "relocatable (-rdc, not loaded; 1 entries): sm_75" in out
    assert "../escape.so: not read: unsafe member name" in out


def test_cli_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert cli_main(["--json", "--cache-dir", str(tmp_path),
                     str(FIXTURES / "nvcc_zstd.fatbin")]) == 0
    (report,) = json.loads(capsys.readouterr().out)
    (library,) = report["libraries"]
    assert library["ok"] and len(library["entries"]) == 7


def test_public_api() -> None:
    for name in guardscan.binaries.__all__:
        assert getattr(guardscan.binaries, name) is not None
    with pytest.raises(AttributeError):
        guardscan.binaries.no_such_name  # noqa: B018


# --------------------------------------------------------------------------
# Real: the compiled packages sglang 0.5.23 pins


PINS_0523 = ["sglang-kernel==0.4.10", "sgl-flash-mla==1.0.0", "sgl-deep-gemm==0.2.3.post2",
             "sgl-deep-ep==0.1.2.post1"]

# (member, SASS targets, PTX targets, relocatable targets), as cuobjdump 13.5
# lists them (docs/binaries.md), but for the `f` it drops from SASS names
REAL_0523 = {
    "sglang-kernel==0.4.10": [
        ("sgl_kernel/flash_ops.abi3.so", ("sm_80", "sm_86", "sm_90a"), (), ()),
        ("sgl_kernel/flashmla_ops.abi3.so", ("sm_90a", "sm_100f", "sm_103a"), (), ()),
        ("sgl_kernel/infllm_ops.cpython-310-x86_64-linux-gnu.so",
         ("sm_80", "sm_90", "sm_120a"), (), ()),
        ("sgl_kernel/sm100/common_ops.abi3.so",
         ("sm_80", "sm_89", "sm_90", "sm_90a", "sm_100f", "sm_120a"), (), ()),
        ("sgl_kernel/sm90/common_ops.abi3.so",
         ("sm_80", "sm_89", "sm_90", "sm_90a", "sm_100f", "sm_120a"), (), ()),
        ("sgl_kernel/spatial_ops.abi3.so",
         ("sm_80", "sm_89", "sm_90", "sm_90a", "sm_100f", "sm_120a"), (), ()),
    ],
    "sgl-flash-mla==1.0.0": [
        ("flash_mla/_C_legacy.abi3.so", ("sm_90a", "sm_100a", "sm_103a", "sm_107a"), (), ()),
        ("flash_mla/cuda.abi3.so", ("sm_100a", "sm_103a", "sm_107a"), (), ()),
    ],
    "sgl-deep-gemm==0.2.3.post2": [("deep_gemm/_C.so", (), (), ())],
    "sgl-deep-ep==0.1.2.post1": [
        ("deep_ep/_C.cpython-311-x86_64-linux-gnu.so", ("sm_90", "sm_100", "sm_103"), (),
         ("sm_75", "sm_80", "sm_89", "sm_90", "sm_100", "sm_103", "sm_120", "compute_120")),
    ],
}


@pytest.mark.real
def test_sglang_0523_pins_these_compiled_packages() -> None:
    assert packages.pinned_compiled(realtrees.sglang_tree("0.5.23")) == PINS_0523


@pytest.mark.real
@pytest.mark.parametrize("spec", PINS_0523)
def test_real_compiled_packages_of_sglang_0523(spec: str) -> None:
    cache = realtrees.shared_cache_dir()
    wheel = packages.download_compiled(spec, cache)
    got = driver.read_wheel(wheel, cache)
    read = []
    for outcome in got.libraries:
        lib = facts(outcome)
        read.append((lib.path, lib.sass_targets, lib.ptx_targets, lib.relocatable_targets))
    assert read == REAL_0523[spec]


@pytest.mark.real
def test_real_flashmla_ops_counts() -> None:
    cache = realtrees.shared_cache_dir()
    wheel = packages.download_compiled("sglang-kernel==0.4.10", cache)
    got = driver.read_wheel(wheel, cache, patterns=["*/flashmla_ops.abi3.so"])
    (lib,) = got.libraries
    lib = facts(lib)
    assert (lib.containers, len(lib.entries)) == (57, 171)
    assert {e.flags for e in lib.entries} == {0x100011, 0x1200011, 0x1100011}
    assert all(e.elf_sm == e.sm for e in lib.entries)
    assert os.path.basename(str(wheel)).startswith("sglang_kernel-0.4.10-")
