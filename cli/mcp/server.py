"""The MCP server: the SDK's low-level ``Server`` with acor's handlers,
whatever the transport (:mod:`acor.cli.mcp.stdio_streams`,
:mod:`acor.cli.mcp.http`).

``tools/list`` is answered from the catalog (:mod:`acor.cli.mcp.tools`),
``tools/call`` by :class:`acor.cli.mcp.calls.CallHandler`; requestState
leaves sealed and comes back verified (:mod:`acor.cli.mcp.keys`). This
module imports the SDK (about 0.9 s): the stdio transport imports it in a
background thread while the first answer goes out.
"""

from functools import partial
from typing import Any

import anyio
import anyio.to_thread
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.request_state import (RequestStateBoundary,
                                      RequestStateSecurity)
from mcp_types import PaginatedRequestParams

from acor import __version__

from acor.cli.mcp.calls import CallHandler, RunTool, protocol_error
from acor.cli.mcp.handshake import INSTRUCTIONS, SERVER_NAME, SERVER_TITLE
from acor.cli.mcp.keys import shared_keys
from acor.cli.mcp.resources import install as install_resources
from acor.cli.mcp.task_pair import install as install_task_pair
from acor.cli.mcp.tasks import install as install_tasks
from acor.cli.mcp.tools import Catalog
from acor.cli.mcp.versions import MODERN_VERSIONS
from acor.cli.run.launch import run as launch_run
from acor.cli.run.warm import WarmStarter


def build_server(catalog: Catalog, run: RunTool | None = None, *,
                 timeout: float | None = None,
                 warm: WarmStarter | None = None,
                 key: str | None = None) -> Server[Any]:
    """The server for ``catalog``. ``run`` defaults to the runner's, with
    ``warm`` starting Python tools; tests pass their own. ``key``:
    ``ACOR_MCP_KEY`` as the server took it (None: a key of this process's
    own)."""
    if run is None:
        run = partial(launch_run, warm=warm)

    async def list_tools(ctx: ServerRequestContext[Any, Any],
                         params: PaginatedRequestParams | None
                         ) -> dict[str, Any]:
        # Discovery stats files: off the event loop, like every run. A plain
        # dict: the SDK validates the result once, for the client's version.
        try:
            tools = await anyio.to_thread.run_sync(catalog.listing)
        except Exception as exc:
            raise protocol_error(exc, "the tools listing") from None
        listing: dict[str, Any] = {"tools": tools}
        if ctx.protocol_version in MODERN_VERSIONS:
            # Required at 2026-07-28; 0 and private: re-list freely, never
            # share one user's listing with another.
            listing.update(resultType="complete", ttlMs=0,
                           cacheScope="private")
        return listing

    # list_tools returns the listing as a dict, which the SDK validates once
    # for the client's version (typed, it would be built twice).
    server: Server[Any] = Server(
        SERVER_NAME, version=__version__, title=SERVER_TITLE,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,  # type: ignore[arg-type]
        on_call_tool=CallHandler(catalog, run, timeout=timeout))
    # requestState leaves sealed (AES-GCM under a key of this process, or
    # ACOR_MCP_KEY's, shared by replicas) and comes back verified and bound
    # to the same tool and arguments.
    server.middleware.append(RequestStateBoundary(
        request_state_security(key), default_audience=server.name))
    tasks = install_tasks(server, catalog, run, timeout)  # the extension
    install_task_pair(server, tasks)  # ... and for clients without it
    # After the tasks: a result a task delivers has its links rewritten too.
    install_resources(server, catalog, key)  # linked files, acor_read
    return server


def request_state_security(key: str | None = None) -> RequestStateSecurity:
    """The SDK's RequestStateSecurity for this process, under ``key``'s
    keys (``ACOR_MCP_KEY`` as taken) or, without one, a key of its own."""
    keys = shared_keys(key)
    if keys is None:
        return RequestStateSecurity.ephemeral()
    return RequestStateSecurity(keys=keys)
