"""link (conditional expressions): calls made in one branch of ``x if test else y``.

What it reads: a module's source (parsed with ``ast``, as text), for the calls
that sit in the body or the ``else`` of a conditional expression; the index's
call facts carry the paths of ``if`` statements only.

Why it matters: a private helper called only as ``self._compute_flashmla_metadata(...)
if self.decode_impl == "flashmla_kv" else None`` runs only under that test; read
as unconditional, its kernel calls are made for every launch of the choice, and
an arch the kernels lack is called ``unsupported`` although another decode
implementation is the default there.

Known limits: the test is kept as text (an undecided condition), not read as
a predicate; only the innermost conditional expression around a call counts.

Example::

    >>> sites = conditional_calls(b"m = self._meta(x) if self.impl == 'kv' else None\\n")
    >>> sites[1]
    [('_meta', "self.impl == 'kv'", True)]
"""

from __future__ import annotations

import ast
import re

__all__ = ["conditional_calls"]

#: a line and its end, as ``ast`` counts lines (``\r\n``, ``\r`` or ``\n``; not a form feed)
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def _segment(lines: list[str], node: ast.expr) -> str:
    """``ast.get_source_segment`` over lines split once per file (it splits
    the whole source on every call)."""
    end_line, end_col = node.end_lineno, node.end_col_offset
    if end_line is None or end_col is None:
        return ""
    first, last = node.lineno - 1, end_line - 1
    if not 0 <= first <= last < len(lines):
        return ""
    if first == last:
        return lines[first].encode()[node.col_offset:end_col].decode("utf-8", "replace")
    return "".join([lines[first].encode()[node.col_offset:].decode("utf-8", "replace"),
                    *lines[first + 1:last],
                    lines[last].encode()[:end_col].decode("utf-8", "replace")])


def conditional_calls(data: bytes) -> dict[int, list[tuple[str, str, bool]]]:
    """line -> (called name's last part, the test's text, in the body (not the
    ``else``)) for each call inside a conditional expression; {} when the
    source does not parse."""
    try:
        tree = ast.parse(data)
        text = data.decode("utf-8", "replace")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    found: dict[int, list[tuple[str, str, bool]]] = {}
    lines: list[str] | None = None
    for node in ast.walk(tree):
        if not isinstance(node, ast.IfExp):
            continue
        if lines is None:
            lines = _LINE.findall(text)
        test = _segment(lines, node.test).strip()[:200]
        for branch, in_body in ((node.body, True), (node.orelse, False)):
            for call in ast.walk(branch):
                if isinstance(call, ast.Call):
                    func = call.func
                    name = func.attr if isinstance(func, ast.Attribute) else (
                        func.id if isinstance(func, ast.Name) else "")
                    if name:
                        found.setdefault(call.lineno, []).append((name, test, in_body))
    return found
