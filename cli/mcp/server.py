"""The MCP server: the SDK's low-level ``Server`` with acor's handlers,
whatever the transport (:mod:`acor.cli.mcp.transports.stdio_streams`,
:mod:`acor.cli.mcp.transports.http`).

``tools/list`` is answered from the catalog (:mod:`acor.cli.mcp.tools`),
``tools/call`` by :class:`acor.cli.mcp.calls.CallHandler`; requestState
leaves sealed and comes back verified (:mod:`acor.cli.mcp.keys`). This
module imports the SDK (about 0.9 s): the stdio transport imports it in a
background thread while the first answer goes out.
"""

from functools import partial
from typing import Any

from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.request_state import (RequestStateBoundary,
                                      RequestStateSecurity)
from mcp.server.subscriptions import InMemorySubscriptionBus
from mcp_types import (PaginatedRequestParams, ServerCapabilities,
                       SubscriptionsListenRequestParams)

from acor import __version__

from acor.cli.mcp.calls import CallHandler, RunTool, current, protocol_error
from acor.cli.mcp.handshake import INSTRUCTIONS, SERVER_NAME, SERVER_TITLE
from acor.cli.mcp.keys import shared_keys
from acor.cli.mcp.listchanged import ListWatch
from acor.cli.mcp.listen import ListenHandler
from acor.cli.mcp.resources import install as install_resources
from acor.cli.mcp.task_pair import install as install_task_pair
from acor.cli.mcp.tasks import install as install_tasks
from acor.cli.mcp.tools import Catalog
from acor.cli.mcp.versions import MODERN_VERSIONS
from acor.cli.run.launch import run as launch_run
from acor.cli.run.warm import WarmStarter


class AcorServer(Server[Any]):
    """The SDK's low-level server, declaring what acor does: the tools'
    ``listChanged`` as :mod:`acor.cli.mcp.listchanged` sends it (before
    2026-07-28 only with a connection to send it on; at 2026-07-28 to
    ``subscriptions/listen`` streams), and never a resources change, which
    acor does not send (a client re-lists what a result linked)."""

    def __init__(self, *args: Any, connections: bool = True,
                 one_process: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.connections = connections
        self.one_process = one_process

    def get_capabilities(self, *args: Any, **kwargs: Any
                         ) -> ServerCapabilities:
        capabilities = super().get_capabilities(*args, **kwargs)
        modern = kwargs.get("protocol_version") in MODERN_VERSIONS
        if capabilities.tools is not None:
            # Several processes: a listen stream hears only of the changes
            # its own process saw, so none is promised.
            capabilities.tools.list_changed = self.one_process and (
                modern or self.connections)
        if capabilities.resources is not None:
            capabilities.resources.list_changed = False
            capabilities.resources.subscribe = False
        return capabilities


def build_server(catalog: Catalog, run: RunTool | None = None, *,
                 timeout: float | None = None,
                 warm: WarmStarter | None = None,
                 key: str | None = None,
                 connections: bool = True,
                 one_process: bool = True) -> Server[Any]:
    """The server for ``catalog``. ``run`` defaults to the runner's, with
    ``warm`` starting Python tools; tests pass their own. ``key``:
    ``ACOR_MCP_KEY`` as the server took it (None: a key of this process's
    own). ``connections``: False for stateless HTTP, where a client before
    2026-07-28 has no connection a change could be told on; ``one_process``
    False for several workers (:class:`AcorServer`)."""
    if run is None:
        run = partial(launch_run, warm=warm)
    bus = InMemorySubscriptionBus()

    async def tools_now() -> list[dict[str, Any]]:
        return await current(catalog.listing, catalog.quick)
    watch = ListWatch(tools_now, bus)

    async def list_tools(ctx: ServerRequestContext[Any, Any],
                         params: PaginatedRequestParams | None
                         ) -> dict[str, Any]:
        # Discovery stats files: off the event loop unless that is quick. A
        # plain dict: the SDK validates the result once, for the client's
        # version.
        try:
            tools = await tools_now()
        except Exception as exc:
            raise protocol_error(exc, "the tools listing") from None
        watch.listed(ctx, tools)
        listing: dict[str, Any] = {"tools": tools}
        if ctx.protocol_version in MODERN_VERSIONS:
            # Required at 2026-07-28; 0 and private: re-list freely, never
            # share one user's listing with another.
            listing.update(resultType="complete", ttlMs=0,
                           cacheScope="private")
        return listing

    # list_tools returns the listing as a dict, which the SDK validates once
    # for the client's version (typed, it would be built twice).
    server: Server[Any] = AcorServer(
        SERVER_NAME, version=__version__, title=SERVER_TITLE,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=CallHandler(catalog, run, timeout=timeout),
        connections=connections, one_process=one_process)
    # requestState leaves sealed (AES-GCM under a key of this process, or
    # ACOR_MCP_KEY's, shared by replicas) and comes back verified and bound
    # to the same tool and arguments.
    server.middleware.append(RequestStateBoundary(
        request_state_security(key), default_audience=server.name))
    tasks = install_tasks(server, catalog, run, timeout)  # the extension
    install_task_pair(server, tasks)  # ... and for clients without it
    # One listen stream for the list changes and the tasks' notifications
    # (served, it makes the SDK declare listChanged: AcorServer sets back
    # what acor does not send).
    server.add_request_handler(
        "subscriptions/listen", SubscriptionsListenRequestParams,
        ListenHandler(bus, tasks))
    # After the tasks: a result a task delivers has its links rewritten too.
    install_resources(server, catalog, key)  # linked files, acor_read
    _watching_calls(server, watch)  # last: after whatever a call became
    return server


def _watching_calls(server: Server[Any], watch: ListWatch) -> None:
    """``tools/call`` as installed, then the tools' list checked
    (:mod:`acor.cli.mcp.listchanged`)."""
    call = server.get_request_handler("tools/call")
    assert call is not None
    handler = call.handler

    async def call_tool(ctx: ServerRequestContext[Any, Any],
                        params: Any) -> Any:
        await watch.before_call(ctx)
        result = await handler(ctx, params)
        await watch.after_call(ctx)
        return result

    server.add_request_handler("tools/call", call.params_type, call_tool)


def request_state_security(key: str | None = None) -> RequestStateSecurity:
    """The SDK's RequestStateSecurity for this process, under ``key``'s
    keys (``ACOR_MCP_KEY`` as taken) or, without one, a key of its own."""
    keys = shared_keys(key)
    if keys is None:
        return RequestStateSecurity.ephemeral()
    return RequestStateSecurity(keys=keys)
