"""options (platform labels): which choices the tree itself marks as for a
non-CUDA platform only (weak, documentary evidence).

Shared by every option-definition form: labels come from the comments inside
the choice-list literals a definition reads (:func:`recognise_comment_platforms`)
and from the option's help text (:func:`recognise_help_platforms`).
``build_catalog(all_backends=False)`` drops the labelled choices.
"""

from __future__ import annotations

import re
import tokenize
from collections.abc import Sequence
from dataclasses import dataclass, field

from guardscan.helptext import help_segments
from guardscan.index import Index
from guardscan.syntax import literal, parse_expr

__all__ = ["recognise_comment_platforms", "recognise_help_platforms"]

#: Platform words -> label. Words name platforms, never backends; a text that
#: also names NVIDIA/CUDA gives no label (it is not "non-CUDA only").
_PLATFORM_WORDS: dict[str, frozenset[str]] = {
    "rocm": frozenset({"amd", "rocm", "hip"}),
    "npu": frozenset({"npu", "ascend"}),
    "xpu": frozenset({"intel", "xpu"}),
    "cpu": frozenset({"cpu"}),
}
_CUDA_WORDS = frozenset({"nvidia", "cuda"})
_OTHER_PLATFORMS = re.compile(r"\b(other|non-cuda|non-nvidia)\s+platforms?\b|\bnon-cuda\b",
                              re.IGNORECASE)
_CLAIM_WORDS = frozenset({"only", "specific"})
_CUDA = "cuda"  # internal: names CUDA, so clears a section label
_HEADER_MAX_WORDS = 5


def _platform_of(text: str, claim_required: bool) -> str | None:
    words = set(re.findall(r"[a-z0-9]+", text.lower()))
    if words & _CUDA_WORDS:
        return _CUDA
    if claim_required and not (words & _CLAIM_WORDS or re.match(r"\s*for\s", text, re.IGNORECASE)):
        return None
    if _OTHER_PLATFORMS.search(text):
        return "non-cuda"
    found = sorted(p for p, ws in _PLATFORM_WORDS.items() if words & ws)
    if len(found) > 1:
        return "non-cuda"
    return found[0] if found else None


@dataclass
class _Line:
    strings: list[str] = field(default_factory=list)
    comment: str | None = None
    other: bool = False


def _statement_lines(index: Index, rel: str, start: int, cache: dict[str, list[str]],
                     ) -> dict[int, _Line]:
    """Tokens of the statement starting at line ``start``, per physical line."""
    lines = cache.get(rel)
    if lines is None:
        data = index.data(rel)
        lines = data.decode("utf-8", "replace").splitlines(keepends=True) if data else []
        cache[rel] = lines
    out: dict[int, _Line] = {}
    if not 0 < start <= len(lines):
        return out
    depth = 0
    readline = iter(lines[start - 1:]).__next__
    try:
        for token in tokenize.generate_tokens(readline):
            number = token.start[0] + start - 1
            if token.type == tokenize.OP and token.string in "([{":
                depth += 1
            elif token.type == tokenize.OP and token.string in ")]}":
                depth -= 1
            if depth < 0 or (depth == 0 and token.type == tokenize.NEWLINE):
                break
            record = out.setdefault(number, _Line())
            if token.type == tokenize.COMMENT:
                record.comment = token.string.lstrip("#").strip()
            elif token.type == tokenize.STRING:
                value = literal(parse_expr(token.string))
                if isinstance(value, str):
                    record.strings.append(value)
                else:
                    record.other = True
            elif token.type in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                                tokenize.DEDENT) or (token.type == tokenize.OP
                                                     and token.string == ","):
                pass
            else:
                record.other = True
            if number - start > 5000:
                break
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return out


def recognise_comment_platforms(index: Index, rel: str, line: int, choices: Sequence[str],
                                cache: dict[str, list[str]] | None = None,
                                ) -> list[tuple[str, str]]:
    """Platform labels from the comments inside a choice-list literal.

    What it recognises:
        In the statement starting at ``line``: a one-line comment of at most
        five words on its own line is a section header; the choices listed
        under it, up to the next comment or the end of the list, get the
        header's platform: AMD/ROCm/HIP -> ``rocm``, NPU/Ascend -> ``npu``,
        Intel/XPU -> ``xpu``, CPU -> ``cpu``, "Other platforms" (or several
        platforms) -> ``non-cuda``; a header naming NVIDIA/CUDA, or none of
        these ("Common"), clears the label. A trailing comment on a choice's
        own line that claims a platform ("for NPU", "ROCm only") labels that
        choice alone.
    Why it matters:
        A user on an NVIDIA GPU should not be told to try ``aiter``; the list
        literal is where SGLang itself says which backends are for which
        platform.
    Known limits:
        Documentary evidence only: comments drift. Longer comments are notes,
        not headers: they label nothing and end the section above them (so
        an unclear layout gives no label rather than a wrong one). The word
        lists map platform words, never backend names.
    Example:
        ``ATTENTION_BACKEND_CHOICES = [# Common "triton", ... # AMD specific
        "aiter", "wave", # Other platforms "intel_amx", "ascend", "intel_xpu"]``
        labels aiter/wave ``rocm`` and the last three ``non-cuda``.
    """
    wanted = set(choices)
    records = _statement_lines(index, rel, line, cache if cache is not None else {})
    labels: dict[str, str] = {}
    section: str | None = None
    block: list[str] = []

    def close_block() -> None:
        nonlocal section
        if block:
            found = None
            if len(block) == 1 and len(block[0].split()) <= _HEADER_MAX_WORDS:
                found = _platform_of(block[0], claim_required=False)
            section = None if found == _CUDA else found
        block.clear()

    for number in sorted(records):
        record = records[number]
        if record.comment is not None and not record.strings and not record.other:
            block.append(record.comment)
            continue
        close_block()
        if len(record.strings) == 1 and not record.other:
            value = record.strings[0]
            own = _platform_of(record.comment, claim_required=True) if record.comment else None
            label = None if own == _CUDA else own or section
            if value in wanted and label and value not in labels:
                labels[value] = label
            continue
        if record.strings or record.other:
            section = None
    return [(c, labels[c]) for c in choices if c in labels]


def recognise_help_platforms(help_text: str, choices: Sequence[str]) -> list[tuple[str, str]]:
    """Platform labels from an option's help text.

    What it recognises:
        A quoted choice followed by a parenthesis that claims a platform:
        ``'aiter' (ROCm only)``, ``"ascend" (NPU specific)``, ``'x' (for AMD
        GPUs)``, with the same platform words as
        :func:`recognise_comment_platforms`; the claim needs ``only`` /
        ``specific`` or a leading ``for``, and must not also name NVIDIA/CUDA.
    Why it matters:
        Help texts are where 0.5.9 and 0.5.23 mark ``aiter`` of
        ``--fp8-gemm-backend`` as ROCm only; the choice list itself says
        nothing.
    Known limits:
        Documentary evidence; prose in other shapes ("aiter, for AMD GPUs") is
        not read. ``'auto' (DeepGEMM on CUDA, aiter on ROCm)`` gives nothing.
    Example:
        ``"... 'triton' (fallback, widely compatible), 'aiter' (ROCm only)."``
        gives ``("aiter", "rocm")``.
    """
    labels: dict[str, str] = {}
    for choice, claim in help_segments(help_text, choices, quotes="'\"`", nested=False):
        if choice not in labels:
            found = _platform_of(claim, claim_required=True)
            if found and found != _CUDA:
                labels[choice] = found
    return [(c, labels[c]) for c in choices if c in labels]


