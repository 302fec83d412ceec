"""kernels (conditions): the capability conditions kernel-library code tests, as Predicates.

What it recognises
    Every condition is read by the guards stage's interpreter, with the guard
    forms (``guards.forms``), as SGLang's guards are: ``major < 10`` after
    ``major, minor = get_compute_capability(d)`` (the getter is read from its
    definition, not its name), ``props.major != 12`` after ``props =
    torch.cuda.get_device_properties(d)``, ``device_arch != "90"`` after
    ``device_arch = f"{major * 10 + minor}"``, ``is_sm100a_supported(d)``.
    What only the kernel library knows is handed to that interpreter
    (``given``): the capability quantity a name holds, whatever its
    assignments say (``bindings`` followed them, keeping a dispatch key's
    meaning through ``backend = "120f"``), and, as the value of names the
    definitions leave unknown: a parameter's
    meaning from its callers (``backend in ("120", "121")`` where every
    caller passes the SM string, see ``bindings``), literal tables whose
    keys are dispatch keys (``backend not in backend_modules``), and a
    ``backend`` parameter, which is the question's ``backend`` option
    (``OptionIs("backend", ...)``), so ``support(..., backend="cudnn")``
    can follow that branch.
Why it matters
    These conditions decide which branch of a dispatch runs on which arch, and
    which raises exclude it.
Known limits
    ``and`` / ``or`` / ``not`` are taken apart here: a part that tests
    neither the device nor the ``backend`` option is left ``Unknown`` (its
    text), whatever the interpreter could make of it, so a library flag never
    decides a kernel fact. A local assigned on branches is read as its
    latest assignment (``NameLookup.branch_values`` off: the callers'
    bindings and the ``backend`` dispatch read the branches), unlike in
    SGLang's tree. Ordering comparisons on capability *strings* are not read
    (``"90" < "100"`` is a string comparison).
Example
    ``major, minor = get_compute_capability(x.device)`` then ``if major < 10:``
    reads as ``Device("major", "<", 10)``; ``def get_module(backend): if
    backend == "103": ...`` called as ``get_module(f"{major}{minor}")`` reads
    as ``Device("sm", "==", 103)``.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from guardscan.guards import Vocabulary
from guardscan.guards.values import ConstV, DevQ, OptV, Value
from guardscan.index import Index
from guardscan.kernels.arguments import read_argument_test
from guardscan.predicate import (
    OptionIs,
    Predicate,
    Unknown,
    atoms,
    conj,
    disj,
    mentions_device,
    neg,
)
from guardscan.syntax import dotted, parse_expr, segment

__all__ = ["BACKEND_OPTION", "CapabilityReader", "given_names"]

#: The Context option that ``support(..., backend=...)`` sets.
BACKEND_OPTION = "backend"

#: Quantities a name can hold. A trailing ``?`` marks a guessed meaning (a
#: dispatch key whose callers could not be read; its digit strings are read as
#: SM numbers).
QUANTITIES = ("major", "minor", "sm", "sm_str", "cap", "sm_str?")

#: quantity -> the interpreter's device quantity (``DevQ.kind``), and back
#: (an SM string from the callers reads as a dispatch key: narrowed in the
#: function, ``backend = "120f"``, it keeps its meaning, see ``bindings``)
_KIND = {"major": "major", "minor": "minor", "sm": "sm", "cap": "cap", "sm_str": "sm_key",
         "sm_str?": "sm_key"}
_QUANTITY = {"major": "major", "minor": "minor", "sm": "sm", "cap": "cap", "sm_text": "sm_str",
             "sm_key": "sm_str?"}


def given_names(quantities: Mapping[str, str], consts: Mapping[str, object] | None = None,
                params: frozenset[str] = frozenset()) -> dict[str, Value]:
    """What the kernel library knows of a scope's names, as the interpreter's
    values: quantities (from the callers, or guessed), literal tables, and
    the ``backend`` parameter as the ``backend`` option."""
    given: dict[str, Value] = {name: DevQ(_KIND[q]) for name, q in quantities.items()}
    for name, value in (consts or {}).items():
        given.setdefault(name, ConstV(value))
    if BACKEND_OPTION in params and BACKEND_OPTION not in quantities:
        given[BACKEND_OPTION] = OptV(BACKEND_OPTION)
    return given


class CapabilityReader:
    """Reads a condition, or a value, of the kernel library through the guards
    interpreter over the library's own index (built on the first question)."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self._vocabulary: Vocabulary | None = None

    @property
    def vocabulary(self) -> Vocabulary:
        if self._vocabulary is None:
            # a local assigned on branches is its latest assignment here:
            # ``bindings`` and the ``backend`` dispatch read the rest
            self._vocabulary = Vocabulary(self.index, branch_values=False)
        return self._vocabulary

    def read(self, text: str, rel: str, scope: str, line: int,
             names: Mapping[str, str], consts: Mapping[str, object] | None = None,
             params: frozenset[str] = frozenset(),
             arguments: Mapping[str, str] | None = None,
             backend_first: bool = False) -> Predicate | None:
        """The condition as a Predicate, or ``None`` when it is not about the device.

        ``names``: local name -> quantity; ``consts``: local names bound to
        literal tables (``backend_modules = {"100": gen_sm100, ...}`` -> its keys);
        ``params``: the function's parameters (a ``backend`` parameter compared
        with backend names reads as the backend option); ``arguments``: when
        given (parameter -> default text), a test of one of those parameters
        reads as its argument state (``kernels.arguments``), decided by what
        a caller passes; ``backend_first``: ``backend`` is the backend the
        call runs whatever the function assigns it (its assignments are the
        ``auto`` resolution the solver makes first, ``kernels.auto_backend``).
        """
        given = given_names(names, consts, params)
        first = frozenset(names)
        if backend_first and BACKEND_OPTION in given:
            first |= {BACKEND_OPTION}
        node = parse_expr(text)
        if node is None:
            return self._leaf(text, rel, scope, line, given, first, arguments)
        return self._node(node, text, rel, scope, line, given, first, arguments)

    def quantity(self, text: str, rel: str, scope: str, line: int,
                 names: Mapping[str, str]) -> str | None:
        """Which capability quantity the expression ``text`` holds, if any
        (``None`` when it is not capability-derived). A name, or ``self.x``,
        holds what ``names`` says (a guessed meaning stays guessed)."""
        node = parse_expr(text)
        if node is None:
            return None
        if isinstance(node, ast.Name):
            return names.get(node.id)
        if isinstance(node, ast.Attribute):
            held = dotted(node)
            if held is not None and held.startswith("self.") and held in names:
                return names[held]
        value = self.vocabulary.value_given(text, rel, scope, line, given_names(names),
                                            frozenset(names))
        return _QUANTITY.get(value.kind) if isinstance(value, DevQ) else None

    def _leaf(self, text: str, rel: str, scope: str, line: int,
              given: Mapping[str, Value], first: frozenset[str],
              arguments: Mapping[str, str] | None = None) -> Predicate | None:
        pred = self.vocabulary.predicate_given(text, rel, scope, line, given, first)
        if mentions_device(pred):
            return pred
        # a test of the ``backend`` option alone (``backend == "cudnn"``)
        parts = atoms(pred)
        if parts and all(isinstance(a, OptionIs) and a.option == BACKEND_OPTION
                         for a in parts):
            return pred
        return read_argument_test(text, arguments) if arguments else None

    def _node(self, node: ast.AST, src: str, rel: str, scope: str, line: int,
              given: Mapping[str, Value], first: frozenset[str],
              arguments: Mapping[str, str] | None = None) -> Predicate | None:
        if isinstance(node, ast.BoolOp):
            parts = [self._node(v, src, rel, scope, line, given, first, arguments)
                     for v in node.values]
            if all(p is None for p in parts):
                return None
            filled = [p if p is not None else Unknown(segment(src, v) or "?")
                      for p, v in zip(parts, node.values)]
            return conj(*filled) if isinstance(node.op, ast.And) else disj(*filled)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            inner = self._node(node.operand, src, rel, scope, line, given, first, arguments)
            return neg(inner) if inner is not None else None
        return self._leaf(segment(src, node), rel, scope, line, given, first, arguments)
