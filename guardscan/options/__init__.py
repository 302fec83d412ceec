"""options: the backend-selecting server options and their choices, as this
version of the tree defines them.

Nothing here is a table of option names, choices or versions: every option is
read from the scanned code, in whatever form that version uses.

* argparse calls, ``parser.add_argument("--fp4-gemm-backend", choices=...)``
  (SGLang 0.5.9 ``srt/server_args.py``), see :func:`recognise_argparse_option`;
* annotated fields, ``moe_runner_backend: A[str, Arg(choices=...)] = "auto"``
  (SGLang 0.5.23 ``srt/arg_groups/fields/*.py``), see
  :func:`recognise_annotated_field`, whose flag comes from the tree's own
  field-to-flag rule (:func:`recognise_cli_name_rule`);
* choice expressions: literals, spreads, ``+``, names followed through imports
  (:func:`recognise_choice_expression`), and the constants' extensions by
  ``.extend``/``.append`` calls, helper functions and bound-method aliases that
  the tree really calls with literal arguments
  (:func:`recognise_choice_extensions`);
* platform labels for choices that are for non-CUDA platforms only, from the
  definition's own comments (:func:`recognise_comment_platforms`) and help text
  (:func:`recognise_help_platforms`), and a name's label shared with the
  options whose definitions label nothing (:func:`share_platform_labels`);
* string enums that model an option's choices, with their predicate methods
  (:func:`recognise_enum`, :func:`recognise_enum_predicate`), linked to options
  by the overlap of values (:func:`link_enums`).

The catalog holds every option whose flag ends in ``-backend`` and has finite
choices, plus ``--quantization`` (kept apart as ``catalog.quantization``),
and the *mode options* of argparse definitions (``catalog.modes``): any other
flag with literal choices and a literal default among them
(``--deepep-mode``). Modes are never judged; while a backend is judged they
hold their defaults, so a gate that tests one is decided, and the verdict
says what another value would change.
Files are parsed only after a cheap text pre-filter (``Index.grep``) says they
can hold what is looked for; facts come from the index, so they are cached.
What cannot be resolved becomes a Diagnostic, never an exception.

Where each part lives (``guardscan/options/``): one module per
option-definition form under ``forms/`` (``argparse_calls``,
``annotated_fields``, ``choice_extensions``, ``string_enums``), each with its
text pre-filter, finder and recognisers, registered once in ``forms.FORMS``;
the shared choice reader (``values``), platform labels (``platforms``), enum
classes (``enum_classes``), the data (``model``) and ``catalog``, which runs
the forms. Names are resolved by ``guardscan.names``.
"""

from __future__ import annotations

from collections.abc import Callable

from guardscan.messages import MESSAGES
from guardscan.options.catalog import build_catalog, link_enums
from guardscan.options.forms import FORMS, OptionForm, recognisers_of
from guardscan.options.forms.annotated_fields import (
    DEFAULT_CLI_NAME_RULE,
    recognise_annotated_field,
    recognise_cli_name_rule,
)
from guardscan.options.forms.argparse_calls import recognise_argparse_option
from guardscan.options.forms.choice_extensions import recognise_choice_extensions
from guardscan.options.forms.string_enums import (
    enum_member_sets,
    recognise_enum,
    recognise_enum_predicate,
)
from guardscan.options.model import (
    MIN_ENUM_OVERLAP,
    QUANTIZATION_FLAG,
    EnumInfo,
    OptionCatalog,
)
from guardscan.options.platforms import recognise_comment_platforms, recognise_help_platforms
from guardscan.options.shared_labels import share_platform_labels
from guardscan.options.values import recognise_choice_expression

__all__ = [
    "DEFAULT_CLI_NAME_RULE",
    "FORMS",
    "MESSAGES",
    "MIN_ENUM_OVERLAP",
    "QUANTIZATION_FLAG",
    "RECOGNISERS",
    "EnumInfo",
    "OptionCatalog",
    "OptionForm",
    "build_catalog",
    "enum_member_sets",
    "link_enums",
    "recognise_annotated_field",
    "recognise_argparse_option",
    "recognise_choice_expression",
    "recognise_choice_extensions",
    "recognise_cli_name_rule",
    "recognise_comment_platforms",
    "recognise_enum",
    "recognise_enum_predicate",
    "recognise_help_platforms",
    "share_platform_labels",
]

#: Every recogniser, in pipeline order (docs are generated from their
#: docstrings): the forms' definitions, the choice reader, the forms'
#: extensions, the platform labels, the forms' enums, and the enum linking.
RECOGNISERS: tuple[Callable[..., object], ...] = (
    *recognisers_of("definitions"),
    recognise_choice_expression,
    *recognisers_of("extensions"),
    recognise_comment_platforms,
    recognise_help_platforms,
    share_platform_labels,
    *recognisers_of("enums"),
    link_enums,
)
