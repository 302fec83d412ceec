"""The kernel library's answers replay from the cache after an edit that
changes only which calls are reached (``memo.narrow.ask_kernel_questions``)."""

from __future__ import annotations

import shutil
from pathlib import Path

from fixturetree import fixture, verdicts

from guardscan.arch import parse_arch_list
from guardscan.driver import Analysis, ScanOptions, analyse

NAME = "flow_kernel_arguments"
DSL = "sglang/srt/layers/attention/mla_dsl_backend.py"
COMMON = "sglang/srt/utils/common.py"


def _scan(tree: Path, cache: Path) -> Analysis:
    return analyse(ScanOptions(target=str(tree), flashinfer=str(tree),
                               options=["--attention-backend"],
                               archs=parse_arch_list(["sm90,sm120"]), offline=True,
                               cache_dir=cache))


def test_a_guard_edit_that_reaches_a_call_reads_no_kernel_library(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(fixture(NAME), tree)
    # mla_dsl's decode call only where is_sm120_supported() holds
    dsl = tree / DSL
    dsl.write_text(dsl.read_text(encoding="utf-8").replace(
        "import flashinfer\n",
        "import flashinfer\n\nfrom sglang.srt.utils.common import is_sm120_supported\n").replace(
        "        return flashinfer.decode.mla_decode(",
        "        if not is_sm120_supported():\n            return q\n"
        "        return flashinfer.decode.mla_decode("), encoding="utf-8")
    cache = tmp_path / "cache"
    first = _scan(tree, cache)
    table = verdicts(first.result, "--attention-backend")
    assert (table[("mla_dsl", "sm90")], table[("mla_dsl", "sm120")]) == ("unknown", "supported")
    # the guard now holds on major 9 too: the call is reached on sm90
    common = tree / COMMON
    text = common.read_text(encoding="utf-8")
    start = text.index("is_sm120_supported = ")
    common.write_text(text[:start] + text[start:].replace(
        "device_capability_majors=[12]", "device_capability_majors=[9, 12]", 1),
        encoding="utf-8")
    again = _scan(tree, cache)
    table = verdicts(again.result, "--attention-backend")
    assert (table[("mla_dsl", "sm90")], table[("mla_dsl", "sm120")]) == (
        "supported", "supported")
    # every kernel answer came from the cache: the library was never read
    judge = again.kernel_judge
    assert judge is not None and getattr(judge, "_library", "absent") is None
