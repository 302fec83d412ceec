"""The public API: what ``import guardscan`` offers a caller (docs/api.md)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import guardscan
from guardscan.arch import ArchError
from guardscan.driver import as_archs


def test_every_exported_name_resolves() -> None:
    for name in guardscan.__all__:
        assert getattr(guardscan, name) is not None, name
    with pytest.raises(AttributeError):
        guardscan.no_such_name  # noqa: B018


def test_import_guardscan_loads_no_pipeline() -> None:
    """A pre-commit hook pays for the pipeline only when it scans."""
    code = ("import sys, guardscan; "
            "print(sorted(m for m in sys.modules if m.startswith('guardscan')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "['guardscan']"


def test_verdicts_print_as_their_names() -> None:
    assert str(guardscan.Verdict.UNSUPPORTED) == "unsupported"
    assert f"{guardscan.Verdict.BLOCKED}" == "blocked"


def test_archs_take_cli_strings_and_arch_objects() -> None:
    sm90 = guardscan.parse_arch("H100")
    assert [a.name for a in as_archs(["RTX PRO 6000", sm90, "10.0"])] == ["sm120", "sm90",
                                                                          "sm100"]
    assert [a.name for a in as_archs("GB10")] == ["sm121"]
    with pytest.raises(ArchError):
        as_archs(["sm12"])


def test_scan_stays_the_function_whatever_was_imported_first() -> None:
    """``guardscan.scan`` is the function even after the pipeline's own modules
    are imported (a submodule named ``scan`` used to replace it, so
    ``preflight(...)`` then ``scan(...)`` raised "module is not callable")."""
    import subprocess
    import sys

    code = ("import guardscan, guardscan.launch, guardscan.driver\n"
            "from guardscan.driver import ScanOptions\n"
            "assert callable(guardscan.scan) and guardscan.scan.__module__ == 'guardscan.driver'\n"
            "assert callable(guardscan.preflight)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
