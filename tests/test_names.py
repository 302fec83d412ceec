"""names: one resolver, by qualified name, through imports, re-exports, star
imports and aliases; a name the tree does not define stays unresolved or
external, never matched by spelling."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from guardscan.acquire import SourceTree
from guardscan.index import Index
from guardscan.index.observe import STARS
from guardscan.names import Binding, ModuleScopes, Names, Target

TREE = {
    "sglang/__init__.py": "",
    "sglang/srt/__init__.py": "",
    "sglang/srt/layers/__init__.py": "from sglang.srt.layers.impl import Config, CHOICES\n",
    "sglang/srt/layers/impl.py": (
        "CHOICES = ['a', 'b']\n"
        "class Config:\n"
        "    limit = 80\n"
        "    def method(self, value):\n"
        "        local = 1\n"
        "        return value\n"
    ),
    "sglang/multimodal_gen/__init__.py": "",
    "sglang/multimodal_gen/config.py": "class Config:\n    limit = 95\n",
    "sglang/srt/star.py": "from sglang.srt.layers.impl import *\n",
    "sglang/srt/user.py": (
        "import typing\n"
        "from typing import Annotated\n"
        "import sglang.srt.layers.impl as impl\n"
        "from sglang.srt.layers import Config as Cfg\n"
        "from sglang.srt.star import CHOICES\n"
        "A = Annotated\n"
        "Other = impl.Config\n"
        "def helper(param):\n"
        "    from sglang.multimodal_gen.config import Config\n"
        "    inner = param\n"
        "    return Config\n"
    ),
}

USER = "sglang.srt.user"
IMPL = "sglang.srt.layers.impl"


@pytest.fixture(scope="module")
def names(tmp_path_factory: pytest.TempPathFactory) -> Names:
    root: Path = tmp_path_factory.mktemp("tree")
    for rel, text in TREE.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    tree = SourceTree(root=root, package="sglang", version="0", files=tuple(sorted(TREE)),
                      origin=str(root))
    return Names(Index(tree))


def node(text: str) -> ast.expr:
    return ast.parse(text, mode="eval").body


@pytest.mark.parametrize(("name", "scope", "expected"), [
    # a re-export in a package __init__ ends where the class is defined
    ("Cfg", "", Binding("class", IMPL, "Config")),
    # a star import is followed to the constant's own module
    ("CHOICES", "", Binding("assign", IMPL, "CHOICES")),
    ("impl", "", Binding("module", name=IMPL)),
    ("Annotated", "", Binding("external", name="typing.Annotated")),
    ("A", "", Binding("assign", USER, "A")),
    # the function's own import wins over the module's (a same-named class
    # elsewhere in the package is only taken where it is imported)
    ("Config", "helper", Binding("class", "sglang.multimodal_gen.config", "Config")),
    ("param", "helper", Binding("param", USER, "param", "helper")),
    ("inner", "helper", Binding("assign", USER, "inner", "helper")),
    ("Config", "", None),  # not bound at the module level of user.py
    ("undefined", "", None),
])
def test_lookup(names: Names, name: str, scope: str, expected: Binding | None) -> None:
    assert names.lookup(USER, name, scope) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("A", "typing.Annotated"),  # an alias whose only value is a dotted name
    ("typing.Optional", "typing.Optional"),
    ("Other", f"{IMPL}.Config"),
    ("impl.CHOICES", f"{IMPL}.CHOICES"),
    ("Cfg", f"{IMPL}.Config"),
    ("len", "len"),  # a builtin is external
    ("Cfg.limit", None),  # a class attribute has no qualified name of its own
])
def test_qualname(names: Names, text: str, expected: str | None) -> None:
    assert names.qualname(USER, node(text)) == expected


def test_attribute_of_a_class_is_a_class_attribute(names: Names) -> None:
    binding = names.resolve(USER, node("Cfg.limit"))
    assert binding == Binding("classattr", IMPL, "limit", "Config")
    config = names.lookup(USER, "Cfg")
    assert config is not None
    found = names.class_fact(config)
    assert found is not None and found[0].module == IMPL and found[1].qualname == "Config"


def test_class_bodies_do_not_enclose_their_methods(names: Names) -> None:
    facts = names.facts(IMPL)
    assert facts is not None
    assert names.function_scopes(facts, "Config.method") == ["Config.method"]
    assert names.lookup(IMPL, "limit", "Config.method") is None
    assert names.lookup(IMPL, "local", "Config.method") == Binding(
        "assign", IMPL, "local", "Config.method")


# -- references: public paths and dotted references settled to a Target ----------

KERNELS = {
    "fi/__init__.py": (
        "from .gemm import mm_fp4\n"
        "from .star_mod import *\n"
        "from .missing import nothing\n"
        "from .cycle_a import loop\n"
        "alias_fn = mm_fp4\n"
        "LIMIT = 80\n"
    ),
    "fi/gemm.py": (
        "import torch\n"
        "class Base:\n"
        "    def run(self):\n"
        "        pass\n"
        "class Runner(Base):\n"
        "    def __init__(self):\n"
        "        self.state = 1\n"
        "    def go(self):\n"
        "        self.run()\n"
        "        self.state()\n"
        "        self.missing()\n"
        "def mm_fp4(x):\n"
        "    from fi.jit import gen_module\n"
        "    for item in x:\n"
        "        item()\n"
        "    torch.cuda.synchronize()\n"
        "    mm_fp4(x).view()\n"
        "    return gen_module()\n"
    ),
    "fi/jit.py": "def gen_module():\n    pass\n",
    "fi/star_mod.py": "def public_fn():\n    pass\ndef _private():\n    pass\n",
    "fi/cycle_a.py": "from fi.cycle_b import loop\n",
    "fi/cycle_b.py": "from fi.cycle_a import loop\n",
    # same-named definitions elsewhere are never taken by spelling
    "fi/other.py": "def mm_fp4():\n    pass\ndef nothing():\n    pass\ndef gen_module():\n    pass\n",
    "fi/lazy/__init__.py": (
        "import importlib\n"
        "_NAMES = frozenset({'lazy_fn'})\n"
        "_TABLE = {'table_fn': '.impl'}\n"
        "_PAIRS = {'pair_alias': ('.impl', 'table_fn')}\n"
        "def __getattr__(name):\n"
        "    if name in _PAIRS:\n"
        "        module_name, attribute = _PAIRS[name]\n"
        "        return getattr(importlib.import_module(module_name, __name__), attribute)\n"
        "    if name in _NAMES:\n"
        "        from . import impl as _impl\n"
        "        return getattr(_impl, name)\n"
        "    module_name = _TABLE.get(name)\n"
        "    if module_name is None:\n"
        "        raise AttributeError(name)\n"
        "    return getattr(importlib.import_module(module_name, __name__), name)\n"
    ),
    "fi/lazy2/__init__.py": (
        "_NAMES = ('lazy_fn',)\n"
        "def __getattr__(name):\n"
        "    if name not in _NAMES:\n"
        "        raise AttributeError(name)\n"
        "    from fi.lazy import impl\n"
        "    return getattr(impl, name)\n"
    ),
    "fi/lazy/impl.py": "def lazy_fn():\n    pass\ndef table_fn():\n    pass\n",
}
GEMM = "fi.gemm"


@pytest.fixture(scope="module")
def kernel_names(tmp_path_factory: pytest.TempPathFactory) -> Names:
    root: Path = tmp_path_factory.mktemp("kernels")
    for rel, text in KERNELS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    tree = SourceTree(root=root, package="fi", version="0", files=tuple(sorted(KERNELS)),
                      origin=str(root))

    def loop_variables(table: ModuleScopes, scope: str) -> frozenset[str]:
        return frozenset({"item"}) if scope == "mm_fp4" else frozenset()

    return Names(Index(tree), unrecorded_locals=loop_variables)


@pytest.mark.parametrize(("path", "expected"), [
    ("fi.mm_fp4", Target("function", "fi.gemm.mm_fp4")),  # an __init__ re-export
    ("fi.public_fn", Target("function", "fi.star_mod.public_fn")),  # through a star import
    ("fi.alias_fn", Target("function", "fi.gemm.mm_fp4")),  # a module-level alias
    ("fi.LIMIT", Target("constant", "fi.LIMIT")),
    ("fi.gemm", Target("module", "fi.gemm")),
    ("fi.gemm.Runner.go", Target("function", "fi.gemm.Runner.go")),
    ("fi.gemm.Runner.run", Target("function", "fi.gemm.Base.run")),  # an in-tree base's
    ("fi.lazy.lazy_fn", Target("function", "fi.lazy.impl.lazy_fn")),  # lazy __getattr__
    ("fi.lazy.table_fn", Target("function", "fi.lazy.impl.table_fn")),
    ("fi.lazy.pair_alias", Target("function", "fi.lazy.impl.table_fn")),
    ("fi.lazy2.lazy_fn", Target("function", "fi.lazy.impl.lazy_fn")),
    ("torch.cuda", Target("external", "torch.cuda")),
    # unresolved, with a reason; never fi.other's same-named functions
    ("fi._private", Target("unresolved", "fi._private")),  # star imports skip _names
    ("fi.nothing", Target("unresolved", "fi.nothing")),
    ("fi.loop", Target("unresolved", "fi.loop")),  # an import cycle
    ("fi.lazy.other_fn", Target("unresolved", "fi.lazy.other_fn")),
])
def test_resolve_path(kernel_names: Names, path: str, expected: Target) -> None:
    found = kernel_names.resolve_path(path)
    assert found == expected
    assert (found.reason != "") == (found.kind == "unresolved")


@pytest.mark.parametrize(("scope", "text", "expected"), [
    ("mm_fp4", "gen_module", Target("function", "fi.jit.gen_module")),  # a local import
    ("mm_fp4", "item", Target("dynamic", "item")),  # a loop variable (unrecorded local)
    ("mm_fp4", "x", Target("dynamic", "x")),  # a parameter
    ("mm_fp4", "torch.cuda.synchronize", Target("external", "torch.cuda.synchronize")),
    ("mm_fp4", "mm_fp4(x).view", Target("dynamic", "mm_fp4(x).view")),
    ("mm_fp4", "len", Target("builtin", "len")),
    ("Runner.go", "self.run", Target("function", "fi.gemm.Base.run")),
    ("Runner.go", "self.state", Target("dynamic", "self.state")),  # set on self
    ("Runner.go", "self.missing", Target("unresolved", "self.missing")),
    ("", "gen_module", Target("unresolved", "gen_module")),  # only imported inside mm_fp4
    ("", "Runner", Target("class", "fi.gemm.Runner")),
])
def test_resolve_reference(kernel_names: Names, scope: str, text: str,
                           expected: Target) -> None:
    found = kernel_names.resolve_reference(GEMM, scope, text)
    assert found == expected
    assert (found.reason != "") == (found.kind == "unresolved")


def test_lookup_reads_lazy_tables_and_function_imports(kernel_names: Names) -> None:
    assert kernel_names.lookup("fi.lazy", "lazy_fn") == Binding(
        "function", "fi.lazy.impl", "lazy_fn")
    assert kernel_names.lookup(GEMM, "gen_module", "mm_fp4") == Binding(
        "function", "fi.jit", "gen_module")
    assert kernel_names.lookup(GEMM, "gen_module") is None


def test_method_lookup_follows_in_tree_bases(kernel_names: Names) -> None:
    table = kernel_names.scopes(GEMM)
    assert table is not None
    assert kernel_names.find_method(table, "Runner", "run") == Target(
        "function", "fi.gemm.Base.run")
    assert kernel_names.find_method(table, "Runner", "state") is None


# -- every binding of a name, in order, reads recorded (the guard interpreter's) ----

BOUND = {
    "pkg/__init__.py": "",
    "pkg/ns/deep/mod.py": "VALUE = 1\n",  # pkg/ns has no __init__.py
    "pkg/defs.py": (
        "from pkg.other import flag\n"
        "if cond:\n"
        "    flag = True\n"
        "else:\n"
        "    def flag():\n"
        "        return False\n"
        "flag, rest = 1, 2\n"
        "class flag:\n"
        "    def method(self):\n"
        "        def nested():\n"
        "            pass\n"
        "def helper(x):\n"
        "    from pkg.other import flag\n"
        "    local, (inner, *tail) = 1, (2, 3)\n"
        "    return flag\n"
    ),
    "pkg/other.py": "flag = False\nfrom pkg.deeper import *\n",
    "pkg/deeper.py": "from pkg.deepest import *\n",
    "pkg/deepest.py": "far = 1\n",
    "pkg/star.py": "from pkg.other import *\nfrom pkg.star import *\n",
}


@pytest.fixture(scope="module")
def bound(tmp_path_factory: pytest.TempPathFactory) -> tuple[Names, Index]:
    root: Path = tmp_path_factory.mktemp("bound")
    for rel, text in BOUND.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    tree = SourceTree(root=root, package="pkg", version="0", files=tuple(sorted(BOUND)),
                      origin=str(root))
    index = Index(tree)
    return Names(index, views=index.view), index


def test_bindings_lists_every_way_in_a_stated_order(bound: tuple[Names, Index]) -> None:
    names, index = bound
    found = names.bindings("pkg.defs", "flag")
    # assignments, then functions, then classes, then imports, each in file order;
    # lookup would pick one of them (the assignment)
    assert [(type(b).__name__, b.line) for b in found] == [
        ("AssignFact", 3), ("AssignFact", 7), ("FunctionFact", 5), ("ClassFact", 8),
        ("ImportFact", 1)]
    assert names.lookup("pkg.defs", "flag") == Binding("assign", "pkg.defs", "flag")
    assert names.bindings("pkg.defs", "rest")[0].line == 7  # tuple targets split
    assert names.bindings("pkg.defs", "local") == []  # not at module level
    assert names.bindings("pkg.missing", "flag") == []
    assert ("name", "flag") in index.seen["pkg/defs.py"]


def test_local_tables_split_targets_as_observations_do(bound: tuple[Names, Index]) -> None:
    names, index = bound
    view = index.view("pkg/defs.py")
    assert view is not None
    assigns = names.tables.scope_assigns(view, "helper")
    assert sorted(assigns) == ["inner", "local", "tail"]
    assert [i.line for i in names.tables.scope_imports(view, "helper")["flag"]] == [13]
    assert ("scope", "helper") in index.seen["pkg/defs.py"]


def test_star_provider_follows_star_imports_three_deep(bound: tuple[Names, Index]) -> None:
    names, index = bound
    star = index.view("pkg/star.py")
    assert star is not None
    tables = names.tables
    assert tables.star_provider(star, "flag") == "pkg/other.py"
    assert tables.star_provider(star, "far") == "pkg/other.py"  # other -> deeper -> deepest
    assert tables.star_provider(star, "nowhere") is None  # and not itself, though it stars itself
    assert STARS in index.seen["pkg/star.py"]
    assert ("name", "far") in index.seen["pkg/deepest.py"]


@pytest.mark.parametrize(("module", "name", "expected"), [
    ("pkg.other", None, Binding("module", name="pkg.other")),
    ("pkg.ns", None, Binding("module", name="pkg.ns")),  # a namespace package
    ("pkg.ns.deep", "mod", Binding("module", name="pkg.ns.deep.mod")),
    ("pkg.other", "flag", Binding("member", "pkg.other", "flag")),
    ("torch", None, Binding("external", name="torch")),
    ("torch", "cuda", Binding("external", name="torch.cuda")),
])
def test_imported_is_one_step_of_an_import(bound: tuple[Names, Index], module: str,
                                           name: str | None, expected: Binding) -> None:
    assert bound[0].tables.imported(module, name) == expected


def test_scopes_and_a_class_s_own_functions(bound: tuple[Names, Index]) -> None:
    names, index = bound
    view = index.view("pkg/defs.py")
    assert view is not None
    tables = names.tables
    # the class body does not enclose its method's nested function
    assert tables.function_scopes(view, "flag.method.nested") == [
        "flag.method.nested", "flag.method"]
    method = tables.class_function(view, "flag", "method")
    assert method is not None and method.qualname == "flag.method"
    assert tables.class_function(view, "flag", "helper") is None
    seen = index.seen["pkg/defs.py"]
    assert ("class", "flag") in seen and ("cls", "flag") in seen
