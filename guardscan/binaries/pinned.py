"""binaries (pinned): the compiled packages a release pins, as one source of facts for a scan.

What it reads: the release's pins of ``COMPILED_DISTS`` (``packages.
pinned_compiled``), each wheel downloaded like any pin (``download_compiled``:
``pip download --no-deps --only-binary=:all:``, cached), its libraries'
fatbin facts through the cache (``driver.read_wheel``), and, only when a
question is asked, the wheel's Python (``python.PackagePython``).

Why it matters: the verdict stage is handed one ``CompiledSource``; its
``key`` (the wheels' sha256) keys every stored answer, so a new wheel is a
new answer and a warm scan reads a few kilobytes of JSON.

Known limits: ``select`` picks packages by distribution name (``all``,
``none``, or names such as ``sgl-flash-mla``). A pin that cannot be
downloaded or read becomes one ``compiled-package-failed`` diagnostic; its
calls are then judged by the other facts only.

Example::

    >>> from guardscan.acquire import SourceTree
    >>> tree = SourceTree(root=Path("."), package="sglang", version="0.0", files=(),
    ...                   origin="example", requires=("torch==2.14.1",))
    >>> compiled_source(tree, None).key
    'none: sglang 0.0 pins no compiled kernel package'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import parse_wheel_filename

from guardscan.acquire import AcquireError, SourceTree
from guardscan.binaries.model import LibraryOutcome, ReadFailure
from guardscan.binaries.packages import COMPILED_DISTS, download_compiled, pinned_compiled
from guardscan.binaries.python import PackagePython
from guardscan.messages import diagnostic
from guardscan.results import Diagnostic

__all__ = ["CompiledPackage", "CompiledSource", "compiled_source", "selected_dists"]


@dataclass
class CompiledPackage:
    """One pinned wheel: its spec, file, sha256 and library facts."""

    spec: str
    wheel: Path
    sha256: str
    libraries: dict[str, LibraryOutcome]
    _python: PackagePython | None = field(default=None, repr=False)

    @property
    def label(self) -> str:
        """``sgl-flash-mla 1.0.0``."""
        return self.spec.replace("==", " ", 1)

    @property
    def python(self) -> PackagePython:
        """The wheel's Python, read on the first question."""
        if self._python is None:
            self._python = PackagePython.from_wheel(self.wheel, self.libraries)
        return self._python

    @property
    def machine(self) -> str:
        """The CPU the wheel is built for (``x86_64``), from its platform tag;
        "" for a pure or unparsable one."""
        try:
            tags = parse_wheel_filename(self.wheel.name)[3]
        except ValueError:
            return ""
        machines = {m for t in tags for m in ("x86_64", "aarch64") if t.platform.endswith(m)}
        return machines.pop() if len(machines) == 1 else ""

    @property
    def roots(self) -> frozenset[str]:
        """The top-level import names its libraries live under (``flash_mla``)."""
        return frozenset(m.split("/", 1)[0] for m in self.libraries if "/" in m)


@dataclass
class CompiledSource:
    packages: tuple[CompiledPackage, ...] = ()
    reason: str = ""
    diagnostics: tuple[Diagnostic, ...] = ()

    @property
    def key(self) -> str:
        """What stored answers must be keyed on."""
        if not self.packages:
            return f"none: {self.reason}"
        return ",".join(f"{p.spec}:{p.sha256}" for p in self.packages)

    def package_for(self, target: str) -> CompiledPackage | None:
        """The package whose libraries live under ``target``'s top-level name
        (the first pin, should two ship the same name)."""
        root = target.split(".", 1)[0]
        return next((p for p in self.packages if root in p.roots), None)


def selected_dists(select: str | None) -> tuple[str, ...]:
    """``all``/None -> every compiled distribution; ``none`` -> none; else
    the comma-separated names (normalised, ``_`` as ``-``)."""
    if select is None or select.strip().lower() in ("", "all"):
        return COMPILED_DISTS
    if select.strip().lower() == "none":
        return ()
    return tuple(dict.fromkeys(
        n.strip().lower().replace("_", "-") for n in select.split(",") if n.strip()))


def compiled_source(tree: SourceTree, cache_dir: Path | None, *, offline: bool = False,
                    dists: Sequence[str] = COMPILED_DISTS,
                    say: Callable[[str], None] | None = None) -> CompiledSource:
    """The compiled packages ``tree`` pins (among ``dists``), read; never raises."""
    if not dists:
        return CompiledSource(reason="compiled packages not read (--compiled none)")
    specs = pinned_compiled(tree, dists)
    if not specs:
        return CompiledSource(reason=f"{tree.package} {tree.version or ''} pins no compiled "
                              "kernel package".replace("  ", " "))
    from guardscan.binaries.driver import read_wheel

    packages: list[CompiledPackage] = []
    failures: list[Diagnostic] = []
    for spec in specs:
        try:
            wheel = download_compiled(spec, cache_dir, offline=offline)
        except AcquireError as exc:
            failures.append(diagnostic(spec, 0, "compiled-package-failed", wheel=spec,
                                       reason=exc.reason[:200]))
            continue
        if say is not None:
            say(f"reading the fatbins of {spec}")
        read = read_wheel(wheel, cache_dir)
        outcomes = {o.path: o for o in read.libraries}
        for outcome in read.libraries:
            if isinstance(outcome, ReadFailure):
                failures.append(diagnostic(f"{wheel.name}:{outcome.path}", 0,
                                           "compiled-package-failed", wheel=wheel.name,
                                           reason=f"{outcome.code}: {outcome.path}"[:200]))
        if not read.sha256:
            continue
        packages.append(CompiledPackage(_canonical(spec), wheel, read.sha256, outcomes))
    reason = "" if packages else "no pinned compiled package could be read"
    return CompiledSource(tuple(packages), reason, tuple(failures))


def _canonical(spec: str) -> str:
    try:
        req = Requirement(spec)
    except ValueError:
        return spec
    return f"{req.name}{req.specifier}"
