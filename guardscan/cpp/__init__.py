"""cpp: the C++/CUDA text a kernel library ships, read with tree-sitter's C++ grammar (never compiled or run).

    facts.py   per file: functions, their calls and capability checks, exports, includes, constants
    arch_if.py   form: `#if __CUDA_ARCH__` with an `#else` that only traps
    sm_switch.py form: a switch on the SM whose default throws
    link.py    a JIT module's sources -> its exports -> the checks on an export's call path

``guardscan.kernels.cpp_checks`` turns those checks into kernel facts.
"""

from guardscan.cpp.facts import CppFileFacts, read_cpp
from guardscan.cpp.link import CppLibrary, ReachedCheck, condition_predicate

__all__ = ["CppFileFacts", "CppLibrary", "ReachedCheck", "condition_predicate", "read_cpp"]
