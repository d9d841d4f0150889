"""A start/status pair of tools for clients without the Tasks extension.

A host that caps a call (the TypeScript SDK's client: 60 s unless told
otherwise, and progress resets it only when asked to) loses any run longer
than its cap: the call is cancelled and the run stopped. So to a client
that does not declare the extension, a server with task tools (a
manifest's or ``@tool``'s ``task``) also lists ``acor_task_start``, which
starts one of them as a task and answers at once with its id, and
``acor_task_status``, which answers the task's status and, once it ended,
the tool's own result. The task is the very one :mod:`acor.cli.mcp.tasks`
runs: the same store, leases, TTL and takeover, bound to the caller in the
same way (another identity's task is "not found"). A question the tool
asks through the pair is never put to the client (it has no
``tasks/update``): the task completes with the result that says who must
answer and the exact command, as a question only a person may answer does.
"""

import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import mcp_types as types

from acor.cli.arguments import call_argv
from acor.cli.errors import UsageError
from acor.cli.mcp import results
from acor.cli.mcp.tasks import Tasks, declares_tasks, identity
from acor.cli.mcp.versions import MODERN_VERSIONS
from acor.cli.tasks.store import Task

START = "acor_task_start"
STATUS = "acor_task_status"
Handler = Callable[[Any, Any], Awaitable[Any]]

START_DEFINITION: dict[str, Any] = {
    "name": START,
    "title": "Start a long tool run",
    "description": (
        "Start one of the tools that run long (listed in this tool's 'tool' "
        "choices) and answer at once with a task id; then call "
        f"{STATUS} with it until the task has ended, which answers the "
        "tool's own result. Use it instead of calling such a tool directly "
        "when a direct call would be cut off by a time limit."),
    "inputSchema": {"type": "object", "required": ["tool"], "properties": {
        "tool": {"type": "string", "description": "the tool to run"},
        "arguments": {"type": "object",
                      "description": "its arguments, as a direct call's"}},
        "additionalProperties": False},
    "annotations": {"openWorldHint": True},
}
STATUS_DEFINITION: dict[str, Any] = {
    "name": STATUS,
    "title": "A long tool run's status",
    "description": (
        f"The status of a task {START} started: still working (call again "
        "after the seconds it says), or ended, with the tool's result."),
    "inputSchema": {"type": "object", "required": ["taskId"], "properties": {
        "taskId": {"type": "string", "description": "the task's id"}},
        "additionalProperties": False},
    "annotations": {"readOnlyHint": True},
}


def _reply(text: str, data: dict[str, Any], error: bool = False
           ) -> dict[str, Any]:
    return {"content": [results.acor_text("task", text)],
            "structuredContent": data, "isError": error}


def _status_reply(task: Task) -> dict[str, Any]:
    """What ``acor_task_status`` answers for ``task``."""
    data: dict[str, Any] = {"taskId": task.id, "status": task.status,
                            "statusMessage": task.message or ""}
    if task.status == "completed" and task.result is not None:
        return dict(task.result)  # the tool's own result, as a call's
    if task.status == "failed":
        message = (task.error or {}).get("message") or task.message or ""
        return _reply(f"The task failed: {message}", data, error=True)
    if task.status == "cancelled":
        return _reply("The task was cancelled.", data, error=True)
    wait = max(1, task.poll_ms // 1000)
    return _reply(f"Still {task.status}: {task.message or 'running'}. Call "
                  f"{STATUS} again in {wait} s.", data)


class Pair:
    """The pair on a server whose tasks are ``tasks``."""

    def __init__(self, tasks: Tasks) -> None:
        self.tasks = tasks

    def wrap_list(self, inner: Handler) -> Handler:
        async def listing(ctx: Any, params: Any) -> Any:
            found = await inner(ctx, params)
            if declares_tasks(getattr(ctx, "meta", None)):
                return found  # it has the extension itself
            names = await anyio.to_thread.run_sync(self._task_tools)
            if names:
                start = {**START_DEFINITION}
                start["inputSchema"] = {**start["inputSchema"],
                                        "properties": {
                    **start["inputSchema"]["properties"],
                    "tool": {"type": "string", "enum": names,
                             "description": "the tool to run"}}}
                found["tools"] = [*found["tools"], start, STATUS_DEFINITION]
            return found
        return listing

    def wrap_call(self, inner: Handler) -> Handler:
        async def call(ctx: Any, params: types.CallToolRequestParams) -> Any:
            if params.name not in (START, STATUS):
                return await inner(ctx, params)
            reply = await anyio.to_thread.run_sync(
                self._start if params.name == START else self._status,
                ctx, dict(params.arguments or {}))
            if ctx.protocol_version in MODERN_VERSIONS:
                reply["resultType"] = "complete"
            else:  # a task's result kept at 2026-07-28, read before it
                reply.pop("resultType", None)
            return reply
        return call

    def _task_tools(self) -> list[str]:
        catalog = self.tasks.catalog
        return sorted(spec.name for spec in
                      catalog.served(catalog.registry())
                      if getattr(spec, "task", None))

    def _start(self, ctx: Any, arguments: dict[str, Any]) -> dict[str, Any]:
        name = arguments.get("tool")
        given = arguments.get("arguments") or {}
        catalog = self.tasks.catalog
        spec = catalog.get(catalog.registry(), name) \
            if isinstance(name, str) else None
        if spec is None or not getattr(spec, "task", None) or \
                not isinstance(given, dict):
            return _reply(
                f"{str(name)[:80]!r} is not a tool {START} runs: name one of "
                f"{', '.join(self._task_tools()) or '(none)'}, with its "
                "arguments as an object.", {}, error=True)
        try:
            call_argv(spec, dict(given))
        except UsageError as exc:  # answered at once, nothing started
            reply: dict[str, Any] = results.usage_result(spec.name, exc)
            return reply
        task = self.tasks.create(spec, dict(given), identity(ctx),
                                 ctx.protocol_version, pair=True)
        return _reply(
            f"Started task {task.id} ({spec.name}). Call {STATUS} with "
            f'{{"taskId": "{task.id}"}} in {task.poll_ms // 1000} s, and '
            "again until it has ended.",
            {"taskId": task.id, "status": task.status,
             "pollIntervalMs": task.poll_ms})

    def _status(self, ctx: Any, arguments: dict[str, Any]
                ) -> dict[str, Any]:
        task_id = arguments.get("taskId")
        store = self.tasks.store()
        task = store.get(task_id, identity(ctx)) \
            if isinstance(task_id, str) else None
        if task is not None and task.expired(time.time()):
            store.delete(task.id)
            task = None
        if task is None:
            return _reply(f"No task {str(task_id)[:80]!r}: it is not yours, "
                          "it expired, or there never was one.", {},
                          error=True)
        return _status_reply(task)


def install(server: Any, tasks: Tasks) -> None:
    """Serve the pair on ``server`` beside ``tasks`` (its tools/list and
    tools/call handlers wrapped)."""
    pair = Pair(tasks)
    for method, wrap in (("tools/list", pair.wrap_list),
                         ("tools/call", pair.wrap_call)):
        entry = server.get_request_handler(method)
        if entry is not None:
            server.add_request_handler(method, entry.params_type,
                                       wrap(entry.handler))
