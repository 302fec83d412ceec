"""names (shared by every stage): what a name in a module of the tree means,
by qualified name, through imports, aliases, star imports and re-exports.

The one resolver over index facts. A name is looked up in its own module, in
the scope where it is used (function scopes first, innermost first; class
bodies do not enclose their methods), then the module's top level, then the
modules it star-imports. An imported name is followed to the module that
defines it (``from a import b`` where ``a/__init__.py`` re-exports ``b`` from
``a.c`` ends at ``a.c``). Module-level aliases whose only value is a dotted
name (``A = Annotated``, ``Alias = other.Name``) are followed too.

The answer is a :class:`Binding`: an assignment, an in-tree class or
function, a class attribute, a module, a parameter, or something outside the
tree (named by its dotted name). Where the tree gives no answer the resolver
returns None rather than guess by spelling.

    names = Names(index)
    names.lookup("sglang.srt.server_args", "ServerArgs")       # module + name (+ scope)
    names.attribute(binding, "attention_backend")              # attribute of a binding
    names.resolve(module, ast_node, scope)                     # a Name / dotted Attribute
    names.qualname(module, ast_node, scope)                    # "typing.Annotated", ...
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from guardscan.index import Index
from guardscan.index.extract import dotted
from guardscan.index.facts import AssignFact, ClassFact, FileFacts, FunctionFact, ImportFact
from guardscan.syntax import parse_expr

__all__ = ["Binding", "BindingKind", "ModuleScopes", "Names", "Target", "identifier_targets",
           "split_targets"]

#: What a name is bound to (see :class:`Binding`).
BindingKind: TypeAlias = Literal[
    "assign", "class", "classattr", "function", "module", "param", "external"]

#: Chains of imports and aliases longer than this are not followed (a cycle
#: in the tree, or a tree too odd to resolve): the name stays unresolved.
MAX_DEPTH = 12

_Entry: TypeAlias = AssignFact | ClassFact | FunctionFact | ImportFact

#: Reference resolution (:meth:`Names.resolve_path`, :meth:`Names.resolve_reference`)
#: gives up past this many hops (imports, aliases, star imports, bases): the
#: answer is ``unresolved`` with the reason.
MAX_PATH_DEPTH = 24

_DOTTED = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*$")
_BUILTINS = frozenset(dir(builtins))


def identifier_targets(targets: Iterable[str]) -> list[str]:
    """The plain names among an assignment's targets (not ``a.b`` / ``a[i]``)."""
    return [t for t in targets if t.isidentifier()]


def split_targets(target_text: str) -> list[str]:
    """``"major, minor"`` / ``"(a, b)"`` -> names; other targets keep their text."""
    text = target_text.strip()
    if text.startswith(("(", "[")) and text.endswith((")", "]")):
        text = text[1:-1]
    return [part.strip() for part in text.split(",") if part.strip()]


@dataclass(frozen=True, slots=True)
class Target:
    """What a dotted reference ends at, settled (see :meth:`Names.resolve_reference`).

    ``kind``: function | class | module | constant (a module-level value) |
    external (outside the package) | builtin | dynamic (a runtime value) |
    unresolved (should be in the package, but is not found; ``reason`` says
    why). ``name`` is the defining dotted name, or the reference's text for
    dynamic and unresolved answers.
    """

    kind: str
    name: str
    reason: str = field(default="", compare=False)

    @property
    def in_tree(self) -> bool:
        return self.kind in ("function", "class", "module", "constant")


@dataclass(slots=True)
class ModuleScopes:
    """One module's names by scope ("" is the module, else a def or class qualname)."""

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
    scope_assigns: dict[str, list[AssignFact]] = field(default_factory=dict)

    @classmethod
    def build(cls, facts: FileFacts) -> ModuleScopes:
        table = cls(facts.module, facts.rel, facts)
        table.add_names(facts)
        return table

    def add_names(self, facts: FileFacts) -> None:
        for fn in facts.functions:
            self.functions[fn.qualname] = fn
            self.defs.setdefault(fn.scope, {})[fn.name] = fn.qualname
            self.local_names.setdefault(fn.qualname, set()).update(fn.params)
        for klass in facts.classes:
            self.classes[klass.qualname] = klass
            name = klass.qualname.rpartition(".")[2]
            self.defs.setdefault(klass.scope, {})[name] = klass.qualname
        for imp in facts.imports:
            if imp.local == "*":
                if imp.scope == "":
                    self.star_imports.append(imp.module)
                continue
            self.imports.setdefault(imp.scope, {}).setdefault(imp.local, []).append(imp)
        for assign in facts.assigns:
            self.scope_assigns.setdefault(assign.scope, []).append(assign)
            for target in assign.targets:
                for name in split_targets(target):
                    if name.isidentifier():
                        self.local_names.setdefault(assign.scope, set()).add(name)
                        self.assigns.setdefault(assign.scope, {}).setdefault(name, []).append(
                            assign)

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


@dataclass(frozen=True, slots=True)
class Binding:
    """What a name means.

    ``kind`` says which fields matter:

    assign     ``module``, ``name`` and ``scope`` ("" at module level)
    class      ``module`` and ``name`` (the class qualname)
    function   ``module`` and ``name`` (the function qualname)
    classattr  ``module``, ``name`` (the attribute) and ``scope`` (the class qualname)
    param      ``module``, ``name`` and ``scope`` (the function qualname)
    module     ``name`` (the module's dotted name)
    external   ``name`` (a dotted name outside the tree, or a builtin)
    """

    kind: BindingKind
    module: str = ""
    name: str = ""
    scope: str = ""

    @property
    def qualname(self) -> str | None:
        """The dotted name of what is bound, where it has one: modules,
        external names, in-tree classes and functions, module-level
        assignments (``sglang.srt.server_args.ATTENTION_BACKEND_CHOICES``)."""
        if self.kind in ("module", "external"):
            return self.name
        if self.kind in ("class", "function"):
            return f"{self.module}.{self.name}"
        if self.kind == "assign" and not self.scope:
            return f"{self.module}.{self.name}"
        return None


class Names:
    """Resolve names by qualified name over one index (answers are memoised
    per module; the index's facts do not change under it)."""

    def __init__(self, index: Index,
                 build_scopes: Callable[[FileFacts], ModuleScopes] | None = None,
                 unrecorded_locals: Callable[[ModuleScopes, str], frozenset[str]] | None = None,
                 ) -> None:
        """``build_scopes`` makes a module's scope tables (a stage may keep
        more per module than names need); ``unrecorded_locals`` names what a
        function binds in ways the index does not record (``for`` targets,
        ``with ... as``, ...), so references to them are dynamic, not
        unresolved."""
        self.index = index
        self.package = index.tree.package
        self._build_scopes = build_scopes or ModuleScopes.build
        self._unrecorded_locals = unrecorded_locals or (lambda table, scope: frozenset())
        self._scopes: dict[str, ModuleScopes | None] = {}
        self._path_memo: dict[str, Target] = {}
        self._reference_memo: dict[tuple[str, str, str], Target] = {}
        self._tables: dict[str, dict[str, list[_Entry]]] = {}
        self._class_scopes: dict[str, frozenset[str]] = {}
        self._local_tables: dict[str, tuple[set[tuple[str, str]],
                                            dict[tuple[str, str], ImportFact],
                                            dict[str, tuple[str, ...]]]] = {}

    def facts(self, module: str) -> FileFacts | None:
        """The facts of an in-tree module, None when it is not in the tree
        (or could not be read)."""
        return self.index.module(module)

    def class_scopes(self, facts: FileFacts) -> frozenset[str]:
        """The qualnames of every class of a file (class bodies as scopes)."""
        scopes = self._class_scopes.get(facts.module)
        if scopes is None:
            scopes = frozenset(c.qualname for c in facts.classes)
            self._class_scopes[facts.module] = scopes
        return scopes

    def function_scopes(self, facts: FileFacts, scope: str) -> list[str]:
        """``scope`` and the function scopes around it, innermost first (class
        bodies do not enclose their methods)."""
        out = []
        classes = self.class_scopes(facts)
        parts = scope.split(".") if scope else []
        while parts:
            candidate = ".".join(parts)
            if candidate not in classes:
                out.append(candidate)
            parts.pop()
        return out

    def lookup(self, module: str, name: str, scope: str = "",
               depth: int = 0) -> Binding | None:
        """What ``name`` means where it is used: in ``scope`` of ``module``
        (function scopes, then the module, then its star imports)."""
        facts = self.facts(module)
        if facts is None or depth > MAX_DEPTH:
            return None
        if scope:
            assigned, imported, params = self._locals(facts)
            for local in self.function_scopes(facts, scope):
                if (local, name) in assigned:
                    return Binding("assign", module, name, local)
                imp = imported.get((local, name))
                if imp is not None:
                    return self._follow(imp.module, imp.name, depth)
                if name in params.get(local, ()):
                    return Binding("param", module, name, local)
        entries = self._table(module).get(name, [])
        if any(isinstance(e, AssignFact) for e in entries):
            return Binding("assign", module, name, "")
        for entry in entries:
            if isinstance(entry, ClassFact):
                return Binding("class", module, entry.qualname)
        for entry in entries:
            if isinstance(entry, FunctionFact):
                return Binding("function", module, entry.qualname)
        if entries:  # only imports are left: the last one binds the name
            last = entries[-1]
            assert isinstance(last, ImportFact)
            return self._follow(last.module, last.name, depth)
        for imp in facts.imports:
            if imp.local == "*" and not imp.scope and imp.module != module:
                found = self.lookup(imp.module, name, "", depth + 1)
                if found is not None:
                    return found
        return None

    def attribute(self, base: Binding, attr: str) -> Binding | None:
        """``base.attr`` for a module, external or class binding (None for
        the others: their attributes are not modelled)."""
        if base.kind == "module":
            full = f"{base.name}.{attr}"
            if self.index.has_module(full):
                return Binding("module", name=full)
            if self.index.has_module(base.name):
                return self.lookup(base.name, attr)
            return Binding("external", name=full)
        if base.kind == "external":
            return Binding("external", name=f"{base.name}.{attr}")
        if base.kind == "class":
            return Binding("classattr", base.module, attr, base.name)
        return None

    def resolve(self, module: str, node: ast.AST, scope: str = "",
                depth: int = 0) -> Binding | None:
        """The binding of a Name or dotted Attribute expression; a head name
        the tree does not define is taken as external (a builtin)."""
        name = dotted(node)
        if name is None or depth > MAX_DEPTH:
            return None
        head, *rest = name.split(".")
        binding = self.lookup(module, head, scope)
        if binding is None:
            binding = Binding("external", name=head)
        for attr in rest:
            binding = self._through_alias(binding, depth)
            next_binding = self.attribute(binding, attr)
            if next_binding is None:
                return None
            binding = next_binding
        return self._through_alias(binding, depth)

    def qualname(self, module: str, node: ast.AST, scope: str = "") -> str | None:
        """The qualified name of a Name or dotted Attribute expression (see
        :attr:`Binding.qualname`)."""
        binding = self.resolve(module, node, scope)
        return binding.qualname if binding is not None else None

    def class_fact(self, binding: Binding) -> tuple[FileFacts, ClassFact] | None:
        """The in-tree class a class binding names, with its file's facts."""
        if binding.kind != "class":
            return None
        facts = self.facts(binding.module)
        if facts is None:
            return None
        for cls in facts.classes:
            if cls.qualname == binding.name:
                return facts, cls
        return None

    def _table(self, module: str) -> dict[str, list[_Entry]]:
        """Module-level bindings by name, in source order of each kind."""
        table = self._tables.get(module)
        if table is not None:
            return table
        table = {}
        facts = self.facts(module)
        if facts is not None:
            for assign in facts.assigns:
                if not assign.scope:
                    for name in identifier_targets(assign.targets):
                        table.setdefault(name, []).append(assign)
            for cls in facts.classes:
                if not cls.scope:
                    table.setdefault(cls.qualname, []).append(cls)
            for func in facts.functions:
                if not func.scope:
                    table.setdefault(func.name, []).append(func)
            for imp in facts.imports:
                if not imp.scope:
                    table.setdefault(imp.local, []).append(imp)
        self._tables[module] = table
        return table

    def _locals(self, facts: FileFacts) -> tuple[
            set[tuple[str, str]], dict[tuple[str, str], ImportFact], dict[str, tuple[str, ...]]]:
        """Names bound inside functions: assigned, imported, parameters."""
        found = self._local_tables.get(facts.module)
        if found is None:
            assigned = {(a.scope, n) for a in facts.assigns if a.scope
                        for n in identifier_targets(a.targets)}
            imported = {(i.scope, i.local): i for i in facts.imports if i.scope}
            params = {f.qualname: f.params for f in facts.functions}
            found = (assigned, imported, params)
            self._local_tables[facts.module] = found
        return found

    def _follow(self, module: str, name: str | None, depth: int) -> Binding:
        """Where ``from module import name`` (or ``import module``) leads."""
        if name is None:
            return Binding("module", name=module)
        full = f"{module}.{name}"
        if self.index.has_module(full):
            return Binding("module", name=full)
        if self.index.has_module(module):
            found = self.lookup(module, name, "", depth + 1)
            if found is not None:
                return found
        return Binding("external", name=full)

    def _through_alias(self, binding: Binding, depth: int) -> Binding:
        """``A = Annotated`` / ``Alias = other.Name``: follow a module-level
        assignment whose only value is a dotted name."""
        if binding.kind != "assign" or binding.scope:
            return binding
        facts = self.facts(binding.module)
        if facts is None:
            return binding
        assigns = [a for a in facts.assigns
                   if not a.scope and binding.name in identifier_targets(a.targets)]
        if len(assigns) != 1:
            return binding
        value = parse_expr(assigns[0].value)
        if value is None or dotted(value) is None:
            return binding
        target = self.resolve(binding.module, value, "", depth + 1)
        return target if target is not None else binding

    # -- references: dotted paths and callee texts, settled to a Target --------------
    def scopes(self, module: str) -> ModuleScopes | None:
        """The scope tables of an in-tree module (built on first use)."""
        if module not in self._scopes:
            facts = self.facts(module)
            self._scopes[module] = self._build_scopes(facts) if facts is not None else None
        return self._scopes[module]

    def loaded_modules(self) -> list[str]:
        """The in-tree modules whose scope tables have been built so far."""
        return [m for m, s in self._scopes.items() if s is not None]

    def split_qualified(self, qualified: str) -> tuple[str | None, str]:
        """``pkg.mod.Class.meth`` -> (``pkg.mod``, ``Class.meth``) by the longest module."""
        parts = qualified.split(".")
        for end in range(len(parts) - 1, 0, -1):
            module = ".".join(parts[:end])
            if self.index.has_module(module):
                return module, ".".join(parts[end:])
        return None, qualified

    def resolve_path(self, path: str, depth: int = 0) -> Target:
        """A public or module path (``flashinfer.fp4_quantize``) -> what defines it,
        through ``__init__`` re-exports, star imports and aliases."""
        if path in self._path_memo:
            return self._path_memo[path]
        if depth > MAX_PATH_DEPTH:
            return Target("unresolved", path, "too many hops")
        self._path_memo[path] = Target("unresolved", path, "import cycle")
        result = self._resolve_path(path, depth)
        self._path_memo[path] = result
        return result

    def _resolve_path(self, path: str, depth: int) -> Target:
        parts = path.split(".")
        for end in range(len(parts), 0, -1):
            module = ".".join(parts[:end])
            if self.index.has_module(module):
                rest = parts[end:]
                if not rest:
                    return Target("module", module)
                return self._lookup_path(module, rest, depth)
        if parts[0] != self.package:
            return Target("external", path)
        return Target("unresolved", path, "no such module in the package")

    def _lookup_path(self, module: str, rest: list[str], depth: int) -> Target:
        """``rest`` (a name and its attributes) at the top level of ``module``:
        definitions, then imports, then assignments, then star imports."""
        table = self.scopes(module)
        path = ".".join([module, *rest])
        if table is None:
            return Target("unresolved", path, f"{module} could not be read")
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
            star_table = self.scopes(star)
            if star_table is not None and not name.startswith("_"):
                found = self._lookup_path(star, rest, depth + 1)
                if found.kind != "unresolved":
                    return found
        return Target("unresolved", path, f"{name} is not bound in {module}")

    def _follow_import(self, imp: ImportFact, more: list[str], depth: int) -> Target:
        base = f"{imp.module}.{imp.name}" if imp.name else imp.module
        path = ".".join([base, *more])
        if not (base == self.package or base.startswith(self.package + ".")):
            return Target("external", path)
        return self.resolve_path(path, depth + 1)

    def _alias_target(self, table: ModuleScopes, scope: str, name: str, more: list[str],
                      depth: int) -> Target | None:
        """``name = other.name`` at module level is an alias; other values are constants."""
        assigns = table.assigns.get(scope, {}).get(name)
        if not assigns:
            return None
        if len(assigns) == 1 and _DOTTED.match(assigns[0].value.strip()):
            value = assigns[0].value.strip()
            if value != name:
                return self.resolve_reference(table.module, scope, ".".join([value, *more]),
                                              depth + 1)
        if more:
            return Target("dynamic", ".".join([name, *more]))
        return Target("constant", f"{table.module}.{name}")

    def member(self, table: ModuleScopes, qualname: str, more: list[str],
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
            if self.is_data_attribute(table, qualname, more[0]):
                return Target("dynamic", ".".join([full, *more]))
            return Target("unresolved", ".".join([full, *more]),
                          f"{qualname} has no method or attribute {more[0]}")
        if len(more) > 1:
            return Target("dynamic", ".".join([found.name, *more[1:]]))
        return found

    def is_data_attribute(self, table: ModuleScopes, class_qualname: str, name: str,
                          depth: int = 0) -> bool:
        """Whether ``name`` on the class is a value rather than a missing method: set
        in the class body or on ``self`` (here or in an in-tree base), a dunder, or
        maybe inherited from a base outside the package (``logging.Logger.setLevel``)."""
        if depth > MAX_PATH_DEPTH:
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
            found = self.resolve_reference(table.module, klass.scope, base)
            if found.kind != "class":
                return True
            base_module, base_qual = self.split_qualified(found.name)
            base_table = self.scopes(base_module) if base_module else None
            if base_table is None or self.is_data_attribute(base_table, base_qual, name,
                                                            depth + 1):
                return True
        return False

    def find_method(self, table: ModuleScopes, class_qualname: str, name: str,
                    depth: int = 0) -> Target | None:
        """A method of a class or of its in-tree bases (first found, in base order)."""
        if depth > MAX_PATH_DEPTH:
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
            base_target = self.resolve_reference(table.module, klass.scope, base, depth + 1)
            if base_target.kind != "class":
                continue
            base_module, base_qual = self.split_qualified(base_target.name)
            base_table = self.scopes(base_module) if base_module else None
            if base_table is not None:
                found = self.find_method(base_table, base_qual, name, depth + 1)
                if found is not None:
                    return found
        return None

    def resolve_reference(self, module: str, scope: str, text: str, depth: int = 0) -> Target:
        """What the dotted reference ``text`` (a callee, a base class, an alias's
        value) names, used in ``scope`` of ``module``."""
        key = (module, scope, text)
        found = self._reference_memo.get(key)
        if found is None:
            found = self._resolve_reference(module, scope, text.strip(), depth)
            if depth == 0:
                self._reference_memo[key] = found
        return found

    def _resolve_reference(self, module: str, scope: str, text: str, depth: int) -> Target:
        if not _DOTTED.match(text):
            return Target("dynamic", text)  # a call on a call result, a subscript, ...
        table = self.scopes(module)
        if table is None:
            return Target("unresolved", text, f"{module} could not be read")
        if depth > MAX_PATH_DEPTH:
            return Target("unresolved", text, "too many hops")
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
                return Target("unresolved", text, f"{klass} has no method {more[0]}")
        for current in table.scope_chain(scope):
            if root in table.defs.get(current, {}):
                return self.member(table, table.defs[current][root], more)
            imports = table.imports.get(current, {}).get(root)
            if imports:
                found = Target("unresolved", text, f"no import of {root} leads anywhere")
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
                    root in self._unrecorded_locals(table, current)):
                return Target("dynamic", text)
        if root in _BUILTINS:
            return Target("builtin", text)
        for star in table.star_imports:
            if self.scopes(star) is not None:
                found = self._lookup_path(star, parts, depth + 1)
                if found.kind != "unresolved":
                    return found
            elif not star.startswith(self.package):
                return Target("external", text)
        return Target("unresolved", text, f"{root} is not bound in {module}")
