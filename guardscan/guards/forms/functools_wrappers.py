"""guards (form): ``functools.partial`` / ``lru_cache`` / ``cache`` factories.

What it recognises:
    ``lru_cache(maxsize=1)(f)``, ``lru_cache(f)``, ``cache(f)``,
    ``cachetools.cached(...)(f)`` (the function itself), and
    ``partial(f, *args, **kwargs)`` (``f`` with those arguments bound, called
    with the rest), nested in any order:
    ``is_sm100_supported = lru_cache(maxsize=1)(partial(
    _check_cuda_device_version, device_capability_majors=[10],
    cuda_version=(12, 8)))``.
Why it matters:
    SGLang defines its ``is_smXX_supported`` family this way; the guard's
    meaning is in ``_check_cuda_device_version``'s body with the bound
    arguments.
Known limits:
    Only these functools/cachetools names; other decorators or wrappers stay
    unknown (never taken as the function they wrap).
Example:
    ``lru_cache(partial(check, majors=[10]))()`` where ``check`` returns
    ``torch.cuda.get_device_capability()[0] in majors`` is true on sm100 and
    sm103.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from guardscan.guards.forms.base import Example, GuardForm, builtin_name
from guardscan.guards.values import FuncV, UnkV, Value, Wrapper

if TYPE_CHECKING:
    from guardscan.guards.interpreter import Interpreter

__all__ = ["FunctoolsWrappers"]

_CHECK = ("import torch\nfrom functools import lru_cache, partial\n\n"
          "def check(majors, cuda=None):\n"
          "    return torch.cuda.get_device_capability()[0] in majors\n\n")


class FunctoolsWrappers(GuardForm):
    __doc__ = __doc__
    name = "functools-factories"
    VALID = (
        Example(_CHECK + "is_sm100 = lru_cache(maxsize=1)(partial(check, majors=[10]))\n",
                "is_sm100()", "FFFFTTFFF"),
        Example(_CHECK + "is_sm12x = lru_cache(partial(check, majors=[12]))\n",
                "is_sm12x()", "FFFFFFFTT"),
        Example(_CHECK + "is_sm90 = partial(check, [9])\n", "is_sm90()", "FFFTFFFFF"),
    )
    INVALID = (
        Example(_CHECK + "import mylib\nis_x = mylib.memoize(partial(check, majors=[10]))\n",
                "is_x()"),
        Example(_CHECK + "is_any = partial(undefined_check, majors=[10])\n", "is_any()"),
    )

    def call(self, ctx: Interpreter, path: str, args: list[Value],
             kwargs: dict[str, Value]) -> Value | None:
        name = builtin_name(path)
        if name in ("lru_cache", "cache", "cached"):
            if args and isinstance(args[0], (FuncV, Wrapper)):
                return args[0]
            return Wrapper("decorator-factory")
        if name == "partial":
            if args:
                return Wrapper("partial", args[0], tuple(sorted(kwargs.items())),
                               tuple(args[1:]))
            return UnkV("partial()")
        return None

    def call_value(self, ctx: Interpreter, callee: Value, args: list[Value],
                   kwargs: dict[str, Value]) -> Value | None:
        if not isinstance(callee, Wrapper):
            return None
        applied = callee.apply(args, kwargs)
        if isinstance(applied, FuncV) and callee.kind == "partial":
            return ctx.calls.call_function(applied, [], {})
        return applied
