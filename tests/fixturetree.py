"""Small SGLang-shaped trees for end-to-end tests, and helpers to scan them.

Static trees live under ``fixtures/guards_<form>/`` and ``fixtures/roles_<role>/``
(one per guard form / guard role, committed, readable on their own); use
:func:`fixture` to get one's path. :func:`make_tree` writes a throwaway tree
for the odd case that needs one. Scans never read a kernel library and never
touch a cache::

    from fixturetree import fixture, run_scan, verdicts
    result = run_scan(fixture("guards_partial"), option="--moe-runner-backend")
    assert verdicts(result)[("x", "sm100")] == "supported"
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from guardscan.acquire import SourceTree, acquire
from guardscan.arch import Arch, parse_arch_list
from guardscan.driver import Analysis, ScanOptions, analyse
from guardscan.results import BackendVerdict, Evidence, ScanResult

__all__ = [
    "DEFAULT_SERVER_ARGS",
    "FIXTURES",
    "describe_chain",
    "evidence",
    "fixture",
    "fixture_tree",
    "line_of",
    "make_tree",
    "run_analysis",
    "run_scan",
    "verdict_of",
    "verdicts",
]

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

#: A minimal server_args.py: the options stage finds --moe-runner-backend
#: (auto triton x y w), --attention-backend (triton fa3 flashinfer) and
#: --fp8-gemm-backend (auto cutlass z), plus --quantization (fp8 myq).
DEFAULT_SERVER_ARGS = '''\
import argparse
import dataclasses

MOE_RUNNER_BACKEND_CHOICES = ["auto", "triton", "x", "y", "w"]
ATTENTION_BACKEND_CHOICES = ["triton", "fa3", "flashinfer"]
FP8_GEMM_BACKEND_CHOICES = ["auto", "cutlass", "z"]
QUANTIZATION_CHOICES = ["fp8", "myq"]


@dataclasses.dataclass
class ServerArgs:
    moe_runner_backend: str = "auto"
    attention_backend: str = "triton"
    fp8_gemm_backend: str = "auto"
    quantization: str = None

    @staticmethod
    def add_cli_args(parser: argparse.ArgumentParser):
        parser.add_argument(
            "--moe-runner-backend",
            type=str,
            choices=MOE_RUNNER_BACKEND_CHOICES,
            default=ServerArgs.moe_runner_backend,
            help="Choose the runner backend for MoE.",
        )
        parser.add_argument(
            "--attention-backend",
            type=str,
            choices=ATTENTION_BACKEND_CHOICES,
            default=ServerArgs.attention_backend,
            help="Choose the kernels for attention layers.",
        )
        parser.add_argument(
            "--fp8-gemm-backend",
            type=str,
            choices=FP8_GEMM_BACKEND_CHOICES,
            default=ServerArgs.fp8_gemm_backend,
            help="Choose the FP8 GEMM runner.",
        )
        parser.add_argument(
            "--quantization",
            type=str,
            choices=QUANTIZATION_CHOICES,
            default=ServerArgs.quantization,
        )
'''


def fixture(name: str) -> Path:
    """The checkout directory of a committed fixture tree (holds ``sglang/``)."""
    path = FIXTURES / name
    if not (path / "sglang" / "__init__.py").is_file():
        raise FileNotFoundError(f"no fixture tree {name!r} under {FIXTURES}")
    return path


def fixture_tree(name: str) -> SourceTree:
    """A fixture as a SourceTree, acquired the way the CLI acquires a checkout."""
    return acquire(str(fixture(name)))


def make_tree(tmp_path: Path, files: Mapping[str, str], *,
              server_args: bool = True) -> Path:
    """Write ``files`` (paths relative to the checkout root, e.g.
    ``sglang/srt/utils.py``) under ``tmp_path`` and return the checkout dir.

    ``sglang/__init__.py`` and every intermediate ``__init__.py`` are added;
    unless given or ``server_args=False``, ``sglang/srt/server_args.py`` is
    :data:`DEFAULT_SERVER_ARGS`.
    """
    root = tmp_path / "tree"
    wanted = dict(files)
    if server_args:
        wanted.setdefault("sglang/srt/server_args.py", DEFAULT_SERVER_ARGS)
    wanted.setdefault("sglang/__init__.py", "")
    for rel in list(wanted):
        parts = Path(rel).parts
        for depth in range(1, len(parts) - 1):
            init = Path(*parts[:depth], "__init__.py").as_posix()
            if parts[0] == "sglang":
                wanted.setdefault(init, "")
    for rel, text in wanted.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def run_analysis(path: Path | str, archs: Iterable[str] | list[Arch] | None = None,
                 option: str | list[str] | None = None,
                 quantization: str | None = None) -> Analysis:
    """The whole pipeline on ``path`` (no kernel library, no cache)."""
    arch_list = _archs(archs)
    options = [option] if isinstance(option, str) else option
    with tempfile.TemporaryDirectory(prefix="guardscan-test-cache-") as cache:
        return analyse(ScanOptions(target=str(path), archs=arch_list, quantization=quantization,
                                   options=options, kernels=False, use_cache=False,
                                   offline=True, cache_dir=Path(cache)))


def run_scan(path: Path | str, archs: Iterable[str] | list[Arch] | None = None,
             option: str | list[str] | None = None,
             quantization: str | None = None) -> ScanResult:
    """``run_analysis(...).result``."""
    return run_analysis(path, archs, option, quantization).result


def _archs(archs: Iterable[str] | list[Arch] | None) -> list[Arch]:
    if archs is None:
        return parse_arch_list(None)
    items = list(archs)
    if all(isinstance(a, Arch) for a in items):
        return items  # type: ignore[return-value]
    return parse_arch_list([str(a) for a in items])


def verdicts(result: ScanResult, option: str | None = None) -> dict[tuple[str, str], str]:
    """(choice, arch) -> verdict for one option (the only one judged, or ``option``)."""
    flags = {b.option for b in result.backends}
    if option is None:
        if len(flags) > 1:
            raise ValueError(f"several options judged ({sorted(flags)}): pass option=")
    else:
        flag = option if option.startswith("--") else f"--{option}"
        flags = {flag}
    return {(b.choice, b.arch): b.verdict.value for b in result.backends if b.option in flags}


def verdict_of(result: ScanResult, choice: str, arch: str,
               option: str | None = None) -> BackendVerdict:
    found = [b for b in result.backends if b.choice == choice and b.arch == arch and (
        option is None or b.option == (option if option.startswith("--") else f"--{option}"))]
    if len(found) != 1:
        raise LookupError(f"{len(found)} verdicts for {choice} on {arch}")
    return found[0]


def evidence(result: ScanResult, choice: str, arch: str,
             option: str | None = None) -> list[tuple[str, int, str]]:
    """The evidence chain as (path, line, role)."""
    return [(e.path, e.line, e.role) for e in verdict_of(result, choice, arch, option).evidence]


def line_of(path: Path, needle: str, occurrence: int = 1) -> int:
    """1-based line of the ``occurrence``-th line containing ``needle``."""
    seen = 0
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if needle in text:
            seen += 1
            if seen == occurrence:
                return number
    raise LookupError(f"{needle!r} not in {path}")


def describe_chain(chain: Iterable[Evidence]) -> str:
    return "\n".join(f"  [{e.role}] {e.path}:{e.line} {e.text} -- {e.note}" for e in chain)
