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


def test_an_old_driver_names_its_gpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A driver older than the compute_cap field refuses that query; the names
    it prints are read instead."""
    import guardscan.arch

    body = ('case "$1" in --query-gpu=compute_cap) echo \'Field "compute_cap" is not a valid '
            'field to query.\'; exit 2;; *) printf \'NVIDIA H100 80GB HBM3\\nNVIDIA H100 80GB '
            'HBM3\\n\';; esac')
    monkeypatch.setattr(guardscan.arch, "NVIDIA_SMI", _fake_smi(tmp_path, body))
    found, how = local_archs()
    assert ([a.name for a in found], how) == (["sm90"], "the local GPU (nvidia-smi)")


# -- names as nvidia-smi prints them -------------------------------------------------------------
@pytest.mark.parametrize(("text", "name"), [
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "sm120"),
    ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", "sm120"),
    ("NVIDIA H100 80GB HBM3", "sm90"),
    ("NVIDIA H100 PCIe", "sm90"),
    ("NVIDIA H100 NVL", "sm90"),
    ("NVIDIA GH200 480GB", "sm90"),
    ("NVIDIA GeForce RTX 5090", "sm120"),
    ("NVIDIA GeForce RTX 3090 Ti", "sm86"),
    ("NVIDIA B200", "sm100"),
    ("NVIDIA B300 SXM6 AC", "sm103"),
    ("NVIDIA A100-SXM4-80GB", "sm80"),
    ("NVIDIA A100 80GB PCIe", "sm80"),
    ("NVIDIA A10G", "sm86"),
    ("NVIDIA L40S", "sm89"),
    ("NVIDIA RTX 6000 Ada Generation", "sm89"),
    ("NVIDIA GB10", "sm121"),
])
def test_nvidia_smi_names(text: str, name: str) -> None:
    assert parse_arch(text).name == name


@pytest.mark.parametrize("text", ["NVIDIA H100 Banana", "NVIDIA RTX 50", "H10"])
def test_a_name_with_other_words_is_not_guessed(text: str) -> None:
    with pytest.raises(ArchError):
        parse_arch(text)


# -- suggestions: numbers as numbers, older architectures said so ------------------------------
@pytest.mark.parametrize(("text", "suggestions"), [
    ("sm12", ("sm120", "sm121")),
    ("sm9", ("sm90",)),
    ("sm1200", ("sm120",)),
    ("sm102", ("sm101", "sm103", "sm100")),
    ("sm88", ("sm87", "sm89", "sm86")),
    ("12.5", ("sm121", "sm120")),
    ("sm130", ()),
    ("sm19", ()),
    ("RTX 509", ("RTX 5090", "RTX 3090", "RTX 4090")),
    ("RTX 6000", ("RTX 6000 Ada", "RTX PRO 6000", "RTX PRO 6000 Blackwell")),
    ("banana", ()),
])
def test_suggestions(text: str, suggestions: tuple[str, ...]) -> None:
    with pytest.raises(ArchError) as info:
        parse_arch(text)
    assert info.value.suggestions == suggestions


@pytest.mark.parametrize(("text", "older"), [
    ("sm75", "sm75 (Turing)"), ("7.5", "sm75 (Turing)"), ("sm_70", "sm70 (Volta)"),
    ("T4", "sm75 (Turing)"), ("NVIDIA Tesla T4", "sm75 (Turing)"), ("Tesla V100", "sm70 (Volta)"),
    ("Quadro RTX 6000", "sm75 (Turing)"), ("sm61", "sm61 (Pascal)"),
])
def test_older_architectures_are_said_to_be_older(text: str, older: str) -> None:
    """``sm75`` is two edits from ``sm87`` and means nothing like it: no
    suggestion, the reason instead."""
    with pytest.raises(ArchError) as info:
        parse_arch(text)
    assert info.value.suggestions == ()
    assert str(info.value).endswith(
        f": {older} is older than any architecture guardscan judges (sm80 and newer; "
        "guardscan archs lists them)")
