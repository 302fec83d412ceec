"""link (a refusal on the way to a device gate): a failure that tests no device, met first by the launches a device gate of the same function refuses.

What it recognises
    In one function, a ``raise`` or failing ``assert`` whose condition tests
    a backend option and no device, on the way to a gate that tests the
    device and can hold for the choices the failure surely refuses
    (sglang 0.5.23 ``arg_groups/overrides.py``)::

        def _cutedsl_prefill_backend_fill(view):
            if not (view.attention_backend == "cutedsl_mla"
                    or view.decode_attention_backend == "cutedsl_mla"
                    or view.prefill_attention_backend == "cutedsl_mla"):
                return {}
            assert view.prefill_attention_backend != "cutedsl_mla", (
                "CuteDSL MLA only supports decoding for now")
            if not get_platform().is_sm100:
                raise ValueError("CuteDSL MLA backend is only supported on Blackwell")

    The failure is then a gate like the device gate, judged on every arch.
Why it matters
    Outside a quantization method's code, a failure that tests no device is
    not kept (``link.everywhere``): a file-wide reading cannot tell which
    launches reach the function. But the device gate after it is kept as a
    gate for the choice, which reads the function as run when the choice is
    made; the failure before it runs for the same choice on the way, so it
    is read the same way. Without this, ``--prefill-attention-backend
    cutedsl_mla`` was ``supported`` on sm100 (the device gate admits it)
    while SGLang refuses it on every arch.
Known limits
    Only where the failure's block is on the device gate's way: the
    failure's path (without the test it raises under, for a ``raise``) is a
    prefix of the gate's, so every run that reaches the gate passed the
    failure. Only the choices the failure surely refuses (its other tests
    decided with the choice alone given) count, and each must be one the
    device gate can hold for; otherwise the failure is left out, as before.
    A function with no device gate (``check_lora_moe_runner_args``, which
    refuses a LoRA runner for the draft model) is not read.
Example
    >>> from guardscan.predicate import Device, OptionIs, conj, disj, neg
    >>> pre = OptionIs("prefill", frozenset({"cute"}))
    >>> any_ = disj(OptionIs("attention", frozenset({"cute"})), pre)
    >>> failure = ("fill", 10, "assert ...", conj(any_, pre), (-1,))
    >>> gate = ("fill", 12, "raise ...", conj(any_, neg(Device("major", "==", 10))), (-1, 2))
    >>> choices = {"prefill": ("cute", "fa3"), "attention": ("cute", "fa3")}
    >>> [(f[1], g[1]) for f, g in refusals_on_the_way([failure], [gate], choices)]
    [(10, 12)]
    >>> elsewhere = ("fill", 12, "raise ...", gate[3], (1, 2))
    >>> refusals_on_the_way([failure], [elsewhere], choices)
    []
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from guardscan.arch import standard_archs
from guardscan.link.conditions import Failure, option_atoms
from guardscan.predicate import Context, Predicate, Tri

__all__ = ["refusals_on_the_way"]


def refusals_on_the_way(failures: Iterable[Failure], device_gates: list[Failure],
                        choices: Mapping[str, tuple[str, ...]],
                        ) -> list[tuple[Failure, Failure]]:
    """The ``failures`` (each testing an option and no device) that a
    device gate of ``device_gates``, in the same scope, is reached through,
    and whose surely refused choices that gate can hold for; each with the
    first such gate."""
    kept = []
    for failure in failures:
        scope, _, text, cond, path = failure
        refused = _surely_refused(cond, choices)
        if not refused:
            continue
        way = path if text.startswith("assert ") else path[:-1]
        gate = next((gate for gate in device_gates
                     if gate[0] == scope and gate[4][:len(way)] == way
                     and all(_can_hold(gate[3], dest, choice) for dest, choice in refused)),
                    None)
        if gate is not None:
            kept.append((failure, gate))
    return kept


def _surely_refused(cond: Predicate, choices: Mapping[str, tuple[str, ...]],
                    ) -> list[tuple[str, str]]:
    """The (option, choice) pairs for which ``cond`` holds with that choice
    alone given."""
    return [(dest, choice) for dest in sorted({a.option for a in option_atoms(cond)})
            for choice in choices.get(dest, ())
            if cond.evaluate(Context(options={dest: choice})) is Tri.TRUE]


def _can_hold(cond: Predicate, dest: str, choice: str) -> bool:
    return any(cond.evaluate(Context(arch=arch, options={dest: choice})) is not Tri.FALSE
               for arch in standard_archs())
