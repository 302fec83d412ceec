"""Differential test of the cache paths a narrower question takes: each
answer given with a warm cache is exactly the answer the same question gets
with a fresh cache dir.

tests/test_edit_differential.py checks one path: the same scan (every arch,
``--no-kernels``) after a one-token edit. A narrower question takes others:

- ``--option F`` and ``explain CHOICE --option F`` after a full scan are
  answered from the full scan's stored result, narrowed (``memo.narrow``);
- ``--arch X``, ``--quantization M`` and both link from the last stored scan
  of the tree's family (``memo.results``, ``<family>.family``), and judge
  afresh;
- with a kernel library, ``--arch X`` after a scan of every arch replays that
  scan's kernel answers with the other archs' left out
  (``memo.kernel_answers``, ``borrowed``), and any scan replays the stored
  answers while the library is unchanged.

Three tests, each over fixture trees, and each question's cached answer
compared, byte for byte (exit code, output, JSON), with a fresh cache dir's:

1. ``test_narrower_questions_after_a_full_scan``: a full scan (every arch),
   then on the SAME cache, one after another: ``--option F`` for each option,
   ``--arch X`` for each arch, ``--quantization M`` for each method, ``--arch X
   --quantization M``, ``--arch X --option F``, ``explain CHOICE --option F``
   (every arch, one arch, one method), and the full scan again.
2. ``test_narrower_questions_after_an_sglang_edit``: a full scan on cache A;
   then each one-token edit of the SGLang tree (test_edit_differential's
   generator) and, on a copy of A, a few of those questions in a seeded
   order (the first one after the edit is the one that sees the edit).
3. ``test_questions_after_a_kernel_library_edit``: trees paired with a
   FlashInfer-shaped kernel tree (a fixture that holds both, or a fixture
   ``kernels_*`` library with an SGLang tree written here whose choices call
   each of its public functions); the kernel tree's files edited, Python
   (test_edit_differential's mutations, and SM versions swapped: 90, 100,
   120, "120") and C++/CUDA text (integer literals such as ``__CUDA_ARCH__ >=
   1000`` and ``major, 9``, comparison and logical operators, ``kSM_``
   constants), then the same questions, the full scan and ``--arch X`` among
   them.

Each edit is asked on a copy of one of two warm caches, in turn: the full
scan's alone, or the full scan's and every question's (a question then finds
its own stored entry and reuses its judged choices). One case adds a file
that may define options and does not parse (as options_odd's): its
diagnostics must come out whatever the scan reuses. And
``test_a_same_size_rewrite_right_after_a_scan``: a file rewritten with the
same size right after a scan, its stat unchanged (a coarse mtime clock), on
each side: SGLang's files are re-read then (racily clean), the kernel
library's must be too.

A fixed-seed sample runs by default (8 edits per case, 4 questions each);
``pytest --exhaustive`` runs every question after a full scan, over every
SGLang fixture, and every edit (6 questions each). Not vacuous: in tests 2
and 3 some edit must change a verdict a fresh scan gives (run with ``-s``
for the counts and how the cache answered each question).
"""

from __future__ import annotations

import ast
import io
import json
import os
import random
import re
import shutil
import time
from collections import defaultdict
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fixturetree import FIXTURES
from test_edit_differential import OLD_NS, Mutation, mutations_of
from test_edit_differential import sample as sample_of

import guardscan.driver
from guardscan.cli import main

SEED = 20240612
#: SM versions a literal may be swapped for (``@supported_compute_capability``
#: lists, ``sm_version >= 90``, ``"120"`` dispatch keys); ``__CUDA_ARCH__``
#: values; capability majors
SM = (80, 89, 90, 100, 103, 110, 120, 121)
CUDA_ARCH = (800, 900, 1000, 1030, 1200)
MAJORS = (8, 9, 10, 11, 12)


# --- the trees ----------------------------------------------------------------

#: an SGLang tree whose choices call a kernel library's public functions (see
#: ``_synth_sglang``): two options, the calls dealt between them, each with a
#: call of a name the library lacks (an option-owned diagnostic) and one call
#: both make (a kernel question two options ask)
_SERVER_ARGS = '''\
import argparse
import dataclasses

MOE_RUNNER_BACKEND_CHOICES = {moe!r}
FP4_GEMM_BACKEND_CHOICES = {fp4!r}


@dataclasses.dataclass
class ServerArgs:
    moe_runner_backend: str = "triton"
    fp4_gemm_backend: str = "triton"
    quantization: str = None

    @staticmethod
    def add_cli_args(parser: argparse.ArgumentParser):
        parser.add_argument(
            "--moe-runner-backend",
            type=str,
            choices=MOE_RUNNER_BACKEND_CHOICES,
            default=ServerArgs.moe_runner_backend,
        )
        parser.add_argument(
            "--fp4-gemm-backend",
            type=str,
            choices=FP4_GEMM_BACKEND_CHOICES,
            default=ServerArgs.fp4_gemm_backend,
        )
'''


def _library_calls(kernel_root: Path) -> list[str]:
    """A call (``flashinfer.mod.fn(x, backend="b")``) of each public
    top-level function of the library's modules (not ``jit/``, ``utils``), and
    of each with ``backend=`` set to each string key of its module's tables."""
    calls: list[str] = []
    for path in sorted((kernel_root / "flashinfer").rglob("*.py")):
        parts = path.relative_to(kernel_root).with_suffix("").parts
        if parts[-1] == "__init__" or "jit" in parts or parts[-1] in ("utils", "artifacts"):
            continue
        tree = ast.parse(path.read_bytes())
        keys = list(dict.fromkeys(
            k.value for n in ast.walk(tree) if isinstance(n, ast.Dict) for k in n.keys
            if isinstance(k, ast.Constant) and isinstance(k.value, str)))
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef) or node.name.startswith("_"):
                continue
            names = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
            args = ["x"] * (len(names) - len(node.args.defaults))
            target = ".".join((*parts, node.name))
            calls.append(f"{target}({', '.join(args)})")
            if "backend" in names:
                calls += [f"{target}({', '.join([*args, f'backend={k!r}'])})" for k in keys]
    return calls


def _synth_sglang(root: Path, calls: list[str]) -> None:
    moe, fp4 = ["triton"], ["triton"]
    runner = ["import flashinfer", "", ""]
    per: dict[str, list[tuple[str, str]]] = {"moe_runner_backend": [], "fp4_gemm_backend": []}
    shared = calls[0] if calls else "flashinfer.not_there_shared(x)"
    for number, call in enumerate([*calls, shared]):
        dest, choices = (("moe_runner_backend", moe) if number % 2 == 0 or number == len(calls)
                         else ("fp4_gemm_backend", fp4))
        choice = f"k{number}"
        choices.append(choice)
        per[dest].append((choice, call))
    per["fp4_gemm_backend"].append(("k_shared", shared))
    fp4.append("k_shared")
    for dest, choices in (("moe_runner_backend", moe), ("fp4_gemm_backend", fp4)):
        per[dest].append((f"missing_{dest[:3]}", f"flashinfer.not_there_{dest[:3]}(x)"))
        choices.append(f"missing_{dest[:3]}")
        runner += ["", f"def run_{dest}(server_args, x):"]
        for choice, call in per[dest]:
            runner += [f"    if server_args.{dest} == {choice!r}:", f"        return {call}"]
        runner += ["    return x", ""]
    files = {
        "sglang/__init__.py": "",
        "sglang/srt/__init__.py": "",
        "sglang/srt/layers/__init__.py": "",
        "sglang/srt/server_args.py": _SERVER_ARGS.format(moe=moe, fp4=fp4),
        "sglang/srt/layers/runner.py": "\n".join(runner),
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


@dataclass(frozen=True)
class Case:
    """``sglang``: the fixture of the SGLang tree (None: written here);
    ``kernels``: the fixture holding the kernel tree (the same one: it holds
    both; None: ``--no-kernels``); ``extra``: more arguments for every scan;
    ``files``: files added to the SGLang tree."""

    sglang: str | None
    kernels: str | None = None
    extra: tuple[str, ...] = ()
    files: tuple[tuple[str, str], ...] = ()


#: a file that may define options and does not parse (as options_odd's): the
#: scan reports it (``unreadable-file``, ``file-failed``) whatever it reuses
BROKEN = (("sglang/srt/broken_args.py",
           'def add_cli_args(parser):\n    parser.add_argument("--broken-backend", choices=["a"]\n'),)


#: test 1 and 2: trees with several options, quantization methods, aliases,
#: registries, and two with their kernel library
CASES: dict[str, Case] = {
    "quant_method_paths": Case("quant_method_paths"),
    "quant_checkpoint_decides": Case("quant_checkpoint_decides"),
    "flow_alias": Case("flow_alias"),
    "flow_method_config": Case("flow_method_config"),
    "roles_registry+broken": Case("roles_registry", files=BROKEN),
    "gate_hook+kernels": Case("gate_hook", "gate_hook"),
    "flow_kernel_arguments+kernels": Case("flow_kernel_arguments", "flow_kernel_arguments"),
}
#: test 1, exhaustive: every SGLang fixture (``--no-kernels``), the cases above,
#: and gate_server_args with its kernel library
EVERY_CASE: dict[str, Case] = {
    **{p.name: Case(p.name) for p in sorted(FIXTURES.iterdir()) if (p / "sglang").is_dir()},
    **CASES,
    "gate_server_args+kernels": Case("gate_server_args", "gate_server_args"),
}
#: test 3: kernel trees, with the SGLang tree beside them (the decorator form
#: is gate_hook's too: kernels_decorator runs in the exhaustive run only)
KERNEL_CASES: dict[str, Case] = {
    "gate_hook+kernels": Case("gate_hook", "gate_hook"),
    "flow_kernel_arguments+kernels": Case("flow_kernel_arguments", "flow_kernel_arguments"),
    **{f"synth+{name}": Case(None, name) for name in (
        "kernels_cpp", "kernels_check", "kernels_callgraph", "kernels_artifacts",
        "kernels_dispatch")},
}
EVERY_KERNEL_CASE: dict[str, Case] = {
    **KERNEL_CASES,
    **{f"synth+{name}": Case(None, name) for name in ("kernels_decorator",)},
    "gate_server_args+kernels": Case("gate_server_args", "gate_server_args"),
}


@dataclass
class Trees:
    root: Path
    kernel_root: Path | None

    def kernel_args(self) -> tuple[str, ...]:
        return ("--flashinfer", str(self.kernel_root)) if self.kernel_root else ("--no-kernels",)


def _old(root: Path) -> None:
    for path in root.rglob("*"):
        if path.is_file():
            _set_times(path, OLD_NS)


def _set_times(path: Path, ns: int) -> None:
    os.utime(path, ns=(ns, ns))


def make_trees(case: Case, tmp_path: Path) -> Trees:
    root = tmp_path / "tree"
    kernel_root = None
    if case.sglang is not None:
        shutil.copytree(FIXTURES / case.sglang, root)
        if case.kernels == case.sglang:
            kernel_root = root
    if case.kernels is not None and kernel_root is None:
        kernel_root = tmp_path / "kernels"
        shutil.copytree(FIXTURES / case.kernels, kernel_root)
        if case.sglang is None:
            _synth_sglang(root, _library_calls(kernel_root))
    for rel, text in case.files:
        (root / rel).write_text(text, encoding="utf-8")
    _old(root)
    if kernel_root is not None:
        _old(kernel_root)
    return Trees(root, kernel_root)


# --- the mutations --------------------------------------------------------------

def _sm_mutations(rel: str, data: bytes) -> list[Mutation]:
    """An SM version in Python (an int 80..121, or a string of one) swapped
    for another."""
    out = []
    starts = [0]
    for line in data.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    for node in ast.walk(ast.parse(data)):
        if not isinstance(node, ast.Constant):
            continue
        value = node.value
        number = int(value) if isinstance(value, str) and value.isdigit() else value
        if type(number) is not int or not 80 <= number <= 121:
            continue
        start = starts[node.lineno - 1] + node.col_offset
        end = starts[node.end_lineno - 1] + node.end_col_offset  # type: ignore[operator]
        old = data[start:end]
        for other in SM:
            if other != number:
                new = (f"{old[:1].decode()}{other}{old[:1].decode()}" if isinstance(value, str)
                       else str(other))
                out.append(Mutation(rel, "sm-str" if isinstance(value, str) else "sm-int",
                                    node.lineno, start, end, new.encode(), old, True))
    return out


_CPP_INT = re.compile(rb"(?<![\w.])\d+(?![\w.])")
_CPP_OPS = {b"==": b"!=", b"!=": b"==", b">=": b">", b"<=": b"<", b"&&": b"||", b"||": b"&&"}
_CPP_OP = re.compile(rb"==|!=|>=|<=|&&|\|\|")
_CPP_KSM = re.compile(rb"\bkSM_(\d+)\b")
_CPP_COMMENT = re.compile(rb"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"", re.DOTALL)


def cpp_mutations(rel: str, data: bytes) -> list[Mutation]:
    """One-token edits of C++/CUDA text (never in a comment or a string): an
    integer literal (+1, another SM version, ``__CUDA_ARCH__`` value or major),
    a comparison or logical operator, a ``kSM_`` constant for another."""
    skip = [m.span() for m in _CPP_COMMENT.finditer(data)]

    def free(start: int) -> bool:
        return not any(a <= start < b for a, b in skip)

    def line(start: int) -> int:
        return data.count(b"\n", 0, start) + 1

    out = []
    for match in _CPP_INT.finditer(data):
        if not free(match.start()) or data[match.start() - 1:match.start()] in (b"#",):
            continue
        value = int(match.group())
        pool = CUDA_ARCH if value >= 800 else SM if value >= 80 else MAJORS if value >= 7 else ()
        values = dict.fromkeys([value + 1, *(v for v in pool if v != value)])
        for other in values:
            out.append(Mutation(rel, "cpp-int", line(match.start()), *match.span(),
                                str(other).encode(), match.group(), bool(pool)))
    for match in _CPP_OP.finditer(data):
        if free(match.start()):
            out.append(Mutation(rel, "cpp-op", line(match.start()), *match.span(),
                                _CPP_OPS[match.group()], match.group(), True))
    names = sorted(set(_CPP_KSM.findall(data)))
    for match in _CPP_KSM.finditer(data):
        if free(match.start()):
            for other in names:
                if other != match.group(1):
                    out.append(Mutation(rel, "cpp-ksm", line(match.start()), *match.span(1),
                                        other, match.group(1), True))
    return out


_CPP_SUFFIXES = (".cu", ".cuh", ".h", ".hpp", ".cpp", ".cc")


def tree_mutations(root: Path, under: str) -> list[Mutation]:
    """Every mutation of the files of ``root/under`` (a package dir), rel to ``root``."""
    found: list[Mutation] = []
    for path in sorted((root / under).rglob("*")):
        if not path.is_file():
            continue
        rel = path.relative_to(root).as_posix()
        data = path.read_bytes()
        if path.suffix == ".py" and data.strip():
            try:
                ast.parse(data)
            except SyntaxError:
                continue  # a file that does not parse (options_odd's broken.py)
            found += mutations_of(rel, data)
            found += [m for m in _sm_mutations(rel, data) if _parses(m, data)]
        elif path.suffix in _CPP_SUFFIXES:
            found += cpp_mutations(rel, data)
    return list(dict.fromkeys(found))


def _parses(mutation: Mutation, data: bytes) -> bool:
    try:
        ast.parse(mutation.apply(data))
    except SyntaxError:
        return False
    return True


def sample(mutations: list[Mutation], count: int, key: str) -> list[Mutation]:
    """At most ``count``, the same every run (``test_edit_differential.sample``;
    for a kernel tree, the kinds tell Python and C++ files apart)."""
    return sample_of(mutations, count, key, SEED)


# --- the questions --------------------------------------------------------------

@dataclass(frozen=True)
class Question:
    kind: str
    #: the arguments before the target (``explain CHOICE``) and after it
    before: tuple[str, ...]
    after: tuple[str, ...]

    def command(self, target: str = "TREE") -> str:
        return " ".join(["guardscan", *self.before, target, *self.after])


FULL = Question("full", (), ("--arch", "all"))


def questions_of(full: dict[str, Any], methods: tuple[str, ...], exhaustive: bool,
                 key: str) -> list[Question]:
    """The narrower questions about a tree whose full scan gave ``full``."""
    rng = random.Random(f"{SEED}:{key}")
    options = list(dict.fromkeys(row["option"] for row in full["backends"]))
    choices = {o: list(dict.fromkeys(r["choice"] for r in full["backends"] if r["option"] == o))
               for o in options}
    archs = list(full["archs"])
    out = [Question("option", (), ("--arch", "all", "--option", o)) for o in options]
    out += [Question("arch", (), ("--arch", a)) for a in archs]
    out += [Question("quant", (), ("--arch", "all", "--quantization", m)) for m in methods]
    for number, method in enumerate(methods):
        for arch in (archs if exhaustive else [archs[(3 + 4 * number) % len(archs)]]):
            out.append(Question("arch+quant", (), ("--arch", arch, "--quantization", method)))
    for option in options if exhaustive else options[:1]:
        out.append(Question("arch+option", (), ("--arch", rng.choice(archs), "--option", option)))
    for option in options:
        for choice in choices[option] if exhaustive else [rng.choice(choices[option])]:
            out.append(Question("explain", ("explain", choice),
                                ("--option", option, "--arch", "all")))
    option = options[-1]
    choice = rng.choice(choices[option])
    out.append(Question("explain-arch", ("explain", choice),
                        ("--option", option, "--arch", rng.choice(archs))))
    for method in methods[:1]:
        out.append(Question("explain-quant", ("explain", choice),
                            ("--option", option, "--arch", "all", "--quantization", method)))
    return out


# --- asking ---------------------------------------------------------------------

@dataclass
class Answer:
    code: int
    output: str
    #: how the result cache answered; whether the kernel library was read
    cache: str = ""
    library_read: bool | None = None

    def same(self, other: Answer) -> bool:
        return (self.code, self.output) == (other.code, other.output)

    def report(self) -> str:
        return self.output.split(_STDERR)[0]

    def verdicts(self) -> dict[tuple[Any, ...], str]:
        try:
            rows = json.loads(self.report())["backends"]
        except (ValueError, KeyError, TypeError):
            return {}
        return {(r["option"], r["choice"], r["arch"], r["quantization"]): r["verdict"]
                for r in rows}


_STDERR = "\n--stderr--\n"


class Asker:
    """``guardscan ... --format json`` through ``cli.main``, in process, the
    report on stdout, with a spy on ``driver.analyse`` to tell how the cache
    answered."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, trees: Trees, extra: tuple[str, ...],
                 tmp_path: Path) -> None:
        self.trees, self.extra, self.tmp = trees, extra, tmp_path
        self.seen: list[Any] = []
        self.count = 0
        real = guardscan.driver.analyse

        def spy(opts: Any) -> Any:
            analysis = real(opts)
            self.seen.append(analysis)
            return analysis

        monkeypatch.setattr(guardscan.driver, "analyse", spy)

    def __call__(self, question: Question, cache: Path) -> Answer:
        self.seen.clear()
        self.count += 1
        args = [*question.before, str(self.trees.root), *self.trees.kernel_args(), *self.extra,
                *question.after, "--format", "json", "--cache-dir", str(cache), "--offline",
                "-q"]
        stdout, stderr = io.StringIO(), io.StringIO()
        with redirect_stdout(stdout), redirect_stderr(stderr):
            code = main(args)
        output = (stdout.getvalue() + _STDERR + stderr.getvalue()).replace(
            str(cache), "<cache>")
        analysis = self.seen[-1] if self.seen else None
        judge = getattr(analysis, "kernel_judge", None) if analysis else None
        library = getattr(judge, "_library", None) if judge is not None else None
        return Answer(code, output, analysis.cache if analysis else "",
                      None if judge is None else library is not None)

    def fresh(self, question: Question) -> Answer:
        cache = self.tmp / f"fresh-{self.count}"
        try:
            return self(question, cache)
        finally:
            shutil.rmtree(cache, ignore_errors=True)


@dataclass
class Mismatch:
    steps: list[str]
    question: Question
    cached: Answer
    fresh: Answer

    def describe(self) -> str:
        lines = ["  after: " + " ; ".join(self.steps),
                 (f"  asked: {self.question.command()}  [cache: {self.cached.cache!r}, "
                  f"kernel library read: {self.cached.library_read}]")]
        if self.cached.code != self.fresh.code:
            lines.append(f"  exit cached {self.cached.code}, fresh {self.fresh.code}: "
                         f"{self.cached.output[-300:]!r} / {self.fresh.output[-300:]!r}")
        cached, fresh = self.cached.verdicts(), self.fresh.verdicts()
        differ = [k for k in sorted(set(cached) | set(fresh), key=str)
                  if cached.get(k) != fresh.get(k)]
        lines.append(f"  {len(differ)} verdicts differ" + (", e.g.:" if differ else ""))
        lines += [f"    {k}: cached {cached.get(k)}, fresh {fresh.get(k)}" for k in differ[:8]]
        if not differ and self.cached.code == self.fresh.code:
            lines += _json_diff(self.cached.report(), self.fresh.report())
        return "\n".join(lines)


def _json_diff(cached: str, fresh: str) -> list[str]:
    try:
        a, b = json.loads(cached), json.loads(fresh)
    except ValueError:
        return [f"    output cached {cached[-400:]!r}", f"    output fresh {fresh[-400:]!r}"]
    lines = [f"    {k}: cached {a.get(k)!r}, fresh {b.get(k)!r}"[:600]
             for k in sorted(set(a) | set(b)) if k != "backends" and a.get(k) != b.get(k)]
    rows_a = {(r["option"], r["choice"], r["arch"]): r for r in a.get("backends", [])}
    rows_b = {(r["option"], r["choice"], r["arch"]): r for r in b.get("backends", [])}
    differ = [k for k in rows_b if rows_a.get(k) != rows_b[k]]
    if differ:
        lines.append(f"    {len(differ)} rows differ (evidence), e.g. {differ[0]}:")
        ea, eb = rows_a.get(differ[0], {}).get("evidence", []), rows_b[differ[0]]["evidence"]
        lines.append(f"      cached only {[e for e in ea if e not in eb]!r}"[:600])
        lines.append(f"      fresh only {[e for e in eb if e not in ea]!r}"[:600])
    return lines


@dataclass
class Tally:
    name: str
    questions: int = 0
    mutations: int = 0
    changed: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)
    routes: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def compare(self, steps: list[str], question: Question, cached: Answer,
                fresh: Answer) -> None:
        self.questions += 1
        route = cached.cache.split(":")[0] if cached.cache else "failed"
        route += "" if cached.library_read is None else (
            ", library read" if cached.library_read else ", kernel answers replayed")
        self.routes[f"{question.kind}: {route}"] += 1
        if not cached.same(fresh):
            self.mismatches.append(Mismatch(list(steps), question, cached, fresh))

    def check(self, vacuous_ok: bool = False) -> None:
        print(f"\n{self.name}: {self.questions} questions compared, {self.mutations} mutations, "
              f"{self.changed} changed a verdict, {len(self.mismatches)} cached != fresh")
        for route, count in sorted(self.routes.items()):
            print(f"  {count:4d}  {route}")
        if self.mismatches:
            pytest.fail(f"{self.name}: {len(self.mismatches)} cached != fresh:\n" + "\n".join(
                m.describe() for m in self.mismatches), pytrace=False)
        if not (vacuous_ok or self.changed):
            pytest.fail(f"{self.name}: no mutation changed a verdict (vacuous)", pytrace=False)


# --- the runs -------------------------------------------------------------------

def _methods(asker: Asker) -> tuple[str, ...]:
    """The --quantization methods the unedited tree offers (a fresh scan's catalog)."""
    asker.fresh(FULL)
    catalog = getattr(asker.seen[-1], "catalog", None) if asker.seen else None
    quantization = getattr(catalog, "quantization", None)
    return tuple(quantization.choices) if quantization is not None else ()


def run_narrower(name: str, case: Case, exhaustive: bool, tmp_path: Path,
                 monkeypatch: pytest.MonkeyPatch) -> Tally:
    trees = make_trees(case, tmp_path)
    asker = Asker(monkeypatch, trees, case.extra, tmp_path)
    tally = Tally(name)
    cache = tmp_path / "cache"
    full = asker(FULL, cache)
    assert full.code == 0, full.output
    tally.compare([], FULL, full, asker.fresh(FULL))
    report = json.loads(full.report())
    steps = [FULL.command()]
    for question in [*questions_of(report, _methods(asker), exhaustive, name), FULL]:
        tally.compare(steps, question, asker(question, cache), asker.fresh(question))
        steps.append(question.command())
    return tally


def run_edits(name: str, case: Case, side: str, exhaustive: bool, tmp_path: Path,
              monkeypatch: pytest.MonkeyPatch, per_case: int = 8,
              per_mutation: int = 4) -> Tally:
    """``side``: "sglang" edits the SGLang tree, "kernels" the kernel tree.

    Each mutation asks ``per_mutation`` questions (every mutation, when
    ``exhaustive``, six), the first of them each kind in turn, on a copy of
    one of two warm caches, in turn: the full scan's alone (a narrower
    question then links from it, or borrows its kernel answers), or the full
    scan's and those of every question asked of this tree after an edit (a
    question then finds its own entry, and reuses its judged choices)."""
    trees = make_trees(case, tmp_path)
    asker = Asker(monkeypatch, trees, case.extra, tmp_path)
    tally = Tally(f"{name} ({side} edits)")
    warm = {"full scan": tmp_path / "warm-full", "every question": tmp_path / "warm-every"}
    original = asker(FULL, warm["full scan"])
    assert original.code == 0, original.output
    report = json.loads(original.report())
    questions = [FULL, *questions_of(report, _methods(asker), exhaustive, name)]
    root = trees.root if side == "sglang" else trees.kernel_root
    assert root is not None
    every = tree_mutations(root, "sglang" if side == "sglang" else "flashinfer")
    mutations = every if exhaustive else sample(every, per_case, f"{name}:{side}")
    rng = random.Random(f"{SEED}:{name}:{side}:order")
    kinds = sorted({q.kind for q in questions})
    plans: list[tuple[Mutation, str, list[Question]]] = []
    for number, mutation in enumerate(mutations):
        asked = list(questions)
        rng.shuffle(asked)
        first = kinds[number % len(kinds)]
        asked.sort(key=lambda q: q.kind != first)
        plans.append((mutation, list(warm)[(number + number // len(kinds)) % 2],
                      asked[:6 if exhaustive else per_mutation]))
    # the unedited tree's answers, and the second warm cache
    used = list(dict.fromkeys(q for _, _, asked in plans for q in asked))
    unedited = {q: asker.fresh(q).verdicts() for q in used}
    shutil.copytree(warm["full scan"], warm["every question"])
    for question in dict.fromkeys(q for _, which, asked in plans for q in asked
                                  if which == "every question"):
        asker(question, warm["every question"])
    for number, (mutation, which, asked) in enumerate(plans):
        path = root / mutation.rel
        source = path.read_bytes()
        path.write_bytes(mutation.apply(source))
        _set_times(path, OLD_NS + 10_000_000)
        cache = tmp_path / f"cache-{number}"
        shutil.copytree(warm[which], cache)
        changed = False
        try:
            steps = [f"(warm: {which})", f"edit {mutation.describe()}"]
            for question in asked:
                cached, fresh = asker(question, cache), asker.fresh(question)
                tally.compare(steps, question, cached, fresh)
                steps.append(question.command())
                changed |= fresh.code == 0 and fresh.verdicts() != unedited[question]
        finally:
            path.write_bytes(source)
            _set_times(path, OLD_NS)
            shutil.rmtree(cache, ignore_errors=True)
        tally.mutations += 1
        tally.changed += changed
    return tally


# --- the tests ------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(CASES))
def test_narrower_questions_after_a_full_scan(name: str, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    run_narrower(name, CASES[name], False, tmp_path, monkeypatch).check(vacuous_ok=True)


@pytest.mark.exhaustive
@pytest.mark.parametrize("name", sorted(EVERY_CASE))
def test_every_narrower_question_after_a_full_scan(name: str, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    run_narrower(name, EVERY_CASE[name], True, tmp_path, monkeypatch).check(vacuous_ok=True)


@pytest.mark.parametrize("name", sorted(CASES))
def test_narrower_questions_after_an_sglang_edit(name: str, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    run_edits(name, CASES[name], "sglang", False, tmp_path, monkeypatch).check()


@pytest.mark.exhaustive
@pytest.mark.parametrize("name", sorted(CASES))
def test_every_question_after_every_sglang_edit(name: str, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    run_edits(name, CASES[name], "sglang", True, tmp_path, monkeypatch).check()


@pytest.mark.parametrize("name", sorted(KERNEL_CASES))
def test_questions_after_a_kernel_library_edit(name: str, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    run_edits(name, KERNEL_CASES[name], "kernels", False, tmp_path, monkeypatch).check()


@pytest.mark.exhaustive
@pytest.mark.parametrize("name", sorted(EVERY_KERNEL_CASE))
def test_every_question_after_every_kernel_library_edit(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_edits(name, EVERY_KERNEL_CASE[name], "kernels", True, tmp_path, monkeypatch).check()


def test_the_kernel_mutations_reach_python_and_cpp() -> None:
    """The kernel trees' mutations include Python SM versions, C++ integer
    literals (``__CUDA_ARCH__ >= 1000``), operators and ``kSM_`` constants, and
    each edits what it says."""
    kinds: set[str] = set()
    for case in EVERY_KERNEL_CASE.values():
        assert case.kernels is not None
        root = FIXTURES / case.kernels
        every = tree_mutations(root, "flashinfer")
        assert every
        for mutation in sample(every, 6, "probe"):
            data = (root / mutation.rel).read_bytes()
            assert mutation.apply(data) != data
        kinds |= {m.kind for m in every}
    assert {"sm-int", "sm-str", "cpp-int", "cpp-op", "cpp-ksm", "int+1"} <= kinds, kinds
    cu = (FIXTURES / "kernels_cpp/flashinfer/data/csrc/fp4_quant.cu").read_bytes()
    assert any(m.old == b"1000" and m.new == b"1200"
               for m in cpp_mutations("fp4_quant.cu", cu))


#: one edit per side of gate_hook that changes verdicts and keeps the file's size
_SAME_SIZE_EDITS = {
    "sglang": ("sglang/srt/layers/moe/runner.py", b"return trtllm_moe(x)",
               b"return sm120_moe(x) "),
    "kernels": ("flashinfer/moe.py", b"[100, 103])\ndef trtllm_moe", b"[120, 103])\ndef trtllm_moe"),
}


@pytest.mark.parametrize("side", sorted(_SAME_SIZE_EDITS))
def test_a_same_size_rewrite_right_after_a_scan(side: str, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A file rewritten with the same size right after a scan, within the
    file system's mtime granularity, keeps its stat (here: the mtime put back,
    as a coarse clock leaves it). The result cache re-reads such a racily
    clean SGLang file (``memo.results.RACY_NS``); the kernel library's files
    must be no different."""
    trees = Trees(tmp_path / "tree", tmp_path / "tree")
    shutil.copytree(FIXTURES / "gate_hook", trees.root)
    for path in trees.root.rglob("*"):
        if path.is_file():
            _set_times(path, time.time_ns())  # written just now
    asker = Asker(monkeypatch, trees, (), tmp_path)
    warm = tmp_path / "warm"
    assert asker(FULL, warm).code == 0
    questions = [FULL, Question("arch", (), ("--arch", "sm120")),
                 Question("option", (), ("--arch", "all", "--option", "--moe-runner-backend"))]
    before = {q: asker.fresh(q).verdicts() for q in questions}
    rel, old, new = _SAME_SIZE_EDITS[side]
    path = trees.root / rel
    stat = path.stat()
    data = path.read_bytes()
    assert data.count(old) == 1 and len(old) == len(new)
    path.write_bytes(data.replace(old, new))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    tally = Tally(f"same-size rewrite ({side})")
    for number, question in enumerate(questions):
        cache = tmp_path / f"cache-{number}"
        shutil.copytree(warm, cache)
        fresh = asker.fresh(question)
        tally.compare([f"edit {rel}: {old!r} -> {new!r}, stat kept"], question,
                      asker(question, cache), fresh)
        tally.changed += fresh.verdicts() != before[question]
    tally.check()
