"""guards (form): ``major, minor = <capability>``, the tuple unpacked into names.

What it recognises:
    An assignment whose targets unpack the capability tuple, at module level
    or in a function: ``major, minor = torch.cuda.get_device_capability()``;
    later ``major`` is the capability major and ``minor`` the minor.
Why it matters:
    SGLang's ``get_device_sm()`` and many inline checks (``if major != 9:
    raise``) are written this way.
Known limits:
    Only two-name unpacking of the capability tuple (or of a constant tuple);
    starred targets and nested tuples stay unknown.
Example:
    ``major, minor = torch.cuda.get_device_capability()`` then ``major != 9``
    is false on sm90 and true elsewhere.
"""

from __future__ import annotations

from guardscan.guards.forms.base import Example, GuardForm
from guardscan.guards.values import DevQ, UnkV, Value

__all__ = ["UnpackedCapability"]

_UNPACK = "import torch\n\nmajor, minor = torch.cuda.get_device_capability()\n"


class UnpackedCapability(GuardForm):
    __doc__ = __doc__
    name = "unpacked-capability"
    VALID = (
        Example(_UNPACK, "major != 9", "TTTFTTTTT"),
        Example(_UNPACK, "major == 12 and minor == 1", "FFFFFFFFT"),
        Example("import torch\n\ndef check():\n    major, minor = "
                "torch.cuda.get_device_capability()\n    return major\n",
                "major >= 10", "FFFFTTTTT", scope="check"),
    )
    INVALID = (
        Example("import torch\n\nfree, total = torch.cuda.mem_get_info()\n",
                "free >= 10"),
    )

    def unpack(self, value: Value, index: int) -> Value | None:
        if isinstance(value, DevQ) and value.kind == "cap":
            return DevQ("major") if index == 0 else DevQ("minor") if index == 1 \
                else UnkV("unpack")
        return None
