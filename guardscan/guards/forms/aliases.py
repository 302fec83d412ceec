"""guards (form): cached module-level and imported aliases of a guard.

What it recognises:
    A name bound to a guard's value or to the guard itself, read through
    name lookup: ``_is_sm120 = is_sm120_supported()`` at module level (the
    cached answer), ``from sglang.srt.utils import is_sm100_supported as
    _sm100``, star imports and package re-exports, and module attributes
    (``utils.is_sm100_supported()``). Nothing is keyed on a spelling: the
    alias means what its definition means.
Why it matters:
    SGLang caches guard answers in module globals and re-exports helpers
    from ``sglang.srt.utils``; a reader keyed on names would miss both.
Known limits:
    A name bound differently under conditions that are not guards stays
    unknown; an import of a module outside the tree stays unknown.
Example:
    ``_is_sm120 = is_sm120_supported()`` then ``not _is_sm120`` is the
    negation of ``is_sm120_supported()``.
"""

from __future__ import annotations

from guardscan.guards.forms.base import Example, GuardForm

__all__ = ["CachedAliases"]

_COMMON = ("import torch\n\ndef is_sm120_supported():\n"
           "    return torch.cuda.get_device_capability() == (12, 0)\n")
_FILES = (("sglang/srt/common.py", _COMMON),
          ("sglang/srt/utils/__init__.py", "from sglang.srt.common import *\n"))


class CachedAliases(GuardForm):
    __doc__ = __doc__
    name = "cached-aliases"
    VALID = (
        Example("from sglang.srt.common import is_sm120_supported\n\n"
                "_is_sm120 = is_sm120_supported()\n", "not _is_sm120", "TTTTTTTFT",
                files=_FILES),
        Example("from sglang.srt.utils import is_sm120_supported as _sm120\n",
                "_sm120()", "FFFFFFFTF", files=_FILES),
        Example("from sglang.srt import common\n", "common.is_sm120_supported()",
                "FFFFFFFTF", files=_FILES),
    )
    INVALID = (
        Example("from some_ext import is_sm120_supported as _sm120\n", "_sm120()",
                files=_FILES),
    )
