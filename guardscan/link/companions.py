"""link (companions): other options a choice cannot run without.

What it recognises
    A rejection that tests no device and holds for some choices of an option
    only while another option is not given, or holds another value::

        if not backend.startswith("lora"):
            return
        if not cfg.enable_lora:
            raise ValueError(f"--moe-runner-backend {backend} requires --enable-lora")
        if cfg.lora_backend != "triton_v2":
            raise ValueError(f"--moe-runner-backend {backend} requires --lora-backend triton_v2")

    Each is a ``requires`` finding for the choices tested: the companion is
    ``("enable_lora", "")`` (a flag that must be given) or ``("lora_backend",
    "triton_v2")`` (an option that must hold the value).

Why it matters
    Such a check raises on every arch for a launch that names the choice
    alone, so read as a gate it would call every arch blocked and hide what
    the arch decides. The choice is judged with its companions given instead
    (an option companion holds its value in the verdict's context) and the
    verdict says so in its conditions.

Known limits
    Only a conjunction of the one test of the option's choices with the
    companions (and companions already required, from earlier checks on the
    path) is read; any other part makes it no companion (the check stays what
    it was: a rejection without a device test, which decides nothing). A flag
    companion is a ``not X.flag`` read as undecided; its name is the
    attribute's, written as a flag.

Example
    ``--moe-runner-backend lora_triton`` on sm90 (sglang 0.5.23): supported,
    with the conditions "needs --enable-lora" and "needs --lora-backend
    triton_v2" from ``arg_groups/lora_hook.py``.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from guardscan.predicate import And, Not, OptionIs, Predicate, Unknown

__all__ = ["companion_requirement", "flag_of"]

_ATTRIBUTE = re.compile(r"(?:cfg|server_args|self|args|view)\.([a-z][a-z0-9_]*)")


def flag_of(dest: str) -> str:
    """``enable_lora`` as the flag a user types: ``--enable-lora``."""
    return "--" + dest.replace("_", "-")


def _choice_test(part: Predicate, dests: Collection[str]) -> OptionIs | None:
    if isinstance(part, OptionIs) and part.option in dests:
        return part
    return None


def _flag(part: Predicate) -> str | None:
    match = _ATTRIBUTE.fullmatch(part.reason) if isinstance(part, Unknown) else None
    return match.group(1) if match else None


def companion_requirement(cond: Predicate, dests: Collection[str],
                          ) -> tuple[OptionIs, tuple[tuple[str, str], ...]] | None:
    """The choices ``cond`` tests and the companions it requires, or None.

    >>> lora = OptionIs("moe", frozenset({"lora_a", "lora_b"}))
    >>> on = Unknown("cfg.enable_lora")
    >>> companion_requirement(And((lora, Not(on))), {"moe", "lora_backend"})[1]
    (('enable_lora', ''),)
    >>> v2 = OptionIs("lora_backend", frozenset({"v2"}))
    >>> companion_requirement(And((lora, on, Not(v2))), {"moe", "lora_backend"})[1]
    (('lora_backend', 'v2'),)
    >>> companion_requirement(And((lora, Not(Unknown("x > 1")))), {"moe"}) is None
    True
    >>> companion_requirement(Not(on), {"moe"}) is None
    True
    """
    parts = cond.items if isinstance(cond, And) else (cond,)
    tests = [t for p in parts if (t := _choice_test(p, dests)) is not None]
    if len(tests) != 1:
        return None
    test = tests[0]
    needs: list[tuple[str, str]] = []
    for part in parts:
        if part is test or _flag(part) is not None or isinstance(part, OptionIs) \
                and part.option != test.option and len(part.choices) == 1:
            continue  # a companion already required on the way here
        if not isinstance(part, Not):
            return None
        inner = part.item
        flag = _flag(inner)
        if flag is not None:
            needs.append((flag, ""))
        elif isinstance(inner, OptionIs) and inner.option != test.option \
                and inner.option in dests and len(inner.choices) == 1:
            needs.append((inner.option, next(iter(inner.choices))))
        else:
            return None
    return (test, tuple(needs)) if needs else None
