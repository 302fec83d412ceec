"""field (match): which reports apply to a launch.

A report applies when every part of the launch that is known agrees with it:
the SGLang version is in its ``sglang`` range, the kernel library's version
in its ``kernel_library`` range, the option and choice are its own, the arch
is one of its archs, and the quantization is its quantization. A part of the
launch that is not known (None) does not filter: with no version every
release's reports are listed, with no quantization the reports that need one
are kept. A report without a kernel range, or without a quantization, holds
for any.

Versions compare with ``packaging`` (pre-releases included, so a report for
``>=0.5.5`` holds for ``0.5.6rc0``). A version that says nothing about the
release, one ``packaging`` can't read or a source build's placeholder
``0.0.0.dev1+gabc``, is treated as unknown: the reports are shown with their
ranges rather than hidden (a report too many costs a reader a line; one too
few can cost a launch).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from guardscan.acquire.pairing import KERNEL_DIST
from guardscan.arch import Arch, parse_arch
from guardscan.field.model import FieldReport

__all__ = ["in_range", "known_release", "matching", "sort_key"]


def matching(
    reports: Iterable[FieldReport],
    sglang_version: str | None = None,
    kernel_version: str | None = None,
    option: str | None = None,
    choice: str | None = None,
    arch: Arch | str | None = None,
    quantization: str | None = None,
    *,
    kernel_name: str = KERNEL_DIST,
) -> list[FieldReport]:
    """The reports that apply to a launch, worst outcome first.

    ``kernel_version`` is the version of ``kernel_name`` (FlashInfer unless
    told otherwise); a report whose kernel range names another library is not
    filtered on it. ``option`` may be given with or without its leading
    ``--``; ``arch`` as an ``Arch`` or any spelling ``parse_arch`` accepts.
    """
    flag = None if option is None else (option if option.startswith("--") else f"--{option}")
    wanted_arch = None if arch is None else (arch if isinstance(arch, Arch)
                                             else parse_arch(arch)).name
    kernel = canonicalize_name(kernel_name)
    found = []
    for report in reports:
        if flag is not None and report.option != flag:
            continue
        if choice is not None and report.choice != choice:
            continue
        if wanted_arch is not None and wanted_arch not in report.archs:
            continue
        if (quantization is not None and report.quantization is not None
                and report.quantization != quantization):
            continue
        if sglang_version is not None and not in_range(sglang_version, report.sglang):
            continue
        library = report.kernel_library
        if (kernel_version is not None and library is not None and library.name == kernel
                and not in_range(kernel_version, library.specifier)):
            continue
        found.append(report)
    return sorted(found, key=sort_key)


def known_release(version: str | None) -> bool:
    """Whether ``version`` names a release (not None, parseable, not a source
    build's ``0.0.0.devN`` placeholder)."""
    if version is None:
        return False
    try:
        parsed = Version(version)
    except InvalidVersion:
        return False
    return any(parsed.release)


def sort_key(report: FieldReport) -> tuple[str, str, int, str, str]:
    """Option, choice, then the worst outcome first, then the newest report."""
    return (report.option, report.choice, report.outcome.rank,
            _newest_first(report.date), report.id)


def in_range(version: str, specifier: str) -> bool:
    """Whether ``version`` is in ``specifier`` (``""`` holds every version).

    A version that names no release (unparseable, or ``0.0.0.devN``) can't
    be shown to be outside any range, so it is in every range.
    """
    specifiers = _specifiers(specifier)
    if specifiers is None:
        return False
    if not str(specifiers):
        return True
    try:
        parsed = Version(version)
    except InvalidVersion:
        return True
    if parsed.release == (0,) * len(parsed.release):
        return True
    return specifiers.contains(parsed, prereleases=True)


@lru_cache(maxsize=1024)
def _specifiers(text: str) -> SpecifierSet | None:
    try:
        return SpecifierSet(text)
    except InvalidSpecifier:  # the loader refuses these; a hand-built report may not
        return None


def _newest_first(date: str) -> str:
    # ISO dates sort as text; mapping each digit d to 9 - d reverses the order.
    return date.translate(str.maketrans("0123456789", "9876543210"))
