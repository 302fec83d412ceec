"""arch: every spelling a user may type for --arch, and the ones that must fail."""

from __future__ import annotations

from pathlib import Path

import pytest

from guardscan.arch import (
    Arch,
    ArchError,
    local_archs,
    parse_arch,
    parse_arch_list,
    standard_archs,
)

STANDARD = ["sm80", "sm86", "sm89", "sm90", "sm100", "sm103", "sm110", "sm120", "sm121"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("sm120", Arch(12, 0)),
        ("sm_120a", Arch(12, 0)),
        ("SM_120", Arch(12, 0)),
        ("12.0", Arch(12, 0)),
        ("120", Arch(12, 0)),
        ("compute_120", Arch(12, 0)),
        ("sm_90a", Arch(9, 0)),
        ("9.0", Arch(9, 0)),
        ("sm80", Arch(8, 0)),
        ("sm_100f", Arch(10, 0)),
        ("  sm121 ", Arch(12, 1)),
        ("H100", Arch(9, 0)),
        ("H200", Arch(9, 0)),
        ("B200", Arch(10, 0)),
        ("GB200", Arch(10, 0)),
        ("A100", Arch(8, 0)),
        ("RTX PRO 6000", Arch(12, 0)),
        ("RTX 5090", Arch(12, 0)),
        ("GB10", Arch(12, 1)),
        ("DGX Spark", Arch(12, 1)),
        ("nvidia h100", Arch(9, 0)),
        ("rtx-pro-6000", Arch(12, 0)),
    ],
)
def test_parse_arch(text: str, expected: Arch) -> None:
    assert parse_arch(text) == expected, f"parse_arch({text!r})"


@pytest.mark.parametrize("text", ["", "   ", "sm", "banana", "sm_1", "compute_", "H9000"])
def test_parse_arch_errors(text: str) -> None:
    with pytest.raises(ArchError) as info:
        parse_arch(text)
    assert isinstance(info.value, ValueError)
    message = str(info.value)
    assert "\n" not in message and message


def test_error_message_names_the_input() -> None:
    with pytest.raises(ArchError, match="banana"):
        parse_arch("banana")


@pytest.mark.parametrize(
    ("arch", "name", "sm"),
    [(Arch(12, 0), "sm120", 120), (Arch(9, 0), "sm90", 90), (Arch(10, 3), "sm103", 103)],
)
def test_arch_properties(arch: Arch, name: str, sm: int) -> None:
    assert arch.name == name
    assert str(arch) == name
    assert arch.sm == sm


@pytest.mark.parametrize(
    ("arch", "cuda"),
    [(Arch(8, 0), (11, 0)), (Arch(9, 0), (11, 8)), (Arch(10, 0), (12, 8)),
     (Arch(12, 0), (12, 8)), (Arch(12, 1), (12, 9)), (Arch(11, 0), (13, 0)),
     (Arch(7, 5), None)],
)
def test_min_cuda(arch: Arch, cuda: tuple[int, int] | None) -> None:
    assert arch.min_cuda == cuda


def test_standard_archs_in_order() -> None:
    assert [a.name for a in standard_archs()] == STANDARD


def test_parse_arch_list_comma_and_repeat() -> None:
    assert parse_arch_list(["sm90,sm100", "sm120"]) == [Arch(9, 0), Arch(10, 0), Arch(12, 0)]


def test_parse_arch_list_sorts_and_dedupes() -> None:
    assert parse_arch_list(["sm120", "H100,sm_90a", "12.0"]) == [Arch(9, 0), Arch(12, 0)]


@pytest.mark.parametrize("values", [["all"], None, ["ALL"]])
def test_parse_arch_list_standard(values: list[str] | None) -> None:
    assert [a.name for a in parse_arch_list(values)] == STANDARD


def test_parse_arch_list_bad_part() -> None:
    with pytest.raises(ArchError, match="banana"):
        parse_arch_list(["sm90,banana"])


# -- only known architectures; close matches -------------------------------------------------
@pytest.mark.parametrize(
    ("text", "suggestions"),
    [("sm12", ("sm120", "sm121")), ("sm_12", ("sm120", "sm121")), ("RTX 509", ("RTX 5090",)),
     ("H1000", ("H100",))],
)
def test_typos_suggest_close_matches(text: str, suggestions: tuple[str, ...]) -> None:
    with pytest.raises(ArchError) as info:
        parse_arch(text)
    assert isinstance(info.value, ValueError)
    assert info.value.suggestions[:len(suggestions)] == suggestions
    assert suggestions[0] in str(info.value)


@pytest.mark.parametrize("text", ["sm210", "sm75", "21.0", "compute_130", "990"])
def test_unknown_numbers_are_errors(text: str) -> None:
    with pytest.raises(ArchError, match="not a known architecture"):
        parse_arch(text)


def test_every_known_arch_parses_by_name_and_gpu() -> None:
    from guardscan.arch import known_archs

    infos = known_archs()
    assert [i.arch for i in infos] == sorted(i.arch for i in infos)
    for info in infos:
        assert parse_arch(info.arch.name) == info.arch
        for name in (*info.gpus, *info.aliases):
            assert parse_arch(name) == info.arch, name
    assert [i.arch.name for i in infos if i.standard] == STANDARD


# -- the local GPU ---------------------------------------------------------------------------
def _fake_smi(tmp_path: Path, body: str) -> str:
    script = tmp_path / "nvidia-smi"
    script.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
    script.chmod(0o755)
    return str(script)


@pytest.mark.parametrize(
    ("body", "archs", "words"),
    [("printf '12.0\\n12.0\\n'", ["sm120"], "the local GPU (nvidia-smi)"),
     ("printf '9.0\\n12.0\\n'", ["sm90", "sm120"], "the local GPUs (nvidia-smi)"),
     ("echo 'NVIDIA-SMI has failed' >&2; exit 9", [], "nvidia-smi found no GPU"),
     ("printf '13.7\\n'", [], "nvidia-smi reports compute capability 13.7, not known"),
     ("exit 0", [], "nvidia-smi found no GPU")],
)
def test_local_archs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str,
                     archs: list[str], words: str) -> None:
    import guardscan.arch

    monkeypatch.setattr(guardscan.arch, "NVIDIA_SMI", _fake_smi(tmp_path, body))
    found, how = local_archs()
    assert ([a.name for a in found], how) == (archs, words)


def test_local_archs_without_nvidia_smi(monkeypatch: pytest.MonkeyPatch) -> None:
    import guardscan.arch

    monkeypatch.setattr(guardscan.arch, "NVIDIA_SMI", "/nonexistent/nvidia-smi")
    assert local_archs() == ([], "no nvidia-smi")
