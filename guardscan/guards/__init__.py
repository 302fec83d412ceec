"""guards: what a guard means, resolved from the tree's own definitions.

* ``values``: the abstract values an expression evaluates to;
* ``interpreter``: the abstract interpreter, with ``lookup`` (names in the
  tree), ``stack`` (cycles and memo purity), ``option_tests`` (conditions on
  backend options) and ``compare`` (device and CUDA comparisons, shared with
  the kernel library's reader);
* ``instance_attrs`` and ``quant_configs``: ``self.x`` from the class's own
  assignments, and a quantization method's config object as the loader
  builds it for ``--quantization`` (``from_config`` from the checkpoint);
* ``call_sites``: a module-level function's mode parameter
  (``quant_mode="w4a4"``) as every call in the tree binds it, when every use
  of the function is a call;
* ``registries``: a dictionary that decorators fill at import time, its
  entries under the conditions their modules are imported on;
* ``forms``: one module per guard form, each with its documentation and
  examples; their registry drives the interpreter and docs/guard-forms.md;
* ``questions`` and ``vocabulary``: the questions other stages ask
  (``Vocabulary.predicate`` / ``value``) and their recorded answers.
"""

from __future__ import annotations

from guardscan.guards.forms import REGISTRY, GuardForm
from guardscan.guards.lookup import on_nvidia
from guardscan.guards.option_tests import OptionModel
from guardscan.guards.questions import Answer, QueryKey, Resolved, looks_like_arch_guard
from guardscan.guards.stack import MAX_DEPTH
from guardscan.guards.values import (
    AltV,
    ChoiceV,
    ClassV,
    ConstV,
    CudaV,
    DevQ,
    EnumMemberV,
    ExtV,
    FormValue,
    FrozenSlice,
    FuncV,
    InstanceV,
    MajorTimesTen,
    ModuleV,
    Opaque,
    OptV,
    PlatformV,
    PredV,
    UnkV,
    Value,
    Wrapper,
    freeze,
)
from guardscan.guards.vocabulary import Vocabulary

__all__ = [
    "MAX_DEPTH", "REGISTRY", "AltV", "Answer", "ChoiceV", "ClassV", "ConstV", "CudaV", "DevQ", "EnumMemberV",
    "ExtV", "FormValue", "FrozenSlice", "FuncV", "GuardForm", "InstanceV", "MajorTimesTen",
    "ModuleV", "Opaque", "OptV", "OptionModel", "PlatformV", "PredV", "QueryKey", "Resolved",
    "UnkV", "Value", "Vocabulary", "Wrapper", "freeze", "looks_like_arch_guard", "on_nvidia",
]
