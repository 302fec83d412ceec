"""options (forms): what every option-definition form provides, and the
context its finder works in.

A form is one way a tree defines what the catalog holds (argparse calls,
annotated fields, choice-list extensions, string enums). Each form module
holds its text pre-filter, its finder and its recognisers, and ends with one
:class:`OptionForm`, listed once in ``forms.FORMS``. The catalog asks each
form, in that order, for the step it serves:

definitions
    ``find_definitions(context)``: the options the form defines, choices
    still as text (argparse calls, annotated fields);
extensions
    ``find_extensions(context, roots)``: literal choices that the tree adds
    to the choice constants (``roots``) the definitions read;
enums
    ``find_enums(context, options)``: string enums that can model the
    options' choices, with their predicate methods.

Every recogniser call goes through :meth:`FormContext.guarded`: an exception
on one definition becomes a diagnostic, and the rest of the catalog stands.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypeAlias, TypeVar

from guardscan.index import Index
from guardscan.index.facts import FileFacts
from guardscan.messages import diagnostic, internal_error
from guardscan.names import Names
from guardscan.options.enum_classes import EnumReader
from guardscan.options.model import EnumInfo, OptionDefinition
from guardscan.options.values import ChoiceExtension
from guardscan.results import Diagnostic, OptionInfo
from guardscan.syntax import short

__all__ = ["Extensions", "FormContext", "Guard", "OptionForm", "Stage", "unguarded"]

_T = TypeVar("_T")

#: Literal choices added to each choice constant, keyed by (module, name).
Extensions: TypeAlias = dict[tuple[str, str], list[ChoiceExtension]]

#: The catalog step a form serves, in the order the catalog takes them.
Stage: TypeAlias = Literal["definitions", "extensions", "enums"]


class Guard(Protocol):
    """Runs one recogniser on one definition at ``rel:line`` (see
    :meth:`FormContext.guarded`)."""

    def __call__(self, rel: str, line: int, text: str,
                 recognise: Callable[[], _T | None]) -> _T | None: ...


def unguarded(rel: str, line: int, text: str, recognise: Callable[[], _T | None]) -> _T | None:
    """A :class:`Guard` that lets exceptions through (a recogniser called alone)."""
    return recognise()


@dataclass
class FormContext:
    """One catalog build as the forms see it: the index, the shared name
    resolver and enum reader, and the diagnostics every form adds to."""

    index: Index
    names: Names
    enum_reader: EnumReader
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @classmethod
    def of(cls, index: Index) -> FormContext:
        names = Names(index)
        return cls(index, names, EnumReader(names))

    def facts_or_report(self, rel: str) -> FileFacts | None:
        """A file's facts, or None with an ``unreadable-file`` diagnostic."""
        outcome = self.index.outcome(rel)
        if outcome.facts is None:
            self.diagnostics.append(diagnostic(rel, outcome.line, "unreadable-file",
                                               reason=outcome.reason or outcome.status))
        return outcome.facts

    def guarded(self, rel: str, line: int, text: str,
                recognise: Callable[[], _T | None]) -> _T | None:
        """Run one recogniser on one definition; odd code it cannot take (nesting
        too deep for the interpreter) becomes a diagnostic, not a failed scan."""
        try:
            return recognise()
        except (RecursionError, MemoryError) as exc:
            self.diagnostics.append(diagnostic(rel, line, "unreadable-definition",
                                               text=short(text, 70),
                                               reason=type(exc).__name__))
            return None
        except Exception as exc:  # noqa: BLE001 - one definition never stops the catalog
            self.diagnostics.append(internal_error(
                rel, line, f"the option definition `{short(text, 70)}`", exc))
            return None


@dataclass(frozen=True)
class OptionForm:
    """One option-definition form: its recognisers (documented on
    docs/guard-forms.md, in this order) and the finder of the one catalog
    step it serves."""

    name: str
    recognisers: tuple[Callable[..., object], ...]
    find_definitions: Callable[[FormContext], list[OptionDefinition]] | None = None
    find_extensions: Callable[[FormContext, Iterable[tuple[str, str]]], Extensions] | None = None
    find_enums: Callable[[FormContext, Sequence[OptionInfo]], list[EnumInfo]] | None = None

    def __post_init__(self) -> None:
        finders = [self.find_definitions, self.find_extensions, self.find_enums]
        if sum(finder is not None for finder in finders) != 1:
            raise ValueError(f"option form {self.name!r} must serve exactly one step")

    @property
    def stage(self) -> Stage:
        if self.find_definitions is not None:
            return "definitions"
        return "extensions" if self.find_extensions is not None else "enums"
