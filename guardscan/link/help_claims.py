"""link (help-text claims): the architectures an option's help text names for a choice, as ``doc`` findings.

``'flashinfer_deepgemm' (Hopper SM90 only; ...)`` says the choice is for
SM90. Such claims are weak evidence: shown in the chain, never deciding a
verdict, and checked against the code (``doc-drift`` diagnostics).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from guardscan.helptext import help_segments
from guardscan.link.model import Finding, FindingKind
from guardscan.predicate import Device, Predicate, conj, disj
from guardscan.results import OptionInfo

__all__ = ["doc_predicate", "help_claims"]


def help_claims(options: Iterable[OptionInfo]) -> list[Finding]:
    """Help-text claims per choice: ``'x' (Hopper SM90 only; ...)``."""
    found = []
    for opt in options:
        for choice, text in help_segments(opt.help, opt.choices):
            segment = text.strip()
            pred = doc_predicate(segment)
            if pred is None:
                continue
            only = bool(re.search(r"\bonly\b", segment, re.IGNORECASE))
            found.append(Finding(
                FindingKind.DOC, opt.path, opt.line, pred, (), choice=choice, option=opt.dest,
                text=("only: " if only else "") + segment))
    return found


_DOC_WORDS = {"ampere": Device("major", "==", 8), "ada": Device("sm", "==", 89),
              "hopper": Device("major", "==", 9),
              "blackwell": Device("major", "in", (10, 11, 12))}


def doc_predicate(text: str) -> Predicate | None:
    """Architectures a help-text segment names (SM90, SM100/SM103, SM80+, SM10x,
    SM80-SM90, Hopper, Blackwell...). Curated words map to families, cited in
    docs/verdicts.md; only ever weak evidence."""
    parts: list[Predicate] = []
    for match in re.finditer(r"SM\s?(\d{2,3})(x|\+)?(?:\s*-\s*SM\s?(\d{2,3}))?", text,
                             re.IGNORECASE):
        number, suffix, upper = match.group(1), match.group(2), match.group(3)
        if suffix and suffix.lower() == "x":
            parts.append(Device("major", "==", int(number)))
        elif suffix == "+":
            parts.append(Device("sm", ">=", int(number)))
        elif upper:
            parts.append(conj(Device("sm", ">=", int(number)), Device("sm", "<=", int(upper))))
        else:
            parts.append(Device("sm", "==", int(number)))
    for word, pred in _DOC_WORDS.items():
        if re.search(rf"\b{word}\b", text, re.IGNORECASE) and not parts:
            parts.append(pred)
    if not parts:
        return None
    return disj(*parts)
