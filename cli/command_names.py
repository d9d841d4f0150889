"""The built-in commands' names, in one place.

:mod:`acor.cli.main` dispatches these itself (any other first word names a
tool), discovery refuses a tool named like one (it could never be run:
:mod:`acor.cli.discovery.manifest`), and :mod:`acor.cli.commands.app`
registers exactly these (tests/launcher/commands/test_front_door.py holds
the click application's commands equal to them).
"""

BUILTIN_COMMANDS = frozenset({
    "list", "show", "parse", "doctor", "sessions", "help", "call", "schema",
    "new", "check", "mcp", "export", "lock", "install", "tasks"})
