"""``notifications/tools/list_changed``: telling a client that the tools it
was served are no longer the ones it would be served.

The served set changes while ``acor mcp`` runs: a tool is added or removed,
its manifest or its function is edited, or ``acor.lock`` stops serving it
(:mod:`acor.cli.discovery.lock`). Discovery is checked on every listing
and every call (:mod:`acor.cli.mcp.tools`), so the server learns of a
change there: after each ``tools/call`` it compares the digest of the
listing it would send now (every served tool's name and definition, as in
``tools/list``) with the last one each client was sent, and tells the
client when they differ. That check costs a ``stat()`` of each path
discovery depends on: while none moved, the catalog hands back the very
registry the call ran with and the listing already built from it, whose
digest is known, so nothing is listed or hashed again. It is made after
the call, not taken from the registry the call started with, because the
call itself may have changed the tools (a tool that writes a tool, or
edits its own manifest, as the conformance suite's does).

* Before 2026-07-28, a client has a connection of its own: the
  notification goes to that client, on the call's own stream (so a
  stateful HTTP session gets it without a standing GET stream), once per
  change. A stateless HTTP server has no connection to remember a client
  by, and says ``listChanged: false``.
* At 2026-07-28, change notifications reach only the clients that asked
  for them with ``subscriptions/listen``: the change is published on the
  server's bus, and every open listen stream of this process
  (:mod:`acor.cli.mcp.listen`, which carries the tasks' notifications on
  the same stream) gets it.
"""

import hashlib
import json
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import InMemorySubscriptionBus, ToolsListChanged
from mcp_types import ToolListChangedNotification

from acor.cli.mcp.versions import MODERN_VERSIONS

Context = ServerRequestContext[Any, Any]
# Connections remembered before the oldest is forgotten (it then learns of
# a change at its next listing, as a client that never listed does).
MAX_CONNECTIONS = 1024


def digest(tools: list[dict[str, Any]]) -> str:
    """The digest of a ``tools/list`` listing: the served names and their
    definitions, in any order."""
    named = sorted(tools, key=lambda tool: str(tool.get("name")))
    text = json.dumps(named, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class ListWatch:
    """What each client was last served, and the notification when the
    listing moved on. ``listing`` builds the listing now (the catalog's,
    off the event loop unless that is quick:
    :func:`acor.cli.mcp.calls.current`); ``bus`` carries 2026-07-28's
    change events to listen streams."""

    def __init__(self,
                 listing: Callable[[], Awaitable[list[dict[str, Any]]]],
                 bus: InMemorySubscriptionBus) -> None:
        self._listing = listing
        self.bus = bus
        # connection key -> (the connection's parameters, kept alive so
        # their id names no other connection; the digest it was sent)
        self._sent: OrderedDict[int, tuple[object, str]] = OrderedDict()
        self._published: str | None = None  # what listen streams know of
        # The last listing digested, kept alive so that the ids of its
        # tools name them alone: the catalog hands out the same tool
        # objects until a tool changes, so an unchanged listing is not
        # serialised again (1,000 tools are not hashed after every call).
        self._last: tuple[list[dict[str, Any]], str] = ([], digest([]))

    def digest(self, tools: list[dict[str, Any]]) -> str:
        """:func:`digest` of ``tools``, the last one's again when they are
        the very same tools."""
        last, known = self._last
        if len(last) == len(tools) and all(
                a is b for a, b in zip(last, tools, strict=True)):
            return known
        current = digest(tools)
        self._last = (list(tools), current)
        return current

    def listed(self, ctx: Context, tools: list[dict[str, Any]]) -> None:
        """``tools`` were just sent to the client of ``ctx``."""
        current = self.digest(tools)
        if ctx.protocol_version in MODERN_VERSIONS:
            # A listing sent to one client is not news for the others: it
            # is published at the next call that finds it changed.
            if self._published is None:
                self._published = current
            return
        self._remember(ctx, current)

    async def before_call(self, ctx: Context) -> None:
        """At 2026-07-28, before the first listing: what listen streams
        are taken to know, so a change the first call makes is news."""
        if self._published is None and \
                ctx.protocol_version in MODERN_VERSIONS:
            try:
                listing = await self._listing()
            except Exception:
                return  # the call says what went wrong
            if self._published is None:
                self._published = self.digest(listing)

    async def after_call(self, ctx: Context) -> None:
        """Tell the client of ``ctx`` (before 2026-07-28) or the listen
        streams (at it) when the listing changed since they last saw it."""
        modern = ctx.protocol_version in MODERN_VERSIONS
        seen = self._published if modern else self._seen(ctx)
        if seen is None:
            return  # nothing listed yet: the first listing will be news
        try:
            current = self.digest(await self._listing())
        except Exception:
            return  # the call's own result already says what went wrong
        if current == seen:
            return
        if modern:
            self._published = current
            await self.bus.publish(ToolsListChanged())
            return
        self._remember(ctx, current)
        # On the call's own stream: a session without a GET stream open
        # gets it too.
        await ctx.session.send_notification(
            ToolListChangedNotification(), related_request_id=ctx.request_id)

    def _seen(self, ctx: Context) -> str | None:
        params = ctx.session.client_params
        entry = self._sent.get(id(params)) if params is not None else None
        return entry[1] if entry is not None and entry[0] is params else None

    def _remember(self, ctx: Context, current: str) -> None:
        params = ctx.session.client_params
        if params is None:  # stateless HTTP: no connection to remember
            return
        self._sent[id(params)] = (params, current)
        self._sent.move_to_end(id(params))
        while len(self._sent) > MAX_CONNECTIONS:
            self._sent.popitem(last=False)

