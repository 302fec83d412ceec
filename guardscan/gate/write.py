"""gate (write): put a plan's checks into a file's source, with libcst.

libcst keeps every byte it is not asked to change (formatting, comments,
blank lines), so the edit is the checks, a comment above them and, when the
file does not import a guard yet, that import: into the file's own
parenthesised ``from <module> import (...)`` of that module (at its natural
sort position), else as a new line after the file's imports. Nothing else
in the file moves.

This module is the only one that imports libcst; ``guardscan gate`` imports
it only when it has checks to write.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import MetadataWrapper, PositionProvider

from guardscan.gate.plan import Check

__all__ = ["COMMENT", "apply_checks", "check_source"]

#: The comment above each group of checks.
COMMENT = "# guardscan gate: fail fast where a kernel these choices need does not run."
#: Line length the generated code keeps to (SGLang's black setting).
LINE = 88


def _literal(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _chunks(text: str, width: int) -> list[str]:
    """``text`` cut at spaces into pieces of about ``width`` characters (each
    keeps its trailing space, so the pieces join back to ``text``)."""
    pieces: list[str] = []
    current = ""
    for word in re.findall(r"\S+\s*", text):
        if current and len(current) + len(word.rstrip()) > width:
            pieces.append(current)
            current = ""
        current += word
    if current:
        pieces.append(current)
    return pieces


def check_source(check: Check, indent: str, depth: int, newline: str = "\n") -> str:
    """One check as source text at column 0, indented with ``indent``, wrapped
    to ``LINE`` columns once placed ``depth`` blocks deep."""
    at = len(indent) * depth
    test = check.condition
    lines = [f"if {test}:"]
    if at + len(lines[0]) > LINE:
        left, right = test.split(" and ", 1)
        lines = ["if (", f"{indent}{left}", f"{indent}and {right}", "):"]
    message = check.message
    one = f"{indent}raise ValueError({_literal(message)})"
    if at + len(one) <= LINE:
        lines.append(one)
    else:
        width = LINE - at - len(indent) * 2 - 3
        lines.append(f"{indent}raise ValueError(")
        lines.extend(f"{indent * 2}{_literal(piece)}" for piece in _chunks(message, width))
        lines.append(f"{indent})")
    return newline.join(lines) + newline


def _natural(name: str) -> tuple[tuple[int, int, str], ...]:
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part.lower())
                 for part in re.split(r"(\d+)", name) if part)


def _blank() -> cst.EmptyLine:
    return cst.EmptyLine(indent=False)


class _InsertChecks(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, groups: dict[tuple[str, str, int], list[cst.BaseStatement]]) -> None:
        super().__init__()
        self.groups = groups
        self.classes: list[str] = []
        self.functions = 0
        self.done: set[tuple[str, str, int]] = set()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.classes.append(node.name.value)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions += 1

    def leave_ClassDef(self, original_node: cst.ClassDef,
                       updated_node: cst.ClassDef) -> cst.ClassDef:
        self.classes.pop()
        return updated_node

    def leave_FunctionDef(self, original_node: cst.FunctionDef,
                          updated_node: cst.FunctionDef) -> cst.FunctionDef:
        self.functions -= 1
        # a method of a top-level class, or a module-level function
        top = (len(self.classes) == 1 and self.functions == 0) or \
            (not self.classes and self.functions == 0)
        if not top or not isinstance(updated_node.body, cst.IndentedBlock):
            return updated_node
        cls, method = (self.classes[0] if self.classes else ""), original_node.name.value
        wanted = {line: stmts for (c, m, line), stmts in self.groups.items()
                  if (c, m) == (cls, method)}
        if not wanted:
            return updated_node
        body: list[cst.BaseStatement] = []
        originals = original_node.body.body
        for index, (old, new) in enumerate(zip(originals, updated_node.body.body)):
            line = self.get_metadata(PositionProvider, old).start.line
            inserted = wanted.get(line)
            if inserted:
                self.done.add((cls, method, line))
                first = inserted[0].with_changes(leading_lines=[
                    *([_blank()] if index > 0 else []),
                    cst.EmptyLine(comment=cst.Comment(COMMENT))])
                body.extend([first, *inserted[1:]])
                leading = list(getattr(new, "leading_lines", ()))
                if not leading or leading[0].comment is not None:
                    new = new.with_changes(leading_lines=[_blank(), *leading])
            body.append(new)
        return updated_node.with_changes(body=updated_node.body.with_changes(body=body))


def _module_name(node: cst.ImportFrom) -> str | None:
    if node.relative or node.module is None:
        return None
    return get_full_name_for_node(node.module)


def _add_to_import(node: cst.ImportFrom, name: str) -> cst.ImportFrom:
    """``node`` (a parenthesised name list) with ``name`` at its natural position."""
    assert not isinstance(node.names, cst.ImportStar)
    aliases = list(node.names)
    where = next((i for i, a in enumerate(aliases)
                  if _natural(get_full_name_for_node(a.name) or "") > _natural(name)),
                 len(aliases))
    commas = [a.comma for a in aliases if isinstance(a.comma, cst.Comma)]
    comma = commas[0] if commas else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    if where < len(aliases):
        aliases.insert(where, cst.ImportAlias(name=cst.Name(name), comma=comma))
    else:
        last = aliases[-1]
        trailing = last.comma
        aliases[-1] = last.with_changes(comma=comma)
        aliases.append(cst.ImportAlias(name=cst.Name(name), comma=trailing))
    return node.with_changes(names=aliases)


def _add_imports(module: cst.Module, wanted: Sequence[tuple[str, str]]) -> cst.Module:
    body = list(module.body)
    for source, name in wanted:
        placed = False
        last_import = -1
        for index, stmt in enumerate(body):
            if isinstance(stmt, (cst.ClassDef, cst.FunctionDef)):
                break
            if not isinstance(stmt, cst.SimpleStatementLine):
                continue
            small = stmt.body
            if small and all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in small):
                last_import = index
            if len(small) == 1 and isinstance(small[0], cst.ImportFrom) and \
                    _module_name(small[0]) == source and \
                    not isinstance(small[0].names, cst.ImportStar) and small[0].lpar:
                body[index] = stmt.with_changes(body=[_add_to_import(small[0], name)])
                placed = True
                break
        if not placed:
            line = cst.parse_statement(f"from {source} import {name}{module.default_newline}",
                                       config=module.config_for_parsing)
            body.insert(last_import + 1, line)
    return module.with_changes(body=body)


def apply_checks(source: str, checks: Sequence[Check]) -> str:
    """``source`` with ``checks`` (all for this file) inserted, and the
    imports their guards need. Raises ``ValueError`` when a check's place is
    not in the source (it changed since the scan)."""
    module = cst.parse_module(source)
    indent = module.default_indent
    groups: dict[tuple[str, str, int], list[cst.BaseStatement]] = {}
    for check in checks:
        place = check.placement
        text = check_source(check, indent, place.depth, module.default_newline)
        statement = cst.parse_statement(text, config=module.config_for_parsing)
        groups.setdefault((place.cls, place.method, place.line), []).append(statement)
    transformer = _InsertChecks(groups)
    edited = MetadataWrapper(module, unsafe_skip_copy=True).visit(transformer)
    missing = set(groups) - transformer.done
    if missing:
        cls, method, line = min(missing)
        where = f"{cls}.{method}" if cls else method
        raise ValueError(f"no statement at line {line} of {where}: the file changed "
                         "since it was scanned")
    imports = sorted({(c.guard.module, c.guard.name) for c in checks if c.guard.module})
    if imports:
        edited = _add_imports(edited, imports)
    return edited.code
