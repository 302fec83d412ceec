"""guards (forms): the registry of guard forms, one module each in this package.

Every module here except ``base`` defines one ``GuardForm`` subclass with its
documentation and its VALID / INVALID examples. The registry is discovered
from the package, in module-name order: adding a guard form is adding one
file. The interpreter asks the registered forms, in that order, about calls,
attributes, subscripts, arithmetic, comparisons, truth and unpacking of the
values they recognise; forms answer for disjoint kinds of values, so the order
decides only the order of docs/guard-forms.md.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable

from guardscan.guards.forms.base import BUILTIN_MODULES, Example, GuardForm, builtin_name
from guardscan.guards.values import Value
from guardscan.predicate import Predicate

__all__ = ["BUILTIN_MODULES", "BUILTIN_NAMES", "REGISTRY", "SUBJECTS", "Example", "GuardForm",
           "builtin_name", "first_predicate", "first_value"]


def _discover() -> tuple[GuardForm, ...]:
    forms: list[GuardForm] = []
    for module_info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if module_info.name == "base":
            continue
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, GuardForm) and value is not \
                    GuardForm and value.__module__ == module.__name__:
                forms.append(value())
    return tuple(forms)


#: Every guard form, in module-name order.
REGISTRY: tuple[GuardForm, ...] = _discover()
#: Builtin names some form reads: an undefined name among them is ``builtins.<name>``.
BUILTIN_NAMES: frozenset[str] = frozenset().union(*(f.builtins for f in REGISTRY))
#: Value types some form compares (put on the left of a comparison).
SUBJECTS: tuple[type, ...] = tuple(t for f in REGISTRY for t in f.subjects)



def first_value(ask: Callable[[GuardForm], Value | None]) -> Value | None:
    """The first registered form's value for ``ask`` (``None``: no form recognises it)."""
    for form in REGISTRY:
        answer = ask(form)
        if answer is not None:
            return answer
    return None


def first_predicate(ask: Callable[[GuardForm], Predicate | None]) -> Predicate | None:
    """The first registered form's predicate for ``ask`` (``None``: no form reads it)."""
    for form in REGISTRY:
        answer = ask(form)
        if answer is not None:
            return answer
    return None
