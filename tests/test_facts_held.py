"""An index with a facts cache holds at most ``FACTS_HELD`` files' facts: the
file read longest ago is let go (with the binding tables built from it) and
loaded from the cache again when asked (with the tables that name lookups and
linking built from them). What a scan says does not change:
checked on a small tree, one file at a time, and on a real release, whose
every option on every arch is judged holding eight files' facts at most."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import realtrees
from fixturetree import fixture

from guardscan import index as index_module
from guardscan.acquire import SourceTree
from guardscan.driver import ScanOptions, analyse, as_archs
from guardscan.guards import Vocabulary
from guardscan.index import Index
from guardscan.link.conditions import Conditions
from guardscan.link.context import LinkContext
from guardscan.link.method_paths import MethodPaths
from guardscan.names.bindings import BindingTables
from guardscan.results import ScanResult


def _tree(root: Path, count: int) -> SourceTree:
    files = []
    for i in range(count):
        rel = f"pkg/m{i}.py"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"import os\n\nX{i} = {i}\n\ndef f{i}(a):\n    return a + {i}\n")
        files.append(rel)
    return SourceTree(root, "pkg", "0", tuple(files), str(root))


def test_only_the_files_read_last_are_held_and_the_rest_come_back_the_same(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_module, "FACTS_HELD", 2)
    tree = _tree(tmp_path / "tree", 5)
    index = Index(tree, tmp_path / "cache")
    unbounded = Index(tree)  # no facts cache: nothing can be let go
    first = {rel: index.view(rel).unobserved for rel in tree.files}  # type: ignore[union-attr]
    held = [rel for rel, o in index.outcomes.items() if o.facts is not None]
    assert held == ["pkg/m3.py", "pkg/m4.py"]
    assert all(index.outcomes[rel].status == "analysed" for rel in tree.files)
    for rel in tree.files:
        again = index.view(rel)
        assert again is not None
        assert again.unobserved == first[rel] == unbounded.facts(rel)
    # read again in order: the last two read are the ones held
    assert [rel for rel, o in index.outcomes.items() if o.facts is not None] == \
        ["pkg/m3.py", "pkg/m4.py"]
    for rel in tree.files:
        assert unbounded.view(rel) is not None
    assert all(o.facts is not None for o in unbounded.outcomes.values())


def test_reading_a_held_file_keeps_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_module, "FACTS_HELD", 2)
    tree = _tree(tmp_path / "tree", 3)
    index = Index(tree, tmp_path / "cache")
    index.view("pkg/m0.py")
    index.view("pkg/m1.py")
    index.view("pkg/m0.py")  # read again: m1 is now the one read longest ago
    index.view("pkg/m2.py")
    assert {rel for rel, o in index.outcomes.items() if o.facts is not None} == \
        {"pkg/m0.py", "pkg/m2.py"}


def test_a_file_whose_cached_facts_are_gone_is_parsed_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_module, "FACTS_HELD", 1)
    tree = _tree(tmp_path / "tree", 2)
    index = Index(tree, tmp_path / "cache")
    before = index.facts("pkg/m0.py")
    index.facts("pkg/m1.py")
    for pickled in (tmp_path / "cache").rglob("*.pickle"):
        os.remove(pickled)
    assert index.facts("pkg/m0.py") == before


def test_files_parsed_by_the_pool_are_stored_by_it_and_loaded_when_asked(
        tmp_path: Path) -> None:
    tree = _tree(tmp_path / "tree", index_module.PARALLEL_MIN_FILES + 6)
    index = Index(tree, tmp_path / "cache")
    index.prefetch(tree.files, workers=2)
    # only each file's status came back from the pool; its facts are in the cache
    assert {(o.status, o.facts) for o in index.outcomes.values()} == {("analysed", None)}
    assert len(list((tmp_path / "cache").rglob("*.pickle"))) == len(tree.files)
    plain = Index(tree)
    assert all(index.facts(rel) == plain.facts(rel) for rel in tree.files)


def test_what_the_pool_could_not_store_comes_back_whole(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "tree", index_module.PARALLEL_MIN_FILES + 6)
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "facts").write_text("a file where the facts folder would be")
    index = Index(tree, cache)
    index.prefetch(tree.files, workers=2)
    held = [o for o in index.outcomes.values() if o.facts is not None]
    assert len(held) == min(len(tree.files), index_module.FACTS_HELD)
    plain = Index(tree)
    # those let go of are parsed again: the cache cannot give them back
    assert all(index.facts(rel) == plain.facts(rel) for rel in tree.files)


def test_the_binding_tables_of_a_file_let_go_go_with_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_module, "FACTS_HELD", 1)
    tree = _tree(tmp_path / "tree", 2)
    index = Index(tree, tmp_path / "cache")
    tables = BindingTables(index, index.view)
    assert [b.line for b in tables.module_bindings("pkg/m0.py", "X0")] == [3]
    assert "pkg/m0.py" in tables._module
    tables.module_bindings("pkg/m1.py", "X1")
    assert "pkg/m0.py" not in tables._module and "pkg/m1.py" in tables._module
    assert [b.line for b in tables.module_bindings("pkg/m0.py", "X0")] == [3]


def test_the_linkers_tables_of_a_file_let_go_go_with_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tables of a file's facts by scope that linking builds (calls,
    returns, any kind) go too, and come back the same from its reloaded facts."""
    monkeypatch.setattr(index_module, "FACTS_HELD", 1)
    tree = _tree(tmp_path / "tree", 2)
    index = Index(tree, tmp_path / "cache")
    vocab = Vocabulary(index)
    conditions = Conditions(index, vocab)
    paths = MethodPaths(LinkContext.of(index, vocab, [], None, ("flashinfer",)), conditions, ())
    calls = vocab._interpreter.calls

    def read(rel: str, function: str) -> tuple[object, ...]:
        view = index.view(rel)
        assert view is not None
        return (conditions.by_scope(view, "returns", function),
                calls.returns_by_scope(view)[function], paths._calls_in(view, function))

    first = read("pkg/m0.py", "f0")
    assert [len(part) for part in first] == [1, 1, 0]  # type: ignore[arg-type]
    assert "pkg/m0.py" in conditions._scoped and "pkg/m0.py" in calls.returns_of \
        and "pkg/m0.py" in paths._calls
    read("pkg/m1.py", "f1")
    assert "pkg/m0.py" not in conditions._scoped and "pkg/m0.py" not in calls.returns_of \
        and "pkg/m0.py" not in paths._calls
    assert "pkg/m1.py" in conditions._scoped
    assert read("pkg/m0.py", "f0") == first


def test_the_name_lookups_memos_of_a_file_let_go_go_with_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The memos of a file's scopes go with its facts and come back the same;
    its module-level names' stay (other files ask for them)."""
    monkeypatch.setattr(index_module, "FACTS_HELD", 1)
    tree = _tree(tmp_path / "tree", 2)
    index = Index(tree, tmp_path / "cache")
    names = Vocabulary(index)._interpreter.names
    first = names.lookup("pkg/m0.py", "f0", "a", 6)
    assert set(names.local_memo) == {"pkg/m0.py"} and set(names.scopes_memo) == {"pkg/m0.py"}
    assert list(names.local_memo["pkg/m0.py"]) == [("f0", "a", -1)]  # a parameter
    x0 = names.lookup("pkg/m0.py", "", "X0", 0)
    names.lookup("pkg/m1.py", "f1", "a", 6)
    assert set(names.local_memo) == {"pkg/m1.py"} and set(names.scopes_memo) == {"pkg/m1.py"}
    assert ("pkg/m0.py", "X0") in names.name_memo
    assert names.lookup("pkg/m0.py", "f0", "a", 6) == first
    assert names.lookup("pkg/m0.py", "", "X0", 0) == x0


def test_an_index_lets_go_of_tables_it_outlives(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The index holds its tables' ``forget`` weakly: a table no one uses
    any more is not kept alive by the index."""
    monkeypatch.setattr(index_module, "FACTS_HELD", 1)
    tree = _tree(tmp_path / "tree", 3)
    index = Index(tree, tmp_path / "cache")
    tables = BindingTables(index, index.view)
    tables.module_bindings("pkg/m0.py", "X0")
    del tables
    for rel in tree.files:
        index.view(rel)  # letting go calls no table that is gone
    assert [o.facts is not None for o in index.outcomes.values()] == [False, False, True]


def _same_judgement(a: ScanResult, b: ScanResult) -> None:
    assert a.backends == b.backends
    assert a.diagnostics == b.diagnostics
    assert a.notes == b.notes


def test_a_fixture_tree_read_one_file_at_a_time(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    target = fixture("flow_call_site_param")
    whole = analyse(ScanOptions(target=str(target), kernels=False, cache_dir=tmp_path / "a"))
    monkeypatch.setattr(index_module, "FACTS_HELD", 1)
    one = analyse(ScanOptions(target=str(target), kernels=False, cache_dir=tmp_path / "b"))
    assert whole.result.backends, "the fixture judged nothing"
    _same_judgement(whole.result, one.result)


def test_linking_that_replays_an_earlier_record_holds_more_files(tmp_path: Path) -> None:
    """A scan with no stored result of its own that links from its family's
    last record (another arch of the same tree) holds ``FACTS_HELD_REPLAYING``
    files' facts; one linking from nothing, ``FACTS_HELD``."""
    target = str(fixture("flow_call_site_param"))
    first = analyse(ScanOptions(target=target, kernels=False, cache_dir=tmp_path,
                                archs=as_archs("sm90")))
    second = analyse(ScanOptions(target=target, kernels=False, cache_dir=tmp_path,
                                 archs=as_archs("sm120")))
    assert first.index is not None and second.index is not None
    assert first.index.facts_held == index_module.FACTS_HELD
    assert second.index.facts_held == index_module.FACTS_HELD_REPLAYING
    assert index_module.FACTS_HELD < index_module.FACTS_HELD_REPLAYING
    alone = analyse(ScanOptions(target=target, kernels=False, cache_dir=tmp_path / "alone",
                                archs=as_archs("sm120")))
    _same_judgement(alone.result, second.result)


@pytest.mark.real
def test_a_real_release_judged_holding_eight_files(analysis_059,  # type: ignore[no-untyped-def]
                                                   tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """sglang 0.5.9, SGLang-only, every option and arch, from the facts the
    suite's cache holds, with a results cache of its own."""
    cache = tmp_path / "cache"
    cache.mkdir()
    shared = realtrees.shared_cache_dir()
    for name in ("facts", "wheels", "trees"):
        (cache / name).symlink_to(shared / name, target_is_directory=True)
    monkeypatch.setattr(index_module, "FACTS_HELD", 8)
    small = analyse(ScanOptions(target="sglang==0.5.9", kernels=False, cache_dir=cache,
                                offline=True))
    assert small.index is not None, "the result was not judged again"
    assert len(analysis_059.result.backends) > 500
    _same_judgement(analysis_059.result, small.result)
