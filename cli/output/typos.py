"""Names a person mistyped, and the one they meant: the tools and
built-in commands nearest by edit distance, for an unknown word at
``acor WORD`` or ``acor help WORD``, and for a group's unknown
subcommand. Used for a person at a terminal (the rich view, or
:func:`cli.output.person.at_terminal`): what an agent reads of these
errors is kept as it was."""

from __future__ import annotations

from acor import exitcodes

from acor.cli.errors import LauncherError
from acor.cli.textsafe import printable

TYPE_CHECKING = False  # typing costs every command ~3 ms: only mypy
if TYPE_CHECKING:
    from typing import Iterable, Sequence


def distance(a: str, b: str) -> int:
    """Edits from ``a`` to ``b``: a character inserted, removed, changed,
    or two neighbours swapped (``hepl`` is one edit from ``help``)."""
    a, b = a.lower(), b.lower()
    before: list[int] = []
    row = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        current = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            current[j] = min(row[j] + 1, current[j - 1] + 1,
                             row[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and \
                    a[i - 2] == b[j - 1]:
                current[j] = min(current[j], before[j - 2] + 1)
        before, row = row, current
    return row[len(b)]


def nearest(word: str, names: Iterable[str]) -> list[str]:
    """The names within two edits of ``word`` (one for a word of three
    letters or fewer), nearest first, then by name."""
    most = 1 if len(word) <= 3 else 2
    near = sorted((distance(word, name), name) for name in set(names)
                  if name != word)
    return [name for edits, name in near if edits <= most]


def unknown_name(word: str, tools: Iterable[str], commands: Iterable[str],
                 prefix: Sequence[str], rest: Sequence[str] = ()
                 ) -> LauncherError | None:
    """The error for ``word``, neither a tool nor a command, when a tool
    or a command is near it: each named as what it is, and the command
    that runs the nearest (``prefix``, it, ``rest``); None when none is
    near."""
    tool_names, command_names = set(tools), set(commands)
    near = nearest(word, tool_names | command_names)
    if not near:
        return None
    said = ", ".join(f"{name} (a {'tool' if name in tool_names else 'command'})"
                     for name in near[:3])
    shown = printable(word)[:200]
    return LauncherError(
        f"Unknown tool or command '{shown}'",
        f"If you meant {near[0]}, run the command below; `acor list` "
        "shows every tool, `acor --help` every command.",
        code="E_UNKNOWN_TOOL", details=f"Did you mean: {said}?",
        next=[*prefix, near[0], *rest], exit_code=exitcodes.USAGE)
