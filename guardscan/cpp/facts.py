"""cpp (facts): what one C++/CUDA file of the kernel library holds, read with tree-sitter's C++ grammar.

What it recognises
    Per file, as plain data: each function definition (free function, method,
    constructor) with the calls it makes and the capability checks in it;
    functions exported to Python (``TVM_FFI_DLL_EXPORT_TYPED_FUNC(name,
    func)``, pybind/torch ``m.def("name", &func)``); ``#include`` names; and
    integer constants (``constexpr int32_t kSM_100 = 100;``). A capability
    check is a check macro (``FLASHINFER_CHECK``, ``TVM_FFI_ICHECK*``,
    ``ICHECK*``, ``TORCH_CHECK``, ``TLLM_CHECK*``) whose condition compares an
    SM value (a name initialised from ``getSMVersion()``-style calls, here or
    in a constructor's initialiser list), ``major``/``minor`` (``prop.major``,
    a name filled by ``cudaDeviceGetAttribute(&major,
    cudaDevAttrComputeCapabilityMajor, ...)``) with a number or a constant.
    A call or check under an ``if``, a loop, a ``switch``, ``?:`` or inside a
    lambda is *conditional*, except an ``if`` that tests a cache lookup
    (``it != cache.end()``): a hit returns what a miss built.
Why it matters
    FlashInfer's launchers reject archs in C++, after the Python has passed:
    ``FLASHINFER_CHECK(mSM == kSM_100 || mSM == kSM_103 || mSM == kSM_107,
    "Unsupported architecture")`` in the trtllm-gen FMHA runner's constructor.
Known limits
    No preprocessing: macros are not expanded, ``#if`` branches are all read,
    templates are read as written. Names are resolved by spelling within the
    files a JIT module compiles (and the headers they include), never by type.
    ``#if __CUDA_ARCH__`` stubs that trap (``arch_if``) and switches on the
    SM with a throwing default (``sm_switch``) are checks too; a kernel
    launch (``k<<<...>>>(...)``, ``cudaLaunchKernelEx(&cfg, k, ...)``) is a
    call of the kernel. A file the grammar cannot read gives one
    ``cpp-parse-failed`` diagnostic and no facts.
Example
    ``explicit TllmGenFmhaRunner(...) : mSM(getSMVersion()) {
    FLASHINFER_CHECK(mSM == kSM_100 || mSM == kSM_103, "...") }`` -> function
    ``TllmGenFmhaRunner`` with one check ``mSM == kSM_100 || mSM == kSM_103``
    on SM names ``mSM``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from guardscan.cpp.arch_if import MACRO as ARCH_IF
from guardscan.cpp.arch_if import arch_if_condition
from guardscan.cpp.sm_switch import MACRO as SWITCH
from guardscan.cpp.sm_switch import switch_condition

__all__ = ["CHECK_MACROS", "CppCall", "CppCheck", "CppExport", "CppFileFacts", "CppFunction",
           "read_cpp"]

#: check macros: they raise when their first argument is false
CHECK_MACROS = frozenset({"FLASHINFER_CHECK", "TVM_FFI_ICHECK", "ICHECK", "TORCH_CHECK",
                          "TLLM_CHECK", "TLLM_CHECK_WITH_INFO", "CHECK"})
#: two-operand check macros and the comparison they assert
CHECK_COMPARE = {"_EQ": "==", "_NE": "!=", "_GE": ">=", "_GT": ">", "_LE": "<=", "_LT": "<"}
#: calls whose value is the SM number (major * 10 + minor)
SM_CALLS = frozenset({"getSMVersion", "get_sm_version", "getSmVersion", "GetSMVersion"})
_ATTR_MAJOR = "cudaDevAttrComputeCapabilityMajor"
_ATTR_MINOR = "cudaDevAttrComputeCapabilityMinor"
#: constructions through a factory: the template argument's constructor runs
_FACTORY = re.compile(r"(?:^|::)make_(?:shared|unique)\s*<\s*([\w:]+)")
#: launch calls and the index of the kernel they take
LAUNCH_CALLS = {"cudaLaunchKernelEx": 1, "cudaLaunchKernel": 0, "cudaLaunchCooperativeKernel": 0,
                "cudaLaunchKernelExC": 1}
_LAUNCH = re.compile(r"\s*([A-Za-z_][\w:]*)\s*(?:<[^;]*?>)?\s*<<<")
#: a file larger than this is not parsed (FlashInfer 0.7.2's largest source: 1.5 MB)
MAX_CPP_BYTES = 8 << 20
_CACHE_TEST = re.compile(r"\.\s*(?:end|cend)\s*\(\s*\)|\.\s*(?:count|contains)\s*\(")
_CONDITIONAL = frozenset({"if_statement", "for_statement", "for_range_loop", "while_statement",
                          "do_statement", "switch_statement", "conditional_expression",
                          "lambda_expression", "case_statement"})


@dataclass(frozen=True, slots=True)
class CppCall:
    callee: str  # as written, qualified where it is (``TllmGenFmhaRunnerCache::get``)
    line: int
    conditional: bool


@dataclass(frozen=True, slots=True)
class CppCheck:
    macro: str
    condition: str  # the asserted expression's text (``a == b`` for ``*_EQ(a, b)``)
    line: int
    conditional: bool
    text: str  # the line


@dataclass(frozen=True, slots=True)
class CppFunction:
    name: str  # short name; a constructor's is its class's
    owner: str  # the enclosing class, or ""
    line: int
    calls: tuple[CppCall, ...]
    checks: tuple[CppCheck, ...]
    sm_names: tuple[str, ...]  # names holding the SM number
    major_names: tuple[str, ...]
    minor_names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CppExport:
    name: str  # the name Python calls
    function: str  # the C++ function it binds
    line: int


@dataclass(frozen=True, slots=True)
class CppFileFacts:
    rel: str
    functions: tuple[CppFunction, ...] = ()
    exports: tuple[CppExport, ...] = ()
    includes: tuple[str, ...] = ()
    constants: tuple[tuple[str, int], ...] = ()
    failed: str = ""  # why the file gave no facts


_PARSER: Any = None


def _parser() -> Any:
    global _PARSER
    if _PARSER is None:
        import tree_sitter
        import tree_sitter_cpp

        _PARSER = tree_sitter.Parser(tree_sitter.Language(tree_sitter_cpp.language()))
    return _PARSER


def _text(node: Any) -> str:
    return bytes(node.text or b"").decode("utf-8", "replace")


def _walk(node: Any) -> Iterator[Any]:
    """``node`` and every node under it, in source order (parents first),
    through a cursor: one node object at a time. (A stack of each node's
    children held every sibling of a long list at once: a generated 4 MB
    header of FlashInfer 0.7.2 took 160 MB above its parse tree's 105 MB.)"""
    cursor = node.walk()
    while True:
        yield cursor.node
        if cursor.goto_first_child():
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return


def _error_share(root: Any) -> float:
    """The share of the file's bytes inside the grammar's error (or missing) nodes."""
    size = int(max(root.end_byte - root.start_byte, 1))
    errors = 0
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            errors += int(node.end_byte - node.start_byte)
        elif node.has_error:
            stack.extend(node.children)
    return errors / size


def read_cpp(rel: str, data: bytes) -> CppFileFacts:
    """The facts of one C++/CUDA file (``failed`` set, and nothing else, when
    it cannot be read)."""
    if len(data) > MAX_CPP_BYTES:
        return CppFileFacts(rel, failed=f"larger than {MAX_CPP_BYTES >> 20} MiB")
    if b"\0" in data[:4096]:
        return CppFileFacts(rel, failed="not text (a NUL byte)")
    try:
        tree = _parser().parse(data)
    except Exception as exc:  # noqa: BLE001 - the grammar's failure is this file's only
        return CppFileFacts(rel, failed=f"tree-sitter failed: {type(exc).__name__}")
    root = tree.root_node
    if root.has_error and _error_share(root) > 0.5:
        return CppFileFacts(rel, failed="the C++ grammar cannot read most of it")
    lines = data.decode("utf-8", "replace").splitlines()
    functions, exports, includes, constants = [], [], [], []
    for node in _walk(root):
        kind = node.type
        if kind == "function_definition":
            found = _function(node, lines)
            if found is not None:
                functions.append(found)
        elif kind == "preproc_include":
            path = node.child_by_field_name("path")
            if path is not None:
                includes.append(_text(path).strip('"<>'))
        elif kind == "call_expression":
            export = _export(node)
            if export is not None:
                exports.append(export)
        elif kind == "init_declarator" and node.parent is not None and \
                "constexpr" in _text(node.parent).split("=")[0]:
            name, value = node.child_by_field_name("declarator"), node.child_by_field_name("value")
            if name is not None and value is not None and value.type == "number_literal":
                number = _int(_text(value))
                if number is not None:
                    constants.append((_text(name), number))
    return CppFileFacts(rel, tuple(functions), tuple(exports), tuple(includes), tuple(constants))


def _int(text: str) -> int | None:
    text = text.rstrip("uUlL")
    try:
        return int(text, 0)
    except ValueError:
        return None


def _export(node: Any) -> CppExport | None:
    fn = node.child_by_field_name("function")
    args = node.child_by_field_name("arguments")
    if fn is None or args is None:
        return None
    name = _text(fn)
    items = [c for c in args.named_children if c.type != "comment"]
    if name == "TVM_FFI_DLL_EXPORT_TYPED_FUNC" and len(items) == 2:
        return CppExport(_text(items[0]), _text(items[1]).lstrip("&"), node.start_point.row + 1)
    if name.endswith(".def") and len(items) >= 2 and items[0].type == "string_literal":
        return CppExport(_text(items[0]).strip('"'), _text(items[1]).lstrip("&").strip(),
                         node.start_point.row + 1)
    return None


def _declarator_name(node: Any) -> tuple[str, str]:
    """(short name, owner) of a function definition's declarator."""
    decl = node.child_by_field_name("declarator")
    while decl is not None and decl.type not in ("function_declarator",):
        decl = decl.child_by_field_name("declarator")
    if decl is None:
        return "", ""
    name = _text(decl.child_by_field_name("declarator") or decl)
    owner = ""
    if "::" in name:
        owner, _, name = name.rpartition("::")
        owner = owner.rpartition("::")[2]
    parent = node.parent
    while parent is not None:
        if parent.type in ("class_specifier", "struct_specifier"):
            owner = _text(parent.child_by_field_name("name") or parent).split("<")[0]
            break
        parent = parent.parent
    return name.split("<")[0], owner


def _conditional(node: Any, body: Any) -> bool:
    current = node.parent
    while current is not None and current != body.parent:
        if current.type in _CONDITIONAL:
            if current.type != "if_statement":
                return True
            cond = current.child_by_field_name("condition")
            if cond is None or not _CACHE_TEST.search(_text(cond)):
                return True
        current = current.parent
    return False


def _function(node: Any, lines: list[str]) -> CppFunction | None:
    name, owner = _declarator_name(node)
    if not name or name.startswith(("~", "operator")):
        return None
    calls: list[CppCall] = []
    checks: list[CppCheck] = []
    sm: set[str] = set()
    major: set[str] = set()
    minor: set[str] = set()
    switches: list[Any] = []
    for child in _walk(node):
        kind = child.type
        if kind == "preproc_if":
            _arch_if(child, node, lines, checks)
        elif kind == "switch_statement":
            switches.append(child)
        elif kind == "expression_statement":
            _launch(child, node, calls)
        elif kind == "field_initializer":
            _sm_initialiser(child, sm)
        elif kind == "init_declarator":
            value = child.child_by_field_name("value")
            target = child.child_by_field_name("declarator")
            if value is not None and target is not None and _is_sm_call(value):
                sm.add(_text(target).lstrip("*&"))
            elif target is not None and value is not None and value.type == "argument_list":
                _construction(child, node, calls)
        elif kind == "assignment_expression":
            left, right = child.child_by_field_name("left"), child.child_by_field_name("right")
            if left is not None and right is not None and _is_sm_call(right):
                sm.add(_text(left))
        elif kind == "new_expression":
            typ = child.child_by_field_name("type")
            if typ is not None:
                calls.append(CppCall(_text(typ).split("<")[0], child.start_point.row + 1,
                                     _conditional(child, node)))
        elif kind == "call_expression":
            _call(child, node, lines, calls, checks, major, minor)
    for switch in switches:
        _switch(switch, node, lines, checks, sm | major | minor)
    checks.sort(key=lambda c: c.line)
    return CppFunction(name, owner, node.start_point.row + 1, tuple(calls), tuple(checks),
                       tuple(sorted(sm)), tuple(sorted(major)), tuple(sorted(minor)))


def _line_text(lines: list[str], line: int, default: str) -> str:
    return (lines[line - 1].strip() if 0 < line <= len(lines) else default)[:200]


def _arch_if(node: Any, function: Any, lines: list[str], checks: list[CppCheck]) -> None:
    condition = arch_if_condition(node)
    if condition is not None:
        line = node.start_point.row + 1
        checks.append(CppCheck(ARCH_IF, condition, line, _conditional(node, function),
                               _line_text(lines, line, ARCH_IF)))


def _switch(node: Any, function: Any, lines: list[str], checks: list[CppCheck],
            names: set[str]) -> None:
    condition = switch_condition(node, names, CHECK_MACROS)
    if condition is not None:
        line = node.start_point.row + 1
        checks.append(CppCheck(SWITCH, condition, line, _conditional(node, function),
                               _line_text(lines, line, SWITCH)))


def _launch(node: Any, function: Any, calls: list[CppCall]) -> None:
    """A kernel launch ``kernel<T><<<grid, block>>>(...)`` is a call of ``kernel``."""
    match = _LAUNCH.match(_text(node))
    if match is not None:
        calls.append(CppCall(match.group(1), node.start_point.row + 1,
                             _conditional(node, function)))


def _sm_initialiser(node: Any, sm: set[str]) -> None:
    named = node.named_children
    if len(named) >= 2 and any(_is_sm_call(a) for a in named[1].named_children):
        sm.add(_text(named[0]))


def _construction(declarator: Any, function: Any, calls: list[CppCall]) -> None:
    decl = declarator.parent
    typ = decl.child_by_field_name("type") if decl is not None else None
    if typ is not None and typ.type in ("type_identifier", "qualified_identifier"):
        calls.append(CppCall(_text(typ).rpartition("::")[2], declarator.start_point.row + 1,
                             _conditional(declarator, function)))


def _is_sm_call(node: Any) -> bool:
    if node.type != "call_expression":
        return False
    fn = node.child_by_field_name("function")
    return fn is not None and _text(fn).rpartition("::")[2] in SM_CALLS


def _call(node: Any, function: Any, lines: list[str], calls: list[CppCall],
          checks: list[CppCheck], major: set[str], minor: set[str]) -> None:
    fn = node.child_by_field_name("function")
    args = node.child_by_field_name("arguments")
    if fn is None:
        return
    name = _text(fn)
    line = node.start_point.row + 1
    conditional = _conditional(node, function)
    items = [c for c in args.named_children if c.type != "comment"] if args is not None else []
    base = next((m for m in CHECK_MACROS if name == m or (
        name.startswith(m + "_") and name[len(m):] in CHECK_COMPARE)), None)
    if base is not None and items:
        if name == base:
            condition = _text(items[0])
        elif len(items) >= 2:
            condition = f"{_text(items[0])} {CHECK_COMPARE[name[len(base):]]} {_text(items[1])}"
        else:
            return
        text = lines[line - 1].strip() if 0 < line <= len(lines) else name
        checks.append(CppCheck(name, " ".join(condition.split()), line, conditional, text[:200]))
        return
    short = name.rpartition("::")[2].rpartition(".")[2].rpartition("->")[2]
    if short == "cudaDeviceGetAttribute" and len(items) >= 2:
        attr = _text(items[1]).rpartition("::")[2]
        target = _text(items[0]).lstrip("&")
        if attr == _ATTR_MAJOR:
            major.add(target)
        elif attr == _ATTR_MINOR:
            minor.add(target)
        return
    if short in LAUNCH_CALLS and len(items) > LAUNCH_CALLS[short]:
        kernel = items[LAUNCH_CALLS[short]]
        if kernel.type in ("identifier", "qualified_identifier", "template_function"):
            calls.append(CppCall(_text(kernel).lstrip("&").split("<")[0], line, conditional))
        return
    factory = _FACTORY.search(name)
    if factory is not None:
        calls.append(CppCall(factory.group(1).rpartition("::")[2], line, conditional))
        return
    if fn.type in ("identifier", "qualified_identifier", "field_expression",
                   "template_function"):
        calls.append(CppCall(name.split("<")[0] if fn.type != "field_expression"
                             else short.split("<")[0], line, conditional))
