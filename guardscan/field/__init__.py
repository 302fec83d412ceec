"""field: what people saw when they ran a backend choice, cited, beside the verdict.

Half of what breaks on a new GPU never shows as a guard in the source: the
server dies loading a kernel, prints NaN, or hangs. A field report records
one such launch (release range, option and choice, archs, quantization,
outcome, a one-line symptom) with the public thread that says so. Reports
never decide a verdict; they are shown beside it.

One module per concern: ``model`` (FieldReport, Outcome, the error),
``load`` (reading and checking the bundled file, ``--reports`` files and a
tree's ``.guardscan-reports.toml``), ``match`` (which reports apply to a
launch), ``attach`` (the reports beside each verdict of a scan, as ``field``
evidence) and ``flag`` (which of them make ``check`` and ``preflight`` flag a
choice). The schema is ``data/field_reports.schema.json``; docs/field-reports.md
says how to add a team's own reports.

    from guardscan.field import load_reports, matching
    reports = load_reports()
    for report in matching(reports, "0.5.9", "0.6.3", "--moe-runner-backend",
                           "flashinfer_cutedsl", "sm120", "modelopt_fp4"):
        print(report.outcome, report.symptom, report.url)
"""

from guardscan.field.attach import attach_reports, field_evidence, field_reports_of
from guardscan.field.load import (
    BUNDLED,
    SCHEMA_VERSION,
    TREE_FILE,
    bundled_reports,
    checkout_roots,
    load_file,
    load_reports,
    parse_document,
    tree_reports,
)
from guardscan.field.match import in_range, matching
from guardscan.field.model import FieldReport, FieldReportError, KernelRange, Outcome

__all__ = [
    "BUNDLED",
    "SCHEMA_VERSION",
    "TREE_FILE",
    "FieldReport",
    "FieldReportError",
    "KernelRange",
    "Outcome",
    "attach_reports",
    "bundled_reports",
    "checkout_roots",
    "field_evidence",
    "field_reports_of",
    "in_range",
    "load_file",
    "load_reports",
    "matching",
    "parse_document",
    "tree_reports",
]
