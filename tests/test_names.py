"""names: one resolver, by qualified name, through imports, re-exports, star
imports and aliases; a name the tree does not define stays unresolved or
external, never matched by spelling."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from guardscan.acquire import SourceTree
from guardscan.index import Index
from guardscan.names import Binding, Names

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
