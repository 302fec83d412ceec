"""acquire (kernel pairing): which FlashInfer the tree pins, and that FlashInfer's source.

The version is read from the tree's own declared requirements (dist-info
``Requires-Dist`` or pyproject ``project.dependencies``) with ``packaging``
and acquired like any spec. A pin that can't be had is an error, never a
silent fall back to whatever FlashInfer happens to be installed.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from guardscan.acquire.installed import acquire_installed
from guardscan.acquire.model import AcquireError, SourceTree
from guardscan.acquire.targets import acquire

#: The kernel library SGLang pins, as a distribution and as an import package.
KERNEL_DIST = "flashinfer-python"
KERNEL_PACKAGE = "flashinfer"


def kernel_requirement(tree: SourceTree, kernel_dist: str = KERNEL_DIST) -> str | None:
    """The spec of ``kernel_dist`` that ``tree`` pins, ready for pip download.

    Extras are dropped (``flashinfer_python[cu13]==0.7.2`` ->
    ``flashinfer-python==0.7.2``: extras pull in other distributions, and we
    download with --no-deps anyway). A requirement of the plain install wins;
    one only active under an extra (``; extra == "srt"``, how releases before
    0.5 pulled in their server runtime) is taken when there is no other and it
    names one version (``==0.2.3``): a bound such as ``>=0.2.0`` under an extra
    would pair a release with a FlashInfer years newer than the one it ran
    with. None when the tree declares no such requirement.
    """
    wanted = canonicalize_name(kernel_dist)
    found: list[Requirement] = []
    for line in tree.requires:
        name = _NAME.match(line)
        if name is None or canonicalize_name(name.group(1)) != wanted:
            continue  # another distribution: not parsed (139 lines of sglang 0.5.23)
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if canonicalize_name(req.name) != wanted:
            continue
        if _under_extra(req) and not _one_version(req):
            continue
        found.append(req)
    if not found:
        return None
    # An unconditional pin beats one behind a platform marker, which beats one
    # behind an extra.
    found.sort(key=lambda r: (r.marker is not None, _under_extra(r)))
    best = found[0]
    if best.url:
        return f"{wanted} @ {best.url}"
    return f"{wanted}{best.specifier}"


#: a requirement's distribution name, as it starts the line (PEP 508)
_NAME = re.compile(r"\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)")


def _under_extra(req: Requirement) -> bool:
    return req.marker is not None and bool(re.search(r"\bextra\b", str(req.marker)))


def _one_version(req: Requirement) -> bool:
    specs = list(req.specifier)
    return len(specs) == 1 and specs[0].operator in ("==", "===") and \
        not specs[0].version.endswith("*")


def acquire_kernels(
    tree: SourceTree,
    explicit: str | os.PathLike[str] | None,
    *,
    cache_dir: Path | None = None,
    offline: bool = False,
) -> SourceTree:
    """The FlashInfer source paired with ``tree``.

    ``explicit`` (a path, wheel or spec) if given; else the version ``tree``
    pins (see ``kernel_requirement``); else the installed ``flashinfer``. A
    pinned version that can't be downloaded is an error, not a silent fall
    back to whatever is installed: a different version would give different
    answers.
    """
    if explicit is not None:
        return acquire(explicit, KERNEL_PACKAGE, cache_dir=cache_dir, offline=offline)
    pinned = kernel_requirement(tree)
    if pinned is not None:
        return acquire(pinned, KERNEL_PACKAGE, cache_dir=cache_dir, offline=offline)
    try:
        return acquire_installed(KERNEL_PACKAGE)
    except AcquireError:
        reason = (f"{tree.package} {tree.version or '(unknown version)'} declares no "
                  f"{KERNEL_DIST} requirement and no installed {KERNEL_PACKAGE} was found")
        raise AcquireError(
            f"{reason}; pass the kernel library explicitly (a checkout, a wheel, or a spec "
            f"such as {KERNEL_DIST}==0.6.3)", reason=reason) from None
