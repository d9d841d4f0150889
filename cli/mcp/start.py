"""What ``acor mcp`` checks before it serves, whatever the transport
(:mod:`acor.cli.mcp.transports.stdio`,
:mod:`acor.cli.mcp.transports.http`), and how a failure to start is
reported.

Standard library and acor only: every check runs before the MCP SDK (an
optional extra, ``mcp``) is imported, and every problem is reported on
stderr, since stdout belongs to JSON-RPC.
"""

import sys
from importlib.util import find_spec
from typing import Protocol

from acor.events import Error

from acor.cli.discovery.config import ConfigError
from acor.cli.durations import check_seconds
from acor.cli.errors import UsageError, config_error
from acor.cli.mcp.keys import ENV, KeyProblem, shared_keys
from acor.cli.mcp.tools import Catalog, UnknownTools
from acor.cli.output.formats import report
from acor.cli.package_data import MCP_INSTALL
from acor.cli.textsafe import printable

INSTALL = MCP_INSTALL
MIN_SDK = "2.3"


class Project(Protocol):
    """What a start error says of the project's config (an
    :class:`acor.cli.discovery.config.Config`)."""

    root: str
    path: str | None


def sdk_problem() -> Error | None:
    """Why the MCP SDK cannot be used, or None. Looks, does not import."""
    here = f"{sys.executable} -m {INSTALL}"
    if find_spec("mcp") is None:
        return Error("acor mcp needs the MCP SDK, which is not installed",
                     "E_MCP_MISSING", f"python: {sys.executable}",
                     f"Install acor's mcp extra: `{INSTALL}` (into this "
                     f"environment: `{here}`), then run `acor mcp` again.")
    if find_spec("mcp_types") is None:
        return Error(f"acor mcp needs MCP SDK {MIN_SDK} or later; an older "
                     "one is installed", "E_MCP_MISSING",
                     f"python: {sys.executable}",
                     f"Upgrade it: `{here.replace('install', 'install -U')}`"
                     ", then run `acor mcp` again.")
    return None


def parse_options(tools: str | None, timeout: str | None
                  ) -> tuple[set[str] | None, float | None]:
    """(--tools as a set or None, --timeout as seconds or None); raises
    ValueError with the message. Checked here rather than by click so that
    even a bad option is reported on stderr: stdout belongs to JSON-RPC."""
    only = None
    if tools is not None:
        only = {name.strip() for name in tools.split(",") if name.strip()}
        if not only:
            raise ValueError("--tools needs at least one tool name, e.g. "
                             "--tools hello,csvprofile")
    seconds = None if timeout is None else check_seconds(timeout,
                                                         "--timeout")
    return only, seconds


def unknown_tools(exc: UnknownTools, config: Project) -> Error:
    """The error for ``--tools`` names that are not tools, saying where
    acor looked: an MCP client starts its servers in a folder of its own
    choosing, so the usual cause is a server that never found the
    project."""
    names = ", ".join(printable(name) for name in exc.names)
    root = printable(config.root)
    looked = f"config {printable(config.path)}" if config.path else \
        f"no .acor/config.yaml in {root} or above it"
    recovery = "Fix the names in --tools; `acor list` shows every tool."
    if config.path is None:
        recovery = (f"acor mcp looked for tools in {root}, its working "
                    "directory. If that is not your project (a client "
                    "starts servers in a folder of its own), pin the "
                    "project: add --cwd /abs/project to the server's "
                    "arguments (or --config /abs/project/.acor/config.yaml "
                    "before mcp); `acor mcp --print-config "
                    "claude|cursor|vscode|codex`, run in the project, "
                    "writes the whole entry. " + recovery)
    return Error(f"--tools names unknown tool(s): {names}", "E_UNKNOWN_TOOL",
                 f"known tools: {', '.join(exc.known) or 'none'}; project "
                 f"root: {root} ({looked})", recovery)


def start_problem(catalog: Catalog, key: str | None = None) -> Error | None:
    """Why ``acor mcp`` (stdio or HTTP) cannot start with this catalog and
    ``key`` (``ACOR_MCP_KEY`` as taken), or None: a bad config, an unknown
    --tools name, an unusable key."""
    try:
        shared_keys(key)
    except KeyProblem as exc:
        return Error(str(exc), "E_MCP_KEY", f"variable: {ENV}",
                     f"Fix or unset {ENV}, then start acor mcp again.")
    try:
        registry = catalog.registry()
        catalog.check_only(registry)
    except ConfigError as exc:
        event: Error = config_error(exc).to_event()
        return event
    except UnknownTools as exc:
        return unknown_tools(exc, registry.config)
    return None


def fail(error: Error) -> int:
    """Report on stderr (stdout belongs to JSON-RPC), in ACOR form; exit 2."""
    code: int = report(UsageError(error.title, error.recovery,
                                  code=error.code, details=error.details,
                                  next=error.next),
                       None, out=sys.stderr.buffer)
    return code
