"""guards (call sites): a function's parameter, as every call in the tree binds it.

In ``def fp4_gemm(..., quant_mode="w4a4")`` the branch ``if quant_mode ==
"w4a16"`` is taken only when some caller passes ``"w4a16"``. A mode
parameter (its default a string constant) of a module-level function whose
every use in the scanned tree is a call this reader understands is the
alternatives of its call sites: the
argument (or the default) of each call, where that call's branch tests hold
in its caller (other parameters stay unknown: reading every parameter's
callers costs far more than the few mode branches it decides)::

    out = fp4_gemm(x, w, ...)                  # "w4a4" (the default), where
                                               # self.quant_mode == "w4a4"
    out = fp4_gemm(x, w, ..., self.quant_mode) # self.quant_mode, where
                                               # self.quant_mode == "w4a16"

so ``quant_mode == "w4a16"`` holds where some call passes ``"w4a16"`` and
nowhere else. A value that could reach the function another way leaves the
parameter unknown, never guessed: a method, a use of the name that is not a
call (passed as a value, aliased on import, named in a string of a file that
holds the function: a string that is exactly its name counts,
a message that mentions it does not), a call through a name this reader cannot
resolve (``torch.ops.sglang.fp4_gemm``), or no call at all (a public entry
point that code outside the tree may call). A call that passes ``*args`` or
``**kwargs`` the parameter may come from gives an unknown alternative.

The parameter is read as a ``ParamV`` (unknown wherever it is read) and
bound only when compared with a constant (``guards.operators``): finding the
callers is a search of the whole tree, paid only where it can decide a
branch. The answer that searched keeps the search (``Answer.greps``), so a
later scan links afresh when a file it never read gains a use.

Callers outside the scanned tree are not seen: the tree is the application.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from guardscan.guards.stack import MODULE_END
from guardscan.guards.values import AltV, FuncV, ParamV, UnkV, Value
from guardscan.index.facts import CallFact, FunctionFact
from guardscan.index.observe import STARS, FactsView, Reads
from guardscan.predicate import TRUE, Predicate
from guardscan.syntax import parse_expr

if TYPE_CHECKING:
    from guardscan.guards.interpreter import Interpreter

__all__ = ["CallSites"]

#: a default that is a string constant: the parameters read from their call
#: sites are modes (``quant_mode="w4a4"``, ``backend="auto"``), whose
#: branches choose kernels; any other parameter stays unknown
_STRING = re.compile(r"""(?:'[^'\\]*'|"[^"\\]*")""")

#: most call sites read for one parameter (beyond: unknown)
MAX_SITES = 24
#: most files holding the function's name (beyond: unknown, not read)
MAX_FILES = 40


class CallSites:
    """Parameter -> the alternatives its call sites bind, memoised per
    (file, function, parameter) with what was read."""

    def __init__(self, interpreter: Interpreter) -> None:
        self.interpreter = interpreter
        self._memo: dict[tuple[str, str, str], tuple[
            Value | None, tuple[tuple[str, int], ...], Reads]] = {}

    def clear(self) -> None:
        self._memo.clear()

    @staticmethod
    def mode_param(facts: FactsView, scope: str, name: str) -> ParamV | None:
        """``name`` as a mode parameter of the module-level function ``scope``
        (its default a string constant), to be bound when compared; None
        when it is not one."""
        func = facts.function(scope)
        if func is None or func.cls or func.scope or func.positional < 0 \
                or not _STRING.fullmatch(dict(func.defaults).get(name, "")):
            return None
        return ParamV(f"parameter {name}", facts.rel, scope, name)

    def bound(self, param: ParamV) -> Value | None:
        """What the call sites bind ``param`` to (None: not every use of the
        function is understood)."""
        facts = self.interpreter.index.view(param.rel)
        return self.param_value(facts, param.scope, param.name) if facts is not None else None

    def param_value(self, facts: FactsView, scope: str, name: str) -> Value | None:
        """``name``, a mode parameter of the module-level function ``scope``
        of ``facts``, as its call sites bind it (None: not such a parameter,
        or not every use of the function is understood)."""
        stack = self.interpreter.stack
        key = (facts.rel, scope, name)
        hit = self._memo.get(key)
        if hit is not None:
            stack.replay(hit[1], hit[2])
            return hit[0]
        akey = ("call-sites", key)
        if akey in stack.active:
            stack.cut(akey)
            return UnkV(f"parameter {name} (its callers depend on it)")
        state = stack.enter(akey)
        try:
            value = self._param_value(facts, scope, name)
        finally:
            pure, reads = stack.leave(akey, state)
        if pure:
            self._memo[key] = (value, stack.trail_since(state), reads)
        return value

    def _param_value(self, facts: FactsView, scope: str, name: str) -> Value | None:
        if self.mode_param(facts, scope, name) is None:
            return None
        func = facts.function(scope)
        assert func is not None
        sites = self.sites(facts, func)
        if sites is None:
            return None
        interp = self.interpreter
        alternatives: list[tuple[Predicate, Value]] = []
        for view, call in sites:
            interp.stack.trail.append((view.rel, call.line))
            where = interp.names.path_pred(view, view.rel, call.scope, call.path) \
                if call.path else TRUE
            alternatives.append((where, self._argument(facts, func, name, view, call)))
        return AltV(tuple(alternatives))

    def callers(self, rel: str, scope: str, entered: bool = False,
                ) -> tuple[tuple[str, str, int, Predicate], ...] | None:
        """Every call of the module-level function ``scope`` of ``rel`` in the
        tree: the caller's file, scope and line, and its branch tests there
        (None: not such a function, no call at all, or a use that is not a
        call this reader understands). ``entered``: only the tests of the
        branches the call is in, not those of the branches passed by (an
        early ``return`` or an ``else``)."""
        facts = self.interpreter.index.view(rel)
        func = facts.function(scope) if facts is not None else None
        if facts is None or func is None or func.cls or func.scope:
            return None
        sites = self.sites(facts, func)
        if sites is None:
            return None
        names = self.interpreter.names
        paths = [tuple(t for t in call.path if t > 0) if entered else call.path
                 for _, call in sites]
        return tuple((view.rel, call.scope, call.line, names.path_pred(
            view, view.rel, call.scope, path) if path else TRUE)
            for (view, call), path in zip(sites, paths, strict=True))

    def sites(self, facts: FactsView, func: FunctionFact,
              ) -> list[tuple[FactsView, CallFact]] | None:
        """The calls of ``func`` (a module-level function of ``facts``) in the
        tree; None when there are none, too many, or a use of it is not a
        call this reader understands."""
        ours = FuncV(facts.rel, func.qualname)
        interp = self.interpreter
        index = interp.index
        files = index.grep([func.name])
        if len(files) > MAX_FILES:
            return None
        word, attribute = _uses(func.name)
        sites: list[tuple[FactsView, CallFact]] = []
        for rel in files:
            view = index.view(rel)
            if view is None:
                return None
            calls = view.calls_of(func.name)
            binds = rel == facts.rel or self._binds(view, func, ours)
            if binds is None:
                return None  # imported under another name
            uses = index.count(rel, word if binds else attribute)
            if binds:
                accounted = len(view.functions_named(func.name)) + len(
                    view.imports_of(func.name)) + len(calls)
            else:
                calls = [c for c in calls if "." in c.func]
                accounted = len(calls)
            if uses != accounted:
                return None  # a use that is not a call, or one in a string
            for call in calls:
                node = parse_expr(call.func)
                callee = interp.value_of(node, rel, call.scope, call.line, {}) \
                    if node is not None else None
                if callee == ours:
                    sites.append((view, call))
                elif not isinstance(callee, FuncV):
                    return None  # a call this reader cannot place
        if not sites or len(sites) > MAX_SITES:
            return None
        return sites

    def _binds(self, view: FactsView, func: FunctionFact, ours: FuncV) -> bool | None:
        """Whether the file's bare name ``func.name`` is the function (an import
        of it, or a star import that brings it); None when it is imported
        under another name."""
        names = self.interpreter.names
        for imp in view.imports_of(func.name):
            value = names.import_value(imp.module, imp.name, view.rel, imp.line)
            if value == ours:
                if imp.local != func.name:
                    return None
                return True
        view.note(*STARS)
        if any(imp.local == "*" and not imp.scope for imp in view.unobserved.imports):
            return names.lookup(view.rel, "", func.name, MODULE_END) == ours
        return False

    def _argument(self, facts: FactsView, func: FunctionFact, name: str, view: FactsView,
                  call: CallFact) -> Value:
        """What ``call`` binds ``name`` to."""
        interp = self.interpreter
        position = func.params.index(name)
        args = call.args
        starred = [i for i, a in enumerate(args) if a.startswith("*")]
        where = f"{func.name}(...) at {view.rel}:{call.line}"
        if starred and starred[0] <= position:
            return UnkV(f"{name} from *args of {where}")
        text: str | None = None
        if position < func.positional and position < len(args):
            text = args[position]
        else:
            text = dict(call.kwargs).get(name)
            if text is None and "**" in dict(call.kwargs):
                return UnkV(f"{name} from **kwargs of {where}")
        if text is not None:
            node = parse_expr(text)
            return interp.value_of(node, view.rel, call.scope, call.line, {}) \
                if node is not None else UnkV(f"{name} of {where}")
        default = dict(func.defaults).get(name)
        node = parse_expr(default) if default is not None else None
        if node is None:
            return UnkV(f"{name} not given at {where}")
        return interp.value_of(node, facts.rel, func.scope, func.line, {})


#: what the use counts skip: strings (a name inside a message is no use) and
#: comments; a string that is exactly the name counts (``getattr(m, "f")``)
_SKIPPED = (rb'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:[^"\\\n]|\\.)*"|'
            rb"'(?:[^'\\\n]|\\.)*'|#[^\n]*")


def _uses(name: str) -> tuple[re.Pattern[bytes], re.Pattern[bytes]]:
    """Patterns whose capturing matches are the uses of ``name`` in code: as a
    word (in a file where the bare name is the function), and as an attribute
    (``module.name``, ``torch.ops.sglang.name``: anywhere)."""
    quoted = re.escape(name.encode())
    exact = rb"""["'](""" + quoted + rb""")["']|"""
    return (re.compile(exact + _SKIPPED + rb"|\b(" + quoted + rb")\b"),
            re.compile(exact + _SKIPPED + rb"|\.\s*(" + quoted + rb")\b"))
