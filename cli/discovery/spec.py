"""What discovery knows of a runnable tool: a :class:`ToolSpec`.

A module of its own because a warm run needs only this record, rebuilt
from the cache; checking a manifest (:mod:`acor.cli.discovery.manifest`)
is the cold path's.
"""

from __future__ import annotations

import marshal

from acor.cli.discovery.cache import Record

TYPE_CHECKING = False  # typing costs every run ~3 ms: only mypy
if TYPE_CHECKING:
    from typing import Any, Optional


class ToolSpec(Record):
    """A runnable tool. ``argv`` is complete but for the user's arguments;
    ``path`` is the tool folder (acor) or the manifest file (wrapped);
    ``origin`` says where it was found (a tools dir, a package).
    ``output_schema``: the MCP ``outputSchema`` a function tool's return
    annotation says (:mod:`acor.cli.discovery.functions`), else None.
    ``args_schema`` is the manifest's ``args``; ``args_public`` the same as
    agents see it (:func:`acor.args.public_schema`), derived at discovery
    like ``usage``, so that listing a thousand tools derives nothing.

    The cache keeps ``args_schema`` as marshal bytes (see
    :meth:`acor.cli.discovery.registry.Registry.to_cache`), read when first
    asked for: most of a registry's bytes are its schemas, and a run, a
    listing or an MCP ``tools/list`` needs no tool's but its own, or
    none."""

    FIELDS = ("name", "version", "description", "kind", "path",
             "manifest_path", "argv", "timeout", "idle_timeout", "usage",
             "progress_pattern", "errors", "cwd_mode", "warnings",
             "args_schema", "args_public", "stdin", "examples",
             "annotations", "origin", "warm", "max_output", "sandbox",
             "output_schema", "task", "color_env")

    name: str
    version: Optional[str]
    description: Optional[str]
    kind: str                  # "acor" or "wrapped"
    path: str                  # the tool folder, or the manifest (wrapped)
    manifest_path: str
    argv: list[str]
    timeout: Optional[float]
    idle_timeout: Optional[float]
    usage: Optional[str]
    progress_pattern: Optional[str]
    errors: Any
    cwd_mode: str              # "invocation" or "project"
    warnings: list[str]
    args_public: Optional[dict[str, Any]]
    stdin: Optional[bool]
    examples: Any
    annotations: Optional[dict[str, Any]]
    origin: Optional[str]
    warm: Optional[bool]
    max_output: Optional[int]
    sandbox: Optional[dict[str, Any]]
    output_schema: Optional[dict[str, Any]]
    task: Optional[str]        # "optional" or "required": an MCP task
    # A wrapped program's variables asking it for colour, set only for a
    # person's terminal that shows colour (cli.run.protocols).
    color_env: Optional[dict[str, str]]

    @property
    def args_schema(self) -> Any:
        value = self.__dict__["args_schema"]
        if type(value) is bytes:
            try:
                value = marshal.loads(value)
            except (ValueError, EOFError, TypeError):
                value = None
            if not isinstance(value, dict):  # damaged on disk: not trusted
                value = _args_in(self.manifest_path)
            self.__dict__["args_schema"] = value
        return value


def _args_in(manifest_path: str) -> dict[str, Any] | None:
    """The ``args`` of the manifest the cache was built from (unchanged
    since, or the cache would have been rescanned), for a cached copy that
    no longer reads back."""
    import json  # a damaged cache only: a warm run never pays for it
    try:
        with open(manifest_path, "rb") as f:
            args = json.loads(f.read().decode("utf-8-sig")).get("args")
    except (OSError, ValueError, AttributeError, TypeError):
        return None
    return args if isinstance(args, dict) else None
