"""Which tools ``acor mcp`` serves, and how each one looks in ``tools/list``.

One MCP tool per acor tool, from the same discovery as ``acor list``
(checked on every listing and call: the registry the server last found is
kept parsed, and served again while every path it depends on stats as it
did (:class:`acor.cli.discovery.registry.Kept`), so a tool added or
edited while the server runs is served without a restart). The
input schema is the manifest's ``args`` without its ``x-acor`` keys; a tool
without ``args`` takes its command line as ``{"argv": [strings]}``. Nothing
is dropped silently: a tool whose name MCP cannot carry, and a manifest
discovery skipped, are reported on stderr once each.
"""

import re
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Any, TextIO

from acor.cli.discovery.registry import Kept, Registry, load_registry
from acor.cli.discovery.spec import ToolSpec
from acor.cli.run.request import output_budget

# Tool names MCP clients accept (SEP-986, as the SDK validates them).
MCP_NAME = re.compile(r"[A-Za-z0-9._-]{1,128}")
ARGV_SCHEMA = {"type": "object",
               "properties": {"argv": {
                   "type": "array", "items": {"type": "string"},
                   "description": "The tool's command-line arguments, one "
                                  "string each (no shell: nothing is "
                                  "expanded or split)."}},
               "additionalProperties": False}
ANNOTATION_KEYS = ("title", "readOnlyHint", "destructiveHint",
                   "idempotentHint", "openWorldHint")
# A load that found nothing changed in less than this much of its thread's
# CPU (the kept registry's stats of a small project: some 0.05 ms) is
# quick: the server makes the next one where it is asked for, on its event
# loop, where a hop to a worker thread and back would cost more CPU than
# the stats. A slower one (a thousand tools' stats, a changed file read
# again, a scan) sends the next load to a worker thread
# (:meth:`Catalog.quick`). CPU, not wall time: under concurrent calls a
# load on the loop waits for the GIL and the cores, and wall time sent
# half of a small project's loads to a thread and back (measured with 20
# clients over HTTP), for nothing.
QUICK_LOAD = 0.0005


def _timed_load(load: Callable[[], Registry], previous: Registry | None
                ) -> tuple[Registry, tuple[Registry, bool]]:
    """``load()``, and whether it was quick: the same registry as
    ``previous`` (nothing changed), found within :data:`QUICK_LOAD` of
    this thread's CPU."""
    started = time.thread_time()
    registry = load()
    quick = registry is previous and \
        time.thread_time() - started < QUICK_LOAD
    return registry, (registry, quick)


class UnknownTools(Exception):
    """``--tools`` named tools that discovery did not find."""

    def __init__(self, names: list[str], known: list[str]) -> None:
        super().__init__(", ".join(names))
        self.names = names
        self.known = known


class Catalog:
    """The served tools: discovery, the ``--tools`` filter, MCP naming.

    ``load`` returns the current :class:`acor.cli.discovery.registry.Registry`
    (the same object again while nothing it depends on changed: a listing
    is built once per registry); ``only`` is the ``--tools`` set, or None
    for every tool.
    """

    def __init__(self, load: Callable[[], Registry],
                 only: set[str] | None = None,
                 log: TextIO | None = None,
                 load_for_call: Callable[[str], Registry] | None = None
                 ) -> None:
        self._load = load
        self._load_for_call = load_for_call
        self.only = only
        self._log = log if log is not None else sys.stderr
        self._reported: set[str] = set()
        # name -> (what it depends on, the tool)
        self._built: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {}
        # The registry last listed and its listing (replaced whole).
        self._listed: tuple[Registry, list[dict[str, Any]]] | None = None
        # The last load's registry, and whether that load was quick; the
        # same for the loads before a call (:meth:`registry_for_call`).
        self._last: tuple[Registry | None, bool] = (None, False)
        self._last_call: tuple[Registry | None, bool] = (None, False)

    @classmethod
    def of_project(cls, config_path: str | None,
                   only: set[str] | None = None) -> "Catalog":
        """The project's tools, discovered afresh for each listing with
        ``config_path`` (``--config``; else ``ACOR_CONFIG``, else the
        nearest .acor/config.yaml): the one way the server, its HTTP
        twin and ``acor mcp --client`` build their catalog. The registry
        is kept between loads while it is still what discovery would find
        (:class:`acor.cli.discovery.registry.Kept`)."""
        kept = Kept()
        return cls(partial(load_registry, config_path=config_path,
                           kept=kept), only,
                   load_for_call=lambda name: load_registry(
                       config_path=config_path, kept=kept, for_tool=name))

    def registry(self) -> Registry:
        """The current registry; reports what cannot be served."""
        previous, self._last = self._last[0], (None, False)  # if it fails
        registry, self._last = _timed_load(self._load, previous)
        return self._reported_skips(registry)

    def registry_for_call(self, name: str) -> Registry:
        """The current registry for a call of the tool ``name``: the other
        tools' own files are not checked (:meth:`Kept.get
        <acor.cli.discovery.registry.Kept.get>`), which the check after
        the call does. Its quickness is its own (:attr:`quick_for_call`):
        with a thousand tools this load is quick where the full one is
        not."""
        if self._load_for_call is None:
            return self.registry()
        previous, self._last_call = self._last_call[0], (None, False)
        registry, self._last_call = _timed_load(
            partial(self._load_for_call, name), previous)
        return self._reported_skips(registry)

    def _reported_skips(self, registry: Registry) -> Registry:
        for skipped in registry.skipped:
            self._report(f"skipped:{skipped.path}:{skipped.reason}",
                         f"manifest {skipped.path} is not served: "
                         f"{skipped.reason} ({skipped.recovery})")
        return registry

    @property
    def quick(self) -> bool:
        """Whether the last load found the registry unchanged within
        :data:`QUICK_LOAD`: the next one may be made on the event loop. A
        change found there is loaded there once (a cache file read, or a
        scan of the project), then loads go to a thread until they are
        quick again."""
        return self._last[1]

    @property
    def quick_for_call(self) -> bool:
        """:attr:`quick`, for :meth:`registry_for_call`."""
        return self._last_call[1] if self._load_for_call is not None \
            else self._last[1]

    def check_only(self, registry: Registry) -> None:
        """Raise :class:`UnknownTools` when ``--tools`` names a tool that
        does not exist (a typo would otherwise hide a tool silently)."""
        if self.only is None:
            return
        missing = sorted(self.only - set(registry.tools))
        if missing:
            raise UnknownTools(missing, sorted(registry.tools))

    def served(self, registry: Registry) -> list[ToolSpec]:
        """The ToolSpecs served, in discovery order."""
        specs = []
        for name, spec in registry.tools.items():
            if self.only is not None and name not in self.only:
                continue
            if not MCP_NAME.fullmatch(name):
                self._report(f"name:{name}",
                             f"tool {name!r} is not served: MCP tool names "
                             "are 1-128 letters, digits, '_', '-' or '.'")
                continue
            specs.append(spec)
        return specs

    def get(self, registry: Registry, name: str) -> ToolSpec | None:
        """The served ToolSpec called ``name``, or None."""
        return self.served_tools(registry).get(name)

    def served_tools(self, registry: Registry) -> "ServedTools":
        """The tools served from ``registry``, by name."""
        return ServedTools(registry, self.only)

    def listing(self, registry: Registry | None = None
                ) -> list[dict[str, Any]]:
        """``tools/list``: one MCP tool (wire form) per served tool, of
        ``registry`` (None: the current one).

        The same list again for the same registry (what the server keeps
        while nothing changed); else each tool is built again only when its
        manifest changed: comparing a few values costs far less than
        rebuilding 1,000 schemas."""
        if registry is None:
            registry = self.registry()
        listed = self._listed
        if listed is not None and listed[0] is registry:
            return listed[1]
        built: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {}
        tools = []
        for spec in self.served(registry):
            budget = output_budget(spec, registry.config)
            key = (spec.description, spec.usage, spec.args_public,
                   spec.annotations, budget, spec.output_schema)
            entry = self._built.get(spec.name)
            if entry is None or entry[0] != key:
                entry = (key, mcp_tool(spec, budget))
            built[spec.name] = entry
            tools.append(entry[1])
        self._built = built  # one assignment: safe if listings overlap
        self._listed = (registry, tools)
        return tools

    def _report(self, key: str, message: str) -> None:
        if key not in self._reported:
            self._reported.add(key)
            print(f"acor mcp: {message}", file=self._log, flush=True)


# Claude Code keeps a tool's result whole up to this many characters when
# the tool says so (and cuts it at its own, lower, default otherwise).
RESULT_SIZE_META = "anthropic/maxResultSizeChars"
# What a result holds beyond the budgeted output: its status, error,
# links to the whole output, acor's record of the run.
RESULT_FRAME_CHARS = 8192


class ServedTools:
    """The tools a catalog serves from one registry, looked up by name: what
    a result's next command may call (:mod:`acor.cli.mcp.nextcall`)."""

    def __init__(self, registry: Registry, only: set[str] | None) -> None:
        self._registry = registry
        self._only = only

    def get(self, name: str) -> ToolSpec | None:
        """The served ToolSpec called ``name``, or None."""
        spec: ToolSpec | None = self._registry.get(name)
        if spec is None or (self._only is not None and
                            name not in self._only) \
                or not MCP_NAME.fullmatch(name):
            return None
        return spec


def mcp_tool(spec: ToolSpec, budget: int | None = None) -> dict[str, Any]:
    """A ToolSpec as an MCP ``Tool``, in its JSON form; ``budget``, its
    output budget in bytes, is told to hosts that read one."""
    public = spec.args_public  # None for a free-argv tool
    description = spec.description
    if public is None and spec.usage:
        # No schema: the usage line is all a model has to build the argv.
        description = f"{description or ''}\n\nUsage: {spec.usage}\nPass " \
                      f"the arguments after the tool name as \"argv\"."
    tool = {"name": spec.name, "description": description,
            "inputSchema": input_schema(public)}
    annotations = tool_annotations(spec)
    if annotations:
        tool["annotations"] = annotations
    if spec.output_schema:  # a function tool's return annotation
        tool["outputSchema"] = spec.output_schema
    if budget:
        tool["_meta"] = {RESULT_SIZE_META: budget + RESULT_FRAME_CHARS}
    return tool


def tool_args(spec: ToolSpec) -> dict[str, Any] | None:
    """The manifest's ``args`` schema, or None for a free-argv tool."""
    return spec.args_schema or None


def input_schema(public: dict[str, Any] | None) -> dict[str, Any]:
    """What a client validates its arguments against: the tool's public
    args schema (see :class:`acor.cli.discovery.spec.ToolSpec`), else an
    argv."""
    if public is None:
        return ARGV_SCHEMA
    schema = dict(public)
    schema.setdefault("type", "object")
    return schema


def tool_annotations(spec: ToolSpec) -> dict[str, Any]:
    """The manifest's behaviour hints, as MCP ``ToolAnnotations``."""
    hints = spec.annotations or {}
    return {key: hints[key] for key in ANNOTATION_KEYS if key in hints}
