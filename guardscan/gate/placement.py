"""gate (placement): where a fail-fast check on an option goes, found by analysis.

The check belongs in the version's own server-argument validation, on the
class that declares the option's field (``moe_runner_backend: str = "auto"``
in SGLang 0.5.9's ``ServerArgs``):

1. the method that already checks the option: the one with most top-level
   statements that test ``self.<dest>`` and raise or assert under it
   (``_handle_moe_kernel_config`` for ``--moe-runner-backend``); the check goes
   just before the first of them, so it sees the value as the handlers before
   it left it (an ``auto`` already resolved, an override already applied);
2. else the class's validation method: a method taking only ``self``, called
   somewhere in the tree, holding the most ``raise`` / ``assert`` statements
   (``check_server_args``); the check goes at its top;
3. else ``__post_init__``, at its top;
4. else, where a version validates its arguments in module-level hook
   functions (SGLang 0.5.2x's ``arg_groups/*_hook.py``, whose options are
   fields of structs without methods): the function with most top-level
   statements that test ``<name>.<dest>`` (``view.moe_runner_backend``) and
   raise or assert under it, just before the first of them, with the same
   ``<name>``.

When none of these is found, there is no place, and the reason says what was
looked for.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from guardscan.index import Index
from guardscan.results import OptionInfo

__all__ = ["Placement", "find_placement"]


@dataclass(frozen=True, slots=True)
class Placement:
    """Insert before the statement that starts at ``line`` of ``cls.method`` in ``rel``."""

    rel: str
    cls: str
    method: str
    line: int
    #: the method's first parameter (``self``)
    instance: str
    #: why here, for the report
    reason: str

    @property
    def scope(self) -> str:
        return f"{self.cls}.{self.method}" if self.cls else self.method

    @property
    def depth(self) -> int:
        """How many blocks deep the check is written: a method's body, or a
        module-level function's."""
        return 2 if self.cls else 1


def _parse(index: Index, rel: str) -> ast.Module | None:
    data = index.data(rel)
    if data is None:
        return None
    try:
        return ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _declares(cls: ast.ClassDef, dest: str) -> bool:
    for stmt in cls.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and \
                stmt.target.id == dest:
            return True
        if isinstance(stmt, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == dest for t in stmt.targets):
            return True
    return False


def _instance_methods(cls: ast.ClassDef) -> list[tuple[ast.FunctionDef, str]]:
    """Methods called on an instance, with the name of their instance parameter."""
    out = []
    for stmt in cls.body:
        if not isinstance(stmt, ast.FunctionDef) or not stmt.args.args:
            continue
        decorators = {d.id for d in stmt.decorator_list if isinstance(d, ast.Name)}
        if decorators & {"staticmethod", "classmethod", "property"}:
            continue
        out.append((stmt, stmt.args.args[0].arg))
    return out


def _reads(node: ast.AST, instance: str, dest: str) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == dest and isinstance(n.value, ast.Name)
               and n.value.id == instance for n in ast.walk(node))


def _fails(node: ast.AST) -> bool:
    return any(isinstance(n, (ast.Raise, ast.Assert)) for n in ast.walk(node))


def _option_checks(method: ast.FunctionDef, instance: str, dest: str) -> list[ast.stmt]:
    """Top-level statements of the method that test the option and raise or
    assert under that test."""
    return [stmt for stmt in method.body
            if isinstance(stmt, (ast.If, ast.Assert)) and _reads(stmt.test, instance, dest)
            and _fails(stmt)]


def _first_statement(method: ast.FunctionDef) -> ast.stmt:
    """The method's first statement after its docstring (the docstring when it is all)."""
    body = method.body
    first = body[0]
    if len(body) > 1 and isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
            and isinstance(first.value.value, str):
        return body[1]
    return first


def _declaring_class(index: Index, option: OptionInfo) -> tuple[str, ast.ClassDef] | None:
    candidates = [option.path, *index.grep([f".{option.dest}"])]
    for rel in dict.fromkeys(candidates):
        module = _parse(index, rel)
        if module is None:
            continue
        for stmt in module.body:
            if isinstance(stmt, ast.ClassDef) and _declares(stmt, option.dest):
                return rel, stmt
    return None


def _called(index: Index, name: str) -> bool:
    return bool(index.grep([f".{name}()"]))


def _name_checks(function: ast.FunctionDef, dest: str) -> list[tuple[ast.stmt, str]]:
    """Top-level statements of a function that test ``<name>.<dest>`` and
    raise or assert under that test, with the name."""
    out: list[tuple[ast.stmt, str]] = []
    for stmt in function.body:
        if not isinstance(stmt, (ast.If, ast.Assert)) or not _fails(stmt):
            continue
        names = [n.value.id for n in ast.walk(stmt.test) if isinstance(n, ast.Attribute)
                 and n.attr == dest and isinstance(n.value, ast.Name)]
        if names:
            out.append((stmt, names[0]))
    return out


def _hook_placement(index: Index, option: OptionInfo) -> Placement | None:
    """The module-level function that checks the option most (rule 4)."""
    best: tuple[int, str, int, ast.FunctionDef, ast.stmt, str] | None = None
    for rel in sorted(index.grep([f".{option.dest}"])):
        module = _parse(index, rel)
        if module is None:
            continue
        for stmt in module.body:
            if not isinstance(stmt, ast.FunctionDef):
                continue
            checks = _name_checks(stmt, option.dest)
            if checks and (best is None or len(checks) > best[0]):
                best = (len(checks), rel, stmt.lineno, stmt, *checks[0])
    if best is None:
        return None
    count, rel, _, function, first, name = best
    return Placement(rel, "", function.name, first.lineno, name,
                     f"{function.name} ({rel}) holds {count} check(s) on {option.flag}")


def find_placement(index: Index, option: OptionInfo) -> Placement | str:
    """Where a check on ``option`` goes, or why there is no such place."""
    found = _declaring_class(index, option)
    if found is None:
        hook = _hook_placement(index, option)
        if hook is not None:
            return hook
        return (f"no place for a check: no class declares the field {option.dest} and no "
                f"function checks .{option.dest} (looked in {option.path} and the files "
                f"that read .{option.dest})")
    rel, cls = found
    methods = _instance_methods(cls)
    checking = [(len(checks), -m.lineno, m, instance, checks[0])
                for m, instance in methods
                if (checks := _option_checks(m, instance, option.dest))]
    if checking:
        count, _, method, instance, first = max(checking, key=lambda c: (c[0], c[1]))
        return Placement(rel, cls.name, method.name, first.lineno, instance,
                         f"{cls.name}.{method.name} holds {count} check(s) on {option.flag}")
    validating = [(sum(isinstance(n, (ast.Raise, ast.Assert)) for n in ast.walk(m)), -m.lineno,
                   m, instance)
                  for m, instance in methods
                  if len(m.args.args) == 1 and not m.args.kwonlyargs and _called(index, m.name)]
    validating = [v for v in validating if v[0] > 0]
    if validating:
        count, _, method, instance = max(validating, key=lambda v: (v[0], v[1]))
        return Placement(rel, cls.name, method.name, _first_statement(method).lineno, instance,
                         f"no method of {cls.name} checks {option.flag}; {method.name}, its "
                         f"validation method ({count} raise/assert), does")
    for method, instance in methods:
        if method.name == "__post_init__":
            return Placement(rel, cls.name, method.name, _first_statement(method).lineno,
                             instance, f"no validation method in {cls.name}: __post_init__")
    hook = _hook_placement(index, option)
    if hook is not None:
        return hook
    return (f"no place for a check: {cls.name} ({rel}) declares {option.dest} but has no "
            "method that checks it, no validation method and no __post_init__, and no "
            f"function checks .{option.dest}")
