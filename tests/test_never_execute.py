"""Never execute the scanned code.

Every file of a booby-trapped tree (the package's modules and ``__init__.py``,
``__main__.py``, ``version.py``, ``conftest.py`` inside the package,
``setup.py``, an in-tree build backend, ``sitecustomize.py``, and in the wheel
a ``.pth`` file and a script) appends to a marker file when imported or run.
The tree is scanned as a checkout, as a wheel, as a cached spec and as the
installed package, through ``analyse`` and through every CLI command, format
and graph format, with the tree's root on ``sys.path`` so an accidental import
would find the trap; the marker must never appear.

The CLI's commands, formats and graph formats are read from the CLI itself
(``build_*parser`` functions, ``--format`` choices, the extensions
``write_graph`` accepts), so a new one is covered without touching this file.
"""

from __future__ import annotations

import argparse
import inspect
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fixturetree import FIXTURES, fixture

from guardscan import cli
from guardscan.driver import ScanOptions, analyse

GATE = fixture("roles_gate")
RUNNER = "sglang/srt/layers/moe/runner.py"
VERSION = "0.0.1"
#: The packages a trap lives in: none of them may ever be imported.
TRAPPED_MODULES = ("sglang", "flashinfer", "trap_backend", "sitecustomize", "usercustomize")


def trap(marker: Path, label: str) -> str:
    """One line that leaves evidence of having run."""
    return f"open({str(marker)!r}, 'a').write({label!r} + '\\n')\n"


def trapped_checkout(root: Path, marker: Path) -> Path:
    """roles_gate's tree (x is blocked below SM100) with a trap in every file,
    plus packaging and build files that would run on a build or install."""
    shutil.copytree(GATE, root)
    for path in sorted((root / "sglang").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        path.write_text(trap(marker, rel) + path.read_text(encoding="utf-8"), encoding="utf-8")
    extra = {
        "sglang/__main__.py": "",
        "sglang/version.py": f'__version__ = "{VERSION}"\n',
        "sglang/conftest.py": "import pytest\n",
        "sglang/srt/conftest.py": "",
        "setup.py": "from setuptools import setup\nsetup(name='sglang')\n",
        "trap_backend.py": "def build_wheel(*args, **kwargs):\n    return ''\n",
        "sitecustomize.py": "",
        "usercustomize.py": "",
    }
    for rel, body in extra.items():
        (root / rel).write_text(trap(marker, rel) + body, encoding="utf-8")
    (root / "pyproject.toml").write_text(
        '[build-system]\nrequires = []\nbuild-backend = "trap_backend"\nbackend-path = ["."]\n'
        f'\n[project]\nname = "sglang"\nversion = "{VERSION}"\ndependencies = []\n',
        encoding="utf-8")
    return root


def trapped_flashinfer(root: Path, marker: Path) -> Path:
    """A kernel library checkout whose modules are trapped too."""
    shutil.copytree(FIXTURES / "kernels_decorator", root)
    for path in sorted((root / "flashinfer").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        path.write_text(trap(marker, rel) + path.read_text(encoding="utf-8"), encoding="utf-8")
    return root


def trapped_wheel(checkout: Path, directory: Path, marker: Path) -> Path:
    """The checkout's package as a wheel, with dist-info METADATA, a ``.pth``
    file (run by site.py when installed) and a trapped script."""
    wheel = directory / f"sglang-{VERSION}-py3-none-any.whl"
    directory.mkdir(parents=True, exist_ok=True)
    dist_info = f"sglang-{VERSION}.dist-info"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted((checkout / "sglang").rglob("*.py")):
            archive.write(path, path.relative_to(checkout).as_posix())
        archive.writestr(f"{dist_info}/METADATA",
                         f"Metadata-Version: 2.1\nName: sglang\nVersion: {VERSION}\n"
                         "Requires-Dist: flashinfer_python==0.6.3\n")
        archive.writestr(f"{dist_info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\n")
        archive.writestr(f"{dist_info}/entry_points.txt",
                         "[console_scripts]\nsglang-trap = sglang.__main__:main\n")
        archive.writestr(f"{dist_info}/RECORD", "")
        archive.writestr("sglang_trap.pth", "import os; " + trap(marker, "sglang_trap.pth"))
        archive.writestr(f"sglang-{VERSION}.data/scripts/sglang-trap",
                         "#!python\n" + trap(marker, "scripts/sglang-trap"))
    return wheel


@pytest.fixture
def marker(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "MARKER-the-scanned-code-ran"
    yield path
    assert not path.exists(), f"scanned code ran: {path.read_text(encoding='utf-8')}"


@pytest.fixture
def checkout(tmp_path: Path, marker: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The trapped checkout, with its root first on sys.path (an accidental
    ``import sglang`` or ``import trap_backend`` would find the trap)."""
    root = trapped_checkout(tmp_path / "checkout", marker)
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setenv("GUARDSCAN_CACHE_DIR", str(tmp_path / "default-cache"))
    return root


def assert_not_executed(marker: Path, root: Path) -> None:
    assert not marker.exists(), f"scanned code ran: {marker.read_text(encoding='utf-8')}"
    imported = [name for name in sys.modules if name.split(".")[0] in TRAPPED_MODULES]
    assert imported == [], f"scanned modules were imported: {imported}"
    from_tree = [name for name, module in list(sys.modules.items())
                 if str(getattr(module, "__file__", "") or "").startswith(str(root))]
    assert from_tree == [], f"modules imported from the scanned tree: {from_tree}"


def test_the_trap_fires_when_run(tmp_path: Path) -> None:
    """Control: the trapped files really do write the marker when imported or
    run, so the absence of the marker below means something."""
    marker = tmp_path / "control-marker"
    root = trapped_checkout(tmp_path / "checkout", marker)
    subprocess.run([sys.executable, "-c", "import sglang.srt.server_args"], cwd=root,
                   check=True, capture_output=True)
    subprocess.run([sys.executable, "setup.py", "--version"], cwd=root, capture_output=True,
                   check=False)
    ran = marker.read_text(encoding="utf-8").split()
    assert {"sglang/__init__.py", "sglang/srt/server_args.py", "setup.py"} <= set(ran)


# -- the CLI, enumerated from its own parsers ----------------------------------------

#: Values for the positional arguments of CLI commands, by dest. A new command
#: with a new positional fails test_every_cli_command until it is added here.
POSITIONALS: dict[str, Callable[[Path], str]] = {
    "target": lambda target: str(target),
    "choice": lambda target: "x",
}


def cli_commands() -> list[tuple[list[str], argparse.ArgumentParser]]:
    """(argv prefix, parser) for every command: ``build_parser`` is the scan,
    ``build_<name>_parser`` is ``guardscan <name>``."""
    found = []
    for name, function in inspect.getmembers(cli, inspect.isfunction):
        match = re.fullmatch(r"build_(?:(\w+)_)?parser", name)
        if match and function.__module__ == cli.__name__:
            found.append(([match.group(1)] if match.group(1) else [], function()))
    assert [prefix for prefix, _ in found].count([]) == 1, found
    return sorted(found, key=lambda item: item[0])


def option_choices(parser: argparse.ArgumentParser, flag: str) -> list[str]:
    for action in parser._actions:
        if flag in action.option_strings:
            return list(action.choices or ())
    return []


def has_flag(parser: argparse.ArgumentParser, flag: str) -> bool:
    return any(flag in action.option_strings for action in parser._actions)


def graph_suffixes() -> list[str]:
    """The extensions ``write_graph`` writes, from its own refusal message."""
    import networkx as nx

    from guardscan.graph import write_graph

    with pytest.raises(ValueError) as info:
        write_graph(nx.DiGraph(), "graph.no-such-format")
    suffixes = re.findall(r"\.\w+", str(info.value).rsplit("use", 1)[-1])
    assert len(suffixes) >= 3, f"cannot read the graph formats from: {info.value}"
    return suffixes


def command_lines(target: Path, out: Path, extra: list[str]) -> list[list[str]]:
    """One argv per command, per --format choice and per graph format, plus
    --help and --version of each command."""
    lines: list[list[str]] = []
    for prefix, parser in cli_commands():
        positionals = []
        for action in parser._actions:
            if action.option_strings:
                continue
            assert action.dest in POSITIONALS, (
                f"add a value for the positional {action.dest!r} of 'guardscan "
                f"{' '.join(prefix)}' to POSITIONALS")
            positionals.append(POSITIONALS[action.dest](target))
        common = [flag for flag in extra if has_flag(parser, flag.split("=", 1)[0])]
        base = [*prefix, *positionals, *common]
        lines.append(base)
        for fmt in option_choices(parser, "--format"):
            lines.append([*base, "--format", fmt])
        if has_flag(parser, "--graph"):
            for suffix in graph_suffixes():
                lines.append([*base, "--graph", str(out / f"graph-{len(lines)}{suffix}")])
        if has_flag(parser, "--output"):
            lines.append([*base, "--output", str(out / f"report-{len(lines)}")])
        for flag in ("--help", "--version"):
            if has_flag(parser, flag):
                lines.append([*prefix, flag])
    return lines


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = cli.main(argv)
    except SystemExit as exc:  # --help, --version
        code = exc.code if isinstance(exc.code, int) else 2
    out, err = capsys.readouterr()
    return int(code), out, err


@pytest.mark.parametrize("kind", ["checkout", "wheel"])
def test_every_cli_command(kind: str, checkout: Path, marker: Path, tmp_path: Path,
                           capsys: pytest.CaptureFixture[str]) -> None:
    target = checkout if kind == "checkout" else trapped_wheel(checkout, tmp_path / "dist",
                                                               marker)
    cache = tmp_path / "cache"
    out = tmp_path / "out"
    out.mkdir()
    lines = command_lines(target, out, ["--no-kernels", "--offline", "-q",
                                        f"--cache-dir={cache}", "--arch=sm90,sm100"])
    assert any(line[:1] == ["explain"] for line in lines)
    assert sum("--format" in line for line in lines) >= 4
    for argv in lines:
        code, stdout, err = run_cli(argv, capsys)
        assert code == 0, f"guardscan {' '.join(argv)} -> {code}\n{err}"
        assert "Traceback" not in err
        assert_not_executed(marker, checkout)
        assert_not_executed(marker, cache)
    # The scan did see the trapped tree: x is blocked below SM100.
    code, stdout, _ = run_cli(["explain", "x", str(target), "--arch", "sm90", "--no-kernels",
                               "--offline", "-q", f"--cache-dir={cache}"], capsys)
    assert code == 0 and "x on sm90: blocked" in stdout
    assert_not_executed(marker, checkout)


def test_kernel_library_is_not_executed(checkout: Path, marker: Path, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    flashinfer = trapped_flashinfer(tmp_path / "flashinfer-checkout", marker)
    for argv in (
        [str(checkout), "--flashinfer", str(flashinfer), "--format", "json"],
        ["explain", "x", str(checkout), "--flashinfer", str(flashinfer)],
    ):
        code, _, err = run_cli([*argv, "--offline", "-q", "--no-cache", "--arch", "sm120"],
                               capsys)
        assert code == 0, err
        assert "Traceback" not in err
        assert_not_executed(marker, checkout)
        assert_not_executed(marker, flashinfer)


# -- every kind of target, through the library API ---------------------------------


def test_checkout_wheel_spec_and_installed(checkout: Path, marker: Path, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    wheel = trapped_wheel(checkout, tmp_path / "dist", marker)
    spec_dir = cache / "wheels" / f"sglang=={VERSION}"
    spec_dir.mkdir(parents=True)
    shutil.copy(wheel, spec_dir / wheel.name)

    def pip_must_not_run(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"pip was called: {args}")

    monkeypatch.setattr("guardscan.acquire.spec.subprocess.run", pip_must_not_run)
    targets: list[str | None] = [str(checkout), str(checkout / "sglang"), str(wheel),
                                 f"sglang=={VERSION}", None]
    for target in targets:
        for use_cache in (False, True, True):  # cold, then warm
            analysis = analyse(ScanOptions(target=target, kernels=True, use_cache=use_cache,
                                           cache_dir=cache, offline=True))
            assert_not_executed(marker, checkout)
            assert_not_executed(marker, cache)
            blocked = {(b.choice, b.arch) for b in analysis.result.backends
                       if b.verdict.value == "blocked"}
            assert ("x", "sm90") in blocked, (target, analysis.result.diagnostics)
            assert ("x", "sm100") not in blocked, target


def test_python_m_guardscan_from_inside_the_checkout(checkout: Path, marker: Path,
                                                     tmp_path: Path) -> None:
    """The usual ``cd sglang && guardscan .``, as a fresh process whose working
    directory (first on sys.path for ``python -m``) is the trapped checkout."""
    env_cache = tmp_path / "subprocess-cache"
    main_dir = Path(cli.__file__).resolve().parent.parent
    result = subprocess.run(
        [sys.executable, "-m", "guardscan", ".", "--no-kernels", "--format", "json",
         "--cache-dir", str(env_cache), "--arch", "sm90"],
        cwd=checkout, capture_output=True, text=True, timeout=120, check=False,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(main_dir),
             "GUARDSCAN_CACHE_DIR": str(env_cache), "HOME": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert '"blocked"' in result.stdout
    assert not marker.exists(), marker.read_text(encoding="utf-8")
