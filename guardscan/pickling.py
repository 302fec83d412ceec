"""pickling: frozen, slotted dataclasses pickled by their fields in order.

The default ``__reduce_ex__`` of a slotted dataclass goes through
``dataclasses.fields`` for every object it stores or loads, the bulk of the
time to store or load a scan's record of linking. A class sets
``fields_reduce`` as its ``__reduce__``: pickle then calls the class with its
fields.
"""

from __future__ import annotations

from dataclasses import fields

__all__ = ["fields_reduce"]


def fields_reduce(self: object) -> tuple[type, tuple[object, ...]]:
    """``__reduce__`` for a frozen, slotted dataclass: pickle calls the class
    with the fields in order, named once per class (not read from
    ``__slots__``, which in a subclass name only its own fields). Every field
    must be an ``__init__`` argument.

    >>> import pickle
    >>> from guardscan.guards.values import ParamV
    >>> pickle.loads(pickle.dumps(ParamV("a mode", "m.py", "f", "mode")))
    ParamV(reason='a mode', rel='m.py', scope='f', name='mode')
    """
    cls = type(self)
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in fields(cls))  # type: ignore[arg-type]
    return cls, tuple([getattr(self, name) for name in names])


#: ``fields_reduce``'s field names, by class
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}

