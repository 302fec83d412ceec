"""guards (evaluation stack): which evaluations are running, so cycles are cut
and only answers that do not depend on where evaluation started are memoised.

Memos keep each answer with the definition lines it went through (its trail)
and what it read (see ``observe.Recorder``), both given again on a hit. An
answer cut short by a cycle or by the depth limit depends on where the
evaluation started, so it is never kept: every answer is the same whatever
was asked before it.
"""

from __future__ import annotations

from guardscan.index.observe import Reads, Recorder

__all__ = ["MAX_DEPTH", "MODULE_END", "EvaluationStack", "Frame"]

#: The line given for "anywhere in the module": after every definition.
MODULE_END = 10**9

#: Nested evaluation steps before giving up (stays UNKNOWN, never guessed).
MAX_DEPTH = 80
_NO_CUT = 1 << 30

#: (stack position, the enclosing evaluation's lowest cut, trail mark, the
#: interrupted read frame)
Frame = tuple[int, int, int, "set[int] | None"]


class EvaluationStack:
    """The evaluations in progress, the trail of definition lines read, and the
    read recorder of the index."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
        #: evaluations in progress, by their position in the stack
        self.active: dict[object, int] = {}
        self.trail: list[tuple[str, int]] = []
        #: the lowest stack position a cycle was cut at in the evaluation running
        #: now (``_NO_CUT``: none; -1: the depth limit was met)
        self.low = _NO_CUT
        self.depth = 0
        #: each distinct trail a memo keeps, once (many memos keep the same)
        self._trails: dict[tuple[tuple[str, int], ...], tuple[tuple[str, int], ...]] = {}

    def enter(self, key: object) -> Frame:
        """Start evaluating ``key`` (a memo key)."""
        position = len(self.active)
        self.active[key] = position
        state = (position, self.low, len(self.trail), self.recorder.open())
        self.low = _NO_CUT
        return state

    def leave(self, key: object, state: Frame) -> tuple[bool, Reads]:
        """End evaluating ``key``: whether its answer may be kept (no cycle was
        cut at an evaluation that encloses it, so the answer is what it would be
        if asked first), and what it read."""
        position, outer_low, _, saved = state
        del self.active[key]
        low = self.low
        self.low = min(outer_low, low)
        reads = self.recorder.close(saved)
        return low >= position, reads

    def cut(self, key: object) -> None:
        """A cycle: ``key`` is being evaluated already."""
        self.low = min(self.low, self.active[key])

    def too_deep(self) -> None:
        """The depth limit was met: nothing evaluated now may be memoised."""
        self.low = -1

    def replay(self, trail: tuple[tuple[str, int], ...], reads: Reads) -> None:
        """A memo hit: its trail and reads count as read again."""
        self.trail.extend(trail)
        self.recorder.add(reads)

    def trail_since(self, state: Frame) -> tuple[tuple[str, int], ...]:
        """The definition lines gone through since ``state``, each once, in
        the order first met: what a memo keeps (its answer's trail, replayed
        on every hit; repeats would only lengthen every trail it joins, and
        the vocabulary keeps each line once, first met first)."""
        trail = tuple(dict.fromkeys(self.trail[state[2]:]))
        return self._trails.setdefault(trail, trail)

    def forget_trails(self) -> None:
        """Let go of the distinct trails (once no memo keeps them)."""
        self._trails = {}
