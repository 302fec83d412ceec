"""launch (the command): a launch command split as people write it, into its program part and its flags.

``guardscan check -- <command>`` and ``guardscan.preflight(argv, ...)`` judge
the flags of an SGLang launch; this module only reads the command (env
assignments, ``python -m sglang.launch_server``, ``sglang serve``, a wrapper,
one quoted string), never the flags' meaning (``guardscan.launch``).

Example::

    >>> launch = parse_launch(["CUDA_VISIBLE_DEVICES=0", "python", "-m", "sglang.launch_server",
    ...                        "--tp", "8", "--moe-runner-backend=triton", "--enable-foo"])
    >>> [(f.flag, f.value) for f in launch.flags]
    [('--tp', '8'), ('--moe-runner-backend', 'triton'), ('--enable-foo', None)]
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Launch", "LaunchFlag", "parse_launch"]


@dataclass(frozen=True, slots=True)
class LaunchFlag:
    """``--flag value`` or ``--flag=value`` (``inline``), or a flag alone
    (``value`` None); ``position`` is its index in the command."""

    flag: str
    value: str | None
    position: int
    inline: bool = False


@dataclass(frozen=True, slots=True)
class Launch:
    """A launch command split into its program part and its flags."""

    program: tuple[str, ...]
    flags: tuple[LaunchFlag, ...]

    def last(self, flag: str) -> LaunchFlag | None:
        """The flag's last occurrence (argparse keeps the last)."""
        found = [f for f in self.flags if f.flag == flag]
        return found[-1] if found else None


_ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_NEGATIVE_NUMBER = re.compile(r"^-\d")


def _launch_marker(tokens: Sequence[str]) -> int | None:
    """The index of the token after which the server's own flags begin: the
    last ``sglang.launch_server`` / ``launch_server.py`` / ``sglang serve``."""
    found = None
    for i, token in enumerate(tokens):
        base = token.rsplit("/", 1)[-1]
        module = base in ("sglang.launch_server", "launch_server", "launch_server.py")
        if module or (token == "serve" and i > 0 and tokens[i - 1].rsplit("/", 1)[-1] == "sglang"):
            found = i
    return found


def parse_launch(argv: Sequence[str]) -> Launch:
    """Split a launch command as people write it.

    The program part is skipped: environment assignments (``CUDA_VISIBLE_DEVICES=0``),
    ``python -m sglang.launch_server``, ``python3 -m sglang.launch_server``,
    ``sglang serve``, a path to ``launch_server.py``, and anything before the
    first ``--flag`` (a wrapper such as ``env`` or ``uv run``). One argument
    holding the whole command (``"python -m sglang.launch_server --tp 8"``) is
    split as a shell would. Flags are ``--flag value``, ``--flag=value``, or a
    flag alone (a boolean); a token not starting with ``-`` (or a negative
    number) after a flag is taken as its value.
    """
    tokens = list(argv)
    if len(tokens) == 1 and any(ch.isspace() for ch in tokens[0]):
        tokens = shlex.split(tokens[0])
    marker = _launch_marker(tokens)
    start = marker + 1 if marker is not None else next(
        (i for i, t in enumerate(tokens) if t.startswith("--")), len(tokens))
    program = tuple(tokens[:start])
    flags: list[LaunchFlag] = []
    i = start
    while i < len(tokens):
        token = tokens[i]
        if not token.startswith("--") or token == "--":
            i += 1  # a stray value or short option: SGLang's server takes none we judge
            continue
        if "=" in token:
            flag, value = token.split("=", 1)
            flags.append(LaunchFlag(flag, value, i, inline=True))
            i += 1
            continue
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if nxt is not None and (not nxt.startswith("-") or _NEGATIVE_NUMBER.match(nxt)):
            flags.append(LaunchFlag(token, nxt, i))
            i += 2
        else:
            flags.append(LaunchFlag(token, None, i))
            i += 1
    return Launch(program, tuple(flags))
