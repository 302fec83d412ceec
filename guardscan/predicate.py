"""predicate (shared by every stage): three-valued predicates about the device, the options and the quantization.

A guard such as ``is_sm100_supported()`` or ``major != 9`` becomes a Predicate; a
Predicate is evaluated against a Context (one architecture, optionally the
chosen backend options and quantization method) and gives TRUE, FALSE or
UNKNOWN. UNKNOWN never silently becomes TRUE or FALSE: ``And`` is FALSE only when
one part is FALSE, TRUE only when every part is TRUE (Kleene logic), which is how
a type checker narrows ``sys.platform`` for a configured platform.
"""

from __future__ import annotations

import enum
import operator
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from guardscan.arch import Arch
from guardscan.pickling import fields_reduce

if TYPE_CHECKING:
    from guardscan.model_facts import ModelView

__all__ = [
    "FALSE",
    "TRUE",
    "And",
    "Const",
    "Context",
    "CudaAtLeast",
    "Device",
    "EnvIs",
    "Installed",
    "ModelIs",
    "Not",
    "OptionIs",
    "Or",
    "Platform",
    "Predicate",
    "QuantIs",
    "Tri",
    "Unknown",
    "atoms",
    "conj",
    "disj",
    "leaves",
    "neg",
]


def written(pred: Predicate) -> str:
    """A compound predicate as people read it (``predicate_text``)."""
    from guardscan.predicate_text import shortest, text

    return text(shortest(pred))


class Tri(enum.Enum):
    TRUE = "true"
    FALSE = "false"
    UNKNOWN = "unknown"

    @staticmethod
    def of(value: bool) -> Tri:
        return Tri.TRUE if value else Tri.FALSE

    def __invert__(self) -> Tri:
        if self is Tri.UNKNOWN:
            return self
        return Tri.FALSE if self is Tri.TRUE else Tri.TRUE


@dataclass(frozen=True, slots=True)
class Context:
    """What is fixed while evaluating: the architecture and, when known, the
    value of backend options (by dest name) and the quantization method.

    ``quantization`` is ``None`` when the method is not fixed; the empty string
    means "no quantization" was chosen explicitly.
    """

    arch: Arch | None = None
    options: Mapping[str, str] = field(default_factory=dict)
    quantization: str | None = None
    #: environment variables set for the launch; one not named here is unset
    env: Mapping[str, str] = field(default_factory=dict)
    #: import names of the packages the scan pairs with the target (installed
    #: with it: the kernel library, the compiled packages it pins)
    installed: frozenset[str] = frozenset()
    #: the model the launch serves (``model_facts.ModelView``): None while
    #: linking, where a property of the model is unknown
    model: ModelView | None = None


_OPS: dict[str, Callable[[object, object], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,  # type: ignore[dict-item]
    "<=": operator.le,  # type: ignore[dict-item]
    ">": operator.gt,  # type: ignore[dict-item]
    ">=": operator.ge,  # type: ignore[dict-item]
    "in": lambda a, b: a in b,  # type: ignore[operator]
    "not in": lambda a, b: a not in b,  # type: ignore[operator]
}
_FLIP = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_NEGATE = {"==": "!=", "!=": "==", "<": ">=", "<=": ">", ">": "<=", ">=": "<", "in": "not in",
           "not in": "in"}

_QUANTITY_TEXT = {"major": "capability major", "minor": "capability minor",
                  "sm": "SM (major*10+minor)", "cap": "capability"}


@dataclass(frozen=True, slots=True)
class Const:
    value: bool

    def evaluate(self, ctx: Context) -> Tri:
        return Tri.of(self.value)

    def describe(self) -> str:
        return "always" if self.value else "never"


TRUE = Const(True)
FALSE = Const(False)


@dataclass(frozen=True, slots=True)
class Device:
    """A comparison on the device capability.

    ``quantity`` is ``major``, ``minor``, ``sm`` (major*10+minor) or ``cap`` (the
    (major, minor) tuple); ``value`` is an int, a tuple, or for ``in`` a tuple
    of candidates.
    """

    quantity: str
    op: str
    value: int | tuple[int, ...] | tuple[tuple[int, int], ...]

    def measure(self, arch: Arch) -> object:
        return {"major": arch.major, "minor": arch.minor, "sm": arch.sm,
                "cap": (arch.major, arch.minor)}[self.quantity]

    def evaluate(self, ctx: Context) -> Tri:
        if ctx.arch is None:
            return Tri.UNKNOWN
        return Tri.of(_OPS[self.op](self.measure(ctx.arch), self.value))

    def describe(self) -> str:
        value = self.value
        if self.quantity == "cap" and isinstance(value, tuple) and value and isinstance(
            value[0], int
        ):
            value_text = f"{value[0]}.{value[1]}"
        elif isinstance(value, tuple):
            value_text = "[" + ", ".join(
                f"{v[0]}.{v[1]}" if isinstance(v, tuple) else str(v) for v in value
            ) + "]"
        else:
            value_text = str(value)
        return f"{_QUANTITY_TEXT[self.quantity]} {self.op} {value_text}"


@dataclass(frozen=True, slots=True)
class CudaAtLeast:
    """``torch.version.cuda >= (major, minor)``.

    TRUE when every toolkit able to target the architecture is at least that
    new (a curated, cited fact in data/architectures.json); otherwise UNKNOWN,
    never FALSE: the user may have a newer toolkit.
    """

    version: tuple[int, int]

    def evaluate(self, ctx: Context) -> Tri:
        if ctx.arch is None or ctx.arch.min_cuda is None:
            return Tri.UNKNOWN
        return Tri.TRUE if ctx.arch.min_cuda >= self.version else Tri.UNKNOWN

    def describe(self) -> str:
        return f"CUDA >= {self.version[0]}.{self.version[1]}"


@dataclass(frozen=True, slots=True)
class Platform:
    """The device platform: ``cuda``, ``cuda_alike`` (CUDA or ROCm), ``hip``,
    ``npu``, ``xpu``, ``hpu``, ``musa``, ``mps``. Every architecture guardscan
    judges is an NVIDIA CUDA one."""

    name: str

    def evaluate(self, ctx: Context) -> Tri:
        if ctx.arch is None:
            return Tri.UNKNOWN
        return Tri.of(self.name in ("cuda", "cuda_alike"))

    def describe(self) -> str:
        return f"platform is {self.name}"


@dataclass(frozen=True, slots=True)
class OptionIs:
    """The option (by dest name) holds one of ``choices``. ``shared``: the
    options whose values the tree stores where this test reads this one's
    (``link.shared_values``); it changes nothing here, and the linker gives
    those options a copy of the findings made under such a test."""

    option: str
    choices: frozenset[str]
    shared: tuple[str, ...] = ()

    def evaluate(self, ctx: Context) -> Tri:
        if self.option not in ctx.options:
            return Tri.UNKNOWN
        return Tri.of(ctx.options[self.option] in self.choices)

    def describe(self) -> str:
        names = ", ".join(sorted(self.choices))
        return f"{self.option} in {{{names}}}" if len(self.choices) > 1 else (
            f"{self.option} == {names}")


@dataclass(frozen=True, slots=True)
class QuantIs:
    """The quantization method is one of ``methods``; with ``unset``, TRUE
    too when no method is given (code that runs for a backend choice only
    under the methods that reach it: judged without a method, as the choice
    is used)."""

    methods: frozenset[str]
    unset: bool = False

    def evaluate(self, ctx: Context) -> Tri:
        if ctx.quantization is None:
            return Tri.TRUE if self.unset else Tri.UNKNOWN
        return Tri.of(ctx.quantization in self.methods)

    def describe(self) -> str:
        if not self.methods:
            return "--quantization not given" if self.unset else "FALSE"
        text = "quantization in {" + ", ".join(sorted(self.methods)) + "}"
        return text + " or not given" if self.unset else text


@dataclass(frozen=True, slots=True)
class EnvIs:
    """An environment variable's value (``default`` when it is not set, as
    ``os.getenv(name, default)`` reads it), after ``transform`` (``lower``),
    ``in`` / ``not in`` ``values``, or ``truthy`` (set and non-empty). Judged
    with the variable unset unless the context sets it: the launch most
    users run."""

    name: str
    op: str
    values: frozenset[str]
    default: str | None
    transform: str = ""

    def evaluate(self, ctx: Context) -> Tri:
        raw = ctx.env.get(self.name, self.default)
        if raw is not None and self.transform in ("lower", "upper", "strip"):
            raw = getattr(raw, self.transform)()
        if self.op == "truthy":
            return Tri.of(bool(raw))
        hit = raw is not None and raw in self.values
        return Tri.of(hit if self.op == "in" else not hit)

    def describe(self) -> str:
        unset = "unset" if self.default is None else f"unset: {self.default!r}"
        if self.op == "truthy":
            return f"env {self.name} set ({unset})"
        return f"env {self.name} {self.op} {{{', '.join(sorted(self.values))}}} ({unset})"


@dataclass(frozen=True, slots=True)
class Installed:
    """The package importable as ``package`` is installed: TRUE when the scan
    pairs it with the target (it is pinned and read), else UNKNOWN (never
    FALSE: the user may have installed it)."""

    package: str

    def evaluate(self, ctx: Context) -> Tri:
        return Tri.TRUE if self.package in ctx.installed else Tri.UNKNOWN

    def describe(self) -> str:
        return f"{self.package} is installed"


@dataclass(frozen=True, slots=True)
class ModelIs:
    """A property of the model the launch serves, as its ``config.json``
    gives it: ``prop`` is ``architectures`` (one of the checkpoint's
    architectures is in ``values``), ``model_type``, or ``attention_arch``
    (``MLA``, ``MHA``, ``SSM``, as the release's ``ModelConfig`` derives it).
    Unknown unless the context says which model (``model_facts.ModelView``:
    the common model, or the one ``--model-config`` names)."""

    prop: str
    values: frozenset[str]

    def evaluate(self, ctx: Context) -> Tri:
        return Tri.UNKNOWN if ctx.model is None else ctx.model.test(self)

    def describe(self) -> str:
        names = ", ".join(sorted(self.values))
        if self.prop == "architectures":
            return f"model architecture in {{{names}}}" if len(self.values) > 1 else (
                f"model architecture is {names}")
        return f"model {self.prop} in {{{names}}}" if len(self.values) > 1 else (
            f"model {self.prop} == {names}")


@dataclass(frozen=True, slots=True)
class Unknown:
    """Anything not about the device: env vars, model config, packages..."""

    reason: str

    def evaluate(self, ctx: Context) -> Tri:
        return Tri.UNKNOWN

    def describe(self) -> str:
        return f"? {self.reason}"


@dataclass(frozen=True, slots=True)
class And:
    items: tuple[Predicate, ...]
    #: the hash, once asked (``_cached_hash``)
    _hash: int = field(init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        return _cached_hash(self, self.items)

    def __reduce__(self) -> tuple[type, tuple[object, ...]]:
        return And, (self.items,)

    def evaluate(self, ctx: Context) -> Tri:
        result = Tri.TRUE
        for item in self.items:
            value = item.evaluate(ctx)
            if value is Tri.FALSE:
                return Tri.FALSE
            if value is Tri.UNKNOWN:
                result = Tri.UNKNOWN
        return result

    def describe(self) -> str:
        return written(self)


@dataclass(frozen=True, slots=True)
class Or:
    items: tuple[Predicate, ...]
    #: the hash, once asked (``_cached_hash``)
    _hash: int = field(init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        return _cached_hash(self, self.items)

    def __reduce__(self) -> tuple[type, tuple[object, ...]]:
        return Or, (self.items,)

    def evaluate(self, ctx: Context) -> Tri:
        result = Tri.FALSE
        for item in self.items:
            value = item.evaluate(ctx)
            if value is Tri.TRUE:
                return Tri.TRUE
            if value is Tri.UNKNOWN:
                result = Tri.UNKNOWN
        return result

    def describe(self) -> str:
        return written(self)


@dataclass(frozen=True, slots=True)
class Not:
    item: Predicate
    #: the hash, once asked (``_cached_hash``)
    _hash: int = field(init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        return _cached_hash(self, self.item)

    def __reduce__(self) -> tuple[type, tuple[object, ...]]:
        return Not, (self.item,)

    def evaluate(self, ctx: Context) -> Tri:
        return ~self.item.evaluate(ctx)

    def describe(self) -> str:
        return written(self)


def _cached_hash(pred: And | Or | Not, part: object) -> int:
    """The hash of a compound predicate (the dataclass's: of its one field),
    kept once asked: it hashes every part below it, and the same shared
    conditions are hashed many times (findings compared, memo keys).

    >>> part = disj(Device("major", "==", 9), Unknown("x"))
    >>> hash(part) == hash((part.items,)) and hash(part) == hash(part)
    True
    """
    try:
        return pred._hash
    except AttributeError:
        found = hash((part,))
        object.__setattr__(pred, "_hash", found)
        return found


Predicate = (Const | Device | CudaAtLeast | Platform | OptionIs | QuantIs | EnvIs | Installed
             | ModelIs | Unknown | And | Or | Not)


def _flatten(kind: type, items: Iterable[Predicate]) -> list[Predicate]:
    out: list[Predicate] = []
    for item in items:
        if isinstance(item, kind) and isinstance(item, (And, Or)):
            out.extend(item.items)
        else:
            out.append(item)
    return out


def conj(*items: Predicate) -> Predicate:
    """And with constant folding and flattening."""
    parts: list[Predicate] = []
    for item in _flatten(And, items):
        # ``item == TRUE``, without the dataclass comparisons it takes for
        # every other kind (the most frequent call of a scan's linking)
        if type(item) is Const:
            if item.value == True:  # as Const(True) == item compares
                continue
            if item.value == False:
                return FALSE
        if item not in parts:
            parts.append(item)
    if not parts:
        return TRUE
    return parts[0] if len(parts) == 1 else And(tuple(parts))


def disj(*items: Predicate) -> Predicate:
    """Or with constant folding and flattening."""
    parts: list[Predicate] = []
    for item in _flatten(Or, items):
        if type(item) is Const:  # as in ``conj``
            if item.value == False:
                continue
            if item.value == True:
                return TRUE
        if item not in parts:
            parts.append(item)
    if not parts:
        return FALSE
    return parts[0] if len(parts) == 1 else Or(tuple(parts))


def neg(item: Predicate) -> Predicate:
    """Not, pushed into constants, comparisons and double negations."""
    if isinstance(item, Const):
        return Const(not item.value)
    if isinstance(item, Not):
        return item.item
    if isinstance(item, Device):
        return Device(item.quantity, _NEGATE[item.op], item.value)
    return Not(item)


def flip_op(op: str) -> str:
    """The operator that holds with operands swapped (``a < b`` iff ``b > a``)."""
    return _FLIP.get(op, op)


def atoms(pred: Predicate) -> list[Predicate]:
    """The leaves of a predicate, in order."""
    if isinstance(pred, (And, Or)):
        out: list[Predicate] = []
        for item in pred.items:
            out.extend(atoms(item))
        return out
    if isinstance(pred, Not):
        return atoms(pred.item)
    return [pred]


#: ``leaves`` of compound predicates already walked, by identity (the entry
#: holds the predicate, so its id is not reused while the entry lives): the
#: linker and the judge ask it of the same shared conditions many times.
#: Emptied when full: at 131,072 entries it kept conditions alive that
#: nothing else held (a scan of sglang 0.5.23 from stored facts peaked 13 to
#: 16 MB higher), with the same CPU time as 16,384 or 4,096
_LEAVES: dict[int, tuple[Predicate, tuple[Predicate, ...]]] = {}
_LEAVES_MAX = 1 << 14


def leaves(pred: Predicate) -> tuple[Predicate, ...]:
    """The leaves of a predicate in order, each shared part walked once: what
    ``atoms`` gives without the repeats a shared part brings (the linker's
    conditions share their parts widely). For any question of which leaves
    there are, not of how often they occur.

    >>> part = disj(Device("major", "==", 9), Unknown("x"))
    >>> [a.describe() for a in leaves(conj(part, neg(part)))]
    ['capability major == 9', '? x']
    """
    if not isinstance(pred, (And, Or, Not)):
        return (pred,)
    known = _LEAVES.get(id(pred))
    if known is not None and known[0] is pred:
        return known[1]
    out: list[Predicate] = []
    seen: set[int] = set()
    stack: list[Predicate] = [pred]
    while stack:
        p = stack.pop()
        if isinstance(p, (And, Or, Not)):
            if id(p) in seen:
                continue
            seen.add(id(p))
            if isinstance(p, Not):
                stack.append(p.item)
            else:
                stack.extend(reversed(p.items))
        else:
            out.append(p)
    found = tuple(out)
    if len(_LEAVES) >= _LEAVES_MAX:
        _LEAVES.clear()
    _LEAVES[id(pred)] = (pred, found)
    return found


def mentions_device(pred: Predicate) -> bool:
    """True when the predicate depends on the device (capability or platform)."""
    return any(isinstance(a, (Device, CudaAtLeast, Platform)) for a in leaves(pred))


def mentions_capability(pred: Predicate) -> bool:
    """True when the predicate depends on the compute capability itself."""
    return any(isinstance(a, Device) for a in leaves(pred))


def substitute(pred: Predicate, fn: Callable[[Predicate], Predicate | None]) -> Predicate:
    """Rebuild ``pred`` with each leaf replaced by ``fn(leaf)`` when not None
    (``fn`` gives the same for the same leaf: each shared part is rebuilt
    once, as ``predicate_dag`` walks).

    >>> shared = disj(Device("major", "==", 9), Unknown("x"))
    >>> substitute(conj(shared, neg(shared)), lambda a: TRUE if a == Unknown("x") else None)
    Const(value=False)
    """
    return _substitute(pred, fn, {})


def _substitute(p: Predicate, fn: Callable[[Predicate], Predicate | None],
                memo: dict[int, Predicate]) -> Predicate:
    known = memo.get(id(p))
    if known is not None:
        return known
    out: Predicate
    if isinstance(p, And):
        out = conj(*[_substitute(i, fn, memo) for i in p.items])
    elif isinstance(p, Or):
        out = disj(*[_substitute(i, fn, memo) for i in p.items])
    elif isinstance(p, Not):
        out = neg(_substitute(p.item, fn, memo))
    else:
        replaced = fn(p)
        out = p if replaced is None else replaced
    memo[id(p)] = out
    return out


def to_json(pred: Predicate) -> object:
    """A plain-data form for JSON and GraphML export."""
    if isinstance(pred, (And, Or)):
        return {type(pred).__name__.lower(): [to_json(i) for i in pred.items]}
    if isinstance(pred, Not):
        return {"not": to_json(pred.item)}
    return {"atom": pred.describe()}


for _cls in (Const, Device, CudaAtLeast, Platform, OptionIs, QuantIs, EnvIs, Installed, ModelIs,
             Unknown):
    _cls.__reduce__ = fields_reduce  # type: ignore[method-assign]
