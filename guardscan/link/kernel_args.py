"""link (kernel arguments): which arguments a call into the kernel library passes, and whether each can be None.

What it recognises
    For a call into the kernel library that the linker ties to a choice (in
    a module named for it, on a path followed from its code, or carrying its
    ``backend=`` string), each argument it passes, by keyword (or position), with its state
    (``kernels.arguments``): ``None`` for the literal ``None``; ``given``
    (a value that is not ``None``) for another literal, for a call of an
    in-tree function whose return annotation is not optional (``->
    torch.Tensor``), or for ``self.x`` where every assignment of ``x`` in the
    class is one of those; ``passed`` (a value that may be ``None``) for the
    rest. A ``**extra`` dict built in the calling function is read too::

        extra_kwargs = {"backend": self.backend} if self.backend != "trtllm-gen" else {}
        if self.backend == "trtllm-gen":
            extra_kwargs["multi_ctas_kv_counter_buffer"] = self._buffer

    its tests decided with ``self.backend`` as the object the choice builds
    holds it: a constructor parameter with a string default that the
    function registered for the choice (``@register_attention_backend(
    "trtllm_mla")``) leaves out when it builds the class
    (``TRTLLMMLABackend(runner)``) holds that default.
Why it matters
    FlashInfer's branches test what the caller passes (``auto`` becomes
    ``xqa`` on major 12 unless ``sparse_mla_top_k > 0``; ``xqa`` raises when
    ``multi_ctas_kv_counter_buffer`` is given): the kernel answer for SGLang's
    call needs its arguments.
Known limits
    ``self`` in a method of the module's class is taken to be the object the
    choice's registered function builds, the one the server runs; another
    object of the class (a speculative draft backend another choice builds
    with its own ``backend=``) is not read, and a subclass in the same file
    leaves the attribute unread. ``*args``, a ``**`` name assigned more than once,
    changed by a call (``extra.update(...)``) or under a test this reader
    cannot decide, or any other ``**`` value give no arguments at all (the
    kernel answer is then the one without them). Tests in a ``**`` dict are
    read as one comparison of ``self.x`` (or a local) with literals; boolean
    combinations are not.
Example
    The MLA decode call of sglang 0.5.19 (``trtllm_mla_backend.py:1059``)
    passes no ``backend`` and a given ``multi_ctas_kv_counter_buffer``.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING

from guardscan.guards.values import ClassV, FuncV
from guardscan.index.facts import AssignFact, CallFact
from guardscan.index.observe import FactsView
from guardscan.link.context import LinkContext
from guardscan.predicate import Context, Tri

if TYPE_CHECKING:
    from guardscan.link.regions import RegisteredRegions
from guardscan.syntax import NOT_LITERAL, literal, parse_expr

__all__ = ["PASSED", "call_arguments"]

#: the state of an argument whose value may or may not be None
PASSED = "passed"
_GIVEN, _NONE = "given", "None"

_COMPARE: dict[type[ast.cmpop], Callable[[object, object], bool]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne,
    ast.In: lambda a, b: a in b,  # type: ignore[operator]
    ast.NotIn: lambda a, b: a not in b,  # type: ignore[operator]
}
#: return annotations that admit None
_OPTIONAL = ("Optional", "None", "Any", "object")


def call_arguments(ctx: LinkContext, facts: FactsView, call: CallFact,
                   registered: RegisteredRegions | None = None,
                   choice: tuple[str, str] | None = None,
                   ) -> tuple[tuple[str, str], ...] | None:
    """(keyword or position, state) of each argument ``call`` passes, or
    None when they cannot all be read. ``registered`` and ``choice`` (dest,
    value): the functions registered for the choice, which build the
    object whose ``self`` the call's method reads."""
    reader = _Reader(ctx, facts, call, registered, choice)
    out: list[tuple[str, str]] = []
    for position, text in enumerate(call.args):
        if text.startswith("*"):
            return None
        out.append((str(position), reader.state(text)))
    for name, text in call.kwargs:
        if name != "**":
            out.append((name, reader.state(text)))
            continue
        extra = reader.kwargs_dict(text)
        if extra is None:
            return None
        out.extend(extra)
    return tuple(out)


class _Reader:
    def __init__(self, ctx: LinkContext, facts: FactsView, call: CallFact,
                 registered: RegisteredRegions | None, choice: tuple[str, str] | None) -> None:
        self.registered = registered
        self.choice = choice
        self.ctx = ctx
        self.facts = facts
        self.call = call
        func = facts.function(call.scope)
        self.cls = func.cls if func is not None else ""

    # -- one argument -----------------------------------------------------------------
    def state(self, text: str, depth: int = 0, where: tuple[str, int] | None = None) -> str:
        """The state of the value ``text`` (read in ``where``: scope and
        line, the call's by default)."""
        scope, line = where or (self.call.scope, self.call.line)
        node = parse_expr(text)
        if node is None:
            return PASSED
        value = literal(node)
        if value is None:
            return _NONE
        if value is not NOT_LITERAL:
            return _GIVEN
        if isinstance(node, ast.Call) and self._never_none(ast.unparse(node.func), scope, line):
            return _GIVEN
        attr = _self_attr(node)
        if attr is not None and self.cls and depth == 0:
            assigns = self._attr_assigns(attr)
            if assigns and all(self.state(a.value, depth + 1, (a.scope, a.line)) == _GIVEN
                               for a in assigns):
                return _GIVEN
        return PASSED

    def _never_none(self, func_text: str, scope: str, line: int) -> bool:
        """A call of an in-tree function annotated to return something other than None."""
        callee = self.ctx.vocab.value(func_text, self.facts.rel, scope, line)
        if not isinstance(callee, FuncV):
            return False
        view = self.ctx.index.view(callee.rel)
        fn = view.function(callee.qualname) if view is not None else None
        return fn is not None and bool(fn.returns) and not any(
            word in fn.returns for word in _OPTIONAL)

    def _attr_assigns(self, attr: str) -> list[AssignFact]:
        """Every ``self.<attr> = ...`` in the class's methods."""
        prefix = self.cls + "."
        return [a for a in self.facts.assigns if a.scope.startswith(prefix)
                and any(t == f"self.{attr}" for t in a.targets)]

    # -- a ``**`` dict --------------------------------------------------------------------
    def kwargs_dict(self, text: str) -> list[tuple[str, str]] | None:
        node = parse_expr(text)
        if not isinstance(node, ast.Name):
            return None
        name, scope, line = node.id, self.call.scope, self.call.line
        here = [a for a in self.facts.assigns if a.scope == scope and a.line < line]
        whole = [a for a in here if a.targets == (name,)]
        if len(whole) != 1 or whole[0].path:
            return None
        if any(c.scope == scope and c.func.startswith(name + ".") for c in self.facts.calls):
            return None  # changed in place (``update``, ``pop``)
        built = self._dict_value(whole[0].value)
        if built is None:
            return None
        out = [(key, self.state(value)) for key, value in built]
        for assign in here:
            keyed = [t for t in assign.targets if t.startswith(name + "[")]
            if not keyed:
                continue
            key = literal(parse_expr(keyed[0][len(name) + 1:-1]))
            if not isinstance(key, str) or assign.line < whole[0].line:
                return None
            taken = self._path_holds(assign.path)
            if taken is None:
                return None
            if taken:
                out = [(k, s) for k, s in out if k != key] + [(key, self.state(assign.value))]
        return out

    def _dict_value(self, text: str) -> list[tuple[str, str]] | None:
        """(key, value text) of a dict literal, or of the branch of a
        conditional expression of dict literals its test takes."""
        node = parse_expr(text)
        if isinstance(node, ast.IfExp):
            taken = self._holds(node.test)
            if taken is None:
                return None
            return self._dict_value(ast.unparse(node.body if taken else node.orelse))
        if not isinstance(node, ast.Dict):
            return None
        out = []
        for key, value in zip(node.keys, node.values):
            key_value = literal(key) if key is not None else NOT_LITERAL
            if not isinstance(key_value, str):
                return None
            out.append((key_value, ast.unparse(value)))
        return out

    def _path_holds(self, path: tuple[int, ...]) -> bool | None:
        for signed in path:
            taken = self._holds(parse_expr(self.facts.cond(signed).text))
            if taken is None:
                return None
            if taken != (signed > 0):
                return False
        return True

    def _holds(self, test: ast.expr | None) -> bool | None:
        """A comparison of ``self.x`` with a literal, ``self.x`` as the
        class's own objects hold it (None: not decided)."""
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
            return None
        compare = _COMPARE.get(type(test.ops[0]))
        attr = _self_attr(test.left)
        other = literal(test.comparators[0])
        if compare is None or attr is None or other is NOT_LITERAL:
            return None
        value = self._own_default(attr)
        return None if value is NOT_LITERAL else bool(compare(value, other))

    def _own_default(self, attr: str) -> object:
        """``self.<attr>`` set once, in ``__init__``, from a parameter with a
        string default that every direct construction of the class leaves
        out: that default (NOT_LITERAL otherwise)."""
        facts, cls = self.facts, self.cls
        init = facts.function(f"{cls}.__init__")
        if init is None or len(self._attr_assigns(attr)) != 1:
            return NOT_LITERAL
        (assign,) = [a for a in facts.assigns if a.scope == init.qualname
                     and f"self.{attr}" in a.targets] or [None]
        param = assign.value.strip() if assign is not None and not assign.path else ""
        default = literal(parse_expr(dict(init.defaults).get(param, "") or "None"))
        if param not in init.params or not isinstance(default, str):
            return NOT_LITERAL
        short = cls.rpartition(".")[2]
        if any(short in c.bases or any(b.endswith("." + short) for b in c.bases)
               for c in facts.classes):
            return NOT_LITERAL  # a subclass here: ``self`` may be either
        return default if self._built_without(short, param, init.params) else NOT_LITERAL

    def _built_without(self, short: str, param: str, params: tuple[str, ...]) -> bool:
        """Every construction ``Short(...)`` of the class in a function
        registered for the choice (``@register_x("choice")``: the object
        the choice builds) passes nothing for ``param``, and there is one."""
        if self.registered is None or self.choice is None:
            return False
        index, own = self.ctx.index, ClassV(self.facts.rel, self.cls)
        positional = [p for p in params if p != "self"]
        position = positional.index(param)
        here = Context(options={self.choice[0]: self.choice[1]})
        found = 0
        for rel in index.grep([f"{short}("]):
            view = index.view(rel)
            if view is None:
                continue
            factories = {qualname for _, _, qualname, _, region, _ in self.registered.regions(rel)
                         if region.evaluate(here) is Tri.TRUE}
            for call in view.calls:
                if call.scope.split(".", 1)[0] not in factories \
                        or call.func.rpartition(".")[2] != short or self.ctx.vocab.value(
                            call.func, rel, call.scope, call.line) != own:
                    continue
                if any(t.startswith("*") for t in call.args) or any(
                        k in (param, "**") for k, _ in call.kwargs) or len(call.args) > position:
                    return False
                found += 1
        return found > 0


def _self_attr(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
            and node.value.id == "self":
        return node.attr
    return None
