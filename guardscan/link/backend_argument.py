"""link (backend argument): what a call's ``backend=`` argument says, for a call into the kernel library.

A call made from a choice's code may hand the library a backend by name
(``backend="cudnn"``), or compute it from the option's value
(``backend=self.backend.removeprefix("flashinfer_")``): the first is a
literal, the second names the choices the library is asked for.
"""

from __future__ import annotations

from guardscan.guards import ChoiceV, ConstV, OptV, Value, Vocabulary
from guardscan.index.facts import CallFact
from guardscan.index.observe import FactsView
from guardscan.syntax import parse_expr

__all__ = ["backend_argument", "backend_choices", "literal_backend"]


def literal_backend(vocab: Vocabulary, facts: FactsView, call: CallFact) -> str | None:
    """A ``backend=`` argument that resolves to a string, e.g. ``backend="cudnn"``."""
    value = backend_argument(vocab, facts, call)
    return value.value if isinstance(value, ConstV) and isinstance(value.value, str) else None


def backend_argument(vocab: Vocabulary, facts: FactsView, call: CallFact) -> Value | None:
    """The value of a call's ``backend=`` argument (None: it has none)."""
    for name, text in call.kwargs:
        if name == "backend":
            if parse_expr(text) is None:
                return None
            return vocab.value(text, facts.rel, call.scope, call.line)
    return None


def backend_choices(value: Value | None, choices: dict[str, tuple[str, ...]],
                    ) -> tuple[str, tuple[tuple[str, str], ...]] | None:
    """(dest, (choice, string)...) when a ``backend=`` value is computed from an
    option's value (``backend.removeprefix("flashinfer_")``, or the value itself)."""
    if isinstance(value, OptV) and value.dest in choices:
        return value.dest, tuple((c, c) for c in choices[value.dest])
    if isinstance(value, ChoiceV) and value.dest in choices:
        # a mapping that renames some choices (``flashinfer_trtllm`` ->
        # ``trtllm``) marks those as the library's backends; the choices it
        # passes through unchanged (``marlin``, ``auto``) are not taken to make
        # the call (they are SGLang's own paths, or resolved elsewhere)
        strings = value.strings()
        renamed = tuple((c, s) for c, s in strings if c != s)
        strings = renamed or strings
        return (value.dest, strings) if strings else None
    return None
