"""acquire (spec): a release with no wheel for this interpreter or platform
(sglang 0.5.23 ships cp311..cp313 manylinux_2_34 wheels only) is fetched for
a Python version and platform it does ship, asked of the index through pip's
own listing; always ``--only-binary=:all:``, never an sdist. pip is faked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from guardscan.acquire import AcquireError, acquire, spec
from guardscan.acquire.spec import (
    best_wheel,
    fallback_targets,
    offered_wheels,
    target_options,
)

FILES = "https://files.pythonhosted.org/packages/57/dd"
NO_MATCH = ("ERROR: Could not find a version that satisfies the requirement sglang==0.5.23 "
            "(from versions: 0.5.9)\nERROR: No matching distribution found for sglang==0.5.23\n")
#: what ``pip download -vv`` logs of the index page (shortened from pip 23 on Python 3.10)
LISTING = "\n".join([
    "Looking in indexes: https://pypi.org/simple",
    (f"  Found link {FILES}/sglang-0.5.9-py3-none-any.whl (from https://pypi.org/simple/sglang/)"
    " (requires-python:>=3.10), version: 0.5.9"),
    f"  Skipping link: No sources permitted for sglang: {FILES}/sglang-0.5.23.tar.gz",
    *(f"  Skipping link: none of the wheel's tags (cp3{m}-cp3{m}-manylinux_2_34_{arch}) are "
      f"compatible (run pip debug --verbose to show compatible tags): "
      f"{FILES}/sglang-0.5.23-cp3{m}-cp3{m}-manylinux_2_34_{arch}.whl "
      "(from https://pypi.org/simple/sglang/) (requires-python:>=3.11)"
      for m in (11, 12, 13) for arch in ("aarch64", "x86_64")),
    NO_MATCH,
])


def _wheel(destination: Path, name: str) -> None:
    """A minimal sglang wheel named ``name`` (its tags are only in the name)."""
    import zipfile

    destination.mkdir(parents=True, exist_ok=True)
    version = name.split("-")[1]
    with zipfile.ZipFile(destination / name, "w") as archive:
        archive.writestr("sglang/__init__.py", "")
        archive.writestr("sglang/srt/server_args.py", "X = 1\n")
        archive.writestr(f"sglang-{version}.dist-info/METADATA",
                         f"Metadata-Version: 2.1\nName: sglang\nVersion: {version}\n")


class FakePip:
    """pip that has no wheel for this interpreter: plain runs fail as pip
    fails, ``-vv`` runs fail with the listing, runs with target options
    download the wheel those options select."""

    def __init__(self, listing: str = LISTING, offered: tuple[str, ...] = ()) -> None:
        self.calls: list[list[str]] = []
        self.listing = listing
        self.offered = offered or tuple(
            f"sglang-0.5.23-cp3{m}-cp3{m}-manylinux_2_34_{a}.whl"
            for m in (11, 12, 13) for a in ("aarch64", "x86_64"))

    def __call__(self, command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        self.calls.append(command)
        if "-vv" in command:
            return subprocess.CompletedProcess(command, 1, "", self.listing)
        if "--python-version" not in command:
            return subprocess.CompletedProcess(command, 1, "", NO_MATCH)
        version = command[command.index("--python-version") + 1].replace(".", "")
        platforms = {command[i + 1] for i, a in enumerate(command) if a == "--platform"}
        for name in self.offered:
            tags = name[:-4].split("-")[-3:]
            if tags[0] == f"cp{version}" and tags[2] in platforms:
                _wheel(Path(command[command.index("-d") + 1]), name)
                return subprocess.CompletedProcess(command, 0, "", "")
        return subprocess.CompletedProcess(command, 1, "", NO_MATCH)


def _never_an_sdist(command: list[str]) -> None:
    assert command[:4] == [sys.executable, "-m", "pip", "download"]
    assert "--only-binary=:all:" in command and "--no-deps" in command
    assert not any(a.startswith("--no-binary") or a == "--prefer-binary" for a in command)


def test_retries_for_a_platform_the_release_ships(tmp_cache: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakePip()
    monkeypatch.setattr(subprocess, "run", fake)
    monkeypatch.setattr(spec, "_machine", lambda: "x86_64")
    monkeypatch.setattr(spec, "_python_here", lambda: (3, 10))
    tree = acquire("sglang==0.5.23")
    assert tree.version == "0.5.23"
    plain, listing, retry = fake.calls
    for command in fake.calls:
        _never_an_sdist(command)
        assert command[-1] == "sglang==0.5.23"
    assert "-q" in plain and "--python-version" not in plain
    assert "-vv" in listing and "--python-version" not in listing
    # from Python 3.10 on x86_64, the nearest wheel: cp311 for x86_64
    target = retry[retry.index("-d") + 2:-1]
    assert target == ["--python-version", "3.11", "--implementation", "cp", "--abi", "cp311",
                      "--platform", "manylinux_2_34_x86_64"]
    wheels = list((tmp_cache / "wheels" / "sglang==0.5.23").iterdir())
    assert [w.name for w in wheels] == ["sglang-0.5.23-cp311-cp311-manylinux_2_34_x86_64.whl"]
    acquire("sglang==0.5.23")  # cached: pip not called again
    assert len(fake.calls) == 3


def test_a_wheel_for_here_is_fetched_as_before(tmp_cache: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A py3-none-any release: one plain pip run, no target options."""
    calls: list[list[str]] = []

    def pip(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        calls.append(command)
        _wheel(Path(command[command.index("-d") + 1]), "sglang-0.5.9-py3-none-any.whl")
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(subprocess, "run", pip)
    assert acquire("sglang==0.5.9").version == "0.5.9"
    (command,) = calls
    _never_an_sdist(command)
    assert not {"--python-version", "--platform", "--abi", "--implementation"} & set(command)


def test_no_wheel_anywhere_is_the_first_error(tmp_cache: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """An sdist-only release: the listing names links but no wheel of it, so
    nothing is retried and pip's own reason is the error."""
    listing = (f"  Skipping link: No sources permitted for sglang: {FILES}/sglang-0.5.23.tar.gz"
               f"\n  Found link {FILES}/sglang-0.5.9-py3-none-any.whl, version: 0.5.9\n"
               + NO_MATCH)
    fake = FakePip(listing=listing)
    monkeypatch.setattr(subprocess, "run", fake)
    with pytest.raises(AcquireError, match="never builds sdists.*No matching distribution"):
        acquire("sglang==0.5.23")
    assert len(fake.calls) == 2  # the plain run and the listing, no retry


def test_no_listing_tries_the_bounded_list(tmp_cache: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A pip whose listing names no link at all: CPython 3.10..3.14 with the
    manylinux platforms, in order, until one downloads."""
    fake = FakePip(listing=NO_MATCH, offered=("sglang-0.5.23-cp312-cp312-manylinux_2_34_x86_64.whl",))
    monkeypatch.setattr(subprocess, "run", fake)
    monkeypatch.setattr(spec, "_python_here", lambda: (3, 14))
    assert acquire("sglang==0.5.23").version == "0.5.23"
    retries = [c for c in fake.calls if "--python-version" in c]
    assert [c[c.index("--python-version") + 1] for c in retries] == ["3.10", "3.11", "3.12"]
    for command in fake.calls:
        _never_an_sdist(command)


def test_no_network_is_not_retried(tmp_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []

    def offline(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        calls.append(command)
        return subprocess.CompletedProcess(
            command, 1, "", "Failed to establish a new connection\n" + NO_MATCH)

    monkeypatch.setattr(subprocess, "run", offline)
    with pytest.raises(AcquireError, match="no network"):
        acquire("sglang==0.5.23")
    assert len(calls) == 1


def test_offered_wheels_reads_the_listing() -> None:
    names, logged = offered_wheels(Requirement("sglang==0.5.23"), LISTING)
    assert logged
    assert names == [f"sglang-0.5.23-cp3{m}-cp3{m}-manylinux_2_34_{a}.whl"
                     for m in (11, 12, 13) for a in ("aarch64", "x86_64")]
    assert offered_wheels(Requirement("sglang==0.5.9"), LISTING)[0] == [
        "sglang-0.5.9-py3-none-any.whl"]
    assert offered_wheels(Requirement("sglang==0.5.23"), NO_MATCH) == ([], False)
    url = Requirement(f"sglang @ {FILES}/sglang-0.5.23-cp313-cp313-manylinux_2_34_x86_64.whl")
    assert offered_wheels(url, "") == (
        ["sglang-0.5.23-cp313-cp313-manylinux_2_34_x86_64.whl"], True)


def test_best_wheel_prefers_this_machine_and_the_nearest_python(
        monkeypatch: pytest.MonkeyPatch) -> None:
    names = [f"sglang-0.5.23-cp3{m}-cp3{m}-manylinux_2_34_{a}.whl"
             for m in (11, 12, 13) for a in ("aarch64", "x86_64")]
    monkeypatch.setattr(spec, "_machine", lambda: "aarch64")
    monkeypatch.setattr(spec, "_python_here", lambda: (3, 14))
    assert best_wheel(names) == "sglang-0.5.23-cp313-cp313-manylinux_2_34_aarch64.whl"
    monkeypatch.setattr(spec, "_machine", lambda: "riscv64")
    monkeypatch.setattr(spec, "_python_here", lambda: (3, 10))
    assert best_wheel(names) == "sglang-0.5.23-cp311-cp311-manylinux_2_34_aarch64.whl"


def test_target_options() -> None:
    assert target_options("x-1-cp312-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl") == [
        "--python-version", "3.12", "--implementation", "cp", "--abi", "abi3",
        "--platform", "manylinux2014_x86_64", "--platform", "manylinux_2_17_x86_64"]
    assert target_options("x-1-py3-none-any.whl") == [
        "--python-version", "3", "--implementation", "py", "--abi", "none", "--platform", "any"]


def test_fallback_targets_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spec, "_python_here", lambda: (3, 11))
    targets = fallback_targets()
    assert [t[t.index("--python-version") + 1] for t in targets] == ["3.10", "3.12", "3.13",
                                                                    "3.14"]
    platforms = [targets[0][i + 1] for i, a in enumerate(targets[0]) if a == "--platform"]
    assert "manylinux_2_34_x86_64" in platforms and "manylinux2014_aarch64" in platforms
    assert platforms[-1] == "any"
