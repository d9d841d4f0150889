"""``subscriptions/listen`` (2026-07-28): the one stream a client opens
for what the server tells it outside a request, carrying both the tools'
list changes (:mod:`acor.cli.mcp.listchanged` publishes them on the bus)
and the Tasks extension's ``notifications/tasks``.

The SDK's ``ListenHandler`` serves the list changes but cannot carry the
tasks: its acknowledgement rebuilds the filter from the four fields it
knows, so ``taskIds`` never reaches the client, and its events are a
closed union. So acor serves the method itself, as the SDK does for the
four kinds (each requested kind acknowledged, each bus event stamped
with the subscription id) and, for a client that declares the extension
on the listen request, the tasks it asked for:

* The acknowledgement lists only the ids of the caller's own live tasks:
  another identity's, an unknown or an expired one is left out, as
  ``tasks/get`` says "not found" (:func:`acor.cli.mcp.tasks.identity`).
* Those rows are watched by polling the store, off the event loop: a task
  changes on whichever server holds it, or by ``acor tasks cancel``, so an
  event of this process would miss them. Each watched task is sent once as
  ``tasks/get`` shows it now (a task that finished before the stream opened
  is told at once), then again whenever its status or ``lastUpdatedAt``
  moves; after its terminal notification it is no longer watched.
* A client asking for ``taskIds`` without declaring the extension gets
  -32021, naming it.
"""

import logging
import time
from collections.abc import Callable
from typing import Any, Literal, cast

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import SUBSCRIPTION_ID_META_KEY, SubscriptionBus
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import (ServerEvent, event_matches,
                                      event_to_notification)

from acor.cli.mcp.tasks import (Tasks, declares_tasks, detailed, identity,
                                missing_capability)
from acor.cli.tasks.store import Task

Context = ServerRequestContext[Any, Any]
MAX_STREAMS = 1024         # open listen streams of this process
MAX_BUFFERED = 1024        # frames a stream holds for a client not reading
MAX_TASK_IDS = 100         # tasks one stream may watch
WATCH_EVERY_S = 1.0        # the store is read this often per stream

logger = logging.getLogger(__name__)


class TaskNotification(types.Notification[dict[str, Any],
                                          Literal["notifications/tasks"]]):
    """The extension's ``notifications/tasks``: a detailed task, as
    ``tasks/get`` answers it, stamped with the subscription id. (The SDK's
    own ``TaskStatusNotification`` is 2025-11-25's, another method.)"""

    method: Literal["notifications/tasks"] = "notifications/tasks"


# One frame for the stream's writer: a bus event, or a task to tell.
Frame = ServerEvent | dict[str, Any]


def _requested_ids(requested: types.SubscriptionFilter) -> list[str] | None:
    """The ``taskIds`` the client asked for (None: it asked for none),
    each once, in order."""
    raw = (requested.model_extra or {}).get("taskIds")
    if raw is None:
        return None
    if not isinstance(raw, list) or \
            not all(isinstance(item, str) for item in raw):
        raise MCPError(types.INVALID_PARAMS,
                       "notifications.taskIds must be a list of task ids")
    ids = list(dict.fromkeys(raw))
    if len(ids) > MAX_TASK_IDS:
        raise MCPError(types.INVALID_PARAMS, (
            f"notifications.taskIds names {len(ids)} tasks; one stream "
            f"watches at most {MAX_TASK_IDS}: open another stream for the "
            "rest"))
    return ids


def _honored(requested: types.SubscriptionFilter,
             task_ids: list[str]) -> types.SubscriptionFilter:
    """What the acknowledgement says will be sent: every kind of the four
    the client asked for (as the SDK acknowledges them), and the task ids
    agreed to, when there are any."""
    honored: dict[str, Any] = {
        "toolsListChanged": requested.tools_list_changed or None,
        "promptsListChanged": requested.prompts_list_changed or None,
        "resourcesListChanged": requested.resources_list_changed or None,
        "resourceSubscriptions": list(requested.resource_subscriptions or ())
        or None,
        "taskIds": task_ids or None}
    return types.SubscriptionFilter.model_validate(
        {key: value for key, value in honored.items() if value is not None})


class ListenHandler:
    """Serves ``subscriptions/listen`` on the server's ``bus`` (the tools'
    list changes) and ``tasks``' store."""

    def __init__(self, bus: SubscriptionBus, tasks: Tasks) -> None:
        self._bus = bus
        self._tasks = tasks
        self._open = 0

    async def __call__(self, ctx: Context,
                       params: types.SubscriptionsListenRequestParams
                       ) -> types.SubscriptionsListenResult:
        subscription_id = ctx.request_id
        if subscription_id is None:
            raise MCPError(types.INVALID_REQUEST,
                           "subscriptions/listen requires a request id")
        if self._open >= MAX_STREAMS:
            raise MCPError(types.INTERNAL_ERROR, "Subscription limit reached")
        if "taskIds" in (params.notifications.model_extra or {}) and \
                not declares_tasks(ctx.meta):
            raise missing_capability("subscriptions/listen with taskIds")
        asked = _requested_ids(params.notifications)
        owner = identity(ctx)
        task_ids = await anyio.to_thread.run_sync(
            self._owned, asked or [], owner) if asked else []
        honored = _honored(params.notifications, task_ids)
        meta: dict[str, Any] = {SUBSCRIPTION_ID_META_KEY: subscription_id}
        self._open += 1
        try:
            await self._serve(ctx, honored, task_ids, owner, meta)
        finally:
            self._open -= 1
        return types.SubscriptionsListenResult(_meta=meta)

    async def _serve(self, ctx: Context, honored: types.SubscriptionFilter,
                     task_ids: list[str], owner: str,
                     meta: dict[str, Any]) -> None:
        """The acknowledgement, then every frame until the client goes."""
        uris = frozenset(honored.resource_subscriptions or ())
        send, receive = anyio.create_memory_object_stream[Frame](
            MAX_BUFFERED)

        def deliver(frame: Frame) -> None:
            try:
                send.send_nowait(frame)
            except anyio.ClosedResourceError:
                pass  # the stream is ending
            except anyio.WouldBlock:
                # A client that stopped reading: its stream ends (it
                # re-listens and asks again; nothing is replayed).
                logger.warning("listen stream %r backlog full; ending it",
                               meta[SUBSCRIPTION_ID_META_KEY])
                send.close()

        def on_event(event: ServerEvent) -> None:
            if event_matches(honored, uris, event):
                deliver(event)

        # Subscribed before the acknowledgement: a change published while
        # it is written is kept, and sent after it (this task alone writes).
        unsubscribe = self._bus.subscribe(on_event)
        try:
            await ctx.session.send_notification(
                types.SubscriptionsAcknowledgedNotification(
                    params=types.SubscriptionsAcknowledgedNotificationParams(
                        notifications=honored, _meta=meta)),
                related_request_id=ctx.request_id)
            async with anyio.create_task_group() as group:
                if task_ids:
                    group.start_soon(self._watch, task_ids, owner, deliver)
                async for frame in receive:
                    await ctx.session.send_notification(
                        self._notification(frame, meta),
                        related_request_id=ctx.request_id)
                group.cancel_scope.cancel()
        finally:
            unsubscribe()
            send.close()
            receive.close()

    @staticmethod
    def _notification(frame: Frame, meta: dict[str, Any]
                      ) -> types.ServerNotification:
        if not isinstance(frame, dict):
            return event_to_notification(frame, meta)
        # The SDK's union leaves the extension's notification out; the
        # session sends any notification model as it dumps.
        return cast(types.ServerNotification,
                    TaskNotification(params={**frame, "_meta": meta}))

    def _owned(self, task_ids: list[str], owner: str) -> list[str]:
        """The ids among ``task_ids`` of ``owner``'s live tasks."""
        return list(self._rows(task_ids, owner))

    async def _watch(self, task_ids: list[str], owner: str,
                     deliver: Callable[[Frame], None]) -> None:
        """Poll the store for ``task_ids`` and deliver each change, until
        every one is told terminal (or gone)."""
        seen: dict[str, tuple[str, float]] = {}
        watching = list(task_ids)
        while watching:
            rows = await anyio.to_thread.run_sync(self._rows, watching,
                                                  owner)
            for task_id in list(watching):
                task = rows.get(task_id)
                if task is None:  # deleted or expired: nothing more to tell
                    watching.remove(task_id)
                    continue
                state = (task.status, task.updated)
                if seen.get(task_id) != state:
                    seen[task_id] = state
                    deliver(detailed(task))
                if task.terminal:
                    watching.remove(task_id)
            if watching:
                await anyio.sleep(WATCH_EVERY_S)

    def _rows(self, task_ids: list[str], owner: str) -> dict[str, Task]:
        """``owner``'s live tasks among ``task_ids``, by id (another's, an
        unknown or an expired one is not there, as for ``tasks/get``)."""
        store = self._tasks.store()
        now = time.time()
        rows = {}
        for task_id in task_ids:
            task = store.get(task_id, owner)
            if task is not None and not task.expired(now):
                rows[task_id] = task
        return rows
