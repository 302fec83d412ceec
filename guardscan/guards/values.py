"""guards (values): the abstract values a guard expression can evaluate to.

The interpreter never runs scanned code; it maps each expression to one of
these values. Every value is frozen and hashable by construction (constants
freeze their containers), because values enter memo keys: a function called
with a value as argument is remembered by (function, bound arguments).
"""

from __future__ import annotations

from dataclasses import dataclass

from guardscan.pickling import fields_reduce
from guardscan.predicate import Predicate

__all__ = [
    "AltV",
    "ChoiceV",
    "ClassV",
    "ConfigV",
    "ConstV",
    "CudaV",
    "DevQ",
    "EnumMemberV",
    "ExtV",
    "FormValue",
    "FrozenSlice",
    "FuncV",
    "InstanceV",
    "MajorTimesTen",
    "ModuleV",
    "Opaque",
    "OptV",
    "ParamV",
    "PlatformV",
    "PredV",
    "TupleV",
    "UnkV",
    "Value",
    "Wrapper",
    "freeze",
]


@dataclass(frozen=True, slots=True)
class PredV:
    pred: Predicate


@dataclass(frozen=True, slots=True)
class DevQ:
    """A device quantity: cap (tuple), major, minor, sm (major*10+minor),
    sm_text (the SM as digits) and sm_key (a kernel dispatch key guessed to be
    the SM as text: ``"100a"`` reads as 100)."""

    kind: str


@dataclass(frozen=True, slots=True)
class CudaV:
    """torch.version.cuda, as text or as a (major, minor) tuple."""


@dataclass(frozen=True, slots=True)
class ConstV:
    """A constant. Its value is frozen on construction (lists to tuples, sets to
    frozensets, slices to ``FrozenSlice``) so that every value is hashable and
    can key a memo: the interpreter models ``[a, b]`` as ``(a, b)`` already."""

    value: object

    def __post_init__(self) -> None:
        if type(self.value) not in _ATOMIC:
            object.__setattr__(self, "value", freeze(self.value))


@dataclass(frozen=True, slots=True)
class FrozenSlice:
    """A slice as a hashable constant (``slice`` is unhashable before Python 3.12)."""

    start: object
    stop: object
    step: object

    def as_slice(self) -> slice:
        return slice(self.start, self.stop, self.step)


@dataclass(frozen=True, slots=True)
class Opaque:
    """A constant of a type the interpreter does not model, kept by its text."""

    text: str


_ATOMIC = frozenset({int, str, bool, float, type(None), bytes})


def freeze(value: object) -> object:
    """``value`` with every container made immutable and hashable."""
    if type(value) in _ATOMIC:
        return value
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    if isinstance(value, (set, frozenset)):
        return frozenset(freeze(v) for v in value)
    if isinstance(value, slice):
        return FrozenSlice(freeze(value.start), freeze(value.stop), freeze(value.step))
    if isinstance(value, dict):
        return Opaque(repr(value))
    try:
        hash(value)
    except TypeError:
        return Opaque(repr(value))
    return value


@dataclass(frozen=True, slots=True)
class FuncV:
    rel: str
    qualname: str
    bound: tuple[tuple[str, Value], ...] = ()
    positional: tuple[Value, ...] = ()


@dataclass(frozen=True, slots=True)
class ClassV:
    rel: str
    qualname: str


@dataclass(frozen=True, slots=True)
class InstanceV:
    rel: str
    qualname: str


@dataclass(frozen=True, slots=True)
class ConfigV:
    """A ``--quantization`` method's config object, as the loader builds it:
    ``from_config``'s ``cls(...)`` from the checkpoint (``guards.quant_configs``)."""

    rel: str
    qualname: str


@dataclass(frozen=True, slots=True)
class ModuleV:
    name: str


@dataclass(frozen=True, slots=True)
class OptV:
    """The value of a backend option (by dest) or of an enum linked to it."""

    dest: str


@dataclass(frozen=True, slots=True)
class EnumMemberV:
    values: frozenset[str]


@dataclass(frozen=True, slots=True)
class ChoiceV:
    """A value computed from a backend option's value (``backend.removeprefix(
    "flashinfer_")``, an enum method, an f-string): what it comes to for each
    choice of the option, found by interpreting the computation once per choice
    (``guards.choices``). Choices missing from ``table`` are undecided."""

    dest: str
    table: tuple[tuple[str, Value], ...]

    def of(self, choice: str) -> Value | None:
        for name, value in self.table:
            if name == choice:
                return value
        return None

    def strings(self) -> tuple[tuple[str, str], ...]:
        """(choice, text) for the choices whose value is a string."""
        return tuple((c, v.value) for c, v in self.table
                     if isinstance(v, ConstV) and isinstance(v.value, str))


@dataclass(frozen=True, slots=True)
class TupleV:
    """A tuple whose items are not all constants (``return prefill, decode``)."""

    items: tuple[Value, ...]


@dataclass(frozen=True, slots=True)
class AltV:
    """A value that depends on conditions: ``value`` where ``condition`` holds,
    for each alternative (an instance attribute set under device tests in
    ``__init__``: ``self._kernel = "cutlass_sm90"`` when ``is_sm90``...)."""

    alternatives: tuple[tuple[Predicate, Value], ...]


@dataclass(frozen=True, slots=True)
class ExtV:
    """A name from outside the tree (``torch.cuda...``, ``functools.partial``,
    builtins), known only by its qualified name: never imported."""

    path: str


@dataclass(frozen=True, slots=True)
class UnkV:
    reason: str


@dataclass(frozen=True, slots=True)
class ParamV(UnkV):
    """A mode parameter of a module-level function (``quant_mode="w4a4"``):
    unknown wherever it is read, except compared with a constant, where
    ``guards.call_sites`` reads what every call site binds (asked only
    then: the callers are searched for in the whole tree)."""

    rel: str = ""
    scope: str = ""
    name: str = ""


@dataclass(frozen=True, slots=True)
class FormValue:
    """Base of the values a guard form defines for itself (one new file per form:
    see ``guards.forms.device_properties``). As a predicate it is unknown."""


@dataclass(frozen=True, slots=True)
class PlatformV:
    """``torch.version.hip``-like: not None exactly on that platform."""

    name: str


@dataclass(frozen=True, slots=True)
class MajorTimesTen:
    """``major * 10``, half-way to the SM number ``major * 10 + minor``."""


@dataclass(frozen=True, slots=True)
class Wrapper:
    """functools.partial / lru_cache / cache, applied lazily."""

    kind: str
    inner: Value | None = None
    bound: tuple[tuple[str, Value], ...] = ()
    positional: tuple[Value, ...] = ()

    def apply(self, args: list[Value], kwargs: dict[str, Value]) -> Value:
        if self.kind == "decorator-factory":  # lru_cache(maxsize=1)(f)
            return args[0] if args else UnkV("lru_cache() without function")
        if self.kind == "partial":
            inner = self.inner
            if isinstance(inner, FuncV):
                return FuncV(inner.rel, inner.qualname,
                             tuple(sorted({**dict(inner.bound), **dict(self.bound),
                                           **kwargs}.items())),
                             (*inner.positional, *self.positional, *args))
            return UnkV("partial of unknown function")
        return UnkV("wrapper")


#: Every value the interpreter produces.
Value = (PredV | DevQ | CudaV | ConstV | FuncV | ClassV | InstanceV | ModuleV | OptV
         | EnumMemberV | ChoiceV | AltV | ConfigV | TupleV | ExtV | UnkV | PlatformV | MajorTimesTen | Wrapper | FormValue)


# pickled by their fields in order (the default calls ``dataclasses.fields``
# per object): the record of linking holds tens of thousands of values
for _cls in (PredV, DevQ, CudaV, ConstV, FrozenSlice, Opaque, FuncV, ClassV, InstanceV, ConfigV,
             ModuleV, OptV, EnumMemberV, ChoiceV, TupleV, AltV, ExtV, UnkV, FormValue, PlatformV,
             MajorTimesTen, Wrapper):
    _cls.__reduce__ = fields_reduce  # type: ignore[method-assign]
