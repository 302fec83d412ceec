"""link (caller reach): when a module-level function that holds a gate runs at all, read from its calls in the tree.

What it recognises
    A gate (a raise or failing assert that tests an option and the
    device) in a module-level function every call of which, in the tree,
    is made under a branch test (sglang 0.5.23 ``arg_groups/model_hook.py``
    calls ``validate_mamba_extra_buffer`` only for a model with Mamba state
    and the ``extra_buffer`` strategy)::

        def handle_mamba_radix_cache(server_args, hf_config):
            view = resolved_view(server_args)
            if not view.uses_mamba_radix_cache:
                return
            if mamba_extra_buffer_of(view):
                validate_mamba_extra_buffer(view, hf_config, ...)

    The gate holds only where one of those calls is made: its condition is
    conjoined with the disjunction of the tests of the branches the calls
    are in, one level up. The tests of branches passed by on the way (an
    early ``return``, an ``else``) do not count: the resolution pipeline
    returns early for a dummy model, before it calls every hook, and a hook
    is still called on every real launch.
Why it matters
    A gate found by reading a file is a gate for every launch that sets its
    options. ``validate_mamba_extra_buffer`` asserts that a Mamba model's
    extra buffer runs on the ``triton`` linear-attention backend (and not on
    XPU, a platform test): read alone, that assert blocked every other
    ``--linear-attn-backend`` on every NVIDIA arch, for every model.
Known limits
    Only module-level functions, and only where every use of the name in
    the tree is a call this reader places (``guards.call_sites``); one call
    made without a branch test leaves the gate as it is. Only the gate's
    condition is narrowed: the options it is about stay those its own tests
    name, so a validator whose caller alone tests the option is not read
    here. A caller reached only under a condition of its own is not read
    further up: one undecided test there is enough to make the gate a
    caveat rather than a block, which errs toward ``unknown``.
Example
    ``--linear-attn-backend flashinfer`` on sm120 (sglang 0.5.23): the
    assert at ``arg_groups/mamba_hook.py:117`` holds only where
    ``model_hook.py`` calls the validator, which depends on the model: a
    caveat, no longer ``blocked``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from guardscan.link.model import Hop, HopRole
from guardscan.predicate import Const, Predicate, conj, disj

if TYPE_CHECKING:
    from guardscan.guards import Vocabulary

__all__ = ["CallerReach", "caller_reach", "where_called"]


@dataclass(frozen=True, slots=True)
class CallerReach:
    """Where a module-level function is called: the condition, and the first call."""

    condition: Predicate
    rel: str
    line: int


def caller_reach(vocab: Vocabulary, rel: str, scope: str) -> CallerReach | None:
    """The condition under which the module-level function ``scope`` of
    ``rel`` is called, or None when it is not such a function, a use of it
    is not a call this reader places, or one call is made unconditionally."""
    if not scope or "." in scope:
        return None
    sites = vocab.callers(rel, scope, entered=True)
    if not sites:
        return None
    if any(isinstance(where, Const) and where.value for _, _, _, where in sites):
        return None
    first = min(sites, key=lambda site: (site[0], site[2]))
    return CallerReach(disj(*(where for _, _, _, where in sites)), first[0], first[2])


def where_called(vocab: Vocabulary, rel: str, scope: str, cond: Predicate,
                 escape: Predicate | None, hops: tuple[Hop, ...],
                 ) -> tuple[Predicate, Predicate | None, tuple[Hop, ...]]:
    """A gate's condition, escape and hops, narrowed to where the function
    ``scope`` that holds it is called (unchanged where ``caller_reach``
    says nothing)."""
    reach = caller_reach(vocab, rel, scope)
    if reach is None:
        return cond, escape, hops
    hop = Hop(reach.rel, reach.line, HopRole.LINK,
              f"{scope}() is called only where " + reach.condition.describe()[:200])
    return (conj(reach.condition, cond),
            conj(reach.condition, escape) if escape is not None else None, (hop, *hops))
