"""verdict (escapes): a gate in a method's code that a test of the checkpoint on the way can step around, said as a condition of its verdict.

What it judges
    A gate in a quantization method's code that tests a backend option is
    judged on the way the option's and the device's tests take: the
    checkpoint decides whether the method's code reads the option at all
    (``link.quantization``). Where the way there also passes a test that
    guardscan cannot decide and that, when it holds, leaves that way
    (``if weight_block_size is not None and weight_block_size[1] != 128:
    return triton_linear`` before the option is read), the verdict stands for
    the common checkpoint, which takes the way, and that test is shown as a
    condition: ``not blocked when weight_block_size is not None and
    weight_block_size[1] != 128``.
Why it matters
    Every common block-FP8 checkpoint uses 128-wide blocks: on an H100,
    ``--fp8-gemm-backend cutlass`` under ``--quantization fp8`` meets the
    RuntimeError, and calling it ``unknown`` would read as "safe to try".
    The rare checkpoint that steps around the gate never runs the choice
    either (its weights go to another kernel), which the condition says.
Known limits
    Only a test left open as code (an expression guardscan reads but cannot
    evaluate, ``? weight_block_size[1] != 128``) that leaves the way where it
    holds is named; a test that must hold to get there is not (it decides
    which checkpoints use the code at all). The line of the test is not
    named; ``explain --format json`` keeps the finding's whole condition.
    Only under ``--quantization``: without it each method takes its own way,
    and which method runs is the condition (``blocked with --quantization
    fp8``). Per-layer dispatch (``isinstance(layer, FusedMoE)``) is no way
    around a gate: it says which layers get the code (``link.method_paths``).
Example
    sglang 0.5.23, ``--fp8-gemm-backend cutlass`` under ``--quantization
    fp8`` on sm90: blocked (``fp8_utils.py:1139``), not blocked when
    weight_block_size is not None and weight_block_size[1] != 128.
"""

from __future__ import annotations

from guardscan.link.method_paths import PER_LAYER
from guardscan.predicate import And, Const, Context, Not, Or, Predicate, Unknown, leaves
from guardscan.predicate_dag import residual
from guardscan.syntax import parse_expr

__all__ = ["escape_conditions"]


def escape_conditions(escape: Predicate, ctx: Context, verdict: str = "blocked"
                      ) -> tuple[str, ...]:
    """What steps around a gate that raises on ``ctx``, by the gate's
    condition with every test on the way (``Finding.escape``): each test
    left open as code that, where it holds, takes the way elsewhere.

    >>> from guardscan.predicate import conj, neg
    >>> wide = conj(Unknown("weight_block_size is not None"),
    ...             Unknown("weight_block_size[1] != 128"))
    >>> escape_conditions(conj(neg(wide), Unknown("the checkpoint picks Fp8LinearMethod")),
    ...                   Context(quantization="fp8"))
    ('not blocked when weight_block_size is not None and weight_block_size[1] != 128',)
    >>> escape_conditions(conj(Unknown("self.block_quant")), Context(quantization="fp8"))
    ()
    >>> escape_conditions(neg(Unknown("builtins.all() is outside the tree")),
    ...                   Context(quantization="fp8"))
    ()
    >>> escape_conditions(neg(Unknown("isinstance(layer, FusedMoE)")), Context(quantization="fp8"))
    ()
    """
    if ctx.quantization is None:
        return ()
    rest = residual(escape, ctx, lambda atom: False)
    if isinstance(rest, Const):
        return ()
    out: set[str] = set()
    for item in _parts(rest):
        if isinstance(item, Not) and _open_code(item.item):
            out.add(f"not {verdict} when {_plain(item.item)}")
    return tuple(sorted(out))


def _parts(pred: Predicate) -> list[Predicate]:
    """The items of the top-level ``and`` / ``or`` (each a way the gate's
    condition can fail to hold), flattened."""
    if isinstance(pred, (And, Or)):
        return [part for item in pred.items for part in _parts(item)]
    return [pred]


def _open_code(pred: Predicate) -> bool:
    """Only undecided expressions of the code (not guardscan's own notes,
    ``? f() is also run from code outside the methods' paths``)."""
    atoms = leaves(pred)
    return bool(atoms) and all(isinstance(a, Unknown) and parse_expr(a.reason) is not None
                               and not PER_LAYER.search(a.reason) for a in atoms)


def _plain(pred: Predicate) -> str:
    """``pred`` as text, without the ``?`` marks of its undecided atoms."""
    return pred.describe().replace("? ", "")
