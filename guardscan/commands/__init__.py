"""commands: the subcommands beside the main scan (``guardscan SUBCOMMAND ...``).

Each module here has ``build_parser() -> argparse.ArgumentParser`` (its
``--help``, which ``scripts/gen_docs.py`` copies into docs/) and
``run(argv) -> int`` (an ``ExitCode``); ``common`` holds what they share.
``cli.main`` imports a subcommand's module only when it is asked for, so the
plain scan pays for none of them.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["SUBCOMMANDS", "load"]

#: name -> (module, one-line summary for ``guardscan --help``)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "explain": ("guardscan.commands.explain",
                "the evidence chain for one choice, path:line by path:line"),
    "check": ("guardscan.commands.check",
              "judge the backend flags of a launch command (after --)"),
    "baseline": ("guardscan.commands.baseline",
                 "write the verdict lock file; --check: the pre-commit hook"),
    "diff": ("guardscan.commands.diff",
             "the verdicts that changed between two targets"),
    "gate": ("guardscan.commands.gate",
             "fail-fast checks for choices a kernel excludes (--write)"),
    "reports": ("guardscan.commands.reports",
                "the field reports that apply (crash, NaN, hang, works), with links"),
    "matrix": ("guardscan.commands.matrix",
               "verdicts of many releases x archs as one page (HTML, Markdown, JSON)"),
    "archs": ("guardscan.commands.archs",
              "the architectures, aliases and GPU names --arch takes"),
    "cache": ("guardscan.commands.cache",
              "what the cache holds, per kind; clean all of it, a kind, or the old"),
}


def load(name: str) -> ModuleType:
    """The module of subcommand ``name`` (a key of ``SUBCOMMANDS``)."""
    return importlib.import_module(SUBCOMMANDS[name][0])
