"""Every ``>>>`` example in guardscan's own docstrings runs and holds.

The recognisers and rules document themselves with examples (STYLE.md: What
it recognises / Why it matters / Known limits / Example); docs/ pages are
generated from those docstrings, so an example that no longer holds would be
published as it is. Each module with examples is one test case.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil
from types import ModuleType

import pytest

import guardscan

#: run as a program, not imported here (``python -m guardscan.binaries``)
_SKIP = {"guardscan.__main__", "guardscan.binaries.__main__"}


def _modules() -> list[str]:
    return sorted(m.name for m in pkgutil.walk_packages(guardscan.__path__, "guardscan.")
                  if m.name not in _SKIP)


def _with_examples(name: str) -> ModuleType | None:
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder()
    return module if any(t.examples for t in finder.find(module)) else None


MODULES = [name for name in _modules() if _with_examples(name) is not None]


def test_examples_are_found() -> None:
    # the recognisers of guard forms, link shapes and verdict rules carry them
    assert {"guardscan.link.everywhere", "guardscan.verdict.checkpoint",
            "guardscan.options.shared_labels"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_examples_hold(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed"
