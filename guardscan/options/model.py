"""options (data): what the option catalog holds, and what an
option-definition form hands it.

:class:`OptionCatalog` and :class:`EnumInfo` are what later stages read;
:class:`OptionDefinition` is one option as a form (``forms/``) read it, with
its ``choices=`` still as text; the flag rules and the string reader are the
ones every form shares.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field

from guardscan.results import Diagnostic, OptionInfo

__all__ = [
    "MIN_ENUM_OVERLAP",
    "QUANTIZATION_FLAG",
    "EnumInfo",
    "OptionCatalog",
    "OptionDefinition",
    "flag_to_dest",
    "is_catalog_flag",
    "string_value",
]

#: The one option kept apart from the ``-backend`` ones: quantization changes
#: which kernels a backend runs, so later stages read it as a condition.
QUANTIZATION_FLAG = "--quantization"

#: Least Jaccard overlap between an enum's values and an option's choices for
#: the enum to count as modelling that option.
MIN_ENUM_OVERLAP = 0.5


@dataclass(frozen=True, slots=True)
class EnumInfo:
    """A string enum whose values model an option's choices.

    ``qualname`` is the dotted name (module + class), ``members`` are
    ``(MEMBER, "value")`` in definition order, ``predicates`` map each method
    that tests the value (``is_flashinfer_trtllm``) to the values for which it
    holds, and ``option_dests`` are the dests of the options this enum models.
    """

    qualname: str
    rel: str
    line: int
    members: tuple[tuple[str, str], ...]
    predicates: tuple[tuple[str, frozenset[str]], ...] = ()
    option_dests: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.qualname.rpartition(".")[2]

    @property
    def values(self) -> tuple[str, ...]:
        return tuple(value for _, value in self.members)

    def predicate(self, method: str) -> frozenset[str] | None:
        for name, values in self.predicates:
            if name == method:
                return values
        return None


@dataclass
class OptionCatalog:
    """The backend options of one tree, their enums, and what went unresolved."""

    options: list[OptionInfo] = field(default_factory=list)
    enums: list[EnumInfo] = field(default_factory=list)
    quantization: OptionInfo | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    aliases: dict[str, str] = field(default_factory=dict)  # extra flag -> primary flag
    #: mode options (see ``OptionDefinition.mode``): never judged, read only so
    #: that code testing them is decided at their defaults
    modes: list[OptionInfo] = field(default_factory=list)

    def _all(self) -> Iterator[OptionInfo]:
        yield from self.options
        if self.quantization is not None:
            yield self.quantization

    def by_flag(self, flag: str) -> OptionInfo | None:
        flag = self.aliases.get(flag, flag)
        return next((o for o in self._all() if o.flag == flag), None)

    def by_dest(self, dest: str) -> OptionInfo | None:
        return next((o for o in self._all() if o.dest == dest), None)

    def enums_for(self, dest: str) -> list[EnumInfo]:
        return [e for e in self.enums if dest in e.option_dests]


# --------------------------------------------------------------------------
# What a form hands the catalog


@dataclass
class OptionDefinition:
    """An option definition as a form read it, before choices are final."""

    flag: str
    dest: str
    rel: str
    line: int
    module: str
    scope: str
    choices_text: str | None  # a ``choices=`` expression, or None for a Literal
    literal_choices: tuple[str, ...] = ()
    help: str = ""
    default: str | None = None
    aliases: tuple[str, ...] = ()
    #: a mode option: not a backend option, but finite literal choices and a
    #: literal default (``--deepep-mode``); held at its default while judging
    mode: bool = False


# --------------------------------------------------------------------------
# Text rules every form shares


def string_value(node: ast.AST | None) -> str | None:
    """The text of a string expression: literals, implicit/``+`` concatenation,
    f-strings (placeholders kept as ``{expr}``), ``"...".format(...)``."""
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        out = []
        for part in node.values:
            if isinstance(part, ast.Constant) and isinstance(part.value, str):
                out.append(part.value)
            elif isinstance(part, ast.FormattedValue):
                out.append("{" + ast.unparse(part.value) + "}")
        return "".join(out)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = string_value(node.left), string_value(node.right)
        if left is not None and right is not None:
            return left + right
        return None
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "format"):
        return string_value(node.func.value)
    return None


def is_catalog_flag(flag: str) -> bool:
    """Does the catalog keep an option with this flag (``--x-backend`` or
    ``--quantization``)?"""
    return flag.lstrip("-").endswith("-backend") or flag == QUANTIZATION_FLAG


def flag_to_dest(flag: str) -> str:
    """argparse's dest for a flag without ``dest=``."""
    return flag.lstrip("-").replace("-", "_")
