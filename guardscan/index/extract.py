"""index (extraction): the plain-data facts of one Python source file, pulled out with ``ast``.

The standard library's ``ast`` does the parsing: it is about ten times faster
than libcst on SGLang's tree and gives every position we need; facts keep
exact source slices (not ``ast.unparse``), which is cheap and shows the code as
written. No verdict is decided here.
"""

from __future__ import annotations

import ast
import codecs
import io
import tokenize
import warnings
from collections import deque
from collections.abc import Iterable
from itertools import accumulate
from typing import cast

from guardscan.index.facts import (
    AssertFact,
    AssignFact,
    CallFact,
    ClassFact,
    Cond,
    CondPath,
    FileFacts,
    FileOutcome,
    FunctionFact,
    ImportFact,
    RaiseFact,
    ReturnFact,
)

__all__ = ["dotted", "extract_facts", "index_source", "source_lines"]

#: Argument texts longer than this are cut (help texts are long, data is longer).
MAX_ARG_TEXT = 6000


class _Source:
    """Byte-exact slicing of the source by ast positions (UTF-8 byte columns)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.starts = [0]
        self.starts += accumulate(len(line) + 1 for line in data.split(b"\n")[:-1])

    def segment(self, node: ast.AST, limit: int | None = None) -> str:
        start = self.starts[node.lineno - 1] + node.col_offset  # type: ignore[attr-defined]
        end_line = node.end_lineno or node.lineno  # type: ignore[attr-defined]
        end = self.starts[end_line - 1] + (node.end_col_offset or 0)  # type: ignore[attr-defined]
        if limit is not None and end - start > limit:
            end = start + limit
        return self.data[start:end].decode("utf-8", "replace")

    def lines(self, first: int, last: int) -> str:
        start = self.starts[first - 1]
        end = self.starts[last] if last < len(self.starts) else len(self.data)
        return self.data[start:end].decode("utf-8", "replace")


def dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else ``None``."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


FALLS, RAISES, LEAVES = 0, 1, 2


def _child_fields() -> dict[type, tuple[str, ...]]:
    """For each node class, the fields that can hold nodes, in ``_fields`` order
    (what ``ast.iter_child_nodes`` visits). Fields that never can (``ctx``,
    identifiers, constants) are left out."""
    leaf_fields = {"ctx", "id", "attr", "arg", "name", "names", "module", "level", "value_kind",
                   "kind", "type_comment", "is_async", "conversion", "lineno", "col_offset"}
    table: dict[type, tuple[str, ...]] = {}
    stack: list[type] = [ast.AST]
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        table[cls] = tuple(f for f in getattr(cls, "_fields", ()) if f not in leaf_fields)
    table[ast.Constant] = ()
    return table


_CHILD_FIELDS = _child_fields()


def _calls_within(root: ast.AST) -> list[ast.Call]:
    """The ``Call`` nodes under ``root``, in ``ast.walk`` order (breadth first),
    by a walk that skips the generic field iteration of ``ast.iter_child_nodes``
    (the largest cost of extraction, measured)."""
    found: list[ast.Call] = []
    fields = _CHILD_FIELDS
    todo = deque((root,))
    pop, push, push_all = todo.popleft, todo.append, todo.extend
    call = ast.Call
    while todo:
        node = pop()
        kind = type(node)
        if kind is call:
            found.append(cast(ast.Call, node))
        for name in fields[kind]:
            child = getattr(node, name, None)
            if child is None:
                continue
            if type(child) is list:
                push_all(c for c in child if isinstance(c, ast.AST))
            elif isinstance(child, ast.AST):
                push(child)
    return found


class _Extractor:
    def __init__(self, source: _Source, rel: str, module: str, is_package: bool) -> None:
        self.src = source
        self.rel = rel
        self.module = module
        self.package = module if is_package else module.rpartition(".")[0]
        self.conds: list[Cond] = []
        self.cond_scope: list[str] = []
        self.imports: list[ImportFact] = []
        self.functions: list[FunctionFact] = []
        self.classes: list[ClassFact] = []
        self.assigns: list[AssignFact] = []
        self.calls: list[CallFact] = []
        self.raises: list[RaiseFact] = []
        self.asserts: list[AssertFact] = []
        self.returns: list[ReturnFact] = []
        self.class_names: set[str] = set()
        self.elifs: set[ast.If] = set()
        #: the path a block ends with when it falls through (set by ``block``)
        self.fall_path: CondPath = ()
        #: one object per distinct text and line number of the file: the facts
        #: cache pickles a shared object once, so every reader of the file's
        #: facts holds one copy (a call's name, an argument, a scope repeat
        #: hundreds of times in a file; about 45% of the facts' strings)
        self._shared: dict[str | int, str | int] = {}

    # -- helpers ---------------------------------------------------------------
    def text(self, node: ast.AST | None, limit: int | None = None) -> str:
        if node is None:
            return ""
        return self.share(self.src.segment(node, limit))

    def share(self, text: str) -> str:
        """``text``, as the one object of the file with this value."""
        return self._shared.setdefault(text, text)  # type: ignore[return-value]

    def line(self, number: int) -> int:
        """``number``, as the one object of the file with this value."""
        return self._shared.setdefault(number, number)  # type: ignore[return-value]

    def add_cond(self, text: str, line: int, scope: str, kind: str = "if") -> int:
        self.conds.append(Cond(text, line, kind))
        self.cond_scope.append(scope)
        return len(self.conds)

    def collect_calls(self, nodes: Iterable[ast.AST | None], scope: str, path: CondPath) -> None:
        for root in nodes:
            if root is None:
                continue
            for node in _calls_within(root):
                    func = self.share(dotted(node.func) or self.text(node.func, 300))
                    args = tuple(self.text(a, MAX_ARG_TEXT) for a in node.args)
                    kwargs = tuple(
                        (k.arg or "**", self.text(k.value, MAX_ARG_TEXT)) for k in node.keywords
                    )
                    self.calls.append(CallFact(scope, func, args, kwargs, self.line(node.lineno),
                                               path))

    def resolve_relative(self, module: str | None, level: int) -> str:
        if level == 0:
            return module or ""
        base = self.package.split(".") if self.package else []
        if level > 1:
            base = base[: len(base) - (level - 1)]
        return ".".join([*base, module] if module else base)

    # -- walking -----------------------------------------------------------------
    def block(self, stmts: list[ast.stmt], scope: str, path: CondPath) -> int:
        """Walk a statement list; say how it ends: FALLS, RAISES (always) or LEAVES
        (always, possibly by return/break/continue).

        After ``if c: return`` the rest of the block runs only when ``not c``, so
        its path gains ``-c``. After ``if c: raise`` it does not: whether or not
        that raise fires, a gate further down is still a reason to fail.
        """
        current = path
        for stmt in stmts:
            if isinstance(stmt, ast.If):
                self.collect_calls([stmt.test], scope, current)
                kind = "elif" if stmt in self.elifs else "if"
                if len(stmt.orelse) == 1 and isinstance(stmt.orelse[0], ast.If):
                    self.elifs.add(stmt.orelse[0])
                index = self.add_cond(self.text(stmt.test), stmt.test.lineno, scope, kind)
                body_ends = self.block(stmt.body, scope, (*current, index))
                body_falls = self.fall_path
                else_ends = self.block(stmt.orelse, scope, (*current, -index))
                else_falls = self.fall_path
                if body_ends and else_ends:
                    return max(body_ends, else_ends)
                if body_ends == LEAVES:
                    # ``if a: return / elif b: return``: what follows needs not a, not b
                    current = else_falls
                elif else_ends == LEAVES and stmt.orelse:
                    current = body_falls
                continue
            ends = self.statement(stmt, scope, current)
            if ends:
                return ends
        self.fall_path = current
        return FALLS

    def statement(self, stmt: ast.stmt, scope: str, path: CondPath) -> int:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.function(stmt, scope, path)
            return FALLS
        if isinstance(stmt, ast.ClassDef):
            self.klass(stmt, scope, path)
            return FALLS
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            self.import_(stmt, scope, path)
            return FALLS
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            self.assign(stmt, scope, path)
            return FALLS
        if isinstance(stmt, ast.Raise):
            self.collect_calls([stmt.exc, stmt.cause], scope, path)
            self.raises.append(RaiseFact(scope, self.text(stmt.exc, 600), stmt.lineno, path))
            return RAISES
        if isinstance(stmt, ast.Assert):
            self.collect_calls([stmt.test, stmt.msg], scope, path)
            self.asserts.append(
                AssertFact(scope, self.text(stmt.test), self.text(stmt.msg, 600), stmt.lineno, path)
            )
            return FALLS
        if isinstance(stmt, ast.Return):
            self.collect_calls([stmt.value], scope, path)
            self.returns.append(ReturnFact(scope, self.text(stmt.value, MAX_ARG_TEXT), stmt.lineno,
                                           path))
            return LEAVES
        if isinstance(stmt, (ast.Continue, ast.Break)):
            return LEAVES
        if isinstance(stmt, ast.While):
            self.collect_calls([stmt.test], scope, path)
            index = self.add_cond(self.text(stmt.test), stmt.test.lineno, scope, "while")
            self.block(stmt.body, scope, (*path, index))
            self.block(stmt.orelse, scope, path)
            return FALLS
        if isinstance(stmt, (ast.For, ast.AsyncFor)):
            self.collect_calls([stmt.iter], scope, path)
            self.block(stmt.body, scope, path)
            self.block(stmt.orelse, scope, path)
            return FALLS
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            self.collect_calls([item.context_expr for item in stmt.items], scope, path)
            return self.block(stmt.body, scope, path)
        if isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            try_stmt: ast.Try = stmt  # type: ignore[assignment]
            body_ends = self.block(try_stmt.body, scope, path)
            handler_ends = [RAISES]
            for handler in try_stmt.handlers:
                caught = self.text(handler.type) if handler.type is not None else "BaseException"
                index = self.add_cond(f"<except {caught}>", handler.lineno, scope, "except")
                handler_ends.append(self.block(handler.body, scope, (*path, index)))
            self.block(try_stmt.orelse, scope, path)
            final_ends = self.block(try_stmt.finalbody, scope, path)
            if final_ends:
                return final_ends
            if body_ends and all(handler_ends) and try_stmt.handlers:
                return max(body_ends, *handler_ends)
            return FALLS
        if isinstance(stmt, ast.Match):
            self.collect_calls([stmt.subject], scope, path)
            for case in stmt.cases:
                index = self.add_cond(f"<match {self.text(case.pattern, 200)}>",
                                      case.pattern.lineno, scope, "match")
                self.block(case.body, scope, (*path, index))
            return FALLS
        # Expr, Delete, Global, Pass, ...
        self.collect_calls([stmt], scope, path)
        return FALLS

    def function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, scope: str, path: CondPath,
                 ) -> None:
        cls = scope if scope in self.class_names else ""
        qualname = f"{scope}.{node.name}" if scope else node.name
        self.collect_calls(node.decorator_list, scope, path)
        args = node.args
        positional = [*args.posonlyargs, *args.args]
        params = tuple(a.arg for a in [*positional, *args.kwonlyargs])
        defaults: list[tuple[str, str]] = []
        for arg, default in zip(positional[len(positional) - len(args.defaults):], args.defaults):
            defaults.append((arg.arg, self.text(default, 400)))
        for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults):
            if kw_default is not None:
                defaults.append((arg.arg, self.text(kw_default, 400)))
        end = node.end_lineno or node.lineno
        self.functions.append(
            FunctionFact(
                qualname=qualname,
                name=node.name,
                cls=cls,
                line=node.lineno,
                end_line=end,
                params=params,
                defaults=tuple(defaults),
                decorators=tuple((self.text(d, 600), d.lineno) for d in node.decorator_list),
                returns=self.text(node.returns, 200),
                path=path,
                scope=scope,
                annotations=tuple((a.arg, self.text(a.annotation, 200))
                                  for a in [*positional, *args.kwonlyargs] if a.annotation),
                globals=_declared_globals(node.body),
                positional=len(positional),
                varargs=args.vararg is not None,
            )
        )
        self.block(node.body, qualname, ())

    def klass(self, node: ast.ClassDef, scope: str, path: CondPath) -> None:
        qualname = f"{scope}.{node.name}" if scope else node.name
        self.class_names.add(qualname)
        self.collect_calls([*node.decorator_list, *node.bases], scope, path)
        self.classes.append(
            ClassFact(
                qualname=qualname,
                line=node.lineno,
                end_line=node.end_lineno or node.lineno,
                bases=tuple(self.text(b, 300) for b in node.bases),
                decorators=tuple((self.text(d, 600), d.lineno) for d in node.decorator_list),
                path=path,
                scope=scope,
            )
        )
        self.block(node.body, qualname, ())

    def import_(self, node: ast.Import | ast.ImportFrom, scope: str, path: CondPath) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                module = alias.name if alias.asname else alias.name.split(".")[0]
                self.imports.append(ImportFact(scope, local, module, None, node.lineno, path))
                if not alias.asname and "." in alias.name:
                    # ``import a.b.c`` binds ``a`` but also makes a.b.c reachable
                    self.imports.append(
                        ImportFact(scope, alias.name, alias.name, None, node.lineno, path)
                    )
            return
        module = self.resolve_relative(node.module, node.level)
        for alias in node.names:
            local = alias.asname or alias.name
            self.imports.append(ImportFact(scope, local, module, alias.name, node.lineno, path))

    def assign(self, node: ast.Assign | ast.AnnAssign | ast.AugAssign, scope: str,
               path: CondPath) -> None:
        value = node.value
        self.collect_calls([value], scope, path)
        if isinstance(node, ast.Assign):
            targets = tuple(self.text(t, 300) for t in node.targets)
            annotation = ""
        else:
            targets = (self.text(node.target, 300),)
            annotation = self.text(node.annotation, MAX_ARG_TEXT) if isinstance(
                node, ast.AnnAssign) else ""
            if isinstance(node, ast.AnnAssign):
                self.collect_calls([node.annotation], scope, path)
        value_text = self.text(value, MAX_ARG_TEXT) if value is not None else ""
        if isinstance(node, ast.AugAssign):
            value_text = f"{targets[0]} {_AUG.get(type(node.op), '?')} ({value_text})"
        self.assigns.append(
            AssignFact(scope, targets, self.share(value_text), self.line(node.lineno), path,
                       annotation, self.line(node.end_lineno or node.lineno))
        )

    def facts(self) -> FileFacts:
        return FileFacts(
            rel=self.rel,
            module=self.module,
            conds=tuple(self.conds),
            imports=tuple(self.imports),
            functions=tuple(self.functions),
            classes=tuple(self.classes),
            assigns=tuple(self.assigns),
            calls=tuple(self.calls),
            raises=tuple(self.raises),
            asserts=tuple(self.asserts),
            returns=tuple(self.returns),
            cond_scope=tuple(self.cond_scope),
        )


def _declared_globals(body: list[ast.stmt]) -> tuple[str, ...]:
    """The names a function body declares ``global``, in its own statements
    and the blocks nested in them (not in nested functions or classes)."""
    names: list[str] = []
    todo: list[ast.AST] = list(body)
    while todo:
        stmt = todo.pop()
        if isinstance(stmt, ast.Global):
            names.extend(stmt.names)
        elif not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for name in ("body", "orelse", "finalbody", "handlers"):
                todo.extend(s for s in getattr(stmt, name, ()) if isinstance(s, ast.AST))
    return tuple(sorted(set(names)))


_AUG = {ast.Add: "+", ast.Sub: "-", ast.BitOr: "|", ast.BitAnd: "&", ast.Mult: "*"}


def _as_parsed(data: bytes) -> bytes | str:
    """What to hand ``ast.parse``, such that ``_Source`` can slice the bytes of
    the result's UTF-8 encoding by the positions it reports.

    ast counts ``\r\n`` and a lone ``\r`` as line ends and measures columns in
    UTF-8 bytes of the decoded line, without a BOM; ``_Source`` splits on
    ``\n`` and slices raw bytes. So old Mac line ends are made ``\n`` (a lone
    ``\r`` would otherwise shift every later line, or index past the end),
    and a file with a BOM or a PEP 263 cookie naming another encoding is
    decoded here (ast ignores the cookie of a ``str``).
    """
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    if encoding == "utf-8" and not data.startswith(codecs.BOM_UTF8):
        return data
    return data.decode(encoding)


def source_lines(data: bytes) -> list[str]:
    """The file's lines as ast numbers them (line ``n`` is ``lines[n - 1]``),
    decoded as Python decodes the file, without line ends or a BOM: the text to
    show as evidence. Undecodable bytes become U+FFFD rather than an error."""
    try:
        parsed = _as_parsed(data)
    except (SyntaxError, LookupError, ValueError):
        parsed = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    text = parsed if isinstance(parsed, str) else parsed.decode("utf-8", "replace")
    return text.split("\n")


def extract_facts(data: bytes, rel: str, module: str, is_package: bool) -> FileFacts:
    """Parse ``data`` and return its facts; raises SyntaxError/ValueError/RecursionError."""
    parsed = _as_parsed(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = ast.parse(parsed, filename=rel, type_comments=False)
    source = _Source(parsed.encode("utf-8") if isinstance(parsed, str) else parsed)
    extractor = _Extractor(source, rel, module, is_package)
    extractor.block(tree.body, "", ())
    return extractor.facts()


def index_source(data: bytes, rel: str, module: str, is_package: bool) -> FileOutcome:
    """Facts for one file, or why there are none: one bad file never stops a scan."""
    try:
        facts = extract_facts(data, rel, module, is_package)
    except SyntaxError as exc:
        return FileOutcome(rel, "failed", reason=f"syntax error: {exc.msg}", line=exc.lineno or 0)
    except (ValueError, UnicodeDecodeError) as exc:  # null bytes, bad encodings
        return FileOutcome(rel, "failed", reason=f"unreadable source: {exc}")
    except (RecursionError, MemoryError):
        return FileOutcome(rel, "failed", reason="too deeply nested to parse")
    except LookupError as exc:  # a coding cookie naming no codec
        return FileOutcome(rel, "failed", reason=f"unreadable source: {exc}")
    except Exception as exc:  # noqa: BLE001 - a guardscan bug on odd input costs one file
        return FileOutcome(rel, "failed",
                           reason=f"could not index ({type(exc).__name__}: {exc})")
    return FileOutcome(rel, "analysed", facts=facts)
