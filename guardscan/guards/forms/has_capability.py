"""guards (form): ``has_device_capability(90)``, a helper given the SM number.

What it recognises:
    A helper of the tree that compares the device's SM number with its
    argument (SGLang: ``def has_device_capability(capability): cap =
    get_device_capability(); return cap[0] * 10 + cap[1] >= capability``),
    called with a literal. The helper's body is interpreted with the argument
    bound, so no hook is needed: this form is the capability and SM forms
    applied through a call.
Why it matters:
    ``has_device_capability(90)`` and ``(100)`` guard FP8 and Blackwell paths.
Known limits:
    A helper whose body cannot be read (a C extension, a call outside the
    tree) stays unknown; an argument that is not a literal leaves the
    comparison unknown.
Example:
    ``not has_device_capability(90)`` is true on sm80, sm86 and sm89.
"""

from __future__ import annotations

from guardscan.guards.forms.base import Example, GuardForm

__all__ = ["HasDeviceCapability"]

_HELPER = ("import torch\n\ndef get_device_capability():\n"
           "    return torch.cuda.get_device_capability()\n\n"
           "def has_device_capability(capability):\n"
           "    cap = get_device_capability()\n"
           "    return cap[0] * 10 + cap[1] >= capability\n")


class HasDeviceCapability(GuardForm):
    __doc__ = __doc__
    name = "has-device-capability"
    VALID = (
        Example(_HELPER, "has_device_capability(90)", "FFFTTTTTT"),
        Example(_HELPER, "not has_device_capability(100)", "TTTTFFFFF"),
    )
    INVALID = (
        Example(_HELPER, "has_device_capability(threshold)"),
    )
