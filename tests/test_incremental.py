"""Early cutoff: a change that nothing in the scan read reuses the stored
result, and the reused result is exactly what a scan from scratch gives.

Every case below scans a tree (result stored), changes it, scans again with
the cache, and compares the JSON with a scan of the changed tree that uses no
cache at all. Fixture trees get a fixed set of edits to every file, then
random ones (hypothesis); a real release gets the edits a pre-commit hook
sees most (a comment, a new helper) and one that changes a guard's meaning.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import realtrees
from fixturetree import FIXTURES, make_tree
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from guardscan.arch import parse_arch
from guardscan.driver import Analysis, ScanOptions, analyse

#: fixture trees with the most kinds of guards in them
TREES = sorted(p.name for p in FIXTURES.iterdir() if p.name.startswith(("guards_", "roles_")))


def _analyse(root: Path, cache: Path, **extra: Any) -> Analysis:
    return analyse(ScanOptions(target=str(root), kernels=False, offline=True,
                               cache_dir=cache, **extra))


def _json(analysis: Analysis) -> str:
    return json.dumps(analysis.result.to_json(), indent=2, sort_keys=True)


def _fresh(root: Path, tmp: Path) -> str:
    """The scan of ``root`` with no cache at all."""
    return _json(analyse(ScanOptions(target=str(root), kernels=False, offline=True,
                                     cache_dir=tmp / "none", use_cache=False)))


def _touch_later(path: Path) -> None:
    """A new mtime even where the clock is coarse (the cache compares stat)."""
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10_000_000))


def _edit(path: Path, how: str) -> bool:
    """Edit ``path`` as ``how`` says; False when that changes nothing."""
    text = original = path.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    if how == "comment":
        text += "\n# an added comment\n"
    elif how == "helper":
        text += "\n\ndef _added_helper():\n    return None\n"
    elif how == "raising-helper":
        text += ("\n\ndef _added_check():\n    if not is_sm100_supported():\n"
                 "        raise RuntimeError('needs sm100')\n")
    elif how == "top-line":
        text = "import os\n" + text
    elif how == "rebind-first-name":
        names = [ln.split("=")[0].strip() for ln in lines
                 if "=" in ln and not ln.startswith((" ", "\t", "#"))
                 and ln.split("=")[0].strip().isidentifier()]
        defs = [ln[4:].split("(")[0] for ln in lines if ln.startswith("def ")]
        name = (names or defs or ["_nothing"])[0]
        text += f"\n{name} = None\n"
    elif how == "redefine-first-function":
        defs = [ln[4:].split("(")[0] for ln in lines if ln.startswith("def ")]
        text += f"\n\ndef {(defs or ['_nothing'])[0]}():\n    return False\n"
    elif how == "star-import":
        text += "\nfrom sglang.srt.utils import *\n"
    elif how == "digit":
        # same length: a digit changed in place
        for index, char in enumerate(text):
            if char.isdigit():
                text = text[:index] + ("1" if char != "1" else "2") + text[index + 1:]
                break
    elif how == "truncate":
        text = text[: len(text) // 2]
    else:  # pragma: no cover - a typo in a test
        raise ValueError(how)
    path.write_text(text, encoding="utf-8")
    _touch_later(path)
    return text != original


EDITS = ["comment", "helper", "raising-helper", "top-line", "rebind-first-name",
         "redefine-first-function", "star-import", "digit", "truncate"]
#: on an empty file (a package's ``__init__.py``) the others add nothing new
EMPTY_FILE_EDITS = ["comment", "helper", "raising-helper", "star-import"]


def _edit_cases(name: str) -> list[tuple[Path, str]]:
    """Every (file, edit) of a fixture tree: the whole matrix."""
    source = FIXTURES / name
    cases = []
    for rel in sorted(p.relative_to(source) for p in source.rglob("*.py")):
        empty = not (source / rel).read_text(encoding="utf-8").strip()
        cases += [(rel, how) for how in (EMPTY_FILE_EDITS if empty else EDITS)]
    return cases


def _sampled_edit_cases(name: str) -> list[tuple[Path, str]]:
    """A few cases of the matrix, the same every run: on each tree, a comment
    (never read, so always cut off), two other edits of a file with content and
    one of an empty file, each rotating with the tree's place in TREES so that
    the sample as a whole applies every edit, twice or more, to varied files."""
    number = TREES.index(name)
    cases = _edit_cases(name)
    full = [c for c in cases if c[1] == "top-line"]  # the edits any non-empty file gets
    empty = [c for c in cases if (c[0], "top-line") not in full and c[1] == "comment"]
    picked = []
    others = [how for how in EDITS if how != "comment"]
    for step, how in enumerate(("comment", others[2 * number % len(others)],
                                others[(2 * number + 1) % len(others)])):
        rel = full[(number + step) % len(full)][0]
        picked.append((rel, how))
    if empty:
        rel = empty[number % len(empty)][0]
        picked.append((rel, EMPTY_FILE_EDITS[number % len(EMPTY_FILE_EDITS)]))
    return sorted(set(picked), key=cases.index)


def _check_edits(name: str, cases: list[tuple[Path, str]], tmp_path: Path) -> None:
    source = FIXTURES / name
    reused = comments = 0
    for number, (rel, how) in enumerate(cases):
        root = tmp_path / f"{number}-{how}"
        shutil.copytree(source, root)
        cache = tmp_path / "cache"
        assert _analyse(root, cache).cache == "no stored result"
        if not _edit(root / rel, how):
            continue
        comments += how == "comment"
        after = _analyse(root, cache)
        assert _json(after) == _fresh(root, tmp_path), (rel, how, after.cache)
        if after.cache.startswith("reused"):
            reused += 1
            assert "are not read by the scan" in after.cache
        # the entry now describes the changed tree: nothing to compare next time
        again = _analyse(root, cache)
        assert again.cache.startswith("reused"), (rel, how, again.cache)
        shutil.rmtree(root)
    # comments are never read: each file's comment edit at least was cut off
    assert reused >= comments > 0


@pytest.mark.parametrize("name", TREES)
def test_sampled_edits_give_what_a_scan_from_scratch_gives(name: str, tmp_path: Path) -> None:
    """The default run's share of the matrix below (see ``_sampled_edit_cases``)."""
    _check_edits(name, _sampled_edit_cases(name), tmp_path)


def test_the_sample_applies_every_edit() -> None:
    sampled = {how for name in TREES for _rel, how in _sampled_edit_cases(name)}
    assert sampled == set(EDITS), set(EDITS) - sampled


@pytest.mark.exhaustive
@pytest.mark.parametrize("name", TREES)
def test_every_edit_gives_what_a_scan_from_scratch_gives(name: str, tmp_path: Path) -> None:
    """Every edit to every file of every tree (about 930 cases, two minutes):
    ``pytest --exhaustive``."""
    _check_edits(name, _edit_cases(name), tmp_path)


_LINES = st.sampled_from([
    "# note\n",
    "\n",
    "def _g():\n    return 1\n",
    "def _h():\n    if is_sm100_supported():\n        raise RuntimeError('x')\n",
    "_X = 12\n",
    "from sglang.srt.utils.common import *\n",
    "if is_sm120_supported():\n    _Y = 1\n",
    "assert get_device_capability()[0] >= 9\n",
    "moe_runner_backend = 'x'\n",
    "class _C:\n    pass\n",
    "(\n",
])


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tree=st.sampled_from(TREES), pick=st.integers(min_value=0),
       where=st.floats(min_value=0, max_value=1), line=_LINES)
def test_random_edits_give_what_a_scan_from_scratch_gives(
        tree: str, pick: int, where: float, line: str, tmp_path_factory: Any) -> None:
    tmp = tmp_path_factory.mktemp("edit")
    root = tmp / "tree"
    shutil.copytree(FIXTURES / tree, root)
    files = sorted(root.rglob("*.py"))
    path = files[pick % len(files)]
    cache = tmp / "cache"
    _analyse(root, cache)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    # insert between top-level statements only (an indented neighbour stays valid)
    slots = [i for i in range(len(lines) + 1)
             if i == len(lines) or not lines[i].startswith((" ", "\t", ")", "]", "}"))]
    at = slots[int(where * (len(slots) - 1))]
    if at and not lines[at - 1].endswith("\n"):
        lines[at - 1] += "\n"
    path.write_text("".join([*lines[:at], line, *lines[at:]]), encoding="utf-8")
    _touch_later(path)
    after = _analyse(root, cache)
    assert _json(after) == _fresh(root, tmp), after.cache


@pytest.mark.parametrize("fixture", ["sglang_059"])
def test_real_release_one_file_changed(fixture: str, tmp_path: Path,
                                       request: pytest.FixtureRequest) -> None:
    tree = request.getfixturevalue(fixture)
    root = tmp_path / "tree"
    shutil.copytree(tree.root / tree.package, root / tree.package)
    cache = tmp_path / "cache"
    cache.mkdir()
    # parsed facts from the shared test cache; results of this test's own
    (cache / "facts").symlink_to(realtrees.shared_cache_dir() / "facts",
                                 target_is_directory=True)
    target = root / tree.package
    common = target / "srt" / "utils" / "common.py"
    first = _analyse(target, cache)
    assert first.index is not None  # computed
    text = _json(first)
    # a comment, then a helper nobody calls: the stored result stands, unchanged
    for how in ("comment", "helper"):
        _edit(common, how)
        again = _analyse(target, cache)
        assert again.cache.startswith("reused: the changes to"), (how, again.cache)
        assert again.index is None
        assert _json(again) == text
    # a guard's meaning changes (same length, so only the content tells): the
    # scan runs again and says so, and gives what a scan from scratch gives
    source = common.read_text(encoding="utf-8")
    body = source.index("\nis_sm100_supported = ")
    cut = source.index("\n)\n", body)
    edited = source[:body] + source[body:cut].replace(
        "device_capability_majors=[10]", "device_capability_majors=[12]", 1) + source[cut:]
    assert edited != source and len(edited) == len(source)
    common.write_text(edited, encoding="utf-8")
    _touch_later(common)
    changed = _analyse(target, cache)
    assert changed.index is not None, changed.cache
    assert "common.py" in changed.cache
    assert _json(changed) != text
    reference = _analyse(target, cache, full=True)
    assert _json(changed) == _json(reference)
    # linking was incremental: most units replayed, the guard's users run again
    assert changed.links is not None
    replayed, ran = changed.units
    assert replayed > ran > 0, changed.units
    # and back to the old meaning, by replay again: the first result exactly
    common.write_text(source, encoding="utf-8")
    _touch_later(common)
    back = _analyse(target, cache)
    assert back.links is not None and back.units[0] > 0, back.cache
    assert _json(back) == text


def test_a_new_option_in_a_file_that_was_only_grepped(tmp_path: Path) -> None:
    """A file that calls ``add_argument`` but defines no backend option is
    never parsed; once it defines one, the stored result must not stand (the
    pre-filter asked within the ``add_argument`` files answers differently)."""
    root = make_tree(tmp_path, {
        "sglang/srt/tools/cli.py": 'def build(parser):\n    parser.add_argument("--verbose")\n',
    })
    cache = tmp_path / "cache"
    before = _json(_analyse(root, cache))
    assert "--spec-backend" not in before
    path = root / "sglang/srt/tools/cli.py"
    path.write_text(path.read_text(encoding="utf-8") +
                    '    parser.add_argument("--spec-backend", choices=["p", "q"])\n',
                    encoding="utf-8")
    _touch_later(path)
    after = _analyse(root, cache)
    assert not after.cache.startswith("reused"), after.cache
    assert "--spec-backend" in _json(after)
    assert _json(after) == _fresh(root, tmp_path)


def test_a_reanalysis_still_reports_files_it_could_not_read(tmp_path: Path) -> None:
    """A re-analysis answers pre-filters for unchanged files from the stored
    scan, but a file that was skipped (too large) is read again, so its
    diagnostic is not lost."""
    from guardscan.index import MAX_FILE_BYTES

    guard = ("from sglang.srt.utils import is_sm100_supported\n\n\n"
             "def check(server_args):\n"
             "    if server_args.moe_runner_backend == 'x' and not is_sm100_supported():\n"
             "        raise ValueError('x needs sm100')\n")
    root = make_tree(tmp_path, {
        "sglang/srt/utils.py": "import torch\n\n\ndef is_sm100_supported():\n"
                               "    return torch.cuda.get_device_capability()[0] == 10\n",
        "sglang/srt/layers/check.py": guard,
        "sglang/srt/big_table.py": "#" * (MAX_FILE_BYTES + 1) + "\n",
    })
    for path in root.rglob("*.py"):  # written long ago: not racily clean
        os.utime(path, (1_600_000_000, 1_600_000_000))
    cache = tmp_path / "cache"
    first = _json(_analyse(root, cache))
    assert "file-skipped" in first
    path = root / "sglang/srt/layers/check.py"
    path.write_text("import os\n" + guard, encoding="utf-8")  # every line moves
    _touch_later(path)
    after = _analyse(root, cache)
    assert after.index is not None, after.cache  # analysed again
    text = _json(after)
    assert "file-skipped" in text
    assert text == _fresh(root, tmp_path)


def test_several_files_changed_at_once(tmp_path: Path) -> None:
    """A commit touches several files: the result stands only if none of the
    changes is read, and is what a scan from scratch gives either way."""
    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / "roles_quant", root)
    files = sorted(p for p in root.rglob("*.py") if p.read_text(encoding="utf-8").strip())
    cache = tmp_path / "cache"
    _analyse(root, cache)
    for path in files[:3]:
        _edit(path, "comment")
    unread = _analyse(root, cache)
    assert unread.cache.startswith("reused: the changes to"), unread.cache
    assert all(str(p.relative_to(root)) in unread.cache for p in files[:3])
    assert _json(unread) == _fresh(root, tmp_path)
    _edit(files[0], "comment")
    _edit(root / "sglang/srt/server_args.py", "comment")  # the options: read whole
    read = _analyse(root, cache)
    assert read.index is not None, read.cache
    assert _json(read) == _fresh(root, tmp_path)


def test_changed_keys_agree_with_unseen_change(tmp_path: Path) -> None:
    """What incremental linking takes as touched by a change is what the
    result cache's early cutoff takes as seen, observation by observation."""
    checked = 0
    for name in TREES:
        root = tmp_path / name
        shutil.copytree(FIXTURES / name, root)
        first = _analyse(root, tmp_path / "cache", full=True)
        assert first.index is not None
        checked += _check_keys(first)
    assert checked > 100


def _check_keys(first: Analysis) -> int:
    from guardscan.index.observe import text_answer_changed, unseen_change
    from guardscan.memo.records import Changes

    index = first.index
    assert index is not None
    checked = 0
    for rel, seen in sorted(index.seen.items()):
        path = first.tree.path_of(rel)
        source = path.read_bytes()
        old = index.outcome_of(rel, source)
        for how in EDITS:
            if not _edit(path, how):
                continue
            data = path.read_bytes()
            new = index.outcome_of(rel, data)
            changes = Changes({rel: (old, new, data)})
            for key in seen:
                # a text query reads bytes only: its answer alone decides
                expected = text_answer_changed(key, data) if key[0] in (
                    "re", "findall", "count", "reader") else unseen_change(old, new, {key}, data) is not None
                assert changes.touches((rel, key)) == expected, (rel, how, key)
                checked += 1
            path.write_bytes(source)
    return checked


def test_code_fingerprint_covers_every_stage() -> None:
    """A result computed by other guardscan code is never reused: the
    fingerprint reads the whole package, not only the cache's own modules
    (it once covered guardscan/memo/ alone after the cache moved there)."""
    from pathlib import Path

    import guardscan
    from guardscan.memo.results import code_files

    package = Path(guardscan.__file__).resolve().parent
    files = {p.relative_to(package).as_posix() for p in code_files()}
    for stage in ("driver.py", "verdict/ladder.py", "verdict/rules/gate.py",
                  "guards/interpreter.py", "link/gates.py", "options/catalog.py", "kernels/support.py", "names/resolver.py",
                  "memo/results.py"):
        assert stage in files, stage


def test_a_new_use_of_a_function_unbinds_its_parameter(tmp_path: Path) -> None:
    """A parameter read from its call sites (``guards.call_sites``) depends on
    every use of the function in the tree: a use added in a caller's file
    (here a value, not a call) is seen, and a comment naming it is not."""
    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / "flow_call_site_param", root)
    utils = root / "sglang/srt/layers/quantization/fp8_utils.py"
    utils.write_text(utils.read_text().replace("HANDLERS = [scaled_mm]\n", ""))
    cache = tmp_path / "cache"
    first = _analyse(root, cache)

    def cutlass(analysis: Analysis) -> set[str]:
        return {b.verdict for b in analysis.result.backends
                if b.option == "--fp8-gemm-backend" and b.choice == "cutlass"
                and b.arch in ("sm90", "sm120")}

    assert cutlass(first) == {"blocked"}
    caller = root / "sglang/srt/layers/quantization/fp8.py"
    caller.write_text(caller.read_text() + "\n# scaled_mm is called twice above\n")
    _touch_later(caller)
    commented = _analyse(root, cache)
    assert commented.cache.startswith("reused"), commented.cache
    assert cutlass(commented) == {"blocked"}
    caller.write_text(caller.read_text() + "\nSCALED = scaled_mm\n")
    _touch_later(caller)
    after = _analyse(root, cache)
    assert cutlass(after) == {"unknown"}
    assert _json(after) == _fresh(root, tmp_path)


def test_a_new_use_in_a_file_never_read_unbinds_the_parameter(tmp_path: Path) -> None:
    """A file the scan never read (no use of the function in it) gains one:
    the whole-tree search for the function's uses answers differently, and
    the answers that made it are asked again."""
    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / "flow_call_site_param", root)
    utils = root / "sglang/srt/layers/quantization/fp8_utils.py"
    utils.write_text(utils.read_text().replace("HANDLERS = [scaled_mm]\n", ""))
    cache = tmp_path / "cache"
    first = _analyse(root, cache)
    assert {b.verdict for b in first.result.backends
            if b.choice == "cutlass" and b.arch == "sm120"} == {"blocked"}
    other = root / "sglang/srt/layers/quantization/helpers.py"
    other.write_text(other.read_text() + (
        "\n\ndef handlers():\n"
        "    from sglang.srt.layers.quantization.fp8_utils import scaled_mm\n"
        "    return [scaled_mm]\n"))
    _touch_later(other)
    after = _analyse(root, cache)
    assert {b.verdict for b in after.result.backends
            if b.choice == "cutlass" and b.arch == "sm120"} == {"unknown"}
    assert _json(after) == _fresh(root, tmp_path)


def test_a_reanalysis_reads_unchanged_files_text_answers_from_the_record(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a text reader answered of a file's bytes (``Index.text_answer``:
    the functions whose return names an option, for the candidate files) is
    taken from the earlier scan's record for every file whose bytes are the
    same: after a guard edit the reader is asked of the changed file only,
    and the result is what a scan from scratch gives."""
    from guardscan.link import collect

    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / "roles_gate", root)
    cache = tmp_path / "cache"
    _analyse(root, cache)
    asked: list[int] = []
    reader = collect.returned_words

    def counted(data: bytes) -> tuple[tuple[str, tuple[str, ...]], ...]:
        asked.append(len(data))
        return reader(data)

    counted.__module__, counted.__qualname__ = reader.__module__, reader.__qualname__
    monkeypatch.setattr(collect, "returned_words", counted)
    changed = root / "sglang/srt/server_args.py"
    assert _edit(changed, "raising-helper")
    after = _analyse(root, cache)
    assert not after.cache.startswith("reused"), after.cache
    assert asked == [len(changed.read_bytes())]
    monkeypatch.setattr(collect, "returned_words", reader)
    assert _json(after) == _fresh(root, tmp_path)


def test_stored_answers_are_read_when_asked_and_a_damaged_one_is_asked_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The record of linking keeps each answer's value as a pickle of its
    own (``guards.questions.StoredAnswer``), read when a unit asks it again:
    after a guard edit most stay unread. A value whose pickle no longer
    reads (a damaged cache) is asked again, and the result is still what a
    scan from scratch gives."""
    from guardscan.guards import questions, vocabulary
    from guardscan.index.store import load_pickles, store_pickles

    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / "roles_gate", root)
    cache = tmp_path / "cache"
    _analyse(root, cache)
    [links] = (cache / "results").glob("*.links.pickle")
    pieces = load_pickles(links)
    assert pieces is not None
    split = pieces.index(None)
    chunks: list[dict[int, tuple[bytes, Any, bytes, Any]]] = pieces[1:split]  # type: ignore[assignment]
    stored = sum(len(chunk) for chunk in chunks)
    assert stored > 0
    # every other value damaged
    damaged = [{number: (b"damaged" if number % 2 else blob, *rest)
                for number, (blob, *rest) in chunk.items()} for chunk in chunks]
    assert store_pickles(links, [pieces[0], *damaged, *pieces[split:]])
    read: list[bool] = []
    readable = questions.readable

    def counted(answer: questions.Answer) -> bool:
        found = readable(answer)
        read.append(found)
        return found

    monkeypatch.setattr(questions, "readable", counted)
    monkeypatch.setattr(vocabulary, "readable", counted)
    assert _edit(root / "sglang/srt/server_args.py", "raising-helper")
    after = _analyse(root, cache)
    assert not after.cache.startswith("reused"), after.cache
    assert 0 < len(read) < stored and False in read and True in read
    assert _json(after) == _fresh(root, tmp_path)


def test_stored_observations_are_read_when_asked_and_a_damaged_one_counts_as_read_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a stored scan read of each file is a pickle per file
    (``memo.seen``), read when a later scan asks for that file's. One that
    no longer reads (a damaged cache) counts as the whole file read, so its
    file is analysed again; the result is still what a scan from scratch
    gives."""
    import pickle

    from guardscan.memo import results, seen

    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / "roles_gate", root)
    cache = tmp_path / "cache"
    _analyse(root, cache)
    [path] = (cache / "results").glob("*.reads.pickle")
    reads = pickle.loads(path.read_bytes())
    assert isinstance(reads, results._Reads) and isinstance(reads.seen, seen.Seen)
    assert len(reads.seen) > 2
    # every other file's observations damaged
    reads.seen = seen.Seen({rel: b"damaged" if at % 2 else blob
                            for at, (rel, blob) in enumerate(reads.seen.blobs.items())})
    path.write_bytes(pickle.dumps(reads))
    asked: list[frozenset[tuple[object, ...]]] = []
    getitem = seen.Seen.__getitem__

    def counted(self: seen.Seen, rel: str) -> frozenset[tuple[object, ...]]:
        found = getitem(self, rel)
        asked.append(found)
        return found

    monkeypatch.setattr(seen.Seen, "__getitem__", counted)
    assert _edit(root / "sglang/srt/server_args.py", "raising-helper")
    after = _analyse(root, cache)
    assert not after.cache.startswith("reused"), after.cache
    assert seen._WHOLE in asked  # a damaged one was asked for
    assert _json(after) == _fresh(root, tmp_path)


def test_an_edit_on_one_methods_path_links_that_method_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each ``--quantization`` method's path is a linking unit of its own
    (``link.quantization``): an edit to how nvfp4's path goes on (a branch
    test before a call) links nvfp4's path again and replays mxfp4's, and a new function on the path
    (a call added) links again what code outside the methods runs too (its
    unit is keyed by the paths' functions). Either way the result is what a
    scan from scratch gives."""
    from guardscan.memo.link_units import RecordingUnits

    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / "quant_method_paths", root)
    cache = tmp_path / "cache"
    _analyse(root, cache, quantization="nvfp4")
    ran: list[tuple[str, ...]] = []
    unit = RecordingUnits.unit

    def logged(self: RecordingUnits, key: tuple[str, ...], *args: Any) -> Any:
        before = self.ran
        found = unit(self, key, *args)
        if self.ran > before and key[0] == "quantization":
            ran.append(key[:2])  # the method (its key goes on: config class, packages)
        return found

    monkeypatch.setattr(RecordingUnits, "unit", logged)
    nvfp4 = root / "sglang/srt/layers/quantization/nvfp4.py"
    nvfp4.write_text(nvfp4.read_text().replace(
        "if self.quant_config.is_checkpoint_serialized:",
        "if self.quant_config.is_checkpoint_serialized and is_sm90_supported():"))
    _touch_later(nvfp4)
    after = _analyse(root, cache, quantization="nvfp4")
    assert ran == [("quantization", "nvfp4")]
    assert _json(after) == _fresh_quant(root, tmp_path, "nvfp4")
    ran.clear()
    utils = root / "sglang/srt/layers/quantization/fp4_utils.py"
    utils.write_text(utils.read_text().replace(
        '    return "cutlass"\n', '    return _fallback()\n\n\ndef _fallback():\n'
        '    return "cutlass"\n'))
    _touch_later(utils)
    after = _analyse(root, cache, quantization="nvfp4")
    assert ran[0] == ("quantization", "nvfp4") and len(ran) == 2
    assert ran[1][1].startswith("escapes ")
    assert _json(after) == _fresh_quant(root, tmp_path, "nvfp4")


def _fresh_quant(root: Path, tmp: Path, quantization: str) -> str:
    return _json(analyse(ScanOptions(target=str(root), kernels=False, offline=True,
                                     cache_dir=tmp / "none", use_cache=False,
                                     quantization=quantization)))


def _family(root: Path, cache: Path, tmp: Path, archs: str, quantization: str | None,
            ) -> tuple[Analysis, str]:
    """A scan for other archs or another method, with the cache the last one
    filled, and the same scan with no cache at all."""
    extra = {"archs": [parse_arch(a) for a in archs.split(",")], "quantization": quantization}
    again = _analyse(root, cache, **extra)
    fresh = _json(analyse(ScanOptions(target=str(root), kernels=False, offline=True,
                                      cache_dir=tmp / "none", use_cache=False, **extra)))
    return again, fresh


def test_other_archs_or_another_method_link_from_the_last_scan(tmp_path: Path) -> None:
    """Linking reads neither the archs nor the method: a scan for others,
    with no result of its own, replays every linking unit of the last scan
    of the tree (``memo.results``, the family), and gives what a scan from
    scratch gives; its choices are judged afresh."""
    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / "roles_quant", root)
    for path in root.rglob("*.py"):  # written long ago: not racily clean
        os.utime(path, (1_600_000_000, 1_600_000_000))
    cache = tmp_path / "cache"
    first = _analyse(root, cache, archs=[parse_arch("sm90")])
    assert first.units[1] > 0 and first.units[0] == 0, first.units
    again, fresh = _family(root, cache, tmp_path, "sm100,sm120", "fp8")
    assert again.cache.startswith("no stored result (linking from"), again.cache
    assert again.units == (first.units[1], 0), again.units
    assert _json(again) == fresh
    # a guard file edited since: what the edit touches links again
    path = root / "sglang/srt/server_args.py"
    path.write_text(path.read_text(encoding="utf-8") + "\n# an added comment\n",
                    encoding="utf-8")
    _touch_later(path)
    edited, fresh = _family(root, cache, tmp_path, "sm80", "myq")
    assert _json(edited) == fresh
