"""gate (guards): the guard functions a file can call, and the one a check uses.

The candidates are the tree's own zero-argument functions (and cached
callables such as ``is_sm120_supported = lru_cache(partial(...))``) whose
meaning the guards stage reads as a device test: those the file already
imports, and the public module-level ones of the modules it imports them from.
Each is read by the vocabulary exactly as the scan reads a call of it, and
evaluated on every judged architecture.

A check for a choice may use a guard only when the guard is TRUE on the
target arch, FALSE on every judged arch where the choice is not excluded
(``supported``, ``unknown``), and FALSE on a far-future arch (so it names the
archs it is true on, rather than "everything but"). Negations (``not
is_sm100_supported()``) are never proposed: they are true on every platform
and arch the scan does not judge (ROCm, CPU, future GPUs).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from guardscan.arch import Arch
from guardscan.guards import Vocabulary
from guardscan.guards.lookup import MODULE_END
from guardscan.index import Index
from guardscan.index.facts import FileFacts
from guardscan.kernels.support import FAR_FUTURE
from guardscan.predicate import (
    Context,
    OptionIs,
    Predicate,
    QuantIs,
    Tri,
    atoms,
    mentions_capability,
)

__all__ = ["GuardFunction", "choose_guard", "guard_functions"]


@dataclass(frozen=True, slots=True)
class GuardFunction:
    """A guard function callable from the checked file, with its truth per arch."""

    name: str
    #: the module to import it from; "" when the file binds the name already
    module: str
    meaning: str
    truth: tuple[tuple[str, Tri], ...]  # (arch name, value), judged archs in order
    far_future: Tri

    @property
    def imported(self) -> bool:
        return not self.module

    def on(self, arch: str) -> Tri:
        return dict(self.truth).get(arch, Tri.UNKNOWN)

    def true_on(self) -> tuple[str, ...]:
        return tuple(a for a, value in self.truth if value is Tri.TRUE)


def _bound_names(facts: FileFacts) -> dict[str, str]:
    """Module-level names of a file -> the module they are imported from ("" if defined)."""
    names: dict[str, str] = {}
    for imp in facts.imports:
        if imp.scope == "" and imp.local != "*":
            names.setdefault(imp.local, imp.module if imp.name is not None else "")
    for fn in facts.functions:
        if fn.scope == "" and not fn.cls:
            names.setdefault(fn.name, "")
    for assign in facts.assigns:
        if assign.scope == "":
            for target in assign.targets:
                if target.isidentifier():
                    names.setdefault(target, "")
    return names


def _callable_without_arguments(facts: FileFacts) -> list[str]:
    """Public module-level names of a file that can be called with no argument
    (functions whose parameters all have defaults, and assigned names: cached
    callables; the vocabulary decides what calling them means)."""
    out: list[str] = []
    for fn in facts.functions:
        if fn.scope == "" and not fn.cls and not fn.path:
            with_default = {name for name, _ in fn.defaults}
            if all(p in with_default for p in fn.params):
                out.append(fn.name)
    for assign in facts.assigns:
        if assign.scope == "" and not assign.path:
            out.extend(t for t in assign.targets if t.isidentifier())
    return [name for name in dict.fromkeys(out) if not name.startswith("_")]


def _is_device_guard(pred: Predicate) -> bool:
    return mentions_capability(pred) and not any(
        isinstance(a, (OptionIs, QuantIs)) for a in atoms(pred))


def _function(name: str, module: str, pred: Predicate,
              archs: Sequence[Arch]) -> GuardFunction:
    return GuardFunction(
        name, module, pred.describe(),
        tuple((a.name, pred.evaluate(Context(arch=a))) for a in archs),
        pred.evaluate(Context(arch=FAR_FUTURE)))


def guard_functions(index: Index, vocab: Vocabulary, rel: str, scope: str, line: int,
                    archs: Sequence[Arch]) -> list[GuardFunction]:
    """The device guard functions a check at ``rel``:``line`` (in ``scope``) can
    call: those the file binds (read there), then the public ones of the
    in-tree modules it imports guards from (read in their module)."""
    facts = index.facts(rel)
    if facts is None:
        return []
    bound = _bound_names(facts)
    found: list[GuardFunction] = []
    sources: list[str] = []
    for name, source in bound.items():
        pred = vocab.predicate(f"{name}()", rel, scope, line, report=False).predicate
        if _is_device_guard(pred):
            found.append(_function(name, "", pred, archs))
            if source and index.has_module(source) and source not in sources:
                sources.append(source)
    for module in sources:
        module_facts = index.module(module)
        if module_facts is None:
            continue
        for name in _callable_without_arguments(module_facts):
            if name in bound:
                continue  # bound already (to this or to something else): not importable here
            pred = vocab.predicate(f"{name}()", module_facts.rel, "", MODULE_END,
                                   report=False).predicate
            if _is_device_guard(pred):
                found.append(_function(name, module, pred, archs))
    return found


def choose_guard(functions: Iterable[GuardFunction], arch: str,
                 excluded: set[str]) -> tuple[GuardFunction | None, list[str]]:
    """The guard for a check on ``arch``: TRUE there, FALSE on every judged arch
    outside ``excluded`` and on a far-future arch. Of those, the one true on
    most excluded archs (it protects most of a fleet), then one the file
    imports already, then the shortest name. Returns it (or None) and, when
    none fits, why the closest candidates do not."""
    fitting: list[GuardFunction] = []
    near: list[str] = []
    for fn in functions:
        here = fn.on(arch)
        if here is Tri.FALSE:
            continue
        wrong = [a for a, value in fn.truth if a not in excluded and value is not Tri.FALSE]
        if here is Tri.UNKNOWN:
            near.append(f"{fn.name}() is undecided on {arch} ({fn.meaning})")
        elif wrong:
            near.append(f"{fn.name}() is also {fn.on(wrong[0]).value} on {', '.join(wrong)}, "
                        "where the choice is not excluded")
        elif fn.far_future is not Tri.FALSE:
            near.append(f"{fn.name}() is not false on a far-future arch ({fn.meaning})")
        else:
            fitting.append(fn)
    if not fitting:
        return None, near
    best = min(fitting, key=lambda fn: (-len(fn.true_on()), not fn.imported, len(fn.name),
                                         fn.name))
    return best, []
