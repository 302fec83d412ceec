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

__all__ = ["conditional_calls"]


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
    for node in ast.walk(tree):
        if not isinstance(node, ast.IfExp):
            continue
        test = (ast.get_source_segment(text, node.test) or "").strip()[:200]
        for branch, in_body in ((node.body, True), (node.orelse, False)):
            for call in ast.walk(branch):
                if isinstance(call, ast.Call):
                    func = call.func
                    name = func.attr if isinstance(func, ast.Attribute) else (
                        func.id if isinstance(func, ast.Name) else "")
                    if name:
                        found.setdefault(call.lineno, []).append((name, test, in_body))
    return found
