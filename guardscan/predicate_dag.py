"""predicate (as DAGs): evaluating and folding a predicate with each shared part visited once.

The linker's conditions share their parts (a path's condition is in every gate
on it): one gate condition of 3,129 nodes as a tree has 216 distinct parts on
sglang 0.5.23. ``value`` evaluates and ``residual`` folds over the parts, not
the tree; ``predicate.leaves`` lists the atoms the same way. The walkers are
module-level functions with their memo passed along: a recursive closure is a
reference cycle, which a scan (its collector paused) would never free.
"""

from __future__ import annotations

from collections.abc import Callable

from guardscan.predicate import (
    FALSE,
    TRUE,
    And,
    Const,
    Context,
    Not,
    Or,
    Predicate,
    Tri,
    conj,
    disj,
    neg,
)

__all__ = ["Fold", "residual", "value"]

_TRUE, _FALSE, _UNKNOWN = Tri.TRUE, Tri.FALSE, Tri.UNKNOWN
_NEGATED = {_TRUE: _FALSE, _FALSE: _TRUE, _UNKNOWN: _UNKNOWN}


def value(pred: Predicate, ctx: Context) -> Tri:
    """``pred.evaluate(ctx)``, each shared sub-predicate once: the conditions
    the linker builds share their parts (a path's condition is in every gate
    on it), and a tree walk visits them once per use.

    >>> from guardscan.predicate import Device
    >>> shared = disj(Device("major", "==", 9), Device("major", "==", 10))
    >>> value(conj(shared, neg(shared)), Context(arch=None))
    <Tri.UNKNOWN: 'unknown'>
    """
    return _value(pred, ctx, {})


def _value(p: Predicate, ctx: Context, memo: dict[int, Tri]) -> Tri:
    # (by exact type, each part's memo looked up before the call: the judge's
    # most frequent call, a million times on a guard edit of sglang 0.5.23)
    kind = type(p)
    if kind is And or kind is Or:
        stop, out = (_FALSE, _TRUE) if kind is And else (_TRUE, _FALSE)
        for item in p.items:  # type: ignore[union-attr]
            v = memo.get(id(item))
            if v is None:
                v = _value(item, ctx, memo)
            if v is stop:
                out = v
                break
            if v is _UNKNOWN:
                out = v
    elif kind is Not:
        item = p.item  # type: ignore[union-attr]
        v = memo.get(id(item))
        out = _NEGATED[v if v is not None else _value(item, ctx, memo)]
    else:
        out = p.evaluate(ctx)
    memo[id(p)] = out
    return out


def residual(pred: Predicate, ctx: Context, keep: Callable[[Predicate], bool]) -> Predicate:
    """``pred`` with every leaf that ``keep`` leaves out replaced by its value
    on ``ctx`` where that is decided, and folded. On any context that differs
    from ``ctx`` only in what the kept leaves read, the result evaluates as
    ``pred`` does (three-valued folding is exact), and it is mostly far
    smaller: ask it once per alternative instead of ``pred``.

    >>> from guardscan.arch import parse_arch
    >>> from guardscan.predicate import Device, QuantIs
    >>> fp4 = QuantIs(frozenset({"modelopt_fp4"}))
    >>> cond = conj(neg(Device("major", "==", 10)), fp4)
    >>> residual(cond, Context(arch=parse_arch("sm120")), lambda a: isinstance(a, QuantIs)) == fp4
    True
    """
    return _residual(pred, ctx, keep, {})


def _residual(p: Predicate, ctx: Context, keep: Callable[[Predicate], bool],
              memo: dict[int, Predicate]) -> Predicate:
    known = memo.get(id(p))
    if known is not None:
        return known
    out: Predicate
    kind = type(p)
    if kind is And or kind is Or:
        # a part that folds to the value deciding the whole ends the walk
        # (``conj`` and ``disj`` give that value whatever the rest folds to)
        deciding = kind is Or  # the value of a part that decides the whole
        parts: list[Predicate] = []
        for item in p.items:  # type: ignore[union-attr]
            part = memo.get(id(item))
            if part is None:
                part = _residual(item, ctx, keep, memo)
            if type(part) is Const and part.value == deciding:
                out = TRUE if deciding else FALSE
                break
            parts.append(part)
        else:
            out = conj(*parts) if kind is And else disj(*parts)
    elif kind is Not:
        out = neg(_residual(p.item, ctx, keep, memo))  # type: ignore[union-attr]
    elif keep(p):
        out = p
    else:
        v = p.evaluate(ctx)
        out = p if v is _UNKNOWN else TRUE if v is _TRUE else FALSE
    memo[id(p)] = out
    return out


class Fold:
    """``value`` and ``residual`` on one context, their memos kept between
    calls: conditions asked one after another on the same context (a
    choice's gates on one arch) share their parts, each folded once for
    all of them. ``keep``: the leaves ``residual`` leaves in, the same for
    every call. The predicates asked are held, so the parts the memos are
    keyed by (their ids) stay alive while the memos do.

    >>> from guardscan.predicate import Device, QuantIs
    >>> from guardscan.arch import parse_arch
    >>> fold = Fold(Context(arch=parse_arch("sm120")), lambda a: isinstance(a, QuantIs))
    >>> shared = neg(Device("major", "==", 10))
    >>> fold.value(shared), fold.residual(conj(shared, QuantIs(frozenset({"fp8"})))).describe()
    (<Tri.TRUE: 'true'>, 'quantization in {fp8}')
    """

    __slots__ = ("_held", "_residuals", "_values", "ctx", "keep")

    def __init__(self, ctx: Context, keep: Callable[[Predicate], bool] | None = None) -> None:
        self.ctx, self.keep = ctx, keep
        self._values: dict[int, Tri] = {}
        self._residuals: dict[int, Predicate] = {}
        self._held: list[Predicate] = []

    def value(self, pred: Predicate) -> Tri:
        known = self._values.get(id(pred))
        if known is not None:
            return known
        self._held.append(pred)
        return _value(pred, self.ctx, self._values)

    def residual(self, pred: Predicate) -> Predicate:
        assert self.keep is not None, "a Fold made without keep only evaluates"
        if id(pred) not in self._residuals:
            self._held.append(pred)
        return _residual(pred, self.ctx, self.keep, self._residuals)
