"""What discovery knows of a runnable tool: a :class:`ToolSpec`.

A module of its own because a warm run needs only this record, rebuilt
from the cache; checking a manifest (:mod:`cli.manifest`) is the cold
path's.
"""

from .cache import Record


class ToolSpec(Record):
    """A runnable tool. ``argv`` is complete but for the user's arguments;
    ``path`` is the tool folder (acor) or the manifest file (wrapped);
    ``origin`` says where it was found (a tools dir, a package).
    ``args_schema`` is the manifest's ``args``; ``args_public`` the same as
    agents see it (:func:`acor.args.public_schema`), derived at discovery
    like ``usage``, so that listing a thousand tools derives nothing."""

    __slots__ = ("name", "version", "description", "kind", "path",
                 "manifest_path", "argv", "timeout", "idle_timeout", "usage",
                 "progress_pattern", "errors", "cwd_mode", "warnings",
                 "args_schema", "args_public", "stdin", "examples",
                 "annotations", "origin")
