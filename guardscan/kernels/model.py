"""kernels (model): the plain data the kernels stage produces, facts, dispatch branches, call edges.

Everything is frozen and slotted and holds no parse-tree node. Function names
are fully qualified: ``flashinfer.fused_moe.core.get_trtllm_moe_sm100_module``,
methods ``module.Class.method``, nested functions ``module.outer.inner``.
"""

from __future__ import annotations

from dataclasses import dataclass

from guardscan.predicate import Predicate

__all__ = [
    "FACT_KINDS",
    "JIT_NOTE",
    "SPECIFICITY",
    "STRENGTH",
    "BackendCheck",
    "Branch",
    "KernelFact",
]

FACT_KINDS = ("decorator", "backend-requirement", "jit-spec", "dispatch", "check", "artifacts",
              "cpp-check", "argument-check")

#: How much a fact of each kind says about *which kernels exist* for an arch;
#: when several facts decide, the evidence chain ends at the most specific one.
#: Three tiers: (a) an explicit check (a decorator names exact capabilities,
#: a raising check is the code's own word); (b) what was built ahead of time
#: (the cubin architectures a module loads bound what its JIT spec may claim);
#: (c) a JIT spec, which only says what compiles. A dispatch only says a
#: branch exists (its callee says more).
SPECIFICITY = {
    "decorator": 6,
    "backend-requirement": 6,
    "check": 5,
    "cpp-check": 5,
    "argument-check": 5,
    "artifacts": 4,
    "jit-spec": 3,
    "dispatch": 2,
}

#: The tier of each kind, in words, for the evidence note of the deciding fact.
STRENGTH = {
    "decorator": "tier a: explicit capability check",
    "backend-requirement": "tier a: explicit capability check, per backend",
    "check": "tier a: explicit raising check",
    "cpp-check": "tier a: explicit check in the C++ the wheel ships",
    "argument-check": "tier a: a raising check on the arguments the caller passes",
    "artifacts": "tier b: precompiled cubins, they bound what a JIT spec may claim",
    "jit-spec": "tier c: what may compile, not which kernels exist",
    "dispatch": "a branch exists, its callee says more",
    "binary": "tier b: the machine code a pinned package ships, read from its fatbin",
}

JIT_NOTE = "a JIT spec says what compiles for the arch, not which kernels exist"


@dataclass(frozen=True, slots=True)
class KernelFact:
    """One statement in the kernel library's source about where a function runs."""

    function: str
    kind: str  # one of FACT_KINDS
    rel: str
    line: int
    text: str  # the line holding the fact
    predicate: Predicate  # the archs it runs on
    note: str = ""


@dataclass(frozen=True, slots=True)
class Branch:
    """One arm of a per-arch dispatch: the archs it is taken on and what it calls."""

    predicate: Predicate
    callees: tuple[str, ...]
    rel: str
    line: int
    text: str


@dataclass(frozen=True, slots=True)
class BackendCheck:
    """One entry of a ``@backend_requirement`` table."""

    backend: str
    check: str  # the check function (qualified when resolved, else as written)
    predicate: Predicate
    line: int
