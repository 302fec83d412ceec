"""names (shared by every stage): what a name in a module of the tree means,
by qualified name, through imports, aliases, star imports, re-exports and
lazy ``__getattr__`` tables.

The one resolver over index facts (:class:`Names`, in :mod:`.resolver`). A
name is looked up in its own module, in the scope where it is used (function
scopes first, innermost first; class bodies do not enclose their methods),
then the module's top level, then the modules it star-imports, then the
module's lazy ``__getattr__`` table. An imported name is followed to the
module that defines it (``from a import b`` where ``a/__init__.py``
re-exports ``b`` from ``a.c`` ends at ``a.c``). Module-level aliases whose
only value is a dotted name (``A = Annotated``, ``Alias = other.Name``) are
followed too. Where the tree gives no answer the resolver says so (None, or
an ``unresolved`` Target with the reason) rather than guess by spelling.
Readers that weigh every binding of a name (the guard interpreter) get them
all, in a stated order, with their reads recorded (:class:`BindingTables`,
in :mod:`.bindings`).

    names = Names(index)
    names.lookup("sglang.srt.server_args", "ServerArgs")       # -> Binding | None
    names.attribute(binding, "attention_backend")              # attribute of a binding
    names.resolve(module, ast_node, scope)                     # a Name / dotted Attribute
    names.qualname(module, ast_node, scope)                    # "typing.Annotated", ...
    names.resolve_path("flashinfer.fp4_quantize")              # -> Target (definition)
    names.resolve_reference(module, scope, "self.run")         # -> Target (a callee, a base)
    names.bindings("sglang.srt.utils", "is_sm100_supported")   # every binding, in order
    names.find_method(scopes, "Runner", "run")                 # through in-tree bases
"""

from guardscan.names.bindings import STAR_DEPTH, BindingTables, ModuleBinding
from guardscan.names.model import MAX_PATH_DEPTH, Binding, BindingKind, Target, TargetKind
from guardscan.names.resolver import MAX_DEPTH, Names
from guardscan.names.scopes import ModuleScopes, identifier_targets, split_targets

__all__ = ["MAX_DEPTH", "MAX_PATH_DEPTH", "STAR_DEPTH", "Binding", "BindingKind", "BindingTables",
           "ModuleBinding", "ModuleScopes", "Names", "Target", "TargetKind", "identifier_targets",
           "split_targets"]
