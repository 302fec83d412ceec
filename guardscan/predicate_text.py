"""predicate (text): a predicate as people read it: its shortest equivalent form, written out.

``describe`` of an ``And``, ``Or`` or ``Not`` (``predicate.py``) writes the
predicate through here; evaluation never does.
"""

from __future__ import annotations

from functools import lru_cache

from guardscan.predicate import And, Not, Or, Predicate, _flatten, conj, disj, neg

__all__ = ["shortest", "text"]


def _paren(p: Predicate) -> str:
    written = text(p)
    return f"({written})" if isinstance(p, (And, Or)) else written


def text(p: Predicate) -> str:
    """``p`` written as it is (``describe`` writes its shortest form)."""
    if isinstance(p, And):
        return " and ".join(_paren(i) for i in p.items)
    if isinstance(p, Or):
        return " or ".join(_paren(i) for i in p.items)
    if isinstance(p, Not):
        return f"not {_paren(p.item)}"
    return p.describe()


def _negations(pred: Predicate) -> int:
    if isinstance(pred, Not):
        return 1 + _negations(pred.item)
    if isinstance(pred, (And, Or)):
        return sum(_negations(i) for i in pred.items)
    return 0


@lru_cache(maxsize=1 << 16)
def shortest(pred: Predicate) -> Predicate:
    """An equivalent of ``pred`` (in two-valued logic) that reads shortest, for
    people: double negations dropped, a negation pushed into an ``and`` /
    ``or`` where negations cancel (De Morgan), nested ``and`` / ``or``
    flattened, repeats dropped, ``a and (a or b)`` absorbed to ``a``, and
    ``a or (not a and b)`` to ``a or b``. Only what is shown uses it:
    evaluation always reads the predicate as built, which keeps UNKNOWN
    three-valued (``a or (not a and b)`` is not ``a or b`` when ``a`` is
    unknown)."""
    if isinstance(pred, Not):
        inner = shortest(pred.item)
        if isinstance(inner, Not):
            return inner.item
        if isinstance(inner, (And, Or)):
            flipped = (disj if isinstance(inner, And) else conj)(*(neg(i) for i in inner.items))
            pushed = shortest(flipped)
            # pushed in only where negations cancel: ``not (a and b)`` reads
            # better than ``not a or not b``
            return pushed if _negations(pushed) < _negations(inner) + 1 else Not(inner)
        return neg(inner)
    if isinstance(pred, (And, Or)):
        both = And if isinstance(pred, And) else Or
        other = Or if both is And else And
        items: list[Predicate] = []
        for item in _flatten(both, (shortest(i) for i in pred.items)):
            if item not in items:
                items.append(item)
        changed = True
        while changed:
            changed = False
            for position, item in enumerate(items):
                rest = [i for j, i in enumerate(items) if j != position]
                if isinstance(item, other):
                    # absorption: a and (a or b) -> a, also where a part is
                    # itself several of the items: a and b and ((a and b) or c)
                    if any(r in item.items for r in rest) or any(
                            isinstance(part, both) and all(p in rest for p in part.items)
                            for part in item.items):
                        items.pop(position)
                        changed = True
                        break
                    # a and (not a or b) -> a and b
                    kept = tuple(i for i in item.items if neg(i) not in rest)
                    if len(kept) < len(item.items):
                        items[position] = shortest(
                            (conj if other is And else disj)(*kept))
                        changed = True
                        break
            flat = _flatten(both, items)
            if flat != items:
                items, changed = list(dict.fromkeys(flat)), True
        return (conj if both is And else disj)(*items)
    return pred
