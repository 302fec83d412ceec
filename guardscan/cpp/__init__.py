"""cpp: the C++/CUDA text a kernel library ships, read with tree-sitter's C++ grammar (never compiled or run).

    facts.py   per file: functions, their calls and capability checks, exports, includes, constants
    link.py    a JIT module's sources -> its exports -> the checks on an export's call path

``guardscan.kernels.cpp_checks`` turns those checks into kernel facts.
"""

from guardscan.cpp.facts import CppFileFacts, read_cpp
from guardscan.cpp.link import CppLibrary, ReachedCheck, condition_predicate

__all__ = ["CppFileFacts", "CppLibrary", "ReachedCheck", "condition_predicate", "read_cpp"]
