"""verdict (model needs): the model properties a choice is for, read from a gate that refuses every other model.

What it judges
    A gate about the choice whose condition tests a property of the model
    (``ModelIs``: ``guards.forms.model_properties``) and, for the common
    model (no special architecture, no MLA), raises on every standard arch,
    while for a model with the property it lets some arch through::

        def create_trtllm_mla_backend(runner):
            if not runner.use_mla_backend:
                raise ValueError("trtllm_mla backend can only be used with MLA models.")

    The choice is for those models: where no model is named it is judged
    for them (``model_facts.ModelView.needs``), and its verdict says so
    ("blocked without an MLA model (judged with one)").
Why it matters
    Judged for the common model, ``trtllm_mla`` and ``cutedsl_mla`` would be
    blocked on every arch, and ``--dsv4-attn-backend flashmla_mega`` (which
    asserts DeepSeek-V4.1) likewise: a wrong alarm for every user of the
    models they exist for. Judged for an unknown model they were caveats
    that never named the model.
Known limits
    Each property is taken alone: a gate that needs two at once (an
    architecture and MLA attention) gives a need only where one of them
    alone lets an arch through. With ``--model-config`` the model decides
    and nothing is assumed.
Example
    sglang 0.5.23, ``--attention-backend trtllm_mla`` on sm100: judged for an
    MLA model, supported; with a Llama ``--model-config``: blocked at
    ``attention_registry.py:97``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from guardscan.arch import standard_archs
from guardscan.link import GATE_KINDS, Finding
from guardscan.model_facts import ModelView, phrase
from guardscan.predicate import ModelIs, Tri, leaves
from guardscan.predicate_dag import value
from guardscan.verdict.values import Values

__all__ = ["model_needs", "need_condition"]


def model_needs(findings: Iterable[Finding], about: Mapping[int, bool],
                values: Values) -> tuple[ModelIs, ...]:
    """The model properties the choice ``values`` judges is for: see the
    module's docstring. ``about``: whether each finding (by id) is about
    the choice. Nothing where the launch names its model."""
    if values.shared.model is not None:
        return ()
    archs = standard_archs()
    needs: list[ModelIs] = []
    for finding in findings:
        if finding.kind not in GATE_KINDS or not about.get(id(finding), False):
            continue
        cond = finding.condition
        for atom in leaves(cond):
            if not isinstance(atom, ModelIs) or atom in needs:
                continue
            contexts = [values.context(arch) for arch in archs]
            if not all(value(cond, ctx) is Tri.TRUE for ctx in contexts):
                continue
            taken = ModelView(None, (atom,))
            if any(value(cond, replace(ctx, model=taken)) is not Tri.TRUE for ctx in contexts):
                needs.append(atom)
    return tuple(needs)


def need_condition(atom: ModelIs) -> str:
    """What the verdict says of a property the choice is for.

    >>> need_condition(ModelIs("attention_arch", frozenset({"MLA"})))
    'blocked without an MLA model (judged with one)'
    """
    return f"blocked without {phrase(atom)} (judged with one)"
