"""options (forms registry): every option-definition form, in the order the
catalog asks them.

Adding a form is one new module here (its pre-filter, finder and recognisers,
ending in an :class:`~guardscan.options.forms.base.OptionForm`) plus one line
in :data:`FORMS`. Within one step, forms are asked in this order, and their
definitions, extensions and enums are taken in this order.
"""

from __future__ import annotations

from collections.abc import Callable

from guardscan.options.forms import (
    annotated_fields,
    argparse_calls,
    choice_extensions,
    string_enums,
)
from guardscan.options.forms.base import Extensions, FormContext, OptionForm, Stage

__all__ = ["FORMS", "Extensions", "FormContext", "OptionForm", "Stage", "recognisers_of"]

FORMS: tuple[OptionForm, ...] = (
    argparse_calls.FORM,
    annotated_fields.FORM,
    choice_extensions.FORM,
    string_enums.FORM,
)


def recognisers_of(stage: Stage) -> tuple[Callable[..., object], ...]:
    """The recognisers of the forms that serve ``stage``, in registry order."""
    return tuple(r for form in FORMS if form.stage == stage for r in form.recognisers)
