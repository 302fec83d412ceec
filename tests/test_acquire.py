"""acquire: every target form on small synthetic trees, plus the real wheels."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys
import uuid
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from guardscan.acquire import (
    AcquireError,
    SourceTree,
    acquire,
    acquire_kernels,
    default_cache_dir,
    kernel_requirement,
    spec_wheel_dir,
)
from guardscan.acquire import wheel as wheel_mod

# --------------------------------------------------------------------------
# Builders


def write(path: Path, text: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def make_package(parent: Path, name: str = "sglang") -> Path:
    pkg = parent / name
    write(pkg / "__init__.py")
    write(pkg / "srt" / "__init__.py")
    write(pkg / "srt" / "server_args.py", "x = 1\n")
    write(pkg / "srt" / "kernel.cu", "// not python\n")
    write(pkg / "srt" / "__pycache__" / "server_args.cpython-311.py", "")
    return pkg


PACKAGE_FILES = ("sglang/__init__.py", "sglang/srt/__init__.py", "sglang/srt/server_args.py")


def metadata(name: str, version: str, requires: list[str]) -> str:
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Dist: {r}" for r in requires]
    return "\n".join(lines) + "\n\nlong description\nVersion: 9.9.9\n"


def make_wheel(path: Path, members: dict[str, str | bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def sglang_wheel(directory: Path, version: str = "1.0", requires: list[str] | None = None) -> Path:
    requires = ["flashinfer_python==0.6.3", "torch"] if requires is None else requires
    return make_wheel(
        directory / f"sglang-{version}-py3-none-any.whl",
        {
            "sglang/__init__.py": "",
            "sglang/srt/__init__.py": "",
            "sglang/srt/server_args.py": "x = 1\n",
            "sglang/srt/configs.json": "{}",
            "sglang/srt/_kernels.so": b"\x7fELF\x00binary",
            "sglang/README.md": "# not extracted\n",
            f"sglang-{version}.dist-info/METADATA": metadata("sglang", version, requires),
            f"sglang-{version}.dist-info/top_level.txt": "sglang\n",
            f"sglang-{version}.dist-info/RECORD": "",
        },
    )


def flashinfer_like_wheel(directory: Path, *, top_level: bool = True) -> Path:
    members: dict[str, str | bytes] = {
        "b12x/__init__.py": "",
        "build_backend.py": "",
        "build_utils.py": "",
        "flashinfer/__init__.py": "",
        "flashinfer/gemm.py": "",
        "flashinfer/data/csrc/launcher.cu": "// check\n",
        "flashinfer_python-0.1.0.dist-info/METADATA": metadata("flashinfer-python", "0.1.0", []),
    }
    if top_level:
        members["flashinfer_python-0.1.0.dist-info/top_level.txt"] = (
            "b12x\nbuild_backend\nbuild_utils\nflashinfer\n"
        )
    return make_wheel(directory / "flashinfer_python-0.1.0-py3-none-any.whl", members)


def entries(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir()) if directory.is_dir() else []


def forbid_pip(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"pip must not run here: {args}")

    monkeypatch.setattr(subprocess, "run", refuse)


# --------------------------------------------------------------------------
# Checkouts


def test_checkout_repo_root_with_python_dir(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    make_package(repo / "python")
    write(
        repo / "python" / "pyproject.toml",
        '[project]\nname = "sglang"\nversion = "1.2.3"\n'
        'dependencies = ["flashinfer_python==0.6.3", "torch"]\n',
    )
    tree = acquire(str(repo))
    assert tree.root == (repo / "python").resolve()
    assert tree.package == "sglang"
    assert tree.files == PACKAGE_FILES
    assert tree.version == "1.2.3"
    assert tree.requires == ("flashinfer_python==0.6.3", "torch")
    assert tree.path_of("sglang/srt/server_args.py").is_file()
    assert kernel_requirement(tree) == "flashinfer-python==0.6.3"


def test_checkout_dir_holding_package_reads_version_py(tmp_path: Path) -> None:
    make_package(tmp_path)
    write(tmp_path / "sglang" / "version.py", '__version__ = "0.4.0"\n')
    tree = acquire(tmp_path)
    assert tree.root == tmp_path.resolve()
    assert tree.version == "0.4.0"
    assert tree.requires == ()
    assert "sglang/version.py" in tree.files


def test_checkout_package_dir_itself(tmp_path: Path) -> None:
    pkg = make_package(tmp_path / "src")
    tree = acquire(str(pkg))
    assert tree.root == (tmp_path / "src").resolve()
    assert tree.files == PACKAGE_FILES
    assert tree.version is None
    assert tree.module_name("sglang/srt/__init__.py") == "sglang.srt"


def test_checkout_dynamic_version_falls_back_to_setuptools_scm_file(tmp_path: Path) -> None:
    make_package(tmp_path / "python")
    write(
        tmp_path / "python" / "pyproject.toml",
        '[project]\nname = "sglang"\ndynamic = ["version"]\n',
    )
    write(
        tmp_path / "python" / "sglang" / "_version.py",
        "version: str\n__version__: str\n__version__ = version = '0.5.9'\n",
    )
    assert acquire(tmp_path).version == "0.5.9"


def test_checkout_version_fallbacks_inside_try_are_not_versions(tmp_path: Path) -> None:
    # SGLang's real version.py: every literal is a fallback behind try/except.
    make_package(tmp_path)
    write(
        tmp_path / "sglang" / "version.py",
        "try:\n    from sglang._version import __version__\n"
        "except ImportError:\n    __version__ = '0.0.0.dev0'\n",
    )
    assert acquire(tmp_path).version is None


def test_checkout_of_another_package_is_refused(tmp_path: Path) -> None:
    pkg = make_package(tmp_path, "vllm")
    with pytest.raises(AcquireError, match="is the package 'vllm', not 'sglang'"):
        acquire(str(pkg))


def test_empty_dir_is_refused(tmp_path: Path) -> None:
    with pytest.raises(AcquireError, match="no sglang package found in .*expected a checkout"):
        acquire(str(tmp_path))


def test_checkout_for_another_package_name(tmp_path: Path) -> None:
    make_package(tmp_path, "flashinfer")
    tree = acquire(tmp_path, "flashinfer")
    assert tree.package == "flashinfer"
    assert tree.files[0] == "flashinfer/__init__.py"


def test_files_skip_symlink_loops_and_non_python(tmp_path: Path) -> None:
    pkg = make_package(tmp_path)
    os.symlink(pkg, pkg / "srt" / "loop")
    os.symlink(tmp_path / "missing.py", pkg / "dangling.py")
    tree = acquire(tmp_path)
    assert tree.files == PACKAGE_FILES


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads unreadable dirs")
def test_files_skip_unreadable_dirs(tmp_path: Path) -> None:
    pkg = make_package(tmp_path)
    locked = pkg / "locked"
    write(locked / "secret.py")
    locked.chmod(0)
    try:
        assert acquire(tmp_path).files == PACKAGE_FILES
    finally:
        locked.chmod(0o755)


# --------------------------------------------------------------------------
# Paths and specs that are not targets


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("/nonexistent/guardscan/checkout", "no such file or directory: /nonexistent"),
        ("missing-0.1-py3-none-any.whl", "no such file or directory: missing"),
        ("./sglang", "no such file or directory: ./sglang"),
        ("sglang-typo", "to download a release, pin it"),
        ("", "empty target"),
    ],
)
def test_unusable_targets(target: str, message: str, tmp_cache: Path) -> None:
    with pytest.raises(AcquireError, match=message) as caught:
        acquire(target)
    assert "\n" not in str(caught.value)


def test_plain_file_is_not_a_target(tmp_path: Path) -> None:
    sdist = write(tmp_path / "sglang-0.5.9.tar.gz", "not a wheel")
    with pytest.raises(AcquireError, match="not a directory or a .whl file"):
        acquire(str(sdist))


# --------------------------------------------------------------------------
# Wheels


def test_wheel_extracts_text_only_and_reads_metadata(tmp_path: Path, tmp_cache: Path) -> None:
    wheel = sglang_wheel(tmp_path / "dl", requires=["flashinfer_python[cu13]==0.7.2"])
    tree = acquire(str(wheel))
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()[:12]
    assert tree.root == tmp_cache / "trees" / f"sglang-1.0-py3-none-any-{digest}"
    assert tree.package == "sglang"
    assert tree.version == "1.0"  # the header, not "Version:" in the body
    assert tree.requires == ("flashinfer_python[cu13]==0.7.2",)
    assert tree.files == PACKAGE_FILES
    assert (tree.root / "sglang/srt/configs.json").is_file()
    assert (tree.root / "sglang-1.0.dist-info/METADATA").is_file()
    assert not (tree.root / "sglang/srt/_kernels.so").exists()
    assert not (tree.root / "sglang/README.md").exists()
    assert tree.origin == f"wheel {wheel.resolve()}"
    assert kernel_requirement(tree) == "flashinfer-python==0.7.2"


def test_wheel_tree_is_reused(
    tmp_path: Path, tmp_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wheel = sglang_wheel(tmp_path)
    first = acquire(str(wheel), cache_dir=tmp_cache)

    def no_second_extraction(*args: object) -> None:
        raise AssertionError("extracted twice")

    monkeypatch.setattr(wheel_mod, "_extract_wheel", no_second_extraction)
    assert acquire(str(wheel), cache_dir=tmp_cache) == first


def test_an_extracted_tree_is_known_by_its_wheel(tmp_path: Path, tmp_cache: Path) -> None:
    """A tree extracted into the cache is written once and never changes: the
    kernel stage's snapshot of it is the wheel's sha256, with no stat of its
    files; a checkout's snapshot is the stat of each file, so an edit shows."""
    from guardscan.memo.results import kernel_stats

    wheel = sglang_wheel(tmp_path / "dl")
    tree = acquire(str(wheel), cache_dir=tmp_cache)
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert tree.wheel_sha256 == digest
    assert kernel_stats(tree) == {f"<extracted from the wheel {digest}>": (0, 0, 0)}
    checkout = acquire(str(tree.root), cache_dir=tmp_cache)
    assert checkout.wheel_sha256 == ""
    stats = kernel_stats(checkout)
    assert set(stats) >= set(PACKAGE_FILES)
    server_args = checkout.root / "sglang/srt/server_args.py"
    server_args.write_text("x = 22\n")
    assert kernel_stats(checkout)["sglang/srt/server_args.py"] != \
        stats["sglang/srt/server_args.py"]
    # C++ text is in the snapshot, by its path from the tree's root, at any depth
    for rel in ("top.cu", "sglang/data/csrc/deep/kernel.cuh"):
        (checkout.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (checkout.root / rel).write_text("int x;\n")
    (checkout.root / ".hidden").mkdir()
    (checkout.root / ".hidden" / "skipped.cu").write_text("int y;\n")
    (checkout.root / "notes.txt").write_text("not C++\n")
    again = kernel_stats(checkout)
    added = {rel for rel in set(again) - set(stats) if not rel.startswith("<")}
    assert added == {"top.cu", "sglang/data/csrc/deep/kernel.cuh"}
    assert again["top.cu"][0] == len("int x;\n")


def test_concurrent_extractions_agree(tmp_path: Path, tmp_cache: Path) -> None:
    wheel = sglang_wheel(tmp_path)
    with ThreadPoolExecutor(max_workers=6) as pool:
        trees = list(pool.map(lambda _: acquire(str(wheel)), range(6)))
    assert len({t.root for t in trees}) == 1
    assert sorted(p.name for p in (tmp_cache / "trees").iterdir()) == [trees[0].root.name]


def test_not_a_zip_is_refused(tmp_path: Path, tmp_cache: Path) -> None:
    fake = write(tmp_path / "sglang-1.0-py3-none-any.whl", "<html>proxy error</html>")
    with pytest.raises(AcquireError, match="not a wheel \\(not a zip file\\): .*sglang-1.0"):
        acquire(str(fake))


@pytest.mark.parametrize(
    "evil",
    ["../evil.py", "sglang/../../evil.py", "/tmp/evil.py", "C:/evil.py", "sglang\\..\\..\\evil.py"],
)
def test_zip_slip_is_refused(evil: str, tmp_path: Path, tmp_cache: Path) -> None:
    wheel = make_wheel(
        tmp_path / "w" / "sglang-1.0-py3-none-any.whl",
        {"sglang/__init__.py": "", evil: "import os\n"},
    )
    with pytest.raises(AcquireError, match="escapes the extraction directory"):
        acquire(str(wheel))
    assert not (tmp_path / "evil.py").exists()
    assert entries(tmp_cache / "trees") == []


@given(st.text(alphabet="ab./\\:", max_size=12))
def test_safe_member_names_stay_inside(name: str) -> None:
    if wheel_mod._unsafe_member(name):
        return
    base = "/cache/trees/x"
    assert os.path.normpath(os.path.join(base, name)).startswith(base)


def test_size_limit_is_enforced(
    tmp_path: Path, tmp_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wheel_mod, "MAX_EXTRACT_BYTES", 10)
    wheel = sglang_wheel(tmp_path)
    with pytest.raises(AcquireError, match="exceeds the limit of 10 bytes"):
        acquire(str(wheel))
    assert entries(tmp_cache / "trees") == []  # no tree, no staging dir


def test_size_limit_counts_inflated_bytes(tmp_path: Path, tmp_cache: Path) -> None:
    wheel = sglang_wheel(tmp_path)
    with zipfile.ZipFile(wheel) as archive, pytest.raises(AcquireError, match="exceeds"):
        staging = tmp_path / "staging"
        wheel_mod._write_members(archive, archive.infolist(), staging, wheel, limit=5)


def test_package_inferred_from_distribution(tmp_path: Path, tmp_cache: Path) -> None:
    # The default package is "sglang"; the wheel says it is flashinfer-python,
    # whose import package is `flashinfer`, not `b12x` or the build scripts.
    for top_level in (True, False):
        wheel = flashinfer_like_wheel(tmp_path / str(top_level), top_level=top_level)
        tree = acquire(str(wheel))
        assert tree.package == "flashinfer"
        assert tree.files == ("flashinfer/__init__.py", "flashinfer/gemm.py")
        assert (tree.root / "flashinfer/data/csrc/launcher.cu").is_file()


def test_wheel_without_a_matching_package(tmp_path: Path, tmp_cache: Path) -> None:
    wheel = make_wheel(
        tmp_path / "other-1.0-py3-none-any.whl",
        {"alpha/__init__.py": "", "beta/__init__.py": ""},
    )
    with pytest.raises(AcquireError, match="no 'sglang' package .*alpha, beta"):
        acquire(str(wheel))


# --------------------------------------------------------------------------
# Specs


def test_offline_spec_without_cache_fails(tmp_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    forbid_pip(monkeypatch)
    with pytest.raises(AcquireError, match="offline and no cached wheel for sglang==99.0"):
        acquire("sglang==99.0", offline=True)


def test_spec_reuses_cached_wheel_without_pip(
    tmp_path: Path, tmp_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    forbid_pip(monkeypatch)
    wheel_dir = spec_wheel_dir("sglang==1.0")
    assert wheel_dir == tmp_cache / "wheels" / "sglang==1.0"
    sglang_wheel(wheel_dir)
    sglang_wheel(wheel_dir, version="2.0")  # does not match the pin
    for offline in (True, False):
        tree = acquire("sglang==1.0", offline=offline)
        assert tree.version == "1.0"
        assert tree.origin.startswith("spec sglang==1.0 -> ")


def test_spec_downloads_with_pip(
    tmp_path: Path, tmp_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[list[str]] = []

    def fake_pip(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        calls.append(command)
        destination = Path(command[command.index("-d") + 1])
        sglang_wheel(destination, version="1.5")
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(subprocess, "run", fake_pip)
    tree = acquire("sglang>=1.1,<2")
    assert tree.version == "1.5"
    (command,) = calls
    assert command[:4] == [sys.executable, "-m", "pip", "download"]
    assert {"--no-deps", "--only-binary=:all:", "--disable-pip-version-check", "-q"} <= set(command)
    assert command[-1] == "sglang<2,>=1.1"
    # Downloaded via a staging dir, kept under the spec's own dir, nothing left over.
    wheel_dir = spec_wheel_dir("sglang>=1.1,<2")
    assert [p.name for p in wheel_dir.iterdir()] == ["sglang-1.5-py3-none-any.whl"]
    assert sorted(p.name for p in wheel_dir.parent.iterdir()) == [wheel_dir.name]
    acquire("sglang>=1.1,<2")  # second time: cached, pip not called again
    assert len(calls) == 1


PIP_NO_MATCH = (
    "ERROR: Could not find a version that satisfies the requirement sglang==99.0 "
    "(from versions: 0.5.8, 0.5.9)\nERROR: No matching distribution found for sglang==99.0\n"
)
PIP_NO_NETWORK = (
    "WARNING: Retrying (Retry(total=0)) after connection broken by 'NewConnectionError("
    "'<HTTPSConnection>: Failed to establish a new connection: [Errno -3] Temporary failure "
    "in name resolution')': /simple/sglang/\n" + PIP_NO_MATCH
)


@pytest.mark.parametrize(
    ("stderr", "expected"),
    [
        (PIP_NO_MATCH, "never builds sdists.*No matching distribution found for sglang==99.0"),
        (PIP_NO_NETWORK, "no network\\?.*Failed to establish a new connection"),
        ("", "pip failed"),
    ],
)
def test_pip_failure_is_one_line(
    stderr: str, expected: str, tmp_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing_pip(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(command, 1, "", stderr)

    monkeypatch.setattr(subprocess, "run", failing_pip)
    with pytest.raises(
        AcquireError, match=f"^pip could not download sglang==99.0 .*{expected}"
    ) as caught:
        acquire("sglang==99.0")
    assert "\n" not in str(caught.value)
    assert entries(tmp_cache / "wheels") == []  # staging dir cleaned up


def test_pip_timeout(tmp_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def slow_pip(command: list[str], **kwargs: object) -> None:
        raise subprocess.TimeoutExpired(command, 600)

    monkeypatch.setattr(subprocess, "run", slow_pip)
    with pytest.raises(AcquireError, match="timed out"):
        acquire("sglang==0.5.9")


@pytest.mark.parametrize("typo", ["sglang=0.5.9", "sglang==>0.5", "sglang 0.5.9"])
def test_invalid_spec_offline(typo: str, tmp_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    forbid_pip(monkeypatch)
    with pytest.raises(AcquireError, match=f"no such file or directory: {typo}; expected"):
        acquire(typo, offline=True)


# --------------------------------------------------------------------------
# The installed package


@pytest.fixture
def fake_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str, Path]:
    """A site dir on sys.path holding a package whose import would leave a
    marker file behind, and its dist-info under a different distribution name."""
    name = f"guardscan_fake_{uuid.uuid4().hex[:8]}"
    site = tmp_path / "site"
    marker = tmp_path / "imported.marker"
    write(
        site / name / "__init__.py",
        f"open({str(marker)!r}, 'w').write('imported')\n",
    )
    write(site / name / "sub" / "__init__.py")
    write(site / name / "sub" / "mod.py")
    dist_info = site / "fake_dist_xyz-3.1.4.dist-info"
    write(dist_info / "METADATA", metadata("fake-dist-xyz", "3.1.4", ["flashinfer_python==0.6.3"]))
    write(dist_info / "top_level.txt", f"{name}\n")
    monkeypatch.syspath_prepend(str(site))
    return site, name, marker


def test_installed_package_is_found_without_importing(fake_site: tuple[Path, str, Path]) -> None:
    site, name, marker = fake_site
    tree = acquire(None, name)
    assert tree.root == site.resolve()
    assert tree.package == name
    assert tree.files == (f"{name}/__init__.py", f"{name}/sub/__init__.py", f"{name}/sub/mod.py")
    assert tree.version == "3.1.4"
    assert tree.requires == ("flashinfer_python==0.6.3",)
    assert tree.origin.startswith("installed ")
    assert not marker.exists()
    assert name not in sys.modules


def test_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(AcquireError, match="^no installed guardscan_absent_pkg found; pass a"):
        acquire(None, "guardscan_absent_pkg")


def test_dotted_name_is_refused_before_find_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    def explode(name: str) -> None:
        raise AssertionError("find_spec on a dotted name imports the parent")

    monkeypatch.setattr(importlib.util, "find_spec", explode)
    with pytest.raises(AcquireError, match="not a top-level package name"):
        acquire(None, "sglang.srt")


# --------------------------------------------------------------------------
# Kernel pairing

REQUIRES_059 = (
    "IPython",
    "flashinfer_python==0.6.3",
    "flashinfer_cubin==0.6.3",
    'sglang-kernel==0.3.21; extra == "blackwell"',
)
REQUIRES_0523 = (
    "flashinfer_python[cu13]==0.7.2",
    'checkpoint-engine==0.1.2; extra == "checkpoint-engine"',
    'instanttensor>=0.1.9; extra == "instanttensor"',
)


def tree_with(requires: tuple[str, ...]) -> SourceTree:
    return SourceTree(Path("/x"), "sglang", "0", (), "test", requires)


@pytest.mark.parametrize(
    ("requires", "expected"),
    [
        (REQUIRES_059, "flashinfer-python==0.6.3"),
        (REQUIRES_0523, "flashinfer-python==0.7.2"),
        # releases before 0.5 pin it in their server-runtime extra only
        (('flashinfer_python==0.2.3; extra == "srt"',), "flashinfer-python==0.2.3"),
        (('flashinfer_python==0.2.3; extra == "srt"', "flashinfer_python==0.6.3"),
         "flashinfer-python==0.6.3"),
        (('flashinfer_python==0.2.3; extra == "srt"', 'flashinfer_python==0.5.0; os_name == "nt"'),
         "flashinfer-python==0.5.0"),
        # a bound under an extra would pair a 2025 release with today's FlashInfer
        (('flashinfer_python>=0.2.0.post2; extra == "srt"',), None),
        (('flashinfer_python==0.2.*; extra == "srt"',), None),
        (("torch", "not a requirement !!"), None),
        ((), None),
        (
            ('flashinfer-python==0.5.0; sys_platform == "win32"', "Flashinfer.Python>=0.6"),
            "flashinfer-python>=0.6",
        ),
        # the name is read off the line's start first: a name spelled
        # otherwise, an extra, a URL, a broken line of it or of another
        (("flashinfer-python-extra==1.0", "  FlashInfer_Python[cu13] == 0.7.2"),
         "flashinfer-python==0.7.2"),
        (("flashinfer-python @ https://example.org/f.whl",),
         "flashinfer-python @ https://example.org/f.whl"),
        (("flashinfer-python ==", "flashinferpython==1.0", "torch[== !!"), None),
    ],
)
def test_kernel_requirement(requires: tuple[str, ...], expected: str | None) -> None:
    assert kernel_requirement(tree_with(requires)) == expected


def test_acquire_kernels_explicit_wheel(tmp_path: Path, tmp_cache: Path) -> None:
    wheel = flashinfer_like_wheel(tmp_path)
    kernels = acquire_kernels(tree_with(REQUIRES_059), str(wheel))
    assert (kernels.package, kernels.version) == ("flashinfer", "0.1.0")


def test_acquire_kernels_pinned(
    tmp_path: Path, tmp_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    forbid_pip(monkeypatch)
    wheel = flashinfer_like_wheel(tmp_path)
    target = spec_wheel_dir("flashinfer-python==0.1.0") / wheel.name
    target.parent.mkdir(parents=True)
    target.write_bytes(wheel.read_bytes())
    kernels = acquire_kernels(tree_with(("flashinfer_python==0.1.0",)), None, offline=True)
    assert (kernels.package, kernels.version) == ("flashinfer", "0.1.0")
    with pytest.raises(AcquireError, match="offline and no cached wheel for flashinfer-python"):
        acquire_kernels(tree_with(REQUIRES_059), None, offline=True)


def test_acquire_kernels_installed_or_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(AcquireError, match="declares no flashinfer-python requirement"):
        acquire_kernels(tree_with(("torch",)), None)


# --------------------------------------------------------------------------
# Cache location


def test_default_cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GUARDSCAN_CACHE_DIR", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv("GUARDSCAN_CACHE_DIR")
    assert default_cache_dir() == tmp_path / "xdg" / "guardscan"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "guardscan"


# --------------------------------------------------------------------------
# Real releases (downloaded once into the shared test cache)


def test_real_sglang_059(sglang_059: SourceTree) -> None:
    assert sglang_059.package == "sglang"
    assert sglang_059.version == "0.5.9"
    assert len(sglang_059.files) > 1000
    assert "sglang/srt/server_args.py" in sglang_059.files
    assert sglang_059.path_of("sglang/srt/server_args.py").is_file()
    assert kernel_requirement(sglang_059) == "flashinfer-python==0.6.3"


def test_real_sglang_0523_pins_flashinfer_072(sglang_0523: SourceTree) -> None:
    assert sglang_0523.version == "0.5.23"
    assert kernel_requirement(sglang_0523) == "flashinfer-python==0.7.2"


def test_real_flashinfer_063(flashinfer_063: SourceTree) -> None:
    assert (flashinfer_063.package, flashinfer_063.version) == ("flashinfer", "0.6.3")
    assert "flashinfer/__init__.py" in flashinfer_063.files


def test_real_flashinfer_072_is_not_b12x(flashinfer_072: SourceTree) -> None:
    # 0.7.2's top_level.txt also lists b12x and the build scripts.
    assert (flashinfer_072.package, flashinfer_072.version) == ("flashinfer", "0.7.2")
    assert all(f.startswith("flashinfer/") for f in flashinfer_072.files)


def test_kernel_answers_are_dropped_when_the_library_changes(tmp_path: Path) -> None:
    """Stored kernel answers belong to one state of the library's files."""
    import shutil

    from fixturetree import FIXTURES

    from guardscan.acquire import acquire
    from guardscan.arch import parse_arch
    from guardscan.memo.kernel_answers import KernelAnswers
    from guardscan.predicate import Tri

    root = tmp_path / "lib"
    shutil.copytree(FIXTURES / "kernels_decorator", root)
    package = next(p for p in root.iterdir() if p.is_dir())
    tree = acquire(str(package), package.name)
    key = ("pkg.fn", None, parse_arch("sm120"))
    answers = KernelAnswers(tmp_path / "cache", tree)
    assert answers.next(key) is None  # nothing stored yet
    answers.record(key, (Tri.FALSE, [], True))
    answers.store()
    again = KernelAnswers(tmp_path / "cache", tree)
    assert again.next(key) == (Tri.FALSE, [], True)
    changed = next(package.rglob("*.py"))
    changed.write_text(changed.read_text() + "\n# changed\n")
    assert KernelAnswers(tmp_path / "cache", acquire(str(package), package.name)).stored == []


def test_fewer_archs_borrow_the_answers_of_every_arch(tmp_path: Path) -> None:
    """A scan of some archs after a scan of every standard arch replays that
    scan's sequence without the other archs' questions, each answer with the
    unreadable C++ files it depends on."""
    import shutil

    from fixturetree import FIXTURES

    from guardscan.acquire import acquire
    from guardscan.arch import standard_archs
    from guardscan.memo.kernel_answers import KernelAnswers
    from guardscan.predicate import Tri

    root = tmp_path / "lib"
    shutil.copytree(FIXTURES / "kernels_decorator", root)
    package = next(p for p in root.iterdir() if p.is_dir())
    tree = acquire(str(package), package.name)
    cache = tmp_path / "cache"
    every = tuple(a.name for a in standard_archs())
    answers = KernelAnswers(cache, tree, archs=every)
    assert not answers.borrowed
    for target in ("pkg.fn", "pkg.other"):
        for arch in standard_archs():
            # only sm90's questions about pkg.other read an unreadable file
            notes = (("csrc/x.cu", "unreadable"),) if (target, arch.name) == (
                "pkg.other", "sm90") else ()
            answers.record((target, None, arch, None), (Tri.of(arch.major >= 10), [], True, ""),
                           notes)
    answers.store()
    assert answers.notes() == (("csrc/x.cu", "unreadable"),)
    sm90, sm120 = (next(a for a in standard_archs() if a.name == n) for n in ("sm90", "sm120"))
    one = KernelAnswers(cache, tree, archs=("sm120",))
    assert one.borrowed
    assert [key for key, _, _ in one.stored] == [("pkg.fn", None, sm120, None),
                                                 ("pkg.other", None, sm120, None)]
    assert one.next(("pkg.fn", None, sm120, None)) == (Tri.TRUE, [], True, "")
    assert one.next(("pkg.other", None, sm120, None)) == (Tri.TRUE, [], True, "")
    assert one.notes() == ()  # sm120's answers depend on no unreadable file
    one.store()
    assert not one.path.exists()  # replayed to the end: the scan of every arch answers
    both = KernelAnswers(cache, tree, archs=("sm90", "sm120"))
    for key, answer, _ in list(both.stored):
        assert both.next(key) == answer
    assert both.notes() == (("csrc/x.cu", "unreadable"),)
    # another order of archs asks another sequence: it diverges at once
    other = KernelAnswers(cache, tree, archs=("sm120", "sm90"))
    assert other.next(("pkg.fn", None, sm120, None)) is None
    assert other.next(("pkg.fn", None, sm90, None)) is None


def test_kernel_answers_are_kept_per_set_of_archs(tmp_path: Path) -> None:
    """A scan asks every question for every arch it judges: scans that
    alternate between two sets of archs each replay their own sequence."""
    import shutil

    from fixturetree import FIXTURES

    from guardscan.acquire import acquire
    from guardscan.arch import parse_arch
    from guardscan.memo.kernel_answers import KernelAnswers
    from guardscan.predicate import Tri

    root = tmp_path / "lib"
    shutil.copytree(FIXTURES / "kernels_decorator", root)
    package = next(p for p in root.iterdir() if p.is_dir())
    tree = acquire(str(package), package.name)
    cache = tmp_path / "cache"
    for archs in (("sm90", "sm120"), ("sm120",)):
        answers = KernelAnswers(cache, tree, archs=archs)
        for arch in archs:
            key = ("pkg.fn", None, parse_arch(arch))
            assert answers.next(key) is None
            answers.record(key, (Tri.FALSE, [], True))
        answers.store()
    both = KernelAnswers(cache, tree, archs=("sm90", "sm120"))
    assert both.next(("pkg.fn", None, parse_arch("sm90"))) == (Tri.FALSE, [], True)
    one = KernelAnswers(cache, tree, archs=("sm120",))
    assert one.next(("pkg.fn", None, parse_arch("sm120"))) == (Tri.FALSE, [], True)
