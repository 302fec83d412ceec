"""Names in the kernel library, resolved by qualified name, never by spelling.

A module's symbol table is built from its Index facts the first time a name
in it is asked for: what each scope defines (functions, classes), imports
(module-level and function-local), binds locally (parameters, assignments),
and its module-level assignments. ``Resolver.resolve_call`` answers what a
call's callee text names in a given scope; ``Resolver.resolve_dotted`` follows
a public or module path (``flashinfer.fp4_quantize``) through re-exports to the
defining function.

Known limits: names bound by ``for`` / ``with ... as`` / comprehensions /
``*args`` are not in the Index facts, so calls through them come back
``unresolved`` (never guessed); attribute calls on values (``x.view()``,
``get_module().run()``) are ``dynamic``: the callee depends on a runtime
value.
"""

from __future__ import annotations

import bisect
import builtins
import re
from dataclasses import dataclass, field

from guardscan.index import Index
from guardscan.index.facts import (
    AssertFact,
    AssignFact,
    CallFact,
    ClassFact,
    FileFacts,
    FunctionFact,
    ImportFact,
    RaiseFact,
    ReturnFact,
)

__all__ = ["ModuleSymbols", "Resolver", "Target", "split_targets"]

_DOTTED = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*$")
#: Bindings the Index does not record (``for`` / ``with ... as`` / ``except ... as``
#: targets, comprehension and lambda variables, ``*args``, walrus), read from the
#: function's lines so calls through them count as dynamic, not unresolved.
_LOOSE_BINDINGS = (
    ("for", re.compile(r"\bfor\s+([\w\s,()\[\]*]+?)\s+in\b")),
    ("as", re.compile(r"\b(?:with|except)\b[^\n]*?\bas\s+\(?([\w\s,]+)\)?")),
    ("lambda", re.compile(r"\blambda\b([^:\n]*):")),
    ("*", re.compile(r"[(,]\s*\*\*?(\w+)")),
    (":=", re.compile(r"\b(\w+)\s*:=")),
    ("global", re.compile(r"\bglobal\s+([\w\s,]+)")),
    ("nonlocal", re.compile(r"\bnonlocal\s+([\w\s,]+)")),
)
_WORD = re.compile(r"[A-Za-z_]\w*")
_BUILTINS = frozenset(dir(builtins))
_MAX_DEPTH = 24


@dataclass(frozen=True, slots=True)
class Target:
    """What a name resolves to.

    ``kind``: function | class | module | constant (a module-level value) |
    external (outside the package) | builtin | dynamic (a runtime value) |
    unresolved (should be in the package, but is not found).
    """

    kind: str
    name: str

    @property
    def in_tree(self) -> bool:
        return self.kind in ("function", "class", "module", "constant")


def split_targets(target_text: str) -> list[str]:
    """``"major, minor"`` / ``"(a, b)"`` -> names; other targets keep their text."""
    text = target_text.strip()
    if text.startswith(("(", "[")) and text.endswith((")", "]")):
        text = text[1:-1]
    return [part.strip() for part in text.split(",") if part.strip()]


@dataclass(slots=True)
class ModuleSymbols:
    module: str
    rel: str
    facts: FileFacts
    functions: dict[str, FunctionFact] = field(default_factory=dict)
    classes: dict[str, ClassFact] = field(default_factory=dict)
    defs: dict[str, dict[str, str]] = field(default_factory=dict)  # scope -> name -> qualname
    imports: dict[str, dict[str, list[ImportFact]]] = field(default_factory=dict)
    local_names: dict[str, set[str]] = field(default_factory=dict)  # scope -> bound names
    assigns: dict[str, dict[str, list[AssignFact]]] = field(default_factory=dict)
    star_imports: list[str] = field(default_factory=list)
    calls: dict[str, list[CallFact]] = field(default_factory=dict)  # by scope
    raises: dict[str, list[RaiseFact]] = field(default_factory=dict)
    asserts: dict[str, list[AssertFact]] = field(default_factory=dict)
    returns: dict[str, list[ReturnFact]] = field(default_factory=dict)
    scope_assigns: dict[str, list[AssignFact]] = field(default_factory=dict)
    conds: dict[str, list[str]] = field(default_factory=dict)  # cond texts by scope

    @classmethod
    def build(cls, facts: FileFacts) -> ModuleSymbols:
        table = cls(facts.module, facts.rel, facts)
        for fn in facts.functions:
            table.functions[fn.qualname] = fn
            table.defs.setdefault(fn.scope, {})[fn.name] = fn.qualname
            table.local_names.setdefault(fn.qualname, set()).update(fn.params)
        for klass in facts.classes:
            table.classes[klass.qualname] = klass
            name = klass.qualname.rpartition(".")[2]
            table.defs.setdefault(klass.scope, {})[name] = klass.qualname
        for imp in facts.imports:
            if imp.local == "*":
                if imp.scope == "":
                    table.star_imports.append(imp.module)
                continue
            table.imports.setdefault(imp.scope, {}).setdefault(imp.local, []).append(imp)
        for call in facts.calls:
            table.calls.setdefault(call.scope, []).append(call)
        for raise_ in facts.raises:
            table.raises.setdefault(raise_.scope, []).append(raise_)
        for assert_ in facts.asserts:
            table.asserts.setdefault(assert_.scope, []).append(assert_)
        for return_ in facts.returns:
            table.returns.setdefault(return_.scope, []).append(return_)
        for cond, scope in zip(facts.conds, facts.cond_scope):
            table.conds.setdefault(scope, []).append(cond.text)
        for assign in facts.assigns:
            table.scope_assigns.setdefault(assign.scope, []).append(assign)
            for target in assign.targets:
                for name in split_targets(target):
                    if name.isidentifier():
                        table.local_names.setdefault(assign.scope, set()).add(name)
                        table.assigns.setdefault(assign.scope, {}).setdefault(name, []).append(
                            assign)
        return table

    def enclosing_class(self, scope: str) -> str:
        """The class whose method (or a function nested in one) ``scope`` is."""
        parts = scope.split(".")
        for end in range(len(parts) - 1, 0, -1):
            candidate = ".".join(parts[:end])
            if candidate in self.classes:
                return candidate
        return ""

    def scope_chain(self, scope: str) -> list[str]:
        """Scopes whose names ``scope`` sees: itself, enclosing functions, the module
        (class bodies are not visible from their methods)."""
        chain = [scope]
        parts = scope.split(".") if scope else []
        for end in range(len(parts) - 1, 0, -1):
            candidate = ".".join(parts[:end])
            if candidate not in self.classes:
                chain.append(candidate)
        if scope:
            chain.append("")
        return chain

    def module_constant(self, name: str) -> AssignFact | None:
        found = self.assigns.get("", {}).get(name)
        return found[0] if found and len(found) == 1 else None


class Resolver:
    """Resolves names in one package's tree, parsing modules on demand."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self.package = index.tree.package
        self._symbols: dict[str, ModuleSymbols | None] = {}
        self._dotted_memo: dict[str, Target] = {}
        self._lines: dict[str, list[bytes]] = {}
        self._loose: dict[tuple[str, str], frozenset[str]] = {}
        self._loose_lines: dict[str, tuple[list[int], list[tuple[str, ...]]]] = {}
        self._call_memo: dict[tuple[str, str, str], Target] = {}
        #: per-tree memo for recognisers (keyed by a tuple starting with their name)
        self.cache: dict[tuple[str, ...], object] = {}

    def line_text(self, rel: str, line: int) -> str:
        """Line ``line`` (1-based) of ``rel``, stripped; files are split once."""
        if rel not in self._lines:
            data = self.index.data(rel)
            self._lines[rel] = data.split(b"\n") if data is not None else []
        lines = self._lines[rel]
        if not 0 < line <= len(lines):
            return ""
        return lines[line - 1].decode("utf-8", "replace").strip()

    # -- modules ---------------------------------------------------------------------
    def symbols(self, module: str) -> ModuleSymbols | None:
        if module not in self._symbols:
            facts = self.index.module(module)
            self._symbols[module] = ModuleSymbols.build(facts) if facts is not None else None
        return self._symbols[module]

    def loaded_modules(self) -> list[str]:
        return [m for m, s in self._symbols.items() if s is not None]

    def function_fact(self, function_id: str) -> tuple[ModuleSymbols, FunctionFact] | None:
        """The symbols and FunctionFact behind a qualified function name."""
        module, qualname = self.split_id(function_id)
        if module is None:
            return None
        table = self.symbols(module)
        if table is None or qualname not in table.functions:
            return None
        return table, table.functions[qualname]

    def split_id(self, qualified: str) -> tuple[str | None, str]:
        """``pkg.mod.Class.meth`` -> (``pkg.mod``, ``Class.meth``) by the longest module."""
        parts = qualified.split(".")
        for end in range(len(parts) - 1, 0, -1):
            module = ".".join(parts[:end])
            if self.index.has_module(module):
                return module, ".".join(parts[end:])
        return None, qualified

    def loose_names(self, table: ModuleSymbols, scope: str) -> frozenset[str]:
        """Names a function binds in ways the Index does not record (see _LOOSE_BINDINGS).

        The file is scanned once; a function gets the names bound on its lines
        (a nested function's names count for the outer one too: they only ever
        turn an unresolved callee into a dynamic one)."""
        key = (table.module, scope)
        if key not in self._loose:
            fn = table.functions.get(scope)
            names: set[str] = set()
            if fn is not None:
                lines, bound = self._loose_by_line(table.rel)
                for index in range(bisect.bisect_left(lines, fn.line),
                                   bisect.bisect_right(lines, fn.end_line)):
                    names.update(bound[index])
            self._loose[key] = frozenset(names)
        return self._loose[key]

    def _loose_by_line(self, rel: str) -> tuple[list[int], list[tuple[str, ...]]]:
        """(sorted lines, names bound on each), from one pass of each pattern."""
        if rel not in self._loose_lines:
            data = self.index.data(rel) or b""
            text = data.decode("utf-8", "replace")
            starts = [0] + [m.end() for m in re.finditer("\n", text)]
            by_line: dict[int, list[str]] = {}
            for needle, pattern in _LOOSE_BINDINGS:
                if needle not in text:  # most files have no walrus, global, ...
                    continue
                for match in pattern.finditer(text):
                    line = bisect.bisect_right(starts, match.start())
                    by_line.setdefault(line, []).extend(_WORD.findall(match.group(1)))
            ordered = sorted(by_line)
            self._loose_lines[rel] = (ordered, [tuple(by_line[n]) for n in ordered])
        return self._loose_lines[rel]

    # -- resolution ----------------------------------------------------------------------
    def resolve_dotted(self, dotted: str, depth: int = 0) -> Target:
        """A public or module path -> what defines it (follows re-exports)."""
        if dotted in self._dotted_memo:
            return self._dotted_memo[dotted]
        if depth > _MAX_DEPTH:
            return Target("unresolved", dotted)
        self._dotted_memo[dotted] = Target("unresolved", dotted)  # cycle guard
        result = self._resolve_dotted(dotted, depth)
        self._dotted_memo[dotted] = result
        return result

    def _resolve_dotted(self, dotted: str, depth: int) -> Target:
        parts = dotted.split(".")
        for end in range(len(parts), 0, -1):
            module = ".".join(parts[:end])
            if self.index.has_module(module):
                rest = parts[end:]
                if not rest:
                    return Target("module", module)
                return self._lookup_in_module(module, rest, depth)
        if parts[0] != self.package:
            return Target("external", dotted)
        return Target("unresolved", dotted)

    def _lookup_in_module(self, module: str, rest: list[str], depth: int) -> Target:
        table = self.symbols(module)
        dotted = ".".join([module, *rest])
        if table is None:
            return Target("unresolved", dotted)
        name, more = rest[0], rest[1:]
        if name in table.defs.get("", {}):
            return self.member(table, table.defs[""][name], more)
        for imp in table.imports.get("", {}).get(name, []):
            found = self._follow_import(imp, more, depth)
            if found.kind != "unresolved":
                return found
        alias = self._alias_target(table, "", name, more, depth)
        if alias is not None:
            return alias
        for star in table.star_imports:
            star_table = self.symbols(star)
            if star_table is not None and not name.startswith("_"):
                found = self._lookup_in_module(star, rest, depth + 1)
                if found.kind != "unresolved":
                    return found
        return Target("unresolved", dotted)

    def _follow_import(self, imp: ImportFact, more: list[str], depth: int) -> Target:
        base = f"{imp.module}.{imp.name}" if imp.name else imp.module
        dotted = ".".join([base, *more])
        if not (base == self.package or base.startswith(self.package + ".")):
            return Target("external", dotted)
        return self.resolve_dotted(dotted, depth + 1)

    def _alias_target(self, table: ModuleSymbols, scope: str, name: str, more: list[str],
                      depth: int) -> Target | None:
        """``name = other.name`` at module level is an alias; other values are constants."""
        assigns = table.assigns.get(scope, {}).get(name)
        if not assigns:
            return None
        if len(assigns) == 1 and _DOTTED.match(assigns[0].value.strip()):
            value = assigns[0].value.strip()
            if value != name:
                return self.resolve_call(table.module, scope, ".".join([value, *more]), depth + 1)
        if more:
            return Target("dynamic", ".".join([name, *more]))
        return Target("constant", f"{table.module}.{name}")

    def member(self, table: ModuleSymbols, qualname: str, more: list[str],
               depth: int = 0) -> Target:
        """``qualname`` (a def or class in ``table``) followed by attribute ``more``."""
        full = f"{table.module}.{qualname}"
        if not more:
            kind = "class" if qualname in table.classes else "function"
            return Target(kind, full)
        if qualname not in table.classes:
            return Target("dynamic", ".".join([full, *more]))  # an attribute of a function
        found = self.find_method(table, qualname, more[0], depth)
        if found is None:
            kind = "dynamic" if self.is_data_attribute(table, qualname, more[0]) else "unresolved"
            return Target(kind, ".".join([full, *more]))
        if len(more) > 1:
            return Target("dynamic", ".".join([found.name, *more[1:]]))
        return found

    def is_data_attribute(self, table: ModuleSymbols, class_qualname: str, name: str,
                          depth: int = 0) -> bool:
        """Whether ``name`` on the class is a value rather than a missing method: set
        in the class body or on ``self`` (here or in an in-tree base), a dunder, or
        maybe inherited from a base outside the package (``logging.Logger.setLevel``)."""
        if depth > _MAX_DEPTH:
            return True
        if name.startswith("__") or name in table.assigns.get(class_qualname, {}):
            return True
        target = f"self.{name}"
        for method in table.functions.values():
            if method.scope == class_qualname and any(
                    target in a.targets for a in table.scope_assigns.get(method.qualname, [])):
                return True
        klass = table.classes.get(class_qualname)
        if klass is None:
            return False
        for base in klass.bases:
            found = self.resolve_call(table.module, klass.scope, base)
            if found.kind != "class":
                return True
            base_module, base_qual = self.split_id(found.name)
            base_table = self.symbols(base_module) if base_module else None
            if base_table is None or self.is_data_attribute(base_table, base_qual, name,
                                                            depth + 1):
                return True
        return False

    def find_method(self, table: ModuleSymbols, class_qualname: str, name: str,
                    depth: int = 0) -> Target | None:
        """A method of a class or of its in-tree bases (first found, in base order)."""
        if depth > _MAX_DEPTH:
            return None
        candidate = f"{class_qualname}.{name}"
        if candidate in table.functions:
            return Target("function", f"{table.module}.{candidate}")
        if candidate in table.classes:
            return Target("class", f"{table.module}.{candidate}")
        klass = table.classes.get(class_qualname)
        if klass is None:
            return None
        for base in klass.bases:
            base_target = self.resolve_call(table.module, klass.scope, base, depth + 1)
            if base_target.kind != "class":
                continue
            base_module, base_qual = self.split_id(base_target.name)
            base_table = self.symbols(base_module) if base_module else None
            if base_table is not None:
                found = self.find_method(base_table, base_qual, name, depth + 1)
                if found is not None:
                    return found
        return None

    def resolve_call(self, module: str, scope: str, text: str, depth: int = 0) -> Target:
        """What the callee text ``text`` names, called from ``scope`` of ``module``."""
        key = (module, scope, text)
        found = self._call_memo.get(key)
        if found is None:
            found = self._resolve_call(module, scope, text.strip(), depth)
            if depth == 0:
                self._call_memo[key] = found
        return found

    def _resolve_call(self, module: str, scope: str, text: str, depth: int) -> Target:
        if not _DOTTED.match(text):
            return Target("dynamic", text)  # a call on a call result, a subscript, ...
        table = self.symbols(module)
        if table is None or depth > _MAX_DEPTH:
            return Target("unresolved", text)
        parts = text.split(".")
        root, more = parts[0], parts[1:]
        if root in ("self", "cls") and more:
            klass = table.enclosing_class(scope) if scope not in table.classes else scope
            if klass:
                if len(more) > 1:
                    return Target("dynamic", text)
                found = self.find_method(table, klass, more[0])
                if found is not None:
                    return found
                if self.is_data_attribute(table, klass, more[0]):
                    return Target("dynamic", text)
                return Target("unresolved", text)
        for current in table.scope_chain(scope):
            if root in table.defs.get(current, {}):
                return self.member(table, table.defs[current][root], more)
            imports = table.imports.get(current, {}).get(root)
            if imports:
                found = Target("unresolved", text)
                for imp in imports:
                    found = self._follow_import(imp, more, depth)
                    if found.kind != "unresolved":
                        break
                return found
            if current == "":
                alias = self._alias_target(table, "", root, more, depth)
                if alias is not None:
                    return alias
            elif root in table.local_names.get(current, set()) or (
                    root in self.loose_names(table, current)):
                return Target("dynamic", text)
        if root in _BUILTINS:
            return Target("builtin", text)
        for star in table.star_imports:
            if self.symbols(star) is not None:
                found = self._lookup_in_module(star, parts, depth + 1)
                if found.kind != "unresolved":
                    return found
            elif not star.startswith(self.package):
                return Target("external", text)
        return Target("unresolved", text)
