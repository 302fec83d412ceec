"""Hand-checked truth files (``tests/truth/*.json``) and guardscan's answers
to them, shared by ``tests/test_truth.py`` and ``scripts/truth.py``.

Each file holds one SGLang release paired with the FlashInfer it pins, and
cases labelled by reading that source by hand: option, choice, arch,
``--quantization`` (or null), the verdict the source gives, the verdicts a
tool may give and still agree (``accept``), the reason and the deciding
``file:line``s (relative to the wheel root: ``sglang/...``,
``flashinfer/...``). A case may name a ``model``: the ``config.json`` of
``tests/truth/models/<model>.json`` (read as ``--model-config``), for a gate
that tests the model; without one the case is judged for the common model.
A case may name a ``platform``: the non-CUDA platform the choice is for (its
code hands the work to that platform's package, or its docs say so); the
answer agrees only when guardscan gives that label too.
guardscan is run once per distinct (quantization, model) in a file, on the
four archs the files use, kernels on. A file that labels an option labels
every choice the release offers for it on all four archs
(``test_every_choice_of_a_labelled_option_is_labelled_on_every_arch``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import realtrees

TRUTH_DIR = Path(__file__).resolve().parent / "truth"
MODELS_DIR = TRUTH_DIR / "models"
ARCHS = ("sm80", "sm90", "sm100", "sm120")
VERDICTS = ("blocked", "unsupported", "supported", "unknown")
UNSAFE = frozenset({"blocked", "unsupported"})
SAFE = frozenset({"supported", "unknown"})

__all__ = ["ARCHS", "SAFE", "TRUTH_DIR", "UNSAFE", "VERDICTS", "Answer", "Case", "answers", "choices",
           "load_pair", "load_raw", "pair_files", "paired_kernels"]


@dataclass(frozen=True)
class Case:
    sglang: str
    flashinfer: str
    option: str
    choice: str
    arch: str
    quantization: str | None
    verdict: str
    accept: tuple[str, ...]
    reason: str
    where: tuple[str, ...]
    #: why guardscan cannot decide this case yet ("" when it should): an open
    #: case is reported, and its miss is expected, never hidden
    open: str = ""
    #: the model served (a file under ``tests/truth/models``), "" for none
    model: str = ""
    #: the non-CUDA platform the choice is for, "" when the case says nothing
    platform: str = ""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.option, self.choice, self.arch)

    def label(self) -> str:
        quant = self.quantization or "-"
        model = f" model={self.model}" if self.model else ""
        return f"{self.option} {self.choice} {self.arch} q={quant}{model}"


@dataclass(frozen=True)
class Answer:
    """guardscan's verdict on one case, with its last evidence line."""

    case: Case
    verdict: str  # "" when guardscan reported nothing for the case
    last_evidence: str
    platform: str = ""  # the platform label guardscan gave, "" for none

    @property
    def agrees(self) -> bool:
        return self.verdict in self.case.accept and (
            not self.case.platform or self.platform == self.case.platform)

    @property
    def called_safe_wrongly(self) -> bool:
        return self.case.verdict in UNSAFE and self.verdict in SAFE

    @property
    def called_unsafe_wrongly(self) -> bool:
        return self.case.verdict == "supported" and self.verdict in UNSAFE


def pair_files() -> list[Path]:
    return sorted(TRUTH_DIR.glob("sglang-*.json"))


def load_raw(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def load_pair(path: Path) -> list[Case]:
    data = load_raw(path)
    return [Case(sglang=data["sglang"], flashinfer=data["flashinfer"], option=c["option"],
                 choice=c["choice"], arch=c["arch"], quantization=c["quantization"],
                 verdict=c["verdict"], accept=tuple(c["accept"]), reason=c["reason"],
                 where=tuple(c["where"]), open=c.get("open", ""), model=c.get("model", ""),
                 platform=c.get("platform", ""))
            for c in data["cases"]]


@cache
def _analysis(sglang: str, quantization: str | None, model: str,
              cache_dir: str) -> tuple[dict[tuple[str, str, str], Any], tuple[tuple[str, str | None], ...]]:
    from guardscan.arch import parse_arch
    from guardscan.driver import ScanOptions, analyse

    with realtrees.one_at_a_time("truth", sglang, quantization, model, cache_dir):
        analysis = analyse(ScanOptions(
            target=f"sglang=={sglang}", archs=[parse_arch(a) for a in ARCHS],
            quantization=quantization, kernels=True, cache_dir=Path(cache_dir),
            model_config=MODELS_DIR / f"{model}.json" if model else None))
    table = {(b.option, b.choice, b.arch): b for b in analysis.result.backends}
    kernels = tuple((k.package, k.version) for k in analysis.result.kernels)
    return table, kernels


def paired_kernels(case: Case, cache_dir: Path) -> tuple[tuple[str, str | None], ...]:
    """The kernel libraries guardscan paired with the case's release."""
    return _analysis(case.sglang, case.quantization, case.model, str(cache_dir))[1]


def choices(case: Case, cache_dir: Path) -> dict[str, set[str]]:
    """Every choice of every option in the release of ``case``, from the
    scan that answers it (the choices do not depend on the method or model)."""
    out: dict[str, set[str]] = {}
    for option, choice, _ in _analysis(case.sglang, case.quantization, case.model,
                                       str(cache_dir))[0]:
        out.setdefault(option, set()).add(choice)
    return out


def answers(cases: list[Case], cache_dir: Path) -> list[Answer]:
    """Run guardscan once per (release, quantization, model) and answer every case."""
    out = []
    for case in cases:
        table = _analysis(case.sglang, case.quantization, case.model, str(cache_dir))[0]
        backend = table.get(case.key)
        if backend is None:
            out.append(Answer(case, "", "(guardscan reported no verdict for this case)"))
            continue
        last = backend.evidence[-1] if backend.evidence else None
        text = (f"[{last.role}] {last.path}:{last.line} {last.text}" if last is not None
                else "(no evidence)")
        out.append(Answer(case, backend.verdict.value, text, backend.platform or ""))
    return out
