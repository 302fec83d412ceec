"""acquire (wheels): extract a wheel's text files, and only those, into the cache, at safe paths.

Only text the later stages read is extracted (Python, JSON, C++/CUDA sources,
metadata; never binaries), a member whose path would land outside the
extraction directory refuses the whole wheel, and the inflated size is capped
(a zip bomb guard). Extraction goes through a temporary directory next to the
target that is moved into place with ``os.replace``, so concurrent runs
extracting the same wheel never see half a tree: the first to finish wins.

    <cache>/trees/<wheel-stem>-<sha256[:12]>/...     text files of one wheel
"""

from __future__ import annotations

import email.message
import email.parser
import os
import re
import shutil
import tempfile
import time
import zipfile
import zlib
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from packaging.utils import canonicalize_name

from guardscan.acquire.files import walk_python_files
from guardscan.acquire.model import AcquireError, SourceTree, mark_used, one_line

#: Refuse a wheel whose extracted text would exceed this many bytes (a zip bomb
#: guard; FlashInfer 0.7.2, the largest real target, extracts to ~450 MB).
MAX_EXTRACT_BYTES = 2 * 1024**3

# Text the later stages read: Python, JIT specs and kernel lists (json), the
# C++/CUDA launchers whose checks have the last word at run time (FlashInfer
# ships them under flashinfer/data/), and metadata. `.inl` and `.jinja` are
# CUDA sources too (included headers, JIT templates). Binaries (.so, cubins)
# are never extracted.
_TEXT_SUFFIXES = frozenset(
    {
        ".py",
        ".pyi",
        ".json",
        ".cu",
        ".cuh",
        ".h",
        ".hpp",
        ".cpp",
        ".cc",
        ".inl",
        ".jinja",
        ".txt",
        ".toml",
    }
)
_METADATA_RE = re.compile(r"^[^/]+\.dist-info/METADATA$")


def acquire_wheel(wheel: Path, package: str, cache: Path, *, origin: str) -> SourceTree:
    wheel = wheel.resolve()
    if not zipfile.is_zipfile(wheel):
        raise AcquireError(f"not a wheel (not a zip file): {wheel}")
    stem = wheel.name[: -len(".whl")]
    sha256 = _sha256(wheel, cache)
    tree_dir = cache / "trees" / f"{stem}-{sha256[:12]}"
    if not tree_dir.is_dir():
        _extract_wheel(wheel, tree_dir)
    else:
        mark_used(tree_dir)
    metadata = _read_metadata(tree_dir, _wheel_dist_name(wheel.name))
    version = metadata.get("Version") if metadata is not None else None
    requires = tuple(metadata.get_all("Requires-Dist") or ()) if metadata is not None else ()
    dist_name = (metadata.get("Name") if metadata is not None else None) or _wheel_dist_name(
        wheel.name
    )
    chosen = _wheel_package(tree_dir, package, dist_name, wheel)
    files, skipped = walk_python_files(tree_dir, chosen)
    return SourceTree(
        root=tree_dir,
        package=chosen,
        version=str(version) if version is not None else None,
        files=files,
        origin=origin,
        requires=tuple(str(r) for r in requires),
        skipped=skipped,
        wheel_sha256=sha256,
    )


def _sha256(path: Path, cache: Path) -> str:
    """The wheel's sha256, remembered by its path, size, mtime and inode (a
    warm scan hashes no wheel, as for compiled packages)."""
    from guardscan.binaries.cache import wheel_sha256

    try:
        return wheel_sha256(path, cache)
    except OSError as exc:
        raise AcquireError(f"cannot read {path}: {exc}") from None


def _wheel_dist_name(filename: str) -> str:
    return filename.split("-", 1)[0]


def _unsafe_member(name: str) -> bool:
    """A member path that would land outside the extraction directory."""
    if "\\" in name or name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        return True
    return ".." in PurePosixPath(name).parts


def _wanted_member(name: str) -> bool:
    if name.endswith("/"):
        return False
    if _METADATA_RE.match(name):
        return True
    return PurePosixPath(name).suffix.lower() in _TEXT_SUFFIXES


def _extract_wheel(wheel: Path, tree_dir: Path) -> None:
    try:
        archive = zipfile.ZipFile(wheel)
    except (zipfile.BadZipFile, OSError) as exc:
        raise AcquireError(f"not a wheel (not a zip file): {wheel} ({exc})") from None
    # ValueError: a member name that is not valid UTF-8 though flagged so;
    # NotImplementedError: a zip version zipfile does not know.
    except (ValueError, EOFError, NotImplementedError) as exc:
        raise AcquireError(one_line(f"corrupt wheel {wheel}: {exc}")) from None
    with archive:
        members = archive.infolist()
        for info in members:
            if _unsafe_member(info.filename):
                raise AcquireError(
                    f"refusing wheel {wheel}: member {info.filename!r} escapes the "
                    f"extraction directory"
                )
        wanted = [info for info in members if _wanted_member(info.filename)]
        limit = MAX_EXTRACT_BYTES
        declared = sum(info.file_size for info in wanted)
        if declared > limit:
            raise AcquireError(
                f"refusing wheel {wheel}: {declared} bytes of text to extract exceeds "
                f"the limit of {limit} bytes"
            )
        try:
            tree_dir.parent.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix=f".{tree_dir.name}-", dir=tree_dir.parent))
        except OSError as exc:
            raise AcquireError(f"cannot write the cache {tree_dir.parent}: {exc}") from None
        try:
            _write_members(archive, wanted, staging, wheel, limit)
            try:
                os.replace(staging, tree_dir)
            except OSError:
                # Another run finished the same tree first; theirs is as good.
                if not tree_dir.is_dir():
                    raise
        except OSError as exc:
            raise AcquireError(f"cannot extract {wheel} into {tree_dir}: {exc}") from None
        # A damaged deflate stream (zlib.error), a truncated member (EOFError), an
        # encrypted member (RuntimeError), a compression method zipfile lacks
        # (NotImplementedError): the wheel is unusable, not guardscan broken.
        except (zipfile.BadZipFile, zlib.error, EOFError, RuntimeError,
                NotImplementedError, ValueError) as exc:
            raise AcquireError(one_line(f"corrupt wheel {wheel}: {exc}")) from None
        finally:
            shutil.rmtree(staging, ignore_errors=True)


def _write_members(
    archive: zipfile.ZipFile,
    members: Iterable[zipfile.ZipInfo],
    staging: Path,
    wheel: Path,
    limit: int,
) -> None:
    written = 0
    for info in members:
        target = staging.joinpath(*PurePosixPath(info.filename).parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        with archive.open(info) as src, target.open("wb") as dst:
            # Count what is really inflated: declared sizes can lie.
            for block in iter(lambda: src.read(1 << 20), b""):
                written += len(block)
                if written > limit:
                    raise AcquireError(
                        f"refusing wheel {wheel}: text to extract exceeds the limit "
                        f"of {limit} bytes"
                    )
                dst.write(block)
        # the member's own time, not the extraction's: a tree removed from the
        # cache (guardscan cache clean) comes back with the same stat, so the
        # results stored for it stay valid
        stamp = _member_time(info)
        if stamp is not None:
            os.utime(target, (stamp, stamp))


def _member_time(info: zipfile.ZipInfo) -> float | None:
    try:
        return time.mktime((*info.date_time, 0, 0, -1))
    except (OverflowError, ValueError):
        return None


def _read_metadata(tree_dir: Path, dist_hint: str) -> email.message.Message | None:
    candidates = sorted(tree_dir.glob("*.dist-info/METADATA"))
    if not candidates:
        return None
    hint = canonicalize_name(dist_hint)
    candidates.sort(key=lambda p: canonicalize_name(p.parent.name.split("-", 1)[0]) != hint)
    try:
        text = candidates[0].read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return email.parser.Parser().parsestr(text, headersonly=True)


def _wheel_package(tree_dir: Path, package: str, dist_name: str, wheel: Path) -> str:
    """The import package to scan in an extracted wheel.

    ``package`` when the wheel holds it. Otherwise inferred from the
    distribution name, not from a table: among the top-level packages (those
    ``top_level.txt`` lists, or every top-level directory with an
    ``__init__.py``), the one named like the distribution, else the longest
    whose name starts the distribution's (``flashinfer`` for
    ``flashinfer_python``, passing over ``b12x`` and ``build_backend``), else
    the only one.
    """
    if (tree_dir / package / "__init__.py").is_file():
        return package
    packages = _top_level_packages(tree_dir)
    normalized = canonicalize_name(dist_name).replace("-", "_")
    by_normal = {canonicalize_name(p).replace("-", "_"): p for p in packages}
    if normalized in by_normal:
        return by_normal[normalized]
    prefixes = [p for n, p in by_normal.items() if normalized.startswith(n)]
    if prefixes:
        return max(prefixes, key=len)
    if len(packages) == 1:
        return packages[0]
    listed = ", ".join(packages) or "none"
    raise AcquireError(
        f"wheel {wheel.name} holds no {package!r} package and none named for "
        f"{dist_name} (top-level packages: {listed})"
    )


def _top_level_packages(tree_dir: Path) -> list[str]:
    declared: list[str] = []
    for top_level in sorted(tree_dir.glob("*.dist-info/top_level.txt")):
        try:
            declared.extend(top_level.read_text(encoding="utf-8", errors="replace").split())
        except OSError:
            continue
    if not declared:
        try:
            declared = sorted(entry.name for entry in tree_dir.iterdir())
        except OSError:
            declared = []
    return sorted({name for name in declared if (tree_dir / name / "__init__.py").is_file()})
