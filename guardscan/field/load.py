"""field (load): read and check field-report files.

Three sources, one schema (``data/field_reports.schema.json``, documented in
docs/field-reports.md):

* guardscan's own cited reports, ``data/field_reports.json``;
* files named on the command line (``--reports FILE``), JSON or TOML;
* a tree's own ``.guardscan-reports.toml`` at its root, where a team checks
  in what it saw on its own GPUs beside its baseline.

A file is a table with ``schema_version`` (1) and a ``reports`` list; TOML
writes the list as ``[[reports]]`` tables and leaves out a key it would set
to null. Every entry is checked as it is read: the version ranges must parse
as ``packaging`` specifiers, the archs as guardscan architectures, the
outcome must be one of the five, every report needs a URL. The first
problem raises ``FieldReportError`` naming the file, the entry and the field,
in one line; a bad file is never half used.

TOML needs ``tomllib`` (Python 3.11+) or, on 3.10, the ``tomli`` package;
without either, reading a TOML file is a ``FieldReportError`` saying so.
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from importlib import resources
from pathlib import Path
from types import ModuleType

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from guardscan.arch import ArchError, parse_arch
from guardscan.field.model import FieldReport, FieldReportError, KernelRange, Outcome

__all__ = [
    "BUNDLED",
    "SCHEMA_VERSION",
    "TREE_FILE",
    "bundled_reports",
    "checkout_roots",
    "load_file",
    "load_reports",
    "parse_document",
    "toml_reader",
    "tree_reports",
]

#: The schema version this guardscan reads (a file's ``schema_version``).
SCHEMA_VERSION = 1

#: A tree's own reports, at its root.
TREE_FILE = ".guardscan-reports.toml"

#: The ``source`` of guardscan's own reports.
BUNDLED = "bundled"

_ID = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
_OPTION = re.compile(r"^--[a-z0-9][a-z0-9-]*$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_URL = re.compile(r"^https?://\S+$")

#: Keys of a report: required, then optional (absent = null).
REQUIRED = ("id", "sglang", "option", "choice", "archs", "outcome", "symptom", "urls", "date")
OPTIONAL = ("kernel_library", "quantization", "model_family", "fixed_in", "notes")
_TOP_LEVEL = ("schema_version", "reports", "description")

#: Builds the error for the entry being read, from the problem found.
_Fail = Callable[[str], FieldReportError]


def toml_reader() -> ModuleType | None:
    """``tomllib`` (3.11+), else ``tomli`` when installed, else None."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as tomllib  # type: ignore[no-redef,import-not-found,unused-ignore]
        except ModuleNotFoundError:
            return None
    return tomllib


@lru_cache(maxsize=1)
def bundled_reports() -> tuple[FieldReport, ...]:
    """guardscan's own cited reports (read once per process)."""
    text = resources.files("guardscan").joinpath("data/field_reports.json").read_text("utf-8")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise FieldReportError(BUNDLED, f"not valid JSON: {exc}") from None
    return parse_document(data, BUNDLED)


def load_file(path: Path) -> tuple[FieldReport, ...]:
    """The reports of one file: ``.toml`` as TOML, anything else as JSON."""
    source = str(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise FieldReportError(source, "no such file") from None
    except OSError as exc:
        raise FieldReportError(source, f"cannot read: {exc.strerror or exc}") from None
    if path.suffix.lower() == ".toml":
        reader = toml_reader()
        if reader is None:
            raise FieldReportError(source, "reading TOML needs Python 3.11+ (tomllib) or the "
                                           "tomli package; or write the reports as JSON")
        try:
            data: object = reader.loads(raw.decode("utf-8"))
        # TOMLDecodeError and UnicodeDecodeError are ValueErrors; tomllib
        # recurses on nested arrays and tables.
        except (ValueError, RecursionError) as exc:
            raise FieldReportError(source, f"not valid TOML: {_one_line(str(exc))}") from None
    else:
        try:
            data = json.loads(raw.decode("utf-8"))
        except (ValueError, RecursionError) as exc:
            raise FieldReportError(source, f"not valid JSON: {_one_line(str(exc))}") from None
    return parse_document(data, source)


def tree_reports(root: Path) -> tuple[FieldReport, ...]:
    """A tree's own ``.guardscan-reports.toml`` at ``root``; none when absent."""
    path = root / TREE_FILE
    if not path.is_file():
        return ()
    return load_file(path)


def checkout_roots(target: str | Path | None, root: Path | None) -> list[Path]:
    """Where a checkout keeps its own ``.guardscan-reports.toml``: the directory
    given as the target, and the directory holding its package (``root``). A
    spec, a wheel or the installed package has none: its files are not the
    team's."""
    if target is None:
        return []
    path = Path(target).expanduser()
    if not path.is_dir():
        return []
    return [path] + ([root] if root is not None else [])


def load_reports(files: Iterable[Path] = (), roots: Iterable[Path] = (), *,
                 bundled: bool = True) -> tuple[FieldReport, ...]:
    """guardscan's reports (unless ``bundled=False``), then each of ``files``,
    then the tree file of each of ``roots``, in that order.

    An id names one report across all of them: a second report with an id
    already read is an error naming both files, never a silent override.
    """
    seen: dict[str, str] = {}
    out: list[FieldReport] = []
    batches: list[tuple[FieldReport, ...]] = [bundled_reports()] if bundled else []
    batches += [load_file(Path(path)) for path in files]
    read_roots: set[Path] = set()
    for root in roots:
        # The same directory reached two ways (a relative path, the resolved
        # package root) is read once, named as it was first given.
        resolved = Path(root).resolve()
        if resolved not in read_roots:
            read_roots.add(resolved)
            batches.append(tree_reports(Path(root)))
    for batch in batches:
        for report in batch:
            if report.id in seen:
                raise FieldReportError(report.source, f"id {report.id!r} is already used by a "
                                                      f"report of {seen[report.id]}")
            seen[report.id] = report.source
            out.append(report)
    return tuple(out)


# -- checking one document -------------------------------------------------------------------

def parse_document(data: object, source: str) -> tuple[FieldReport, ...]:
    """The reports of a loaded JSON or TOML document, every field checked."""
    if not isinstance(data, Mapping):
        raise FieldReportError(source, f"expected a table with schema_version and reports, "
                                       f"got {_kind(data)}")
    unknown = sorted(str(key) for key in data if key not in _TOP_LEVEL)
    if unknown:
        raise FieldReportError(source, f"unknown top-level key(s) {', '.join(unknown)}; "
                                       f"expected {', '.join(_TOP_LEVEL)}")
    version = data.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise FieldReportError(source, f"schema_version must be the integer {SCHEMA_VERSION}")
    if version != SCHEMA_VERSION:
        newer = " (written for a newer guardscan)" if version > SCHEMA_VERSION else ""
        raise FieldReportError(source, f"schema_version {version} is not {SCHEMA_VERSION}"
                                       f"{newer}")
    reports = data.get("reports")
    if not isinstance(reports, list):
        raise FieldReportError(source, f"reports must be a list, got {_kind(reports)}")
    out: list[FieldReport] = []
    ids: set[str] = set()
    for index, entry in enumerate(reports):
        report = _parse_report(entry, source, index)
        if report.id in ids:
            raise FieldReportError(source, f"id {report.id!r} appears twice",
                                   _where(index, report.id))
        ids.add(report.id)
        out.append(report)
    return tuple(out)


def _parse_report(entry: object, source: str, index: int) -> FieldReport:
    where = _where(index, entry.get("id") if isinstance(entry, Mapping) else None)

    def fail(problem: str) -> FieldReportError:
        return FieldReportError(source, problem, where)

    if not isinstance(entry, Mapping):
        raise fail(f"expected a table, got {_kind(entry)}")
    unknown = sorted(str(key) for key in entry if key not in REQUIRED + OPTIONAL)
    if unknown:
        raise fail(f"unknown key(s) {', '.join(unknown)}")
    missing = [key for key in REQUIRED if key not in entry]
    if missing:
        raise fail(f"missing {', '.join(missing)}")

    def text(key: str, *, optional: bool = False) -> str | None:
        value = entry.get(key)
        if value is None and optional:
            return None
        if not isinstance(value, str) or not value.strip():
            raise fail(f"{key} must be a non-empty string" + (" or null" if optional else ""))
        if "\n" in value or "\r" in value:
            raise fail(f"{key} must be one line")
        return value.strip()

    report_id = text("id") or ""
    if not _ID.match(report_id):
        raise fail("id must be lowercase letters, digits, '.', '_' and '-'")
    sglang = entry["sglang"]
    if not isinstance(sglang, str):
        raise fail("sglang must be a version specifier string such as '>=0.5.5,<0.5.8' "
                   "('' for every release)")
    _specifier(sglang, "sglang", fail)
    option = text("option") or ""
    if not _OPTION.match(option):
        raise fail(f"option {option!r} must be a flag such as --moe-runner-backend")
    outcome_text = text("outcome") or ""
    try:
        outcome = Outcome(outcome_text)
    except ValueError:
        raise fail(f"outcome {outcome_text!r} is not one of "
                   f"{', '.join(o.value for o in Outcome)}") from None
    date = text("date") or ""
    try:
        if not _DATE.match(date):
            raise ValueError(date)
        datetime.date.fromisoformat(date)
    except ValueError:
        raise fail(f"date {date!r} must be an ISO date (YYYY-MM-DD)") from None
    fixed_in = text("fixed_in", optional=True)
    if fixed_in is not None:
        try:
            Version(fixed_in)
        except InvalidVersion:
            raise fail(f"fixed_in {fixed_in!r} is not a version") from None
    notes = entry.get("notes")
    if notes is not None and not isinstance(notes, str):
        raise fail("notes must be a string or null")
    return FieldReport(
        id=report_id,
        sglang=sglang.strip(),
        kernel_library=_kernel(entry.get("kernel_library"), fail),
        option=option,
        choice=text("choice") or "",
        archs=_archs(entry["archs"], fail),
        quantization=text("quantization", optional=True),
        model_family=text("model_family", optional=True),
        outcome=outcome,
        symptom=text("symptom") or "",
        urls=_urls(entry["urls"], fail),
        date=date,
        fixed_in=fixed_in,
        notes=" ".join((notes or "").split()),
        source=source,
    )


def _specifier(value: str, key: str, fail: _Fail) -> None:
    try:
        SpecifierSet(value)
    except InvalidSpecifier:
        raise fail(f"{key} {value!r} is not a version specifier such as '>=0.5.5,<0.5.8'") \
            from None


def _kernel(value: object, fail: _Fail) -> KernelRange | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or set(value) != {"name", "specifier"}:
        raise fail("kernel_library must be null or a table with exactly name and specifier")
    name, specifier = value["name"], value["specifier"]
    if not isinstance(name, str) or not name.strip():
        raise fail("kernel_library.name must be a distribution name such as flashinfer-python")
    if not isinstance(specifier, str):
        raise fail("kernel_library.specifier must be a version specifier string")
    _specifier(specifier, "kernel_library.specifier", fail)
    return KernelRange(canonicalize_name(name.strip()), specifier.strip())


def _archs(value: object, fail: _Fail) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise fail("archs must be a non-empty list such as [\"sm120\"]")
    names: list[str] = []
    for item in value:
        if not isinstance(item, str):
            raise fail(f"archs holds {_kind(item)}, expected architecture names")
        try:
            name = parse_arch(item).name
        except ArchError as exc:
            raise fail(f"archs: {exc}") from None
        if name not in names:
            names.append(name)
    return tuple(names)


def _urls(value: object, fail: _Fail) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise fail("urls must list at least one public thread")
    for item in value:
        if not isinstance(item, str) or not _URL.match(item):
            raise fail(f"urls: {item!r} is not an http(s) URL")
    return tuple(value)


def _where(index: int, report_id: object) -> str:
    return f"reports[{index}]" + (f" (id {report_id!r})" if isinstance(report_id, str) else "")


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__


def _one_line(text: str) -> str:
    return " ".join(text.split())
