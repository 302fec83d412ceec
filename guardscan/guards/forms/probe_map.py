"""guards (form): platform-probe maps, ``get_platform().is_sm100``.

What it recognises:
    An attribute of an instance whose class has no such method but a
    ``__getattr__`` that looks the name up in a module-level ``str -> str``
    dict (``_PROBES = {"is_sm100": "is_sm100_supported"}``, read with
    ``_PROBES.get(name)``) and fetches the probe with ``getattr(module,
    probe)``; the attribute means the named probe, called with no arguments.
    Properties and methods of the class are read as themselves.
Why it matters:
    SGLang's platform objects (``get_platform().is_sm100``) route capability
    questions through such a map to the ``is_smXX_supported`` helpers.
Known limits:
    Only dicts with string literal keys and values, named in ``__getattr__``
    through ``.get``; a map built at run time stays unknown.
Example:
    ``{"is_sm100": "is_sm100_supported"}`` and ``def __getattr__(self, name):
    return getattr(common, _PROBES.get(name))()`` make
    ``get_platform().is_sm100`` mean ``is_sm100_supported()``.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from guardscan.guards.forms.base import Example, GuardForm
from guardscan.guards.stack import MODULE_END
from guardscan.guards.values import InstanceV, ModuleV, UnkV, Value
from guardscan.index.facts import AssignFact, FunctionFact
from guardscan.index.observe import FactsView

if TYPE_CHECKING:
    from guardscan.guards.interpreter import Interpreter

__all__ = ["ProbeMap"]

_COMMON = ("import torch\n\ndef is_sm100_supported():\n"
           "    return torch.cuda.get_device_capability()[0] == 10\n")
_PLATFORM = ("from sglang.srt import common\n\n"
             '_PROBES = {"is_sm100": "is_sm100_supported"}\n\n'
             "class Platform:\n"
             "    def __getattr__(self, name):\n"
             "        probe = _PROBES.get(name)\n"
             "        return getattr(common, probe)()\n\n"
             "def get_platform():\n    return Platform()\n")
_FILES = (("sglang/srt/common.py", _COMMON),)


class ProbeMap(GuardForm):
    __doc__ = __doc__
    name = "platform-probe-map"
    VALID = (
        Example(_PLATFORM, "get_platform().is_sm100", "FFFFTTFFF", files=_FILES),
        Example(_PLATFORM, "not get_platform().is_sm100", "TTTTFFTTT", files=_FILES),
    )
    INVALID = (
        Example(_PLATFORM, "get_platform().is_sm90", files=_FILES),
    )

    def attribute(self, ctx: Interpreter, base: Value, attr: str) -> Value | None:
        if not isinstance(base, InstanceV):
            return None
        facts = ctx.index.view(base.rel)
        if facts is None:
            return None
        getattr_def = next((f for f in facts.unobserved.functions
                            if f.cls == base.qualname and f.name == "__getattr__"), None)
        if getattr_def is None:
            return None
        return _probe_map_attr(ctx, facts, base.rel, getattr_def, attr)


def _probe_map_attr(ctx: Interpreter, facts: FactsView, rel: str, getattr_def: FunctionFact,
                    attr: str) -> Value:
    # dicts of str -> str named in __getattr__, and the module the probe is read from
    scope = getattr_def.qualname
    names_used = set()
    module_of_probe: Value | None = None
    for call in facts.in_scope("calls", scope):
        if call.func.endswith(".get") and "." in call.func:
            names_used.add(call.func.rsplit(".", 1)[0])
        if call.func == "getattr" and len(call.args) >= 2:
            module_of_probe = ctx.names.lookup(rel, scope, call.args[0], call.line + 1)
    for name in sorted(names_used):
        for entry in ctx.tables.module_bindings(rel, name):
            if not isinstance(entry, AssignFact):
                continue
            node = ctx.parse(entry.value)
            if not isinstance(node, ast.Dict):
                continue
            for key, val in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and key.value == attr and isinstance(
                        val, ast.Constant) and isinstance(val.value, str):
                    ctx.stack.trail.append((rel, entry.line + getattr(key, "lineno", 1) - 1))
                    probe_name = val.value
                    if isinstance(module_of_probe, ModuleV):
                        target = ctx.tables.rel_of(module_of_probe.name)
                        probe = ctx.names.lookup(target, "", probe_name, MODULE_END) if target \
                            else UnkV("probe module outside tree")
                    else:
                        probe = ctx.names.lookup(rel, "", probe_name, MODULE_END)
                    return ctx.calls.call_value(probe)
    return UnkV(f"platform fact .{attr} not in a probe map")
