"""guards (form): the SM number written as text, ``f"{major * 10 + minor}"`` or ``str(sm)``.

What it recognises:
    An f-string holding the SM number alone (``f"{major * 10 + minor}"``,
    ``f"{sm}"``) and ``str(sm)``, as the SM number's text, compared with
    ``"90"`` or ``("120", "121")`` like ``f"{major}{minor}"`` (see
    ``device_sm``).
Why it matters:
    FlashInfer keys its per-arch modules on this text (``device_arch =
    f"{major * 10 + minor}"``; ``if device_arch != "90": raise ...``), so a
    raising check or a dispatch on it is read by the same forms as SGLang's
    guards.
Known limits:
    Suffixed arch names (``"100a"``, ``"120f"``) and ordering comparisons on
    the text stay unknown, as do f-strings with other text in them. A format
    spec (``f"{sm:x}"``) is not seen: the interpreter reads the value alone.
    ``str`` is read only when the tree does not define it.
Example:
    ``major, minor = torch.cuda.get_device_capability()``; ``device_arch =
    f"{major * 10 + minor}"`` then ``device_arch != "90"`` is false on sm90
    only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from guardscan.guards.forms.base import Example, GuardForm, builtin_name
from guardscan.guards.values import DevQ, Value

if TYPE_CHECKING:
    from guardscan.guards.interpreter import Interpreter

__all__ = ["DeviceArchText"]

_CAPABILITY = "import torch\n\nmajor, minor = torch.cuda.get_device_capability()\n"
_SM = DevQ("sm")


class DeviceArchText(GuardForm):
    __doc__ = __doc__
    name = "device-arch-text"
    builtins = frozenset({"str"})
    VALID = (
        Example(_CAPABILITY + 'device_arch = f"{major * 10 + minor}"\n',
                'device_arch != "90"', "TTTFTTTTT"),
        Example(_CAPABILITY + "sm = major * 10 + minor\n",
                'f"{sm}" in ("120", "121")', "FFFFFFFTT"),
        Example(_CAPABILITY, 'str(major * 10 + minor) == "103"', "FFFFFTFFF"),
    )
    INVALID = (
        Example(_CAPABILITY + 'device_arch = f"sm{major * 10 + minor}"\n',
                'device_arch == "sm90"'),
        Example(_CAPABILITY + 'device_arch = f"{major * 10 + minor}"\n',
                'device_arch == "100a"'),
        Example(_CAPABILITY + 'device_arch = f"{major * 10 + minor}"\n',
                'device_arch >= "90"'),
    )

    def formatted(self, parts: list[str | Value]) -> Value | None:
        if parts == [_SM]:
            return DevQ("sm_text")
        return None

    def call(self, ctx: Interpreter, path: str, args: list[Value],
             kwargs: dict[str, Value]) -> Value | None:
        if builtin_name(path) == "str" and args == [_SM] and not kwargs:
            return DevQ("sm_text")
        return None
