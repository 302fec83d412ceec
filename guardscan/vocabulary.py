"""vocabulary: moved to ``guardscan.guards`` (what a guard means); this module only
re-exports it so that link, kernels and scan keep their imports until they
switch. It goes away after the restructure merges.
"""

from __future__ import annotations

from guardscan.guards import (
    MAX_DEPTH,
    Answer,
    ClassV,
    ConstV,
    CudaV,
    DevQ,
    EnumMemberV,
    ExtV,
    FrozenSlice,
    FuncV,
    InstanceV,
    ModuleV,
    Opaque,
    OptionModel,
    OptV,
    PredV,
    QueryKey,
    Resolved,
    UnkV,
    Value,
    Vocabulary,
    freeze,
    looks_like_arch_guard,
    on_nvidia,
)

# the former private names, for pickles written before the move
from guardscan.guards import MajorTimesTen as _MajorTimesTen
from guardscan.guards import PlatformV as _PlatformValue
from guardscan.guards import Wrapper as _Wrapper

__all__ = [
    "MAX_DEPTH",
    "Answer",
    "ClassV",
    "ConstV",
    "CudaV",
    "DevQ",
    "EnumMemberV",
    "ExtV",
    "FrozenSlice",
    "FuncV",
    "InstanceV",
    "ModuleV",
    "Opaque",
    "OptV",
    "OptionModel",
    "PredV",
    "QueryKey",
    "Resolved",
    "UnkV",
    "Value",
    "Vocabulary",
    "_MajorTimesTen",
    "_PlatformValue",
    "_Wrapper",
    "freeze",
    "looks_like_arch_guard",
    "on_nvidia",
]
