"""Compiled packages in verdicts: a pinned wheel's Python followed to its libraries, their fatbins judged.

Synthetic wheels built here from ``scripts/make_binary_fixtures.py``'s pieces
(an ELF with a ``.nv_fatbin`` of chosen SASS targets), and a small SGLang tree
that pins one of them; the real sglang 0.5.23 pins are in
``test_compiled_real`` below (marker ``real``).
"""

from __future__ import annotations

import importlib.util
import sys
import zipfile
from pathlib import Path

import pytest
from fixturetree import make_tree

from guardscan.arch import parse_arch_list
from guardscan.binaries.driver import read_wheel
from guardscan.binaries.python import PackagePython
from guardscan.driver import ScanOptions, analyse
from guardscan.verdict.rules.compiled import judge_compiled


def _load_script(name: str):  # type: ignore[no-untyped-def]
    path = Path(__file__).resolve().parent.parent / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


make = _load_script("make_binary_fixtures")


def _library(*sass: tuple[int, int]) -> bytes:
    """An ELF whose fatbin holds SASS for each (sm, flags), no PTX."""
    return make.library([(".nv_fatbin", make.container(
        *(make.entry(make.SASS, sm, flags, make.cubin(sm)) for sm, flags in sass)))])


#: a FlashMLA-shaped package: the op namespace comes from a loader module
FLASH_MLA = {
    "flash_mla/__init__.py": "from flash_mla.interface import decode, plan\n",
    "flash_mla/_loader.py": "import torch\n\n\ndef get_ops():\n    return torch.ops.flash_mla\n",
    "flash_mla/interface.py": (
        "from flash_mla._loader import get_ops\n\n\n"
        "def decode(q):\n    return get_ops().decode(q)\n\n\n"
        "def plan():\n    return None\n"),
}
#: an sgl-kernel-shaped package: one module imports its own library by name
SGL_KERNEL = {
    "sgl_kernel/__init__.py": "from sgl_kernel.mla import mla_decode\nfrom sgl_kernel.act import silu\n",
    "sgl_kernel/mla.py": ("import torch\n\ntry:\n    from sgl_kernel import mla_ops\n"
                          "except ImportError:\n    mla_ops = None\n\n\n"
                          "def mla_decode(x):\n    return torch.ops.sgl_kernel.mla(x)\n"),
    "sgl_kernel/act.py": "import torch\n\n\ndef silu(x):\n    return torch.ops.sgl_kernel.silu(x)\n",
}


def _wheel(path: Path, sources: dict[str, str], libraries: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in sources.items():
            archive.writestr(name, text)
        for name, data in libraries.items():
            archive.writestr(name, data)
    return path


@pytest.fixture
def flash_mla_wheel(tmp_path: Path) -> Path:
    wheel_dir = tmp_path / "cache" / "wheels" / "sgl-flash-mla==9.9"
    wheel_dir.mkdir(parents=True)
    return _wheel(wheel_dir / "sgl_flash_mla-9.9-cp310-abi3-manylinux2014_x86_64.whl",
                  FLASH_MLA, {
                      "flash_mla/cuda.abi3.so": _library((90, make.ARCH_SPECIFIC),
                                                          (100, make.ARCH_SPECIFIC)),
                  })


def _judge(wheel: Path, target: str, arch: str) -> tuple[str, list[str]]:
    facts = read_wheel(wheel, wheel.parent.parent.parent)
    libraries = {o.path: o for o in facts.libraries}
    reach = PackagePython.from_wheel(wheel, libraries).reach(target)
    assert reach is not None
    value, chain = judge_compiled(reach, libraries, parse_arch_list([arch])[0], "pkg 9.9")
    return value.value, [f"{e.place} {e.kind}" for e in chain]


def test_a_loader_module_leads_to_every_library_of_the_package(flash_mla_wheel: Path) -> None:
    python = PackagePython.from_wheel(flash_mla_wheel, ("flash_mla/cuda.abi3.so",))
    reach = python.reach("flash_mla.decode")
    assert reach is not None
    assert reach.libraries == ("flash_mla/cuda.abi3.so",)
    assert reach.how == "package"
    assert [(h.rel, h.line) for h in reach.hops] == [
        ("flash_mla/interface.py", 4), ("flash_mla/interface.py", 5),
        ("flash_mla/_loader.py", 4), ("flash_mla/_loader.py", 5)]
    # pure Python reaches no library; a name the package does not define is None
    assert python.reach("flash_mla.plan") == type(reach)("flash_mla.plan", (), (), "")
    assert python.reach("flash_mla.missing") is None


def test_no_loadable_code_excludes_and_code_for_the_arch_decides_nothing(
        flash_mla_wheel: Path) -> None:
    assert _judge(flash_mla_wheel, "flash_mla.decode", "sm120") == ("false", [
        "flash_mla/interface.py:4 module", "flash_mla/interface.py:5 module",
        "flash_mla/_loader.py:4 module", "flash_mla/_loader.py:5 module",
        "flash_mla/cuda.abi3.so binary"])
    assert _judge(flash_mla_wheel, "flash_mla.decode", "sm90") == ("unknown", [])
    assert _judge(flash_mla_wheel, "flash_mla.decode", "sm100") == ("unknown", [])
    # sm_100a is for 10.0 only
    assert _judge(flash_mla_wheel, "flash_mla.decode", "sm103")[0] == "false"
    assert _judge(flash_mla_wheel, "flash_mla.decode", "sm80")[0] == "false"


def test_a_module_that_imports_its_library_is_judged_by_that_library(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path / "sglang_kernel-9.9-cp310-abi3-manylinux2014_x86_64.whl",
                   SGL_KERNEL, {
                       "sgl_kernel/mla_ops.abi3.so": _library((90, make.ARCH_SPECIFIC)),
                       "sgl_kernel/common_ops.abi3.so": _library((80, make.PLAIN),
                                                                 (120, make.ARCH_SPECIFIC)),
                   })
    assert _judge(wheel, "sgl_kernel.mla_decode", "sm120") == ("false", [
        "sgl_kernel/mla.py:9 module", "sgl_kernel/mla.py:10 module",
        "sgl_kernel/mla_ops.abi3.so binary"])
    assert _judge(wheel, "sgl_kernel.mla_decode", "sm90") == ("unknown", [])
    # no library named: every library of the package, one of which holds sm_120a
    assert _judge(wheel, "sgl_kernel.silu", "sm120") == ("unknown", [])
    assert _judge(wheel, "sgl_kernel.silu", "sm86") == ("unknown", [])  # sm_80 runs on 8.6
    value, chain = _judge(wheel, "sgl_kernel.silu", "sm121")  # sm_120a is 12.0 only
    assert value == "false"
    assert chain[-2:] == ["sgl_kernel/common_ops.abi3.so binary",
                          "sgl_kernel/mla_ops.abi3.so binary"]


def test_host_only_and_unreadable_libraries_decide_nothing(tmp_path: Path) -> None:
    host_only = make.library([(".text", b"\0" * 64)])
    wheel = _wheel(tmp_path / "sgl_flash_mla-9.9-py3-none-any.whl", FLASH_MLA,
                   {"flash_mla/cuda.abi3.so": host_only})
    assert _judge(wheel, "flash_mla.decode", "sm120") == ("unknown", [])
    (tmp_path / "b").mkdir()
    broken = _wheel(tmp_path / "b" / "sgl_flash_mla-9.9-py3-none-any.whl", FLASH_MLA,
                    {"flash_mla/cuda.abi3.so": b"\x7fELF" + b"\0" * 10})
    assert _judge(broken, "flash_mla.decode", "sm120") == ("unknown", [])


def test_python_that_does_not_parse_is_left_out() -> None:
    python = PackagePython.from_sources({
        "pkg/__init__.py": "from pkg.ops import run\n",
        "pkg/ops.py": "def run(:\n",
    }, ("pkg/_lib.so",))
    assert python.reach("pkg.run") is None


# --------------------------------------------------------------------------
# End to end: a tree that pins the wheel

BACKEND = '''\
from sglang.kernels.mla_iface import decode


class Fa3Backend:
    def forward_decode(self, q):
        return decode(q)
'''
IFACE = '''\
import flash_mla


def decode(q):
    return flash_mla.decode(q)
'''


def _pinned_tree(tmp_path: Path) -> Path:
    root = make_tree(tmp_path, {
        "sglang/srt/layers/attention/fa3_backend.py": BACKEND,
        "sglang/kernels/mla_iface.py": IFACE,
    })
    (root / "pyproject.toml").write_text(
        '[project]\nname = "sglang"\nversion = "9.9"\n'
        'dependencies = ["sgl-flash-mla==9.9", "torch"]\n', encoding="utf-8")
    return root


def _scan(root: Path, cache: Path, compiled: str | None = None):  # type: ignore[no-untyped-def]
    return analyse(ScanOptions(target=str(root), archs=parse_arch_list(["sm90", "sm120"]),
                               options=["--attention-backend"], kernels=True, offline=True,
                               use_cache=False, cache_dir=cache, compiled=compiled)).result


def test_a_choice_whose_kernels_have_no_code_for_the_arch_is_unsupported(
        tmp_path: Path, flash_mla_wheel: Path) -> None:
    cache = tmp_path / "cache"
    result = _scan(_pinned_tree(tmp_path), cache)
    got = {(v.choice, v.arch): v for v in result.backends}
    assert got[("fa3", "sm120")].verdict.value == "unsupported"
    assert got[("fa3", "sm90")].verdict.value == "unknown"
    deciding = [e for e in got[("fa3", "sm120")].evidence if e.decides]
    assert [(e.place, e.kind, e.text) for e in deciding] == [
        ("flash_mla/cuda.abi3.so", "binary", "SASS sm_90a sm_100a; PTX none")]
    assert ("sgl-flash-mla", "9.9") in {(k.package, k.version) for k in result.kernels}
    # --compiled none: the binaries are not read, nothing is decided
    plain = {(v.choice, v.arch): v.verdict.value for v in _scan(
        _pinned_tree(tmp_path / "again"), cache, "none").backends}
    assert plain[("fa3", "sm120")] == "unknown"


def test_a_pin_that_cannot_be_had_is_one_diagnostic(tmp_path: Path) -> None:
    result = _scan(_pinned_tree(tmp_path), tmp_path / "empty-cache")
    failed = [d for d in result.diagnostics if d.code == "compiled-package-failed"]
    assert [d.path for d in failed] == ["sgl-flash-mla==9.9"]
    assert {v.verdict.value for v in result.backends if v.choice == "fa3"} == {"unknown"}


def test_a_wheel_for_another_machine_says_nothing_of_a_gpu_that_never_sits_beside_it(
        flash_mla_wheel: Path) -> None:
    facts = read_wheel(flash_mla_wheel, flash_mla_wheel.parent.parent.parent)
    libraries = {o.path: o for o in facts.libraries}
    reach = PackagePython.from_wheel(flash_mla_wheel, libraries).reach("flash_mla.decode")
    assert reach is not None
    gb10, rtx = parse_arch_list(["sm121"])[0], parse_arch_list(["sm120"])[0]
    # GB10 systems are aarch64 (data/architectures.json): an x86_64 wheel decides nothing
    assert judge_compiled(reach, libraries, gb10, "pkg", "x86_64")[0].value == "unknown"
    assert judge_compiled(reach, libraries, gb10, "pkg", "aarch64")[0].value == "false"
    assert judge_compiled(reach, libraries, rtx, "pkg", "x86_64")[0].value == "false"


def test_a_return_into_code_that_reaches_no_library_is_another_way_out(tmp_path: Path) -> None:
    sources = {
        "sgl_kernel/__init__.py": "from sgl_kernel.attn import varlen\n",
        "sgl_kernel/_v4.py": "def varlen_v4(q):\n    return q\n",
        "sgl_kernel/attn.py": (
            "import torch\nfrom sgl_kernel import attn_ops\n"
            "from sgl_kernel._v4 import varlen_v4\n\n\n"
            "def varlen(q, ver=3):\n    if ver == 4:\n        return varlen_v4(q)\n"
            "    return torch.ops.sgl_kernel.fwd(q)\n"),
    }
    wheel = _wheel(tmp_path / "sglang_kernel-9.9-cp310-abi3-manylinux2014_x86_64.whl",
                   sources, {"sgl_kernel/attn_ops.abi3.so": _library((90, make.ARCH_SPECIFIC))})
    python = PackagePython.from_wheel(wheel, ("sgl_kernel/attn_ops.abi3.so",))
    reach = python.reach("sgl_kernel.varlen")
    assert reach is not None and reach.escape is not None
    assert (reach.escape.rel, reach.escape.line) == ("sgl_kernel/attn.py", 8)
    assert _judge(wheel, "sgl_kernel.varlen", "sm100") == ("unknown", [])


# --------------------------------------------------------------------------
# Real releases (marker ``real``): the pins sglang 0.5.23 and 0.5.9 make, read
# from their wheels in the shared test cache. The archs are the truth files'
# (one stored result answers both).

TRUTH_ARCHS = ["sm80", "sm90", "sm100", "sm120"]


def _real(version: str):  # type: ignore[no-untyped-def]
    import realtrees

    with realtrees.one_at_a_time("truth", version, None, str(realtrees.shared_cache_dir())):
        return analyse(ScanOptions(target=f"sglang=={version}", options=[
            "--attention-backend", "--prefill-attention-backend", "--decode-attention-backend"],
            archs=parse_arch_list(TRUTH_ARCHS), kernels=True,
            cache_dir=realtrees.shared_cache_dir())).result


@pytest.mark.real
@pytest.mark.parametrize(("version", "libraries"), [
    ("0.5.23", {"flash_mla/cuda.abi3.so", "flash_mla/_C_legacy.abi3.so"}),
    ("0.5.9", {"sgl_kernel/flashmla_ops.abi3.so"}),
])
def test_flashmla_has_no_code_for_sm120_in_the_pinned_wheels(version: str,
                                                             libraries: set[str]) -> None:
    result = _real(version)
    got = {(v.option, v.arch): v for v in result.backends if v.choice == "flashmla"}
    for option in ("--attention-backend", "--prefill-attention-backend",
                   "--decode-attention-backend"):
        for arch in ("sm80", "sm120"):
            verdict = got[(option, arch)]
            assert verdict.verdict.value == "unsupported", (option, arch)
            deciding = [e for e in verdict.evidence if e.decides]
            assert len(deciding) == 1 and deciding[0].kind == "binary"
            assert deciding[0].tier == "b" and deciding[0].path in libraries
            assert "PTX none" in deciding[0].text
        # code for sm90 and sm100 is there: the binaries decide nothing
        for arch in ("sm90", "sm100"):
            assert got[(option, arch)].verdict.value == "unknown", (option, arch)


@pytest.mark.real
def test_dsa_on_sm90_is_not_called_unsupported_while_flash_mla_has_sm90_code() -> None:
    """sglang 0.5.23's DSA backend: its FlashInfer calls exclude sm90, each under
    a test left undecided (``self.device_sm_major >= 10``), and it calls
    ``flash_mla``, whose ``_C_legacy`` library holds ``sm_90a``: what runs on
    sm90 is not known to fail (on sm80, no library has code: it does)."""
    result = _real("0.5.23")
    got = {(v.option, v.arch): v.verdict.value for v in result.backends if v.choice == "dsa"}
    for option in ("--attention-backend", "--prefill-attention-backend",
                   "--decode-attention-backend"):
        assert got[(option, "sm90")] == "unknown", option
        assert got[(option, "sm80")] == "unsupported", option
