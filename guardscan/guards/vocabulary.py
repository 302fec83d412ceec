"""guards (vocabulary): what each guard really tests, resolved from the tree's own
definitions; the stage's public face.

A guard expression (``is_sm100_supported()``, ``get_platform().is_sm100``,
``major != 9``, ``get_device_sm() >= 100``...) is read by the interpreter
(``guards.interpreter``) over the index facts, with the registered guard
forms (``guards.forms``) saying what outside names and device quantities
mean. Nothing is keyed on a guard's spelling: a name means what its
definition says. Anything the interpreter cannot reduce stays ``Unknown``;
when such an expression looks like an architecture guard, an
``unresolved-guard`` diagnostic says where and why.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager

from guardscan.guards.interpreter import Interpreter
from guardscan.guards.lookup import MODULE_END
from guardscan.guards.option_tests import OptionModel
from guardscan.guards.questions import (
    Answer,
    QueryKey,
    Resolved,
    failed_answer,
    looks_like_arch_guard,
    only_unknown,
    readable,
)
from guardscan.guards.stack import EvaluationStack
from guardscan.guards.values import UnkV, Value
from guardscan.index import Index
from guardscan.messages import diagnostic as make_diagnostic
from guardscan.predicate import Predicate, Unknown, atoms, conj, neg
from guardscan.results import Diagnostic
from guardscan.syntax import clear_caches, parse_expr, short, unparse

__all__ = ["Vocabulary"]


class Vocabulary:
    """Resolve guard expressions of one tree to Predicates."""

    def __init__(self, index: Index, options: OptionModel | None = None,
                 branch_values: bool = True) -> None:
        self.index = index
        self.options = options or OptionModel()
        self.diagnostics: list[Diagnostic] = []
        self._stack = EvaluationStack(index.recorder)
        self._interpreter = Interpreter(index, self.options, self._stack)
        self._interpreter.names.branch_values = branch_values
        self._interpreter.names.call_site_params = branch_values
        self._reported: set[tuple[str, int, str]] = set()
        #: this scan's answers to outside questions; answers of an earlier scan
        #: still valid (``resume``)
        self.answers: dict[QueryKey, Answer] = {}
        self.stored: Mapping[QueryKey, Answer] = {}
        #: answers of an earlier scan that a change may have touched
        self.former: Mapping[QueryKey, Answer] = {}
        #: the questions asked inside ``noting_questions`` (else None)
        self._asked: list[QueryKey] | None = None

    # -- what a recording runner asks of the vocabulary (``guardscan.memo``) ------------

    def resume(self, stored: Mapping[QueryKey, Answer],
               former: Mapping[QueryKey, Answer]) -> None:
        """Start from an earlier scan's answers: ``stored``, those nothing
        changed for (taken as they are); ``former``, those a change may have
        touched (asked again, compared by ``same_answer``)."""
        self.stored, self.former = stored, former

    @contextmanager
    def noting_questions(self) -> Iterator[list[QueryKey]]:
        """The questions asked while the block runs, in order, repeats kept."""
        outer, self._asked = self._asked, []
        try:
            yield self._asked
        finally:
            self._asked = outer

    def note_asked(self, keys: Iterable[QueryKey]) -> None:
        """Questions asked earlier on behalf of what runs now (a hit in a memo
        kept outside the vocabulary, ``link.recorded``): noted as asked again."""
        if self._asked is not None:
            self._asked.extend(keys)

    def stored_answer(self, key: QueryKey) -> Answer | None:
        """This scan's answer to ``key``, else the earlier scan's kept one."""
        return self.answers.get(key) or self.stored.get(key)

    def release_caches(self) -> None:
        """Forget every memo. They only save time, and they hold on to most of the
        facts; a scan calls this once linking is done (later questions, such as
        ``explain``'s, are answered afresh). Diagnostics stay."""
        self._interpreter.clear()
        self.answers, self.stored, self.former = {}, {}, {}
        # no memo keeps numbers of the recorder's table now (a record of
        # linking took its copy): judging numbers its reads afresh
        self._stack.recorder.reset()
        self._stack.forget_trails()
        clear_caches()

    # -- questions from outside ---------------------------------------------------------
    # Each is answered once per scan and kept as an ``Answer`` with what it read,
    # so a later scan can keep the answers whose reads a change cannot touch
    # (``stored``) and ask the rest again (see ``guardscan.memo.records``).

    def ask(self, key: QueryKey, compute: Callable[[], tuple[object, Diagnostic | None]],
            report: bool = True) -> object:
        answer = self.answers.get(key)
        if answer is None:
            answer = self.stored.get(key)
            if answer is None or not readable(answer):
                recorder = self._stack.recorder
                saved = recorder.open()
                self._stack.trail = []
                greps = len(self.index.grep_log)
                try:
                    value, diagnostic = compute()
                except Exception as exc:  # noqa: BLE001 - one guard never stops the scan
                    value, diagnostic = failed_answer(key, exc)
                finally:
                    reads = recorder.close(saved, merge=False)
                answer = Answer(value, diagnostic, reads, tuple(self.index.grep_log[greps:]))
            self.answers[key] = answer
        if self._asked is not None:
            self._asked.append(key)
        if report and answer.diagnostic is not None:
            self.report(answer.diagnostic)
        return answer.value

    def same_answer(self, key: QueryKey) -> bool:
        """Asked again now, does ``key`` get its ``former`` answer?"""
        old = self.former.get(key)
        kind, text, rel, scope, line = key
        if old is None or kind == "b" or not readable(old):
            # a path read with a call's arguments keeps them only in its key's
            # text: asked again by the unit that asks it, never from here
            return False
        asked, self._asked = self._asked, None
        try:
            if kind == "p":
                self.predicate(text, rel, scope, line, report=False)
            elif kind == "c":
                self.callers(rel, scope, entered=text == "+")
            else:
                self.value(text, rel, scope, line)
        finally:
            self._asked = asked
        new = self.answers[key]
        return new.value == old.value and new.diagnostic == old.diagnostic

    def report(self, diagnostic: Diagnostic) -> None:
        key = (diagnostic.path, diagnostic.line, diagnostic.message)
        if key not in self._reported:
            self._reported.add(key)
            self.diagnostics.append(diagnostic)

    def predicate(self, text: str, rel: str, scope: str, line: int,
                  report: bool = True) -> Resolved:
        """The meaning of the expression ``text`` found in ``rel`` inside ``scope``."""
        return self.ask(("p", text, rel, scope, line),  # type: ignore[return-value]
                        lambda: self._predicate(text, rel, scope, line), report)

    def predicate_given(self, text: str, rel: str, scope: str, line: int,
                        given: Mapping[str, Value], first: frozenset[str] = frozenset(),
                        ) -> Predicate:
        """The meaning of ``text`` in ``scope`` of ``rel``, where the names in
        ``given`` hold those values when the tree's own definitions leave them
        unknown, and those in ``first`` whatever they say
        (``Interpreter.top_value_given``). Never reported."""
        def compute() -> tuple[Predicate, None]:
            node = parse_expr(text)
            if node is None:
                return Unknown(f"unparseable: {text[:60]}"), None
            value = self._interpreter.top_value_given(node, rel, scope, line, given, first)
            return self._interpreter.to_pred(value, node), None
        return self.ask(("g", _given_key(text, given, first), rel, scope, line),  # type: ignore[return-value]
                        compute, report=False)

    def value_given(self, text: str, rel: str, scope: str, line: int,
                    given: Mapping[str, Value], first: frozenset[str] = frozenset()) -> Value:
        """The value of ``text``, as ``predicate_given`` reads it."""
        def compute() -> tuple[Value, None]:
            node = parse_expr(text)
            return (self._interpreter.top_value_given(node, rel, scope, line, given, first)
                    if node is not None else UnkV(f"unparseable: {text[:60]}")), None
        return self.ask(("w", _given_key(text, given, first), rel, scope, line),  # type: ignore[return-value]
                        compute, report=False)

    def path_bound(self, rel: str, scope: str, path: tuple[int, ...],
                   env: Mapping[str, Value], test: str = "", line: int = 0) -> Predicate:
        """What must hold for code on ``path`` of the function ``scope`` to
        run (and, with ``test``, for the assert at ``line`` to fail), its
        parameters holding ``env`` (what one call passes): each branch test
        read along the tests before it (``Interpreter.reading_along``: the
        function's own assignments there hold their values with those
        arguments). Never reported."""
        def compute() -> tuple[Predicate, None]:
            interp = self._interpreter
            facts = self.index.view(rel)
            if facts is None:
                return Unknown(f"{rel} not analysed"), None
            parts: list[Predicate] = []
            for position, signed in enumerate(path):
                cond = facts.cond(signed)
                node = parse_expr(cond.text) if cond.kind != "except" else None
                if node is None:
                    parts.append(Unknown(cond.text))
                    continue
                with interp.reading_along(rel, scope, path[:position]):
                    pred = interp.to_pred(interp.top_value_env(node, rel, scope, cond.line,
                                                                 env), node)
                parts.append(pred if signed > 0 else neg(pred))
            if test:
                node = parse_expr(test)
                if node is None:
                    return Unknown(test), None
                with interp.reading_along(rel, scope, path):
                    parts.append(neg(interp.to_pred(interp.top_value_env(node, rel, scope, line,
                                                                         env), node)))
            return conj(*parts), None
        question = test + "\0" + repr((path, sorted(env.items())))
        return self.ask(("b", question, rel, scope, line), compute,  # type: ignore[return-value]
                        report=False)

    def value(self, text: str, rel: str, scope: str, line: int) -> Value:
        """The value of the expression ``text`` found in ``rel`` inside ``scope``."""
        def compute() -> tuple[Value, None]:
            node = parse_expr(text)
            return (self._interpreter.top_value(node, rel, scope, line) if node is not None
                    else UnkV(f"unparseable: {text[:60]}")), None
        return self.ask(("v", text, rel, scope, line), compute)  # type: ignore[return-value]

    def value_at(self, node: ast.expr, rel: str, scope: str, line: int) -> Value:
        """The value of a sub-expression (of a parsed expression) in ``rel``,
        asked as its text (so a later scan can ask it again)."""
        return self.value(unparse(node), rel, scope, line)

    def _predicate(self, text: str, rel: str, scope: str, line: int,
                   ) -> tuple[Resolved, Diagnostic | None]:
        if text.startswith("<"):  # except / match clauses
            return Resolved(Unknown(text.strip("<>"))), None
        node = parse_expr(text)
        if node is None:
            return Resolved(Unknown(f"unparseable: {text[:60]}")), None
        value = self._interpreter.top_value(node, rel, scope, line)
        pred = self._interpreter.to_pred(value, node)
        trail = tuple(dict.fromkeys(self._stack.trail))
        diagnostic = None
        if looks_like_arch_guard(text) and only_unknown(pred):
            if isinstance(value, UnkV):
                reason = value.reason
            else:
                parts = sorted({a.reason for a in atoms(pred) if isinstance(a, Unknown)})
                reason = "cannot read " + ", ".join(f"`{short(p)}`" for p in parts[:3]) \
                    if parts else "no device test in it"
            diagnostic = make_diagnostic(rel, line, "unresolved-guard", text=short(text),
                                         reason=reason)
        return Resolved(pred, trail), diagnostic

    def callers(self, rel: str, scope: str, entered: bool = False,
                ) -> tuple[tuple[str, str, int, Predicate], ...] | None:
        """Every call in the tree of the module-level function ``scope`` of
        ``rel``, with its branch tests in the caller (``CallSites.callers``;
        None: not every use of it is a call this reader understands;
        ``entered``: the tests of the branches each call is in only)."""
        def compute() -> tuple[tuple[tuple[str, str, int, Predicate], ...] | None, None]:
            try:
                return self._interpreter.call_sites.callers(rel, scope, entered), None
            except RecursionError:
                self._stack.too_deep()
                return None, None
        return self.ask(("c", "+" if entered else "", rel, scope, 0),  # type: ignore[return-value]
                        compute, report=False)

    def module_symbol(self, module: str, name: str) -> Value:
        rel = self._interpreter.tables.rel_of(module)
        if rel is None:
            return UnkV(f"{module} not in tree")
        return self._interpreter.names.lookup(rel, "", name, MODULE_END)


def _given_key(text: str, given: Mapping[str, Value], first: frozenset[str]) -> str:
    """The question's text with what was given: the same text with other
    names given is another question."""
    return text + "\0" + repr((sorted(given.items()), sorted(first))) if given else text
