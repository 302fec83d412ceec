"""A compiled package's Python that refuses a GPU before its op runs (``binaries.refusals``).

Synthetic packages shaped like sgl-kernel's FA3 wrappers, and the real
``sgl_kernel.flash_attn.flash_attn_varlen_func`` of the sgl-kernel wheel
sglang 0.5.9 pins.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from guardscan.arch import Arch
from guardscan.binaries.python import PackagePython
from guardscan.binaries.refusals import refusal

FA = (
    "import torch\n"
    "from sgl_kernel import flash_ops\n"                                   # 2
    "\n"
    "def is_fa3_supported(device=None) -> bool:\n"                        # 4
    "    return (torch.version.cuda >= '12.3') and (\n"
    "        torch.cuda.get_device_capability(device)[0] == 9\n"
    "        or torch.cuda.get_device_capability(device)[0] == 8)\n"
    "\n"
    "def varlen(q, k, v, causal=False, ver=3):\n"                          # 9
    "    '''docs'''\n"
    "    if ver == 4:\n"                                                   # 11
    "        return other_package_v4(q, k, v)\n"
    "    q = q.contiguous()\n"
    "    if not is_fa3_supported():\n"                                     # 14
    "        raise NotImplementedError('only sm80 and sm90')\n"            # 15
    "    return torch.ops.sgl_kernel.fwd.default(q, k, v)\n"
)


def _package(source: str) -> PackagePython:
    return PackagePython.from_sources({"sgl_kernel/__init__.py": "",
                                       "sgl_kernel/flash_attn.py": source},
                                      libraries=("sgl_kernel/flash_ops.abi3.so",))


@pytest.mark.parametrize(("capability", "passed", "refused"), [
    ((12, 0), frozenset({"0", "1", "2"}), True),  # ver left at its default 3
    ((10, 0), frozenset({"0", "1", "2", "causal"}), True),
    ((9, 0), frozenset({"0", "1", "2"}), False),  # the test may hold (CUDA version)
    ((8, 0), frozenset(), False),
    ((12, 0), frozenset({"0", "1", "2", "ver"}), False),  # ver passed: may return first
    ((12, 0), frozenset({"0", "1", "2", "3", "4"}), False),  # ver passed by position
    ((12, 0), None, False),  # arguments not read
])
def test_a_capability_test_refuses_where_it_surely_holds(
        capability: tuple[int, int], passed: frozenset[str] | None, refused: bool) -> None:
    hops = _package(FA).refusal("sgl_kernel.flash_attn.varlen", capability, passed)
    if not refused:
        assert hops is None
        return
    assert hops is not None
    assert [(h.rel, h.line) for h in hops] == [("sgl_kernel/flash_attn.py", 9),
                                               ("sgl_kernel/flash_attn.py", 14),
                                               ("sgl_kernel/flash_attn.py", 15)]
    assert hops[1].text == "if not is_fa3_supported():"
    assert hops[2].text == "raise NotImplementedError('only sm80 and sm90')"


def test_an_assert_of_the_capability_refuses_where_it_surely_fails() -> None:
    source = FA.replace("    if not is_fa3_supported():\n        raise NotImplementedError("
                        "'only sm80 and sm90')\n",
                        "    assert is_fa3_supported(), 'only sm80 and sm90'\n")
    package = _package(source)
    hops = package.refusal("sgl_kernel.flash_attn.varlen", (12, 0), frozenset({"0", "1", "2"}))
    assert hops is not None
    assert [(h.line, h.text) for h in hops] == [
        (9, "def varlen(q, k, v, causal=False, ver=3):"),
        (14, "assert is_fa3_supported(), 'only sm80 and sm90'")]
    assert package.refusal("sgl_kernel.flash_attn.varlen", (9, 0),
                           frozenset({"0", "1", "2"})) is None


@pytest.mark.parametrize(("between", "why"), [
    ("    is_fa3_supported = lambda: True\n", "the test's name is bound again"),
    ("    try:\n        q = run(q)\n    except ValueError:\n        return q\n",
     "a statement that may return"),
    ("    if q is None:\n        q = 1\n    else:\n        return q\n", "an else that returns"),
    ("    if q is None:\n        raise ValueError('q')\n", "an undecided raise comes first"),
])
def test_anything_that_may_leave_or_rebind_first_ends_the_reading(between: str,
                                                                  why: str) -> None:
    source = FA.replace("    if not is_fa3_supported():\n",
                        between + "    if not is_fa3_supported():\n")
    assert _package(source).refusal("sgl_kernel.flash_attn.varlen", (12, 0),
                                    frozenset({"0", "1", "2"})) is None, why


def test_an_undecided_part_never_makes_a_refusal() -> None:
    source = FA.replace("(torch.version.cuda >= '12.3') and (", "(torch.version.cuda >= '12.3') or (")
    # on sm120: "unknown or False" is unknown, so nothing is refused
    assert _package(source).refusal("sgl_kernel.flash_attn.varlen", (12, 0),
                                    frozenset({"0", "1", "2"})) is None
    # a name the reader does not know is undecided too
    steps = (("raise", "SOME_FLAG", 3, 4, "raise X"),)
    assert refusal(steps, (), {}, (12, 0), frozenset()) is None


def test_a_function_defined_elsewhere_or_a_class_is_no_refusal() -> None:
    package = _package(FA + "\nclass Buffer:\n    def __init__(self):\n        raise ValueError\n")
    assert package.refusal("sgl_kernel.flash_attn.Buffer", (12, 0), frozenset()) is None
    assert package.refusal("sgl_kernel.flash_attn.missing", (12, 0), frozenset()) is None


def test_the_real_fa3_varlen_wrapper_refuses_sm100_and_sm120() -> None:
    """sgl-kernel 0.3.21 (sglang 0.5.9's pin), ``flash_attn.py:328``:
    ``if not is_fa3_supported(): raise NotImplementedError``, after the
    ``ver == 4`` return into FA4."""
    import realtrees

    from guardscan.binaries.packages import download_compiled

    cache = realtrees.shared_cache_dir()
    with realtrees.one_at_a_time("compiled", "sgl-kernel==0.3.21"):
        wheel = download_compiled("sgl-kernel==0.3.21", cache)
    with zipfile.ZipFile(wheel) as archive:
        libraries = tuple(n for n in archive.namelist() if n.endswith(".so"))
    package = PackagePython.from_wheel(wheel, libraries)
    target = "sgl_kernel.flash_attn.flash_attn_varlen_func"
    for arch in (Arch(10, 0), Arch(12, 0)):
        hops = package.refusal(target, (arch.major, arch.minor), frozenset({"0", "1", "2"}))
        assert hops is not None, arch.name
        assert [(h.rel, h.line) for h in hops] == [("sgl_kernel/flash_attn.py", 272),
                                                   ("sgl_kernel/flash_attn.py", 328),
                                                   ("sgl_kernel/flash_attn.py", 329)]
    assert package.refusal(target, (9, 0), frozenset({"0", "1", "2"})) is None
    assert package.refusal(target, (12, 0), frozenset({"0", "1", "2", "ver"})) is None


def test_a_choice_whose_compiled_call_refuses_the_arch_is_unsupported(tmp_path: Path) -> None:
    """End to end: the pinned wheel's libraries hold code for sm90 and sm120
    alike, but the function SGLang calls raises on any major but 9 first.
    Called through a wrapper that forwards ``*args`` it is refused nothing
    (``binaries.refusals``)."""
    from fixturetree import make_tree
    from test_compiled import FLASH_MLA, _library, _scan, _wheel, make

    checked = dict(FLASH_MLA)
    checked["flash_mla/interface.py"] = checked["flash_mla/interface.py"].replace(
        "def decode(q):\n",
        "def hopper():\n    return torch.cuda.get_device_capability()[0] == 9\n\n\n"
        "def decode(q):\n    if not hopper():\n        raise RuntimeError('Hopper only')\n")
    checked["flash_mla/interface.py"] = "import torch\n" + checked["flash_mla/interface.py"]
    wheel_dir = tmp_path / "cache" / "wheels" / "sgl-flash-mla==9.9"
    wheel_dir.mkdir(parents=True)
    _wheel(wheel_dir / "sgl_flash_mla-9.9-cp310-abi3-manylinux2014_x86_64.whl", checked, {
        "flash_mla/cuda.abi3.so": _library((90, make.ARCH_SPECIFIC), (120, make.ARCH_SPECIFIC))})
    # the backend's module calls the package itself, with arguments read
    root = make_tree(tmp_path, {"sglang/srt/layers/attention/fa3_backend.py": (
        "import flash_mla\n\n\nclass Fa3Backend:\n"
        "    def forward_decode(self, q):\n        return flash_mla.decode(q)\n")})
    (root / "pyproject.toml").write_text(
        '[project]\nname = "sglang"\nversion = "9.9"\n'
        'dependencies = ["sgl-flash-mla==9.9", "torch"]\n', encoding="utf-8")
    result = _scan(root, tmp_path / "cache")
    got = {(v.choice, v.arch): v for v in result.backends}
    assert got[("fa3", "sm90")].verdict.value == "unknown"
    sm120 = got[("fa3", "sm120")]
    assert sm120.verdict.value == "unsupported"
    assert [(e.place, e.kind, e.text) for e in sm120.evidence if e.decides] == [
        ("flash_mla/interface.py:11", "check", "raise RuntimeError('Hopper only')")]
    # through a wrapper whose arguments are not read: the wrapper's caller decides
    wrapped = make_tree(tmp_path / "wrapped", {"sglang/srt/layers/attention/fa3_backend.py": (
        "import flash_mla\n\n\ndef decode(*args, **kwargs):\n"
        "    return flash_mla.decode(*args, **kwargs)\n\n\nclass Fa3Backend:\n"
        "    def forward_decode(self, q):\n        return decode(q)\n")})
    (wrapped / "pyproject.toml").write_text(
        '[project]\nname = "sglang"\nversion = "9.9"\n'
        'dependencies = ["sgl-flash-mla==9.9", "torch"]\n', encoding="utf-8")
    again = {(v.choice, v.arch): v.verdict.value
             for v in _scan(wrapped, tmp_path / "cache").backends}
    assert again[("fa3", "sm120")] == "unknown"
