"""``python -m guardscan``: the command line (``guardscan.cli``)."""

from guardscan.cli import entry

entry()
