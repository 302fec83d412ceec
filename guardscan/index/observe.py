"""index (observations): what a scan read of each file's facts, and whether a change touches it.

The analysis is a deterministic function of what it reads: if every read
gives the same answer on changed files, the scan runs exactly as before and
its result stands. This is the result cache's *early cutoff*: a change to a
file that no read could see (a comment; a new function nobody looks up) costs
a parse of that file instead of a new analysis.

Reads are recorded as *observations*, one set per file:

- ``ALL``: the file's facts, all of them (``Index.facts``: the safe default
  for any reader that has not said more precisely what it reads);
- ``("kind", k)``: every fact of one kind (``raises``, ``calls``...);
- ``("scope", s)``: the facts (of any kind) directly in scope ``s``;
- ``("tree", s)``: the facts in scope ``s`` or nested inside it;
- ``("name", n)``: the module-level bindings of ``n``;
- ``STARS``: the module's star imports;
- ``CONDITIONAL_RETURNS``: its ``return`` statements under a branch test;
- ``("func", q)`` / ``("class", q)``: functions / classes with qualname ``q``;
- ``("cls", c)``: functions whose enclosing class is ``c``;
- ``("callee", n)`` / ``("defname", n)`` / ``("imported", n)``: the calls
  of a callee whose last name is ``n``, the functions named ``n``, the
  ``from m import n`` imports;
- ``("cond", i)``: branch test number ``i`` (and its scope);
- ``DATA``: the raw bytes (any byte changed is seen);
- ``("re", pattern, flags, found)``, ``("findall", ...)``, ``("count", ...)``, ``("reader",
  module, function, answer)``: a question about the raw bytes and its answer
  (asked again of changed bytes).

Readers get a :class:`FactsView`, whose accessors record what they return;
the few that build their own lookup tables from ``unobserved`` record each
lookup themselves. Line texts shown as evidence and whole-tree pre-filters are
checked separately (by the result cache).
"""

from __future__ import annotations

import importlib
import re
from array import array
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from guardscan.index.facts import (
    AssignFact,
    CallFact,
    ClassFact,
    Cond,
    FileFacts,
    FileOutcome,
    FunctionFact,
    ImportFact,
    target_names,
)

__all__ = ["ALL", "DATA", "KINDS", "OUTCOME", "STARS", "FactsView", "Read", "Reads", "Recorder",
           "Seen", "Table", "changed_keys", "count_captures", "numbers", "text_answer_changed", "unseen_change"]

Seen = set[tuple[Any, ...]]

ALL: tuple[str] = ("all",)
DATA: tuple[str] = ("data",)
STARS: tuple[str] = ("stars",)
#: the file's ``return`` statements under a branch test
CONDITIONAL_RETURNS: tuple[str] = ("returns-on-path",)
#: the file was looked at (its outcome: parsed, or why not)
OUTCOME: tuple[str] = ("outcome",)

#: a read: (file, observation)
Read = tuple[str, tuple[Any, ...]]


class Table:
    """Numbers for values (reads, questions), so that a record stores each
    value once and a set of them as a few bytes. A table only grows: numbers
    of an earlier record stay valid in the next one."""

    def __init__(self, items: list[Any] | None = None) -> None:
        self.items: list[Any] = list(items or ())
        self.ids: dict[Any, int] = {item: i for i, item in enumerate(self.items)}

    def id(self, value: Any) -> int:
        number = self.ids.get(value)
        if number is None:
            number = self.ids[value] = len(self.items)
            self.items.append(value)
        return number

    def encode(self, values: Iterable[Any]) -> bytes:
        return array("I", [self.id(v) for v in values]).tobytes()

    def decode(self, data: bytes) -> tuple[Any, ...]:
        items = self.items
        return tuple(items[i] for i in numbers(data))


def numbers(data: bytes) -> array[int]:
    found = array("I")
    found.frombytes(data)
    return found


class Recorder:
    """Where reads go besides the per-file ``seen`` sets: the *frame* of the
    computation running now, if any. The vocabulary and the linker open a
    frame per memoised answer and per unit of work, so each knows exactly
    what it read (see ``guardscan.memo.records``).

    Each distinct read gets a number, once (``table``): a frame is a
    set of numbers, and what a computation read is handed back as those
    numbers' bytes (:data:`Reads`, four bytes a read), which memos keep and
    add to the frame that reuses them. A scan's record of linking stores this
    table beside its answers and units, and the next scan numbers its reads
    on from it (``adopt``), so the stored numbers stay valid."""

    __slots__ = ("_distinct", "frame", "table")

    def __init__(self) -> None:
        self.frame: set[int] | None = None
        #: every read numbered (one object per distinct read)
        self.table = Table()
        #: one object per distinct set of reads handed out: memos keep the
        #: same reads many times over (a scan of sglang 0.5.23 from stored
        #: facts: 121k distinct of 285k, 15 of 32 MB)
        self._distinct: dict[Reads, Reads] = {}

    def note(self, rel: str, key: tuple[Any, ...]) -> None:
        """``key`` was read of ``rel``: into the current frame, if any."""
        frame = self.frame
        if frame is not None:
            pair = (rel, key)
            table = self.table
            number = table.ids.get(pair)
            frame.add(number if number is not None else table.id(pair))

    def open(self) -> set[int] | None:
        """Start a new frame; returns the one it interrupts (for ``close``)."""
        saved = self.frame
        self.frame = set()
        return saved

    def close(self, saved: set[int] | None, merge: bool = True) -> Reads:
        """End the current frame, go back to ``saved`` (adding what this frame
        read to it, when ``merge``), and return this frame's reads."""
        frame = self.frame
        self.frame = saved
        if not frame:
            return b""
        if merge and saved is not None:
            saved |= frame
        # in order: the same reads give the same bytes, kept once
        data = array("I", sorted(frame)).tobytes()
        return self._distinct.setdefault(data, data)

    def add(self, reads: Reads) -> None:
        """Reads done earlier on the current computation's behalf (a memo hit)."""
        if reads and self.frame is not None:
            self.frame.update(numbers(reads))

    def decode(self, reads: Reads) -> tuple[Read, ...]:
        """The reads themselves, for a record kept apart from this table."""
        return self.table.decode(reads)

    def adopt(self, items: list[Read]) -> bool:
        """Number reads on from an earlier record's table ``items`` (whose
        numbers its answers and units use). Only before this recorder
        numbered anything: returns whether it did."""
        if self.table.items:
            return False
        self.table = Table(items)
        return True

    def reset(self) -> None:
        """Let go of the table: only once no memo keeps numbers of it."""
        self.table, self._distinct = Table(), {}


#: what a computation read, as the numbers of its reads in the recorder's
#: table (``array("I")`` bytes, in increasing order)
Reads = bytes

#: The per-statement fact kinds of ``FileFacts`` (``conds`` are read by number).
KINDS = ("imports", "functions", "classes", "assigns", "calls", "raises", "asserts", "returns")


class FactsView:
    """One file's facts, recording what is read of them into ``seen``."""

    __slots__ = ("module", "rec", "rel", "seen", "unobserved")

    def __init__(self, facts: FileFacts, seen: Seen, rec: Recorder | None = None) -> None:
        #: the facts themselves, for building lookup tables: whoever reads
        #: through this records each lookup with :meth:`note`
        self.unobserved = facts
        self.seen = seen
        self.rec = rec or Recorder()
        self.rel = facts.rel
        self.module = facts.module

    def note(self, *key: Any) -> None:
        self._see(key)

    def _see(self, key: tuple[Any, ...]) -> None:
        self.seen.add(key)
        rec = self.rec
        frame = rec.frame
        if frame is not None:
            pair = (self.rel, key)
            table = rec.table
            number = table.ids.get(pair)
            frame.add(number if number is not None else table.id(pair))

    def kind(self, name: str) -> tuple[Any, ...]:
        """Every fact of one kind."""
        self._see(("kind", name))
        return getattr(self.unobserved, name)  # type: ignore[no-any-return]

    @property
    def raises(self) -> tuple[Any, ...]:
        return self.kind("raises")

    @property
    def asserts(self) -> tuple[Any, ...]:
        return self.kind("asserts")

    @property
    def calls(self) -> tuple[Any, ...]:
        return self.kind("calls")

    @property
    def assigns(self) -> tuple[Any, ...]:
        return self.kind("assigns")

    @property
    def functions(self) -> tuple[Any, ...]:
        return self.kind("functions")

    @property
    def classes(self) -> tuple[Any, ...]:
        return self.kind("classes")

    @property
    def imports(self) -> tuple[Any, ...]:
        return self.kind("imports")

    @property
    def returns(self) -> tuple[Any, ...]:
        return self.kind("returns")

    @property
    def conds(self) -> tuple[Cond, ...]:
        self._see(ALL)  # every branch test, by number: rare, read as all
        return self.unobserved.conds

    @property
    def cond_scope(self) -> tuple[str, ...]:
        self._see(ALL)
        return self.unobserved.cond_scope

    def cond_scope_of(self, signed: int) -> str:
        """The scope branch test ``signed`` is written in."""
        self._see(("cond", abs(signed)))
        return self.unobserved.cond_scope[abs(signed) - 1]

    def cond(self, signed: int) -> Cond:
        self._see(("cond", abs(signed)))
        return self.unobserved.cond(signed)

    def function(self, qualname: str) -> FunctionFact | None:
        """The first function defined with this qualified name."""
        self._see(("func", qualname))
        return next((f for f in self.unobserved.functions if f.qualname == qualname), None)

    def has_class(self, qualname: str) -> bool:
        self._see(("class", qualname))
        return any(c.qualname == qualname for c in self.unobserved.classes)

    def in_scope(self, kind: str, scope: str) -> list[Any]:
        """Facts of one kind directly in ``scope``, in file order."""
        self._see(("scope", scope))
        return [f for f in getattr(self.unobserved, kind) if f.scope == scope]

    def conditional_returns(self) -> list[Any]:
        """The ``return`` statements under some branch test, in file order
        (a new unconditional ``return`` elsewhere is not seen)."""
        self._see(CONDITIONAL_RETURNS)
        return [r for r in self.unobserved.returns if r.path]

    def calls_of(self, name: str) -> list[Any]:
        """The calls whose callee's last name is ``name`` (``f(...)``,
        ``m.f(...)``), in file order."""
        self._see(("callee", name))
        return [c for c in self.unobserved.calls if c.func.rpartition(".")[2] == name]

    def functions_named(self, name: str) -> list[FunctionFact]:
        """The functions (and methods) named ``name``, in file order."""
        self._see(("defname", name))
        return [f for f in self.unobserved.functions if f.name == name]

    def imports_of(self, name: str) -> list[ImportFact]:
        """The ``from m import name`` imports (any scope, any local name)."""
        self._see(("imported", name))
        return [i for i in self.unobserved.imports if i.name == name]

    def in_tree(self, kind: str, scope: str) -> list[Any]:
        """Facts of one kind in ``scope`` or nested inside it, in file order."""
        self._see(("tree", scope))
        prefix = scope + "."
        return [f for f in getattr(self.unobserved, kind)
                if f.scope == scope or f.scope.startswith(prefix)]


def _keys_of(fact: Any, kind: str) -> Iterable[tuple[Any, ...]]:
    """Every observation that would have seen ``fact``."""
    yield ("kind", kind)
    if kind == "returns" and fact.path:
        yield CONDITIONAL_RETURNS
    scope: str = fact.scope
    yield ("scope", scope)
    current = scope
    while True:
        yield ("tree", current)
        if not current:
            break
        current = current.rpartition(".")[0]
    if isinstance(fact, CallFact):
        yield ("callee", fact.func.rpartition(".")[2])
    elif isinstance(fact, ImportFact) and fact.name:
        yield ("imported", fact.name)
    if isinstance(fact, FunctionFact):
        yield ("func", fact.qualname)
        yield ("cls", fact.cls)
        yield ("defname", fact.name)
        for name in fact.globals:  # it assigns the module's binding of the name
            yield ("name", name)
    elif isinstance(fact, ClassFact):
        yield ("class", fact.qualname)
    if scope:
        return
    if isinstance(fact, AssignFact):
        for target in fact.targets:
            for name in target_names(target):
                yield ("name", name)
    elif isinstance(fact, FunctionFact):
        yield ("name", fact.name)
    elif isinstance(fact, ClassFact):
        yield ("name", fact.qualname)
    elif isinstance(fact, ImportFact):
        yield ("name", fact.local)
        if fact.local == "*":
            yield STARS


def unseen_change(old: FileOutcome | None, new: FileOutcome | None, seen: Seen | frozenset[
        tuple[Any, ...]], data: bytes) -> str | None:
    """None when no recorded observation of a file can tell its ``old``
    outcome from its ``new`` one (None for both: the file was only read as
    text) and its new bytes ``data`` answer every text query as before;
    otherwise why a new analysis is needed."""
    if ALL in seen or DATA in seen:
        return "read whole"
    for key in seen:
        if key[0] in _TEXT_QUERIES and _TEXT_QUERIES[key[0]](key, data) != key[-1]:
            return f"a text query answers differently ({key[0]})"
    if old is None or new is None:
        return None if old is new else "outcome changed"
    if (old.status, old.reason, old.line) != (new.status, new.reason, new.line):
        return "outcome changed"
    if old.facts is None or new.facts is None:
        return None if old.facts is new.facts else "outcome changed"
    before, after = old.facts, new.facts
    if (before.rel, before.module) != (after.rel, after.module):
        return "module changed"
    for key in seen:
        if key[0] == "cond":
            number = key[1]
            if _cond(before, number) != _cond(after, number):
                return f"branch test {number} changed"
    for kind, changed in _kind_changes(before, after):
        if changed is None:
            return f"{kind} reordered"
        for fact in changed:
            for key in _keys_of(fact, kind):
                if key in seen:
                    return f"{kind} at line {fact.line} changed ({key[0]} read)"
            # a star import can answer for any name the module lacks
            if isinstance(fact, ImportFact) and fact.local == "*" and not fact.scope and \
                    any(key[0] == "name" for key in seen):
                return f"star import at line {fact.line} changed (names looked up)"
    return None


def _kind_changes(before: FileFacts, after: FileFacts) -> list[tuple[str, list[Any] | None]]:
    """Per kind that differs: the facts in one version and not the other, or
    None when the kind's facts were only reordered."""
    out: list[tuple[str, list[Any] | None]] = []
    for kind in KINDS:
        old_facts: tuple[Any, ...] = getattr(before, kind)
        new_facts: tuple[Any, ...] = getattr(after, kind)
        if old_facts == new_facts:
            continue
        counts = Counter(old_facts)
        counts.subtract(Counter(new_facts))
        changed = [fact for fact, count in counts.items() if count]
        out.append((kind, changed or None))
    return out


def changed_keys(old: FileOutcome | None, new: FileOutcome | None,
                 ) -> tuple[frozenset[tuple[Any, ...]], bool] | None:
    """The observations of a file's facts that can tell ``old`` from ``new``:
    (keys, names), where ``names`` says that any module-level name lookup can
    (a star import changed). None when every read of the file can (its
    outcome or module changed, or facts were reordered). ``ALL``, ``DATA``
    and text queries are not covered: a reader of those sees any change of
    the bytes. Agrees with :func:`unseen_change` on fact observations."""
    if old is None or new is None:
        return (frozenset(), False) if old is new else None
    if (old.status, old.reason, old.line) != (new.status, new.reason, new.line):
        return None
    if old.facts is None or new.facts is None:
        return (frozenset(), False) if old.facts is new.facts else None
    before, after = old.facts, new.facts
    if (before.rel, before.module) != (after.rel, after.module):
        return None
    keys: set[tuple[Any, ...]] = set()
    names = False
    for number in range(1, max(len(before.conds), len(after.conds)) + 1):
        if _cond(before, number) != _cond(after, number):
            keys.add(("cond", number))
    for kind, changed in _kind_changes(before, after):
        if changed is None:
            return None  # reordered
        for fact in changed:
            keys.update(_keys_of(fact, kind))
            if isinstance(fact, ImportFact) and fact.local == "*" and not fact.scope:
                names = True
    return frozenset(keys), names


def _search(key: tuple[Any, ...], data: bytes) -> bool:
    return bool(re.compile(key[1], key[2]).search(data))


def _findall(key: tuple[Any, ...], data: bytes) -> tuple[Any, ...]:
    return tuple(re.compile(key[1], key[2]).findall(data))


def count_captures(pattern: re.Pattern[bytes], data: bytes) -> int:
    """Matches of ``pattern`` in ``data`` that capture a group."""
    return sum(1 for match in pattern.finditer(data) if match.lastindex)


def _count(key: tuple[Any, ...], data: bytes) -> int:
    return count_captures(re.compile(key[1], key[2]), data)


def _reader(key: tuple[Any, ...], data: bytes) -> Any:
    reader: Any = importlib.import_module(key[1])
    for part in key[2].split("."):
        reader = getattr(reader, part)
    return reader(data)


#: observations that are answers of the file's bytes, asked again of new bytes
_TEXT_QUERIES: dict[str, Callable[[tuple[Any, ...], bytes], Any]] = {
    "re": _search, "findall": _findall, "count": _count, "reader": _reader}


def text_answer_changed(key: tuple[Any, ...], data: bytes) -> bool:
    """For a text-query observation (``re``, ``findall``, ``reader``): does
    ``data`` answer it differently? False for any other observation."""
    query = _TEXT_QUERIES.get(key[0])
    return query is not None and query(key, data) != key[-1]


def _cond(facts: FileFacts, number: int) -> tuple[Cond, str] | None:
    if number > len(facts.conds):
        return None
    scope = facts.cond_scope[number - 1] if number <= len(facts.cond_scope) else ""
    return facts.conds[number - 1], scope
