"""verdict rule (compiled): a call into a compiled package whose libraries hold no code the arch can load, unsupported.

What it judges
    A call SGLang makes into a compiled kernel package the release pins
    (``flash_mla.flash_mla_with_kvcache``, ``sgl_kernel.flash_mla_with_kvcache``,
    ``deep_ep.Buffer``), followed through the package's own Python to the
    shared libraries it uses (``binaries.python``), against those libraries'
    fatbin entries (``binaries.compat``: SASS of the same major at a lower or
    equal minor, an ``a`` target on its own SM only, PTX for an older arch).
    Before that, the called function's own capability test that surely
    raises on the arch (``binaries.refusals``: sgl-kernel's ``if not
    is_fa3_supported(): raise NotImplementedError``) excludes it by itself
    (``refusal_evidence``).
Why it matters
    The kernels of these packages exist only as the machine code their
    wheels ship. When none of the libraries a call uses holds code the GPU
    could load, the first kernel launch fails ("no kernel image is available
    for execution on the device"), whatever SGLang's Python admits.
Known limits
    Exclusion only: code for an arch is no proof the kernel runs there
    (``supported`` needs a check that says so), so an arch some entry could
    load is left to the other facts. A library with no fatbin (host code,
    or a package that compiles its kernels at run time, like DeepGEMM), a
    library that could not be read, or a call the package's Python does not
    lead to any library decides nothing, and so does one with another way
    out (``return f(...)`` where ``f`` reaches no library: sgl-kernel's
    ``flash_attn_varlen_func`` returns the pure-Python FA4 for ``ver=4``
    before its compiled op). The wheel read is the one pip
    picks for this machine (x86_64 here); a GPU that only ships in systems
    of another CPU (GB10, Jetson: aarch64, ``data/architectures.json``) is
    not judged by it, and another machine's wheel can differ (sglang-kernel
    0.4.10's aarch64 wheel holds ``sm_121a``, its x86_64 wheel does not). Which of a package's libraries
    registers an op is not read: a module that imports no library by name is
    judged by every library of its package, so one library with code for the
    arch keeps the call undecided. Facts are per library: which of its
    kernels a call launches is not told apart.
Example
    ``--attention-backend flashmla`` on sm120 (sglang 0.5.23): its decode
    calls ``flash_mla.flash_mla_with_kvcache``, which calls ``torch.ops`` ops
    registered by ``flash_mla/cuda.abi3.so`` (SASS sm_100a sm_103a sm_107a)
    or ``flash_mla/_C_legacy.abi3.so`` (SASS sm_90a sm_100a sm_103a sm_107a);
    neither holds code sm120 can load: ``unsupported``. On sm90 the legacy
    library holds ``sm_90a``: nothing is decided here.
"""

from __future__ import annotations

from collections.abc import Mapping

from guardscan.arch import Arch
from guardscan.binaries.compat import loadable_entries
from guardscan.binaries.model import LibraryFacts, LibraryOutcome
from guardscan.binaries.python import Hop, Reach
from guardscan.evidence import FactKind, Status, args_of
from guardscan.kernels.model import STRENGTH as KERNEL_STRENGTH
from guardscan.predicate import Tri
from guardscan.results import Evidence, Role

__all__ = ["STRENGTH", "judge_compiled", "library_text", "loadable_code", "refusal_evidence"]

STRENGTH = KERNEL_STRENGTH["binary"]


def library_text(facts: LibraryFacts) -> str:
    """``SASS sm_90a sm_100a; PTX none``: what a library holds, in cuobjdump's terms."""
    sass = " ".join(facts.sass_targets) or "none"
    ptx = " ".join(facts.ptx_targets) or "none"
    return f"SASS {sass}; PTX {ptx}"


def loadable_code(reach: Reach, libraries: Mapping[str, LibraryOutcome], arch: Arch,
                  machine: str = "") -> bool:
    """Whether the libraries ``reach`` uses hold arch-specific code that
    ``arch`` can load, where ``judge_compiled`` says UNKNOWN for that reason
    (not for want of facts): the call can run there, though nothing here says
    it supports the arch. Only code built for arch- or family-specific targets
    counts (``sm_90a``, ``sm_100f``: FlashMLA's kernels, which need that arch's
    instructions); a
    library that holds portable code too (``sm_80`` SASS, PTX: a package's
    common ops, a concat or a norm) is arch-neutral, like a layout helper.

    >>> from guardscan.binaries.model import FatbinEntry, LibraryFacts
    >>> def lib(*targets):
    ...     return {"pkg/_lib.so": LibraryFacts("pkg/_lib.so", 1, (".nv_fatbin",), 1, tuple(
    ...         FatbinEntry(".nv_fatbin", 0, 0, 2, sm, variant, 0, 64, 0, "", 0, 0, (1, 8), sm)
    ...         for sm, variant in targets))}
    >>> reach = Reach("pkg.run", ("pkg/_lib.so",), ())
    >>> kernels = lib((90, "a"), (100, "a"))
    >>> loadable_code(reach, kernels, Arch(9, 0)), loadable_code(reach, kernels, Arch(12, 0))
    (True, False)
    >>> loadable_code(reach, lib((80, ""), (90, "a"), (120, "a")), Arch(9, 0))
    False
    """
    if not reach.libraries or reach.escape is not None:
        return False
    hosts = arch.info.hosts if arch.info is not None else ()
    if machine and hosts and machine not in hosts:
        return False
    read = [facts for facts in (libraries.get(member) for member in reach.libraries)
            if isinstance(facts, LibraryFacts) and facts.fatbin_sections]
    if not read or any(e.variant not in ("a", "f") for facts in read for e in facts.entries):
        return False
    return any(loadable_entries(facts, arch.major, arch.minor) for facts in read)


def judge_compiled(reach: Reach, libraries: Mapping[str, LibraryOutcome], arch: Arch,
                   package: str, machine: str = "") -> tuple[Tri, list[Evidence]]:
    """FALSE with the chain (the package's Python, then each library) when no
    library ``reach`` uses holds code ``arch`` can load; otherwise UNKNOWN
    with no chain (arch-neutral here: the other facts decide). ``machine``:
    the CPU the wheel was built for (``x86_64``; "" for any); a GPU whose
    systems all have another CPU (GB10: ``aarch64``) is not judged by it.

    >>> from guardscan.arch import Arch
    >>> from guardscan.binaries.model import FatbinEntry, LibraryFacts
    >>> from guardscan.binaries.python import Hop, Reach
    >>> def lib(path, *sms):
    ...     return LibraryFacts(path, 1, (".nv_fatbin",), 1, tuple(
    ...         FatbinEntry(".nv_fatbin", 0, 0, 2, sm, "a", 0, 64, 0, "", 0, 0, (1, 8), sm)
    ...         for sm in sms))
    >>> reach = Reach("pkg.run", ("pkg/_lib.so",), ())
    >>> judge_compiled(reach, {"pkg/_lib.so": lib("pkg/_lib.so", 90, 100)}, Arch(12, 0),
    ...                "pkg 1.0")[0].value
    'false'
    >>> judge_compiled(reach, {"pkg/_lib.so": lib("pkg/_lib.so", 90, 100)}, Arch(9, 0),
    ...                "pkg 1.0")[0].value
    'unknown'
    """
    if not reach.libraries or reach.escape is not None:
        return Tri.UNKNOWN, []
    hosts = arch.info.hosts if arch.info is not None else ()
    if machine and hosts and machine not in hosts:
        return Tri.UNKNOWN, []  # no such GPU runs this wheel
    read: list[LibraryFacts] = []
    for member in reach.libraries:
        facts = libraries.get(member)
        if not isinstance(facts, LibraryFacts) or not facts.fatbin_sections:
            return Tri.UNKNOWN, []  # unread, or host code / a JIT package: nothing to say
        if loadable_entries(facts, arch.major, arch.minor):
            return Tri.UNKNOWN, []
        read.append(facts)
    chain = [Evidence.of(hop.rel, hop.line, Role.KERNEL.value, hop.text, FactKind.MODULE,
                         args_of(text=f"in {package}" if index == 0 else ""))
             for index, hop in enumerate(reach.hops)]
    which = ("the op's library is not read: every library of the package"
             if reach.how == "package" else "")
    for index, facts in enumerate(read):
        last = index == len(read) - 1
        chain.append(Evidence.of(
            facts.path, 0, Role.KERNEL.value, library_text(facts), FactKind.BINARY, args_of(
                fact=FactKind.BINARY.value, strength=STRENGTH,
                predicate=f"code {arch.name} can load", value=Tri.FALSE.value,
                detail=(f"{package}{f' ({machine})' if machine else ''}: "
                        f"{len(facts.entries)} entries, none loadable on "
                        f"{arch.name}" + (f"; {which}" if which and last else ""))),
            Status.CONTEXT))
    return Tri.FALSE, chain


def refusal_evidence(hops: tuple[Hop, ...], arch: Arch, package: str) -> list[Evidence]:
    """The chain of a capability test in the package's Python that raises on
    ``arch`` before any library runs (``binaries.refusals``): the function
    SGLang calls, the test, then the raise (the deciding line).

    >>> chain = refusal_evidence((Hop("pkg/fa.py", 3, "def run(x):"),
    ...                           Hop("pkg/fa.py", 5, "if not ok():"),
    ...                           Hop("pkg/fa.py", 6, "raise NotImplementedError('no')")),
    ...                          Arch(12, 0), "pkg 1.0")
    >>> [(e.line, e.kind) for e in chain]
    [(3, 'module'), (5, 'guard'), (6, 'check')]
    """
    define, *tests, raised = hops
    predicate = tests[-1].text.removeprefix("if ").removesuffix(":") if tests else raised.text
    return [
        Evidence.of(define.rel, define.line, Role.KERNEL.value, define.text, FactKind.MODULE,
                    args_of(text=f"in {package}")),
        *(Evidence.of(test.rel, test.line, Role.KERNEL.value, test.text, FactKind.GUARD,
                      args_of(text=f"holds on {arch.name}")) for test in tests),
        Evidence.of(raised.rel, raised.line, Role.KERNEL.value, raised.text, FactKind.CHECK,
                    args_of(fact=FactKind.CHECK.value, strength=KERNEL_STRENGTH["check"],
                            predicate=predicate, value=Tri.FALSE.value,
                            detail=f"{package}'s Python raises before its op runs"),
                    Status.CONTEXT),
    ]
