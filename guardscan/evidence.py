"""evidence (shared by every stage): what kind of fact an evidence line is, and its note, rendered in one place.

An ``Evidence`` carries its fact's ``kind`` (``FactKind``), the ``tier`` of a
kernel fact (a: an explicit check on the API called, b: what was built ahead
of time, c: what may compile), its ``status`` in the verdict (``Status``: it
decides, it is a caveat, or it is context on the way) and the ``args`` its
note is made from. The note is prose for people, rendered here from the kind
and the arguments; renderers, the lock file, diff and pre-flight read the
fields, never the note's wording (bandit's ``Issue`` carries ``test_id``,
``severity`` and ``confidence`` as fields).

Adding a kind of fact is one member of ``FactKind`` plus, where its note has
a shape of its own, one template in ``_TEMPLATES``: the ``field`` reports and
the compiled-kernel (``binary``) and C++ (``cpp-check``) facts have theirs.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping

__all__ = [
    "HOP_KINDS",
    "KERNEL_FACT_KINDS",
    "STATED",
    "Args",
    "FactKind",
    "Status",
    "arg",
    "args_of",
    "render_note",
    "stated",
    "tier_of",
]


class FactKind(str, enum.Enum):
    """What an evidence line is. Prints and compares as its value."""

    # the option, and the lines that lead from a choice to a fact
    OPTION = "option"  # the option's definition: where its choices come from
    LINK = "link"  # ties code to the choice: an option test, a registry, a module name
    CALL = "call"  # a call followed out of the choice's code
    GUARD = "guard"  # a device test on the path
    DEFINITION = "definition"  # a line that gives a guard its meaning
    MODULE = "module"  # a module imported, or a name bound, on the way
    QUANT = "quant"  # a quantization method's config class and what it returns
    # what SGLang itself says
    GATE = "gate"  # a raise / failing assert on the path
    DEFAULT = "default"  # ``auto`` resolves to the choice under a device condition
    IMPORT = "import"  # a name bound only under a device guard
    DOC = "doc"  # a help-text claim
    SELECT = "select"  # a device test that picks an implementation
    REQUIRES = "requires"  # another option the choice cannot run without
    PLATFORM = "platform"  # the choice's code calls into another platform's package
    # what the kernel library says
    KERNEL_CALL = "kernel-call"  # a call inside the kernel library
    DECORATOR = "decorator"  # @supported_compute_capability
    BACKEND_REQUIREMENT = "backend-requirement"  # @backend_requirement, per backend
    CHECK = "check"  # a raising capability check in Python
    ARTIFACTS = "artifacts"  # the precompiled cubins a module loads
    JIT_SPEC = "jit-spec"  # a JIT spec's supported_major_versions / nvcc flags
    DISPATCH = "dispatch"  # a per-architecture dispatch
    TABLE = "table"  # a per-architecture table
    # beside the source (room for the kinds that the next readers add)
    CPP_CHECK = "cpp-check"  # an explicit check in the C++/CUDA sources
    ARGUMENT_CHECK = "argument-check"  # a raise on the arguments the caller passes
    BINARY = "binary"  # the architectures a compiled package holds code for
    FIELD = "field"  # a field report: what users saw, with its URL

    __hash__ = str.__hash__

    def __str__(self) -> str:
        return str(self.value)


class Status(str, enum.Enum):
    """An evidence line's part in its verdict, set where the verdict is decided."""

    DECIDES = "decides"  # the fact that decided the verdict (one per verdict at most)
    CAVEAT = "caveat"  # could change the verdict under something undecided
    CONTEXT = "context"  # on the way to the deciding fact, or shown beside it

    __hash__ = str.__hash__

    def __str__(self) -> str:
        return str(self.value)


#: the kinds that lead to a fact rather than state one
HOP_KINDS = frozenset({FactKind.OPTION, FactKind.LINK, FactKind.CALL, FactKind.GUARD,
                       FactKind.DEFINITION, FactKind.MODULE, FactKind.QUANT,
                       FactKind.KERNEL_CALL})

#: the kernel library's facts, each with a tier
KERNEL_FACT_KINDS = frozenset({FactKind.DECORATOR, FactKind.BACKEND_REQUIREMENT,
                               FactKind.CHECK, FactKind.ARTIFACTS, FactKind.JIT_SPEC,
                               FactKind.DISPATCH, FactKind.TABLE, FactKind.CPP_CHECK,
                               FactKind.BINARY, FactKind.ARGUMENT_CHECK})

_TIERS = {
    FactKind.DECORATOR: "a",
    FactKind.BACKEND_REQUIREMENT: "a",
    FactKind.CHECK: "a",
    FactKind.CPP_CHECK: "a",
    FactKind.ARGUMENT_CHECK: "a",
    FactKind.ARTIFACTS: "b",
    FactKind.BINARY: "b",
    FactKind.JIT_SPEC: "c",
}


def tier_of(kind: str) -> str:
    """The tier of a kernel fact's kind ("" for kinds without one)."""
    try:
        return _TIERS.get(FactKind(kind), "")
    except ValueError:
        return ""


Args = tuple[tuple[str, str], ...]


def args_of(**values: object) -> Args:
    """Template arguments as data: (name, text) pairs, empty values left out."""
    return tuple((name, str(value)) for name, value in values.items()
                 if value is not None and value != "")


#: the arguments that state a fact (what it tests, what it comes to); the
#: others (a fact's free-text detail, qualifiers, a hop's description) may
#: name line numbers and are left out of a fact's identity
STATED = frozenset({"fact", "strength", "predicate", "value", "effect", "condition", "arch",
                    "choice", "flag", "claim", "edge", "caller", "callee", "when", "select",
                    "undecided", "fallback"})


def stated(args: Iterable[tuple[str, str]]) -> Args:
    """The arguments of ``args`` that state the fact (``STATED``), in order."""
    return tuple((name, value) for name, value in args if name in STATED)


def arg(args: Iterable[tuple[str, str]], name: str, default: str = "") -> str:
    """One argument's value (the first, for a repeated name)."""
    return next((value for key, value in args if key == name), default)


def _fact(a: Mapping[str, str]) -> str:
    label = f"{a['fact']} ({a['strength']})" if a.get("strength") else a.get("fact", "")
    note = f"{label}: {a.get('predicate', '')} -> {a.get('value', '')}"
    return note + (f" ({a['detail']})" if a.get("detail") else "")


def _kernel_call(a: Mapping[str, str]) -> str:
    note = f"{a.get('edge', 'call')}: {a.get('caller', '')} -> {a.get('callee', '')}"
    if a.get("when"):
        note += f" when {a['when']}"
        if a.get("select"):
            note += f" (select, {a['select']} here)"
    return note


def _gate(a: Mapping[str, str]) -> str:
    effect = a.get("effect", "")
    if effect == "raises":
        return f"raises on {a['arch']}: {a['condition']}"
    if effect == "could-raise":
        return f"could raise on {a['arch']} depending on: {a['undecided']}"
    if effect == "every-path":
        return (f"raises on {a['arch']} when {a['when']}; with the {a['others']} other such "
                "lines, on every path")
    if effect == "admits":
        return f"admits {a['arch']}: raises only when {a['condition']}"
    return a.get("text", "")


def _default(a: Mapping[str, str]) -> str:
    return f"{a['flag']} auto resolves to {a['choice']} when {a['condition']}"


def _doc(a: Mapping[str, str]) -> str:
    return f"help text {a['claim']} {a['arch']} (weak evidence)"


def _select(a: Mapping[str, str]) -> str:
    return f"picks an implementation ({a['value']} on {a['arch']}); not a support claim"


def _requires(a: Mapping[str, str]) -> str:
    return f"needs {a['companion']}: judged with it given"


def _import(a: Mapping[str, str]) -> str:
    return f"name missing on {a['arch']}: {a['condition']}"


def _option(a: Mapping[str, str]) -> str:
    return f"{a['flag']} choices"


def _field(a: Mapping[str, str]) -> str:
    where = f"reported on {a.get('archs', '').replace(',', ', ')}"
    if a.get("quantization"):
        where += f" with --quantization {a['quantization']}"
    versions = f"sglang {a.get('sglang', 'any')}"
    if a.get("kernel"):
        versions += f", {a['kernel']}"
    family = f" ({a['model_family']} models)" if a.get("model_family") else ""
    return (f"{a.get('outcome', '')} {where}, {versions}{family}: {a.get('symptom', '')} "
            f"({a.get('url', '')})")


def _text(a: Mapping[str, str]) -> str:
    return a.get("text", "")


_TEMPLATES = {
    FactKind.OPTION: _option,
    FactKind.GATE: _gate,
    FactKind.DEFAULT: _default,
    FactKind.IMPORT: _import,
    FactKind.DOC: _doc,
    FactKind.SELECT: _select,
    FactKind.REQUIRES: _requires,
    FactKind.KERNEL_CALL: _kernel_call,
    FactKind.FIELD: _field,
}


def render_note(kind: str, args: Args) -> str:
    """The note of an evidence line, from its kind and arguments: the kind's
    template, then each ``qualifier`` argument after a ``; ``."""
    values = dict(args)
    try:
        fact_kind: FactKind | None = FactKind(kind)
    except ValueError:
        fact_kind = None
    if fact_kind in KERNEL_FACT_KINDS and "predicate" in values:
        base = _fact(values)
    else:
        base = _TEMPLATES.get(fact_kind, _text)(values) if fact_kind else _text(values)
    qualifiers = [value for key, value in args if key == "qualifier"]
    return "; ".join(part for part in (base, *qualifiers) if part)
