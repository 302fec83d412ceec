"""Per-file facts: plain, frozen data pulled out of one source file.

(Not slotted: unpickling slotted frozen dataclasses from the cache costs about
ten times more, measured on sglang 0.5.23's 1,700 indexed files.)

Expressions travel as their exact source text (a slice of the file, never a
parse-tree node), so facts cache, serialise and compare cleanly; later stages
re-read an expression with ``ast.parse(text, mode="eval")`` when they need its
structure.

A *path* is the condition under which a statement runs inside its scope: a
tuple of signed 1-based indexes into ``FileFacts.conds``; ``+i`` means cond ``i``
held, ``-i`` that it did not (an ``else`` branch, or the code after an
``if cond: raise/return``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "Cond",
    "ImportFact",
    "FunctionFact",
    "ClassFact",
    "AssignFact",
    "CallFact",
    "RaiseFact",
    "AssertFact",
    "ReturnFact",
    "FileFacts",
    "FileOutcome",
]

CondPath = tuple[int, ...]


@dataclass(frozen=True)
class Cond:
    """A branch test (if / elif / while / except clause), as text."""

    text: str
    line: int
    kind: str = "if"  # if | elif | while | except | match


@dataclass(frozen=True)
class ImportFact:
    scope: str
    local: str  # the name bound ("*" for a star import)
    module: str  # absolute module
    name: str | None  # imported attribute, None for ``import x``
    line: int
    path: CondPath = ()


@dataclass(frozen=True)
class FunctionFact:
    qualname: str  # Class.method or func or outer.inner
    name: str
    cls: str  # enclosing class qualname, "" if none
    line: int
    end_line: int
    params: tuple[str, ...]
    defaults: tuple[tuple[str, str], ...]
    decorators: tuple[tuple[str, int], ...]
    returns: str
    path: CondPath = ()
    scope: str = ""
    annotations: tuple[tuple[str, str], ...] = ()  # (param, annotation text)


@dataclass(frozen=True)
class ClassFact:
    qualname: str
    line: int
    end_line: int
    bases: tuple[str, ...]
    decorators: tuple[tuple[str, int], ...]
    path: CondPath = ()
    scope: str = ""


@dataclass(frozen=True)
class AssignFact:
    scope: str
    targets: tuple[str, ...]
    value: str
    line: int
    path: CondPath = ()
    annotation: str = ""
    end_line: int = 0


@dataclass(frozen=True)
class CallFact:
    scope: str
    func: str
    args: tuple[str, ...]
    kwargs: tuple[tuple[str, str], ...]
    line: int
    path: CondPath = ()


@dataclass(frozen=True)
class RaiseFact:
    scope: str
    exc: str
    line: int
    path: CondPath = ()


@dataclass(frozen=True)
class AssertFact:
    scope: str
    test: str
    msg: str
    line: int
    path: CondPath = ()


@dataclass(frozen=True)
class ReturnFact:
    scope: str
    value: str
    line: int
    path: CondPath = ()


@dataclass(frozen=True)
class FileFacts:
    rel: str
    module: str
    conds: tuple[Cond, ...] = ()
    imports: tuple[ImportFact, ...] = ()
    functions: tuple[FunctionFact, ...] = ()
    classes: tuple[ClassFact, ...] = ()
    assigns: tuple[AssignFact, ...] = ()
    calls: tuple[CallFact, ...] = ()
    raises: tuple[RaiseFact, ...] = ()
    asserts: tuple[AssertFact, ...] = ()
    returns: tuple[ReturnFact, ...] = ()
    cond_scope: tuple[str, ...] = field(default=())  # scope of each cond, same order

    def cond(self, signed: int) -> Cond:
        return self.conds[abs(signed) - 1]


@dataclass(frozen=True)
class FileOutcome:
    """analysed (facts set) | failed (reason) | skipped (reason)."""

    rel: str
    status: str  # analysed | failed | skipped
    facts: FileFacts | None = None
    reason: str = ""
    line: int = 0
