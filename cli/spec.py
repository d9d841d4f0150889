"""What discovery knows of a runnable tool: a :class:`ToolSpec`.

A module of its own because a warm run needs only this record, rebuilt
from the cache; checking a manifest (:mod:`cli.manifest`) is the cold
path's.
"""

import marshal

from .cache import Record


class ToolSpec(Record):
    """A runnable tool. ``argv`` is complete but for the user's arguments;
    ``path`` is the tool folder (acor) or the manifest file (wrapped);
    ``origin`` says where it was found (a tools dir, a package).
    ``args_schema`` is the manifest's ``args``; ``args_public`` the same as
    agents see it (:func:`acor.args.public_schema`), derived at discovery
    like ``usage``, so that listing a thousand tools derives nothing.

    The cache keeps ``args_schema`` as marshal bytes (see
    :meth:`cli.discover.Registry.to_dict`), read when first asked for:
    most of a registry's bytes are its schemas, and a run, a listing or an
    MCP ``tools/list`` needs no tool's but its own, or none."""

    FIELDS = ("name", "version", "description", "kind", "path",
             "manifest_path", "argv", "timeout", "idle_timeout", "usage",
             "progress_pattern", "errors", "cwd_mode", "warnings",
             "args_schema", "args_public", "stdin", "examples",
             "annotations", "origin")

    @property
    def args_schema(self):
        value = self.__dict__["args_schema"]
        if type(value) is bytes:
            value = self.__dict__["args_schema"] = marshal.loads(value)
        return value
