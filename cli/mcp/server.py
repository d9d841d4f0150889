"""``acor mcp``: every acor tool, served to MCP clients over stdio.

Claude Code, Claude Desktop, Cursor and other agent clients start this
command and speak the Model Context Protocol on its stdin and stdout. The
MCP SDK is an optional extra (``mcp``, see the README) and is imported
only here, in a background thread, while :mod:`acor.cli.mcp.boot` (standard
library only) answers the client's opening request. The click command is
:mod:`acor.cli.commands.mcp`.

Start-up, in order: check the extra is there (else an error on stderr,
exit 2); move stdin and stdout aside (stdout belongs to JSON-RPC); start
importing the SDK; load the registry and check ``--tools`` (an error on
stderr, exit 2); answer the opening request; serve (:mod:`cli.mcp_app`).
"""

import importlib
import sys
import threading
from typing import Any
from importlib.util import find_spec


from acor import exitcodes
from acor.events import Error

from acor.cli.durations import check_seconds
from acor.cli.package_data import MCP_INSTALL

INSTALL = MCP_INSTALL
MIN_SDK = "2.3"
EARLY_WAIT = 0.2  # seconds to wait for the opening request before importing


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


class SdkLoader(threading.Thread):
    """Imports :mod:`cli.mcp_app` (and with it the SDK) in the background."""

    def __init__(self) -> None:
        super().__init__(name="acor-mcp-import", daemon=True)
        self.module: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.module = importlib.import_module("acor.cli.mcp.app")
        except BaseException as exc:  # result() raises it in the main thread
            self.error = exc

    def result(self):
        self.join()
        if self.error is not None:
            raise self.error
        return self.module


def parse_options(tools: str | None, timeout: str | None):
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


def serve(only: set[str] | None, timeout: float | None,
          config_path: str | None = None, key: str | None = None) -> int:
    """Serve over stdio. ``key``: ``ACOR_MCP_KEY`` as the command took it
    from the environment (:mod:`acor.cli.run.own_secrets`)."""
    problem = sdk_problem()
    if problem is not None:
        return fail(problem)
    from acor.cli.mcp.boot import Wire, open_session
    from acor.cli.mcp.tools import Catalog
    wire = Wire.claim()
    loader = SdkLoader()
    catalog = Catalog.of_project(config_path, only)
    problem = start_problem(catalog, key)
    if problem is not None:
        return fail(problem)
    # A client sends its opening request as soon as it has started us, so
    # it is usually waiting already: answer it before the SDK import starts
    # competing for the interpreter. A client that waits gets the import
    # started meanwhile.
    waiting = wire.readable(timeout=EARLY_WAIT)
    if not waiting:
        loader.start()
    opening = open_session(wire)
    if opening is None:
        return exitcodes.OK  # the client left without a word
    if waiting:
        loader.start()
    try:
        app = loader.result()
    except ImportError as exc:
        return fail(Error(f"The MCP SDK failed to import: {exc}",
                           "E_MCP_MISSING", f"python: {sys.executable}",
                           f"Reinstall it: `{INSTALL}`."))
    # Started now, from this thread, once the client has its answer: every
    # call of a Python tool then forks from it (see acor.cli.run.warm).
    from acor.cli.run.warm import WarmStarter
    warm = WarmStarter()
    try:
        return app.serve_stdio(app.build_server(catalog, timeout=timeout,
                                                warm=warm, key=key),
                               wire, opening)
    finally:
        warm.close()


def unknown_tools(exc, config) -> Error:
    """The error for ``--tools`` names that are not tools (``exc``, an
    :class:`acor.cli.mcp.tools.UnknownTools`), saying where acor looked:
    an MCP client starts its servers in a folder of its own choosing, so
    the usual cause is a server that never found the project."""
    from acor.cli.textsafe import printable
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


def start_problem(catalog, key: str | None = None) -> Error | None:
    """Why ``acor mcp`` (stdio or HTTP) cannot start with this catalog and
    ``key`` (``ACOR_MCP_KEY`` as taken), or None: a bad config, an unknown
    --tools name, an unusable key."""
    from acor.cli.discovery.config import ConfigError
    from acor.cli.mcp.keys import ENV, KeyProblem, shared_keys
    from acor.cli.mcp.tools import UnknownTools
    try:
        shared_keys(key)
    except KeyProblem as exc:
        return Error(str(exc), "E_MCP_KEY", f"variable: {ENV}",
                     f"Fix or unset {ENV}, then start acor mcp again.")
    try:
        registry = catalog.registry()
        catalog.check_only(registry)
    except ConfigError as exc:
        from acor.cli.errors import config_error
        return config_error(exc).to_event()
    except UnknownTools as exc:
        return unknown_tools(exc, registry.config)
    return None


def fail(error: Error) -> int:
    """Report on stderr (stdout belongs to JSON-RPC), in ACOR form; exit 2."""
    from acor.cli.errors import UsageError
    from acor.cli.output.formats import report
    return report(UsageError(error.title, error.recovery, code=error.code,
                             details=error.details, next=error.next),
                  None, out=sys.stderr.buffer)
