"""Differential test of the incremental scan: a one-token edit of a fixture
tree, scanned with the cache of the tree before the edit, gives exactly the
JSON report that a scan of the edited tree from scratch gives.

tests/test_mode_default_incremental.py checks one such edit by hand (only a
mode option's default changes). This file looks for the others mechanically: the
mutations are generated from each fixture's own source with ``ast`` (never
written by hand), the way a mutation tester would, so that they reach the
things a verdict reads and a cache must notice:

- ``int+1`` / ``int->major``: an integer literal plus one, or replaced by
  another capability major (8, 9, 10, 12): ``device_capability_majors=[10]``,
  ``get_device_capability()[0] == 9``, a method's minimum capability;
- ``str-default`` / ``str-compare`` / ``str-choice`` / ``str-key`` /
  ``str-register`` / ``str-enum``: a string used as a default (``default=``, a
  ``ServerArgs`` field), compared with ``==``/``!=``/``in``, offered as a
  choice, keying a method table, registering a backend or valuing an enum
  member, replaced by another string of the same file;
- ``and<->or``: one boolean operator of an ``if``/``assert`` test flipped;
- ``cmp``: one comparison operator flipped (``==``/``!=``, ``<``/``<=``, ...);
- ``not-insert`` / ``not-remove``: ``not`` put before an ``if`` test, or one
  ``not`` of an ``if``/``assert`` test taken away;
- ``raise-off``: a ``raise`` or ``assert`` statement commented out (``pass``
  left in its place, so the block stays valid);
- ``name-value``: a value of a dict display (a method table's config class)
  replaced by another value of the file's tables.

Each fixture is scanned once, before any edit, into a warm cache; every
mutation then starts from a copy of that cache (``shutil.copytree``: the same
warm state each time), is applied in place (same tree path: results are keyed
by it), scanned with the copy, and the edited tree is scanned with a fresh
cache dir. The two runs of ``guardscan --format json`` must agree byte for
byte, or, where the edit makes the scan fail, fail the same way (exit code and
output). A fixed-seed sample of the mutations runs by default (at most
``PER_FIXTURE`` per case, preferring ``server_args.py`` defaults and choices,
method tables and registries, and functions that guard or raise);
``pytest --exhaustive`` runs them all.

Not vacuous: in each case, at least one sampled mutation must change a
verdict of the unedited report (so the cached scan had something stale to
give). Run with ``-s`` for the counts, and how the cache answered each scan.
"""

from __future__ import annotations

import ast
import io
import itertools
import json
import os
import random
import re
import shutil
import tokenize
from collections import defaultdict
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fixturetree import FIXTURES

import guardscan.driver
from guardscan.cli import main

#: case -> (fixture, the scan's extra arguments; every standard arch is always
#: asked): a mode option; an option alias (a choice that sets another option)
#: beside a capability guard; a default choice resolved by arch; registered
#: backends with an assert; quantization methods' tables and paths, judged
#: under each of the two methods (nvfp4 as tests/test_json_schema.py does);
#: and without --quantization, where one method's gate that spares a choice
#: leaves another method's refusal to the checkpoint (verdict.checkpoint)
CASES: dict[str, tuple[str, tuple[str, ...]]] = {
    "flow_mode_option": ("flow_mode_option", ()),
    "flow_alias": ("flow_alias", ()),
    "roles_default": ("roles_default", ()),
    "roles_registry": ("roles_registry", ()),
    "quant_method_paths-nvfp4": ("quant_method_paths", ("--quantization", "nvfp4")),
    "quant_method_paths-mxfp4": ("quant_method_paths", ("--quantization", "mxfp4")),
    "quant_checkpoint_decides": ("quant_checkpoint_decides", ()),
}
PER_FIXTURE = 12
SEED = 20240611
MAJORS = (8, 9, 10, 12)
#: a string that may stand in for another: a short name, no spaces
_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,30}$")
#: written long ago: a file is never racily clean against the cache's stat
OLD_NS = 1_600_000_000 * 10**9


# --- the mutations ------------------------------------------------------------

@dataclass(frozen=True)
class Mutation:
    """One edit of one file: bytes ``start:end`` become ``new``."""

    rel: str
    kind: str
    line: int
    start: int
    end: int
    new: bytes
    old: bytes
    preferred: bool

    def apply(self, data: bytes) -> bytes:
        assert data[self.start:self.end] == self.old, self
        return data[:self.start] + self.new + data[self.end:]

    def describe(self) -> str:
        return f"{self.rel}:{self.line} {self.kind}: {self.old.decode()!r} -> {self.new.decode()!r}"


class _Source:
    """A file's bytes with ast positions (line, UTF-8 column) as offsets."""

    def __init__(self, rel: str, data: bytes) -> None:
        self.rel = rel
        self.data = data
        self.starts = [0]
        for line in data.splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(line))

    def at(self, line: int, col: int) -> int:
        return self.starts[line - 1] + col

    def span(self, node: ast.AST) -> tuple[int, int]:
        return (self.at(node.lineno, node.col_offset),  # type: ignore[attr-defined]
                self.at(node.end_lineno, node.end_col_offset))  # type: ignore[attr-defined]

    def token_between(self, start: int, end: int, words: tuple[str, ...]) -> tuple[int, int, str]:
        """The first operator among ``words`` in ``data[start:end]``: its
        offsets and text (``not in`` and ``is not`` are one operator)."""
        gap = self.data[start:end].decode()
        lines = gap.splitlines(keepends=True) or [""]
        offsets = [0]
        for line in lines:
            offsets.append(offsets[-1] + len(line.encode()))

        def at(row: int, col: int) -> int:
            return start + offsets[row - 1] + len(lines[row - 1][:col].encode())

        tokens: list[tokenize.TokenInfo] = []
        try:  # the gap may hold an unbalanced bracket: ``) and (``
            for tok in tokenize.generate_tokens(io.StringIO(gap).readline):
                if tok.type in (tokenize.OP, tokenize.NAME):
                    tokens.append(tok)
        except (tokenize.TokenError, IndentationError):
            pass
        for index, tok in enumerate(tokens):
            text, last = tok.string, tok
            after = tokens[index + 1] if index + 1 < len(tokens) else None
            if after is not None and (text, after.string) in (("not", "in"), ("is", "not")):
                text, last = f"{text} {after.string}", after
            if text in words:
                return at(*tok.start), at(*last.end), text
        raise LookupError((self.rel, gap, words))


_SWAPS = {"==": "!=", "!=": "==", "<": "<=", "<=": "<", ">": ">=", ">=": ">",
          "in": "not in", "not in": "in", "is": "is not", "is not": "is"}


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _enclosing(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> list[ast.AST]:
    chain = []
    while node in parents:
        node = parents[node]
        chain.append(node)
    return chain


def _guarding(node: ast.AST, parents: dict[ast.AST, ast.AST], src: _Source) -> bool:
    """Inside a function that raises or asserts, or a statement about the
    device capability (``is_sm100_supported = lru_cache(partial(...))``)."""
    chain = _enclosing(node, parents)
    for outer in chain:
        if isinstance(outer, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                isinstance(n, (ast.Raise, ast.Assert)) for n in ast.walk(outer)):
            return True
    statements = [n for n in (node, *chain) if isinstance(n, ast.stmt)]
    if statements:
        start, end = src.span(statements[0])
        return b"capability" in src.data[start:end]
    return False


def _table(node: ast.AST | None) -> bool:
    """A dict display keyed by two or more names: a method table, a registry."""
    return isinstance(node, ast.Dict) and sum(
        isinstance(k, ast.Constant) and isinstance(k.value, str) for k in node.keys) >= 2


def _string_sites(tree: ast.AST, parents: dict[ast.AST, ast.AST]) -> Iterator[tuple[ast.Constant, str]]:
    """Each string constant that names a value a verdict may read, with its kind."""
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and _NAME.match(node.value)):
            continue
        up = parents.get(node)
        if isinstance(up, ast.keyword) and up.arg == "default" or \
                isinstance(up, ast.AnnAssign) and up.value is node:
            yield node, "str-default"
        elif isinstance(up, ast.Compare):
            yield node, "str-compare"
        elif isinstance(up, (ast.List, ast.Tuple, ast.Set)):
            outer = parents.get(up)
            if isinstance(outer, ast.Compare):
                yield node, "str-compare"
            elif isinstance(outer, ast.keyword) and outer.arg == "choices" or \
                    isinstance(outer, ast.Assign) and any(
                        isinstance(t, ast.Name) and t.id.endswith("CHOICES")
                        for t in outer.targets):
                yield node, "str-choice"
        elif isinstance(up, ast.Dict) and node in up.keys:
            yield node, "str-key"
        elif isinstance(up, ast.Call) and node in up.args and "register" in ast.unparse(up.func):
            yield node, "str-register"
        elif isinstance(up, ast.Assign) and up.value is node and isinstance(
                parents.get(up), ast.ClassDef):
            yield node, "str-enum"


def mutations_of(rel: str, data: bytes) -> list[Mutation]:
    """Every single-token mutation of one file that still parses."""
    src = _Source(rel, data)
    tree = ast.parse(data)
    parents = _parents(tree)
    out: list[Mutation] = []

    def add(kind: str, node: ast.AST, start: int, end: int, new: str) -> None:
        preferred = (rel.endswith("server_args.py") and kind in ("str-default", "str-choice")) \
            or kind in ("str-key", "name-value") and _table(parents.get(node)) \
            or _guarding(node, parents, src)
        out.append(Mutation(rel, kind, node.lineno, start, end, new.encode(),  # type: ignore[attr-defined]
                            data[start:end], preferred))

    # integers: +1, or another capability major
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and type(node.value) is int:
            start, end = src.span(node)
            values = [node.value + 1, *(m for m in MAJORS if m != node.value)]
            for value in dict.fromkeys(values):
                add("int+1" if value == node.value + 1 else "int->major", node, start, end,
                    str(value))
    # strings: another short string of the same file
    pool = list(dict.fromkeys(
        n.value for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and _NAME.match(n.value)
        and not n.value.startswith("-")))  # a flag is no value
    for node, kind in _string_sites(tree, parents):
        start, end = src.span(node)
        quote = data[start:start + 1].decode()
        for other in pool:
            if other != node.value:
                add(kind, node, start, end, f"{quote}{other}{quote}")
    # tests of if / assert: and<->or, comparison operators, not
    tests = [n.test for n in ast.walk(tree) if isinstance(n, (ast.If, ast.Assert))]
    for test in tests:
        start, end = src.span(test)
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            add("not-remove", test, start, src.span(test.operand)[0], "")
        else:
            add("not-insert", test, start, start, "not ")
        for node in ast.walk(test):
            if isinstance(node, ast.BoolOp):
                word = "and" if isinstance(node.op, ast.And) else "or"
                for left, right in itertools.pairwise(node.values):
                    begin, finish, _ = src.token_between(src.span(left)[1], src.span(right)[0],
                                                         (word,))
                    add("and<->or", node, begin, finish, "or" if word == "and" else "and")
            elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) and node is not test:
                add("not-remove", node, src.span(node)[0], src.span(node.operand)[0], "")
            elif isinstance(node, ast.Compare):
                operands = [node.left, *node.comparators]
                for left, right in itertools.pairwise(operands):
                    begin, finish, text = src.token_between(
                        src.span(left)[1], src.span(right)[0], tuple(_SWAPS))
                    add("cmp", node, begin, finish, _SWAPS[text])
    # a table's value (a method's config class, a backend's factory): another
    # value of the file's tables
    names = list(dict.fromkeys(
        ast.unparse(v) for n in ast.walk(tree) if isinstance(n, ast.Dict)
        for v in n.values if isinstance(v, (ast.Name, ast.Attribute))))
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for value in node.values:
                if isinstance(value, (ast.Name, ast.Attribute)):
                    start, end = src.span(value)
                    for other in names:
                        if other != ast.unparse(value):
                            add("name-value", value, start, end, other)
    # raise / assert commented out, `pass` in its place
    for node in ast.walk(tree):
        if isinstance(node, (ast.Raise, ast.Assert)):
            start, end = src.span(node)
            text = data[start:end].decode()
            add("raise-off", node, start, end, "pass  # " + text.replace("\n", "\n#"))
    valid = []
    for mutation in dict.fromkeys(out):
        try:
            ast.parse(mutation.apply(data))
        except SyntaxError:
            continue
        valid.append(mutation)
    return valid


def fixture_mutations(name: str) -> list[Mutation]:
    """Every mutation of every file of a fixture tree, in a fixed order."""
    root = FIXTURES / name
    found: list[Mutation] = []
    for path in sorted(root.rglob("*.py")):
        data = path.read_bytes()
        if data.strip():
            found += mutations_of(path.relative_to(root).as_posix(), data)
    return found


def sample(mutations: list[Mutation], count: int, key: str, seed: int = SEED) -> list[Mutation]:
    """At most ``count``, the same every run: round robin over the kinds,
    preferred ones first, each kind's order shuffled with a fixed seed."""
    rng = random.Random(f"{seed}:{key}")
    picked: list[Mutation] = []
    for preferred in (True, False):
        pools: dict[str, list[Mutation]] = defaultdict(list)
        for mutation in mutations:
            if mutation.preferred == preferred:
                pools[mutation.kind].append(mutation)
        for pool in pools.values():
            rng.shuffle(pool)
        kinds = sorted(pools)
        rng.shuffle(kinds)
        while len(picked) < count and any(pools.values()):
            for kind in kinds:
                if pools[kind] and len(picked) < count:
                    picked.append(pools[kind].pop())
    return picked


def sampled_mutations(case: str, count: int = PER_FIXTURE) -> list[Mutation]:
    """At most ``count`` mutations of the case's fixture (``sample``): the
    preferred ones are ``server_args.py`` defaults and choices, method tables
    and registries, functions that guard or raise."""
    return sample(fixture_mutations(CASES[case][0]), count, case)


# --- the scans ----------------------------------------------------------------

@dataclass
class Scan:
    code: int
    output: str
    report: str | None
    #: how the cache answered, and the linking units (replayed, run)
    cache: str
    units: tuple[int, int]

    def verdicts(self) -> dict[tuple[str, str, str, str | None], str]:
        if self.code != 0 or self.report is None:
            return {}
        rows = json.loads(self.report)["backends"]
        return {(r["option"], r["choice"], r["arch"], r["quantization"]): r["verdict"]
                for r in rows}

    def same(self, other: Scan) -> bool:
        return (self.code, self.output, self.report) == (other.code, other.output, other.report)


class Scanner:
    """``guardscan --format json`` through ``cli.main``, in process, with a
    spy on ``driver.analyse`` to tell how the cache answered."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, extra: tuple[str, ...]) -> None:
        self.extra = extra
        self.seen: list[Any] = []
        real = guardscan.driver.analyse

        def spy(opts: Any) -> Any:
            analysis = real(opts)
            self.seen.append(analysis)
            return analysis

        monkeypatch.setattr(guardscan.driver, "analyse", spy)

    def __call__(self, root: Path, cache: Path, out: Path) -> Scan:
        self.seen.clear()
        args = [str(root), "--arch", "all", *self.extra, "--format", "json", "-o", str(out),
                "--cache-dir", str(cache), "--no-kernels", "--offline", "-q"]
        stdout, stderr = io.StringIO(), io.StringIO()
        with redirect_stdout(stdout), redirect_stderr(stderr):
            code = main(args)
        report = out.read_text(encoding="utf-8") if out.exists() else None
        if out.exists():
            out.unlink()
        output = (stdout.getvalue() + stderr.getvalue()).replace(str(cache), "<cache>")
        analysis = self.seen[-1] if self.seen else None
        return Scan(code, output, report, analysis.cache if analysis else "",
                    analysis.units if analysis else (0, 0))


def _set_times(path: Path, mtime_ns: int) -> None:
    os.utime(path, ns=(mtime_ns, mtime_ns))


@dataclass
class Outcome:
    mutation: Mutation
    cached: Scan
    fresh: Scan
    changed: bool  # a verdict of the unedited report changed

    def stale(self) -> dict[tuple[str, str, str, str | None], tuple[str | None, str | None]]:
        cached, fresh = self.cached.verdicts(), self.fresh.verdicts()
        return {key: (cached.get(key), fresh.get(key)) for key in sorted(
            set(cached) | set(fresh), key=str) if cached.get(key) != fresh.get(key)}

    def explain(self) -> str:
        head = (f"{self.mutation.describe()}  [cache: {self.cached.cache!r}, "
                f"units replayed, run: {self.cached.units}]")
        lines = [head]
        if (self.cached.code, self.cached.output) != (self.fresh.code, self.fresh.output):
            lines.append(f"  exit/output cached {self.cached.code} {self.cached.output!r} "
                         f"fresh {self.fresh.code} {self.fresh.output!r}")
        stale = list(self.stale().items())
        if stale:
            lines.append(f"  {len(stale)} verdicts differ, e.g.:")
        for key, (was, now) in stale[:12]:
            lines.append(f"    {key}: cached {was}, fresh {now}")
        if self.cached.report != self.fresh.report and self.cached.report and self.fresh.report:
            lines += _evidence_diff(json.loads(self.cached.report), json.loads(self.fresh.report))
        return "\n".join(lines)


def _evidence_diff(cached: dict[str, Any], fresh: dict[str, Any], most: int = 4) -> list[str]:
    """The rows whose evidence differs (the first ``most``), and other fields."""
    def rows(report: dict[str, Any]) -> dict[tuple[str, ...], list[tuple[Any, ...]]]:
        return {(r["option"], r["choice"], r["arch"]): [
            (f'{e["path"]}:{e["line"]}', e["role"], e.get("status"), (e.get("note") or "")[:160])
            for e in r["evidence"]] for r in report["backends"]}

    lines = [f"  {key}: cached {cached[key]!r}, fresh {fresh[key]!r}"
             for key in sorted(set(cached) | set(fresh))
             if key != "backends" and cached.get(key) != fresh.get(key)]
    before, after = rows(cached), rows(fresh)
    differ = [key for key in after if before.get(key) != after[key]]
    if differ:
        lines.append(f"  evidence differs in {len(differ)} rows, e.g.:")
    for key in differ[:most]:
        old, new = before.get(key, []), after[key]
        lines.append(f"    {key}: cached only {[e for e in old if e not in new]}, "
                     f"fresh only {[e for e in new if e not in old]}")
    return lines


def run_differential(name: str, extra: tuple[str, ...], mutations: list[Mutation],
                     tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Outcome]:
    """Each mutation of fixture ``name``: the scan with the cache of the
    unedited tree against the scan from scratch (``guardscan ... *extra``)."""
    scan = Scanner(monkeypatch, extra)
    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / name, root)
    for path in root.rglob("*"):
        if path.is_file():
            _set_times(path, OLD_NS)
    warm = tmp_path / "warm"
    original = scan(root, warm, tmp_path / "original.json")
    assert original.code == 0, original.output
    assert original.cache == "no stored result", original.cache
    outcomes = []
    for number, mutation in enumerate(mutations):
        path = root / mutation.rel
        source = path.read_bytes()
        path.write_bytes(mutation.apply(source))
        _set_times(path, OLD_NS + 10_000_000)  # a new mtime, still long ago
        cache, fresh_cache = tmp_path / f"cache-{number}", tmp_path / f"fresh-{number}"
        shutil.copytree(warm, cache)
        try:
            cached = scan(root, cache, tmp_path / "cached.json")
            fresh = scan(root, fresh_cache, tmp_path / "fresh.json")
        finally:
            path.write_bytes(source)
            _set_times(path, OLD_NS)
            shutil.rmtree(cache, ignore_errors=True)
            shutil.rmtree(fresh_cache, ignore_errors=True)
        changed = fresh.code == 0 and fresh.verdicts() != original.verdicts()
        outcomes.append(Outcome(mutation, cached, fresh, changed))
    return outcomes


def _route(scan: Scan) -> str:
    """How the cache answered a scan: the stored result reused (early
    cutoff), linking replayed in part, or everything run again."""
    if not scan.cache:
        return "failed"
    if scan.cache.startswith("reused"):
        return "result reused"
    return "units replayed" if scan.units[0] else "linked afresh"


def _check(case: str, outcomes: list[Outcome]) -> None:
    differing = [o for o in outcomes if not o.cached.same(o.fresh)]
    changed = sum(o.changed for o in outcomes)
    routes: dict[str, int] = defaultdict(int)
    for o in outcomes:
        routes[_route(o.cached)] += 1
    print(f"\n{case}: {len(outcomes)} mutations, {changed} changed a verdict, "
          f"{len(differing)} cached != fresh; the cached scans: {dict(sorted(routes.items()))}")
    assert not differing, "cached scan != fresh scan after the edit:\n" + "\n".join(
        o.explain() for o in differing)
    assert changed > 0, f"{case}: no mutation changed a verdict (the test would be vacuous)"


# --- the tests ----------------------------------------------------------------

@pytest.mark.parametrize("case", sorted(CASES))
def test_sampled_mutations_cached_equals_fresh(case: str, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    name, extra = CASES[case]
    _check(case, run_differential(name, extra, sampled_mutations(case), tmp_path, monkeypatch))


@pytest.mark.exhaustive
@pytest.mark.parametrize("case", sorted(CASES))
def test_every_mutation_cached_equals_fresh(case: str, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Every mutation of every file: ``pytest --exhaustive``."""
    name, extra = CASES[case]
    _check(case, run_differential(name, extra, fixture_mutations(name), tmp_path, monkeypatch))


def test_the_mutations_are_generated_and_bounded() -> None:
    """Each fixture yields mutations of several kinds, the sample is bounded,
    the same every time, and every sampled mutation edits what it says and
    still parses."""
    kinds: set[str] = set()
    for case, (name, _extra) in CASES.items():
        every = fixture_mutations(name)
        sample = sampled_mutations(case)
        assert 0 < len(sample) <= PER_FIXTURE < len(every), case
        assert sample == sampled_mutations(case)
        for mutation in sample:
            assert mutation in every
            source = (FIXTURES / name / mutation.rel).read_bytes()
            edited = mutation.apply(source)
            assert edited != source and len(edited.splitlines()) == len(source.splitlines())
            ast.parse(edited)
        kinds |= {m.kind for m in sample}
    assert {"int+1", "int->major", "str-default", "and<->or", "not-insert", "not-remove",
            "raise-off"} <= kinds, kinds
