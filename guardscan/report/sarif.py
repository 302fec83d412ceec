"""report (SARIF 2.1.0): blocked/unsupported verdicts as results, field reports and diagnostics as notes.

Shaped after bandit's SARIF formatter: every rule is listed once in
``tool.driver.rules`` and results point at it by ``ruleIndex``; files that could
not be analysed (``file-*`` diagnostics) are ``toolExecutionNotifications`` of
the invocation, not results, because they are about the scan, not the code.
Artifact URIs are relative to ``SRCROOT``, the root of the git checkout the
scanned package was read from (``python/sglang/srt/...`` in a fork laid out
as ``python/sglang``, so code scanning places each result in the repository),
else to ``PKGROOT`` (the directory holding the scanned package, as for a
wheel, so ``sglang/srt/...`` resolves), and likewise for the kernel library
(``KERNELROOT``), so a report stays valid when the tree moves; ``originalUriBaseIds``
describes both without a ``uri`` (those directories are local paths, which no
report carries: the viewer supplies them). Output is deterministic: sorted, no
timestamps, no absolute paths.

Field reports beside the verdicts (``guardscan.field``) are results of their
own rule, ``field-report``, one per report and choice, placed at the option's
definition (a thread is no file of the tree): level ``warning`` for a crash or
wrong output, ``note`` otherwise; the thread and what the report holds for
are in the message and ``properties``. They are never related locations of a
verdict's result.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

from guardscan.evidence import FactKind, arg
from guardscan.report import register
from guardscan.report.answer import FieldNote, deciding_evidence, field_notes
from guardscan.report.json_ import portable
from guardscan.report.json_text import write_indented
from guardscan.results import (
    BackendVerdict,
    Diagnostic,
    Evidence,
    OptionInfo,
    PackageRef,
    ScanResult,
    Verdict,
)

__all__ = ["SCHEMA", "deciding_evidence", "render_sarif", "sarif_log"]

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"
INFORMATION_URI = "https://github.com/guardscan/guardscan"
TARGET_BASE = "PKGROOT"
REPO_BASE = "SRCROOT"
KERNEL_BASE = "KERNELROOT"

#: Verdicts reported as results, with their SARIF level and rule text.
_VERDICT_RULES: dict[Verdict, tuple[str, str, str]] = {
    Verdict.BLOCKED: (
        "error", "BackendBlocked",
        ("SGLang itself rejects this backend choice on the architecture: a gate on the "
         "choice's path raises there (or a name it needs is bound only under a guard that "
         "excludes the architecture).")),
    Verdict.UNSUPPORTED: (
        "warning", "BackendUnsupported",
        ("SGLang accepts this backend choice, but a kernel on its required path declares "
         "that it does not run on the architecture.")),
}
_FILE_PREFIX = "file-"


@register("sarif")
def render_sarif(result: ScanResult, stream: IO[str], options: dict[str, Any]) -> None:
    write_indented(sarif_log(result), stream)
    stream.write("\n")


def sarif_log(result: ScanResult) -> dict[str, Any]:
    """The whole SARIF log for one scan, as plain JSON data."""
    bases = _Bases(result)
    verdicts = sorted(
        (b for b in result.backends if b.verdict in _VERDICT_RULES),
        key=lambda b: (b.option, b.choice, _arch_position(result, b.arch), b.arch))
    diagnostics = sorted(set(result.diagnostics))
    notes = [d for d in diagnostics if not d.code.startswith(_FILE_PREFIX)]
    skipped = [d for d in diagnostics if d.code.startswith(_FILE_PREFIX)]

    field = field_notes(result)
    rule_ids = [v.value for v in _VERDICT_RULES if any(b.verdict is v for b in verdicts)]
    rule_ids += [FIELD_RULE] if field else []
    rule_ids += sorted({d.code for d in notes})
    rule_index = {rule_id: index for index, rule_id in enumerate(rule_ids)}
    rules = [_verdict_rule(Verdict(r)) if r in _verdict_values() else
             _field_rule() if r == FIELD_RULE else _diagnostic_rule(r) for r in rule_ids]

    results = [_verdict_result(b, rule_index, bases) for b in verdicts]
    options = {o.flag: o for o in result.options}
    results += [_field_result(option, note, options, rule_index, bases)
                for option, found in field.items() for note in found]
    results += [_diagnostic_result(d, rule_index, bases) for d in notes]

    invocation: dict[str, Any] = {"executionSuccessful": True}
    if skipped:
        invocation["toolExecutionNotifications"] = [_notification(d, bases) for d in skipped]

    run: dict[str, Any] = {
        "tool": {"driver": {
            "name": "guardscan",
            "version": result.guardscan,
            "semanticVersion": result.guardscan,
            "informationUri": INFORMATION_URI,
            "rules": rules,
        }},
        "originalUriBaseIds": bases.original_uri_base_ids(),
        "invocations": [invocation],
        "results": results,
        "columnKind": "unicodeCodePoints",
        "properties": _run_properties(result),
    }
    return {"$schema": SCHEMA, "version": SARIF_VERSION, "runs": [run]}


# -- rules ---------------------------------------------------------------------------------
def _verdict_values() -> set[str]:
    return {v.value for v in _VERDICT_RULES}


def _verdict_rule(verdict: Verdict) -> dict[str, Any]:
    level, name, text = _VERDICT_RULES[verdict]
    return {
        "id": verdict.value,
        "name": name,
        "shortDescription": {"text": f"backend choice {verdict.value} on the architecture"},
        "fullDescription": {"text": text},
        "defaultConfiguration": {"level": level},
        "properties": {"tags": ["guardscan", "verdict"]},
    }


def _diagnostic_rule(code: str) -> dict[str, Any]:
    rule: dict[str, Any] = {
        "id": code,
        "name": "".join(part.capitalize() for part in code.replace("_", "-").split("-")),
        "shortDescription": {"text": f"guardscan could not fully analyse: {code}"},
        "defaultConfiguration": {"level": "note"},
        "properties": {"tags": ["guardscan", "diagnostic"]},
    }
    template = _message_templates().get(code)
    if template:
        rule["fullDescription"] = {"text": template}
    return rule


def _message_templates() -> dict[str, str]:
    """Every diagnostic code's message template (``guardscan.messages``)."""
    from guardscan.messages import MESSAGES

    return MESSAGES


# -- results -------------------------------------------------------------------------------
def _verdict_result(verdict: BackendVerdict, rule_index: dict[str, int],
                    bases: _Bases) -> dict[str, Any]:
    rule_id = verdict.verdict.value
    deciding = deciding_evidence(verdict)
    where = f" on {verdict.arch}"
    if verdict.quantization:
        where += f" with --quantization {verdict.quantization}"
    text = f"{verdict.option} {verdict.choice} is {verdict.verdict.value}{where}"
    if deciding is not None and deciding.note:
        text += f": {deciding.note}"
    out: dict[str, Any] = {
        "ruleId": rule_id,
        "ruleIndex": rule_index[rule_id],
        "level": _VERDICT_RULES[verdict.verdict][0],
        "message": {"text": text},
        "locations": [bases.location(deciding)] if deciding is not None else [],
    }
    related = [ev for ev in verdict.evidence
               if ev is not deciding and ev.kind != FactKind.FIELD]
    if related:
        out["relatedLocations"] = [
            bases.location(ev, id_=number, message=_hop_message(ev))
            for number, ev in enumerate(related, start=1)]
    out["partialFingerprints"] = {"guardscanVerdict/v1": _fingerprint(
        verdict.option, verdict.choice, verdict.arch, verdict.quantization or "",
        verdict.verdict.value)}
    properties: dict[str, Any] = {
        "option": verdict.option,
        "choice": verdict.choice,
        "arch": verdict.arch,
        "quantization": verdict.quantization,
        "verdict": verdict.verdict.value,
        "safe_to_try": verdict.safe_to_try,
    }
    if verdict.platform:
        properties["platform"] = verdict.platform
    if verdict.conditions:
        properties["conditions"] = list(verdict.conditions)
    out["properties"] = properties
    return out


FIELD_RULE = "field-report"


def _field_rule() -> dict[str, Any]:
    return {
        "id": FIELD_RULE,
        "name": "FieldReport",
        "shortDescription": {"text": "people reported how this backend choice ran on the "
                                     "architecture"},
        "fullDescription": {"text": (
            "A cited field report (a public thread, or a team's own report file) of a crash, "
            "wrong output, hang, slow run or working run of this choice on the architecture, "
            "for a release range that holds the scanned one. Beside the verdict, never "
            "deciding it.")},
        "defaultConfiguration": {"level": "note"},
        "properties": {"tags": ["guardscan", "field-report"]},
    }


def _field_result(option: str, note: FieldNote, options: dict[str, OptionInfo],
                  rule_index: dict[str, int], bases: _Bases) -> dict[str, Any]:
    args = note.evidence.args
    info = options.get(option)
    text = (f"{option} {note.choice}: {note.outcome} reported on {', '.join(note.archs)} "
            f"({', '.join(note.holds_for())}): {arg(args, 'symptom')} ({arg(args, 'url')})")
    location: list[dict[str, Any]] = []
    if info is not None:
        location.append({"physicalLocation": {
            "artifactLocation": bases.artifact(info.path),
            "region": {"startLine": info.line, "startColumn": 1}}})
    return {
        "ruleId": FIELD_RULE,
        "ruleIndex": rule_index[FIELD_RULE],
        "level": "warning" if note.outcome in ("crash", "wrong-output") else "note",
        "message": {"text": text},
        "locations": location,
        "partialFingerprints": {"guardscanField/v1": _fingerprint(
            option, note.choice, arg(args, "id"))},
        "properties": {"option": option, "choice": note.choice, "archs": list(note.archs),
                       "outcome": note.outcome, "report": arg(args, "id"),
                       "urls": [arg(args, "url")], "source": arg(args, "source")},
    }


def _hop_message(ev: Evidence) -> dict[str, str]:
    text = f"[{ev.role}] {ev.text.strip()}"
    if ev.note:
        text += f" -- {ev.note}"
    return {"text": text}


def _diagnostic_result(diag: Diagnostic, rule_index: dict[str, int],
                       bases: _Bases) -> dict[str, Any]:
    return {
        "ruleId": diag.code,
        "ruleIndex": rule_index[diag.code],
        "level": "note",
        "message": {"text": diag.message},
        "locations": [bases.diagnostic_location(diag)],
        # no line: a baseline of diagnostics should survive code moving
        "partialFingerprints": {"guardscanDiagnostic/v1": _fingerprint(
            diag.path, diag.code, diag.message)},
    }


def _notification(diag: Diagnostic, bases: _Bases) -> dict[str, Any]:
    return {
        "level": "warning" if diag.code == "file-failed" else "note",
        "message": {"text": f"{diag.path}: {diag.message}" if diag.message else diag.path},
        "descriptor": {"id": diag.code},
        "locations": [bases.diagnostic_location(diag)],
    }


def _fingerprint(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:32]


def _arch_position(result: ScanResult, arch: str) -> int:
    try:
        return result.archs.index(arch)
    except ValueError:
        return len(result.archs)


def _run_properties(result: ScanResult) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "target": portable(result.target),
        "kernels": [portable(k) for k in result.kernels],
        "archs": list(result.archs),
        "quantization": result.quantization,
    }
    if result.notes:
        properties["notes"] = [note.text for note in result.notes]
    return properties


# -- locations -----------------------------------------------------------------------------
def repository_root(package_dir: Path) -> Path | None:
    """The root of the git checkout holding ``package_dir`` (the nearest
    directory above it with a ``.git``), or None: a tree unpacked from a wheel
    (a ``*.dist-info`` beside the package) is no checkout, wherever it lies."""
    try:
        package_dir = package_dir.resolve()
        if any(package_dir.parent.glob("*.dist-info")):
            return None
        for parent in package_dir.parents:
            if (parent / ".git").exists():
                return parent
    except OSError:
        return None
    return None


def _prefix(ref: PackageRef) -> tuple[str, str] | None:
    """(the path from the repository root to the directory holding the
    package, ``python`` for a fork laid out as ``python/sglang``; the root's
    name) for a package read from a git checkout, else None."""
    if not ref.path or not Path(ref.path).is_absolute():
        return None
    package_dir = Path(ref.path)
    root = repository_root(package_dir)
    if root is None:
        return None
    try:
        holder = package_dir.resolve().parent.relative_to(root)
    except ValueError:
        return None
    return holder.as_posix().strip("."), root.name


class _Bases:
    """Which base directory each evidence path is relative to: for a package
    read from a git checkout, the repository root (``SRCROOT``: code scanning
    places ``python/sglang/srt/...`` in the repository), else the directory
    holding the package."""

    def __init__(self, result: ScanResult) -> None:
        self.target_package = result.target.package
        self.prefixes: dict[str, str] = {}
        target = _prefix(result.target)
        self.target_base = TARGET_BASE
        if target is not None:
            self.target_base = REPO_BASE
            self.prefixes[REPO_BASE] = target[0]
            self.roots: dict[str, str] = {
                REPO_BASE: f"root of the repository holding the scanned "
                           f"{result.target.package} ({target[1]})"}
        else:
            self.roots = {TARGET_BASE: f"directory holding the scanned {result.target.package}"}
        self.kernel_bases: dict[str, str] = {}
        for number, kernel in enumerate(result.kernels, start=1):
            if kernel.package in self.kernel_bases or kernel.package == self.target_package:
                continue
            base = KERNEL_BASE if number == 1 else f"{KERNEL_BASE}{number}"
            self.kernel_bases[kernel.package] = base
            kernel_prefix = _prefix(kernel)
            if kernel_prefix is not None:
                self.prefixes[base] = kernel_prefix[0]
                self.roots[base] = (f"root of the repository holding the kernel library "
                                    f"{kernel.package} ({kernel_prefix[1]})")
            else:
                self.roots[base] = f"directory holding the kernel library {kernel.package}"

    def original_uri_base_ids(self) -> dict[str, Any]:
        # No "uri": the directories are local paths (a download cache, a
        # checkout), which a report never carries; a SARIF viewer asks for them
        return {base: {"description": {"text": text}}
                for base, text in sorted(self.roots.items())}

    def artifact(self, path: str) -> dict[str, str]:
        first = path.split("/", 1)[0]
        base = self.kernel_bases.get(first, self.target_base)
        prefix = self.prefixes.get(base, "")
        if prefix:
            path = f"{prefix}/{path}"
        return {"uri": quote(path, safe="/"), "uriBaseId": base}

    def location(self, ev: Evidence, id_: int | None = None,
                 message: dict[str, str] | None = None) -> dict[str, Any]:
        physical: dict[str, Any] = {"artifactLocation": self.artifact(ev.path)}
        if ev.line >= 1:
            region: dict[str, Any] = {"startLine": ev.line, "startColumn": 1}
            if ev.text:
                region["snippet"] = {"text": ev.text}
            physical["region"] = region
        out: dict[str, Any] = {}
        if id_ is not None:
            out["id"] = id_
        out["physicalLocation"] = physical
        if message is not None:
            out["message"] = message
        return out

    def diagnostic_location(self, diag: Diagnostic) -> dict[str, Any]:
        physical: dict[str, Any] = {"artifactLocation": self.artifact(diag.path)}
        if diag.line >= 1:
            physical["region"] = {"startLine": diag.line, "startColumn": 1}
        return {"physicalLocation": physical}
