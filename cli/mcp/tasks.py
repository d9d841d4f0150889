"""The Tasks extension (``io.modelcontextprotocol/tasks``) on the wire.

A tool whose manifest says ``"task": "optional"`` or ``"required"``,
called at 2026-07-28 by a client that declares the extension in the
request's ``_meta``, is answered at once with ``resultType: "task"``: the
task is in the store (:mod:`acor.cli.tasks.store`) before the answer
leaves, and runs in a worker thread this server owns. The client polls
``tasks/get``, answers a question with ``tasks/update`` and stops the run
with ``tasks/cancel``. Every other call answers as before (the
``CallHandler``). A ``"required"`` tool refuses a client without the
extension (-32021, naming it).

Tasks belong to who created them: over stdio the user running the server,
over HTTP the bearer token the request came with. Any other identity gets
"not found", never a status, a question or a result.
"""

import atexit
import hashlib
import os
import secrets
import socket
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError

from acor.events import Checkpoint, InputNeeded, Progress

from acor.cli.arguments import call_argv
from acor.cli.discovery.config import DEFAULT_STATE_DIR
from acor.cli.errors import UsageError
from acor.cli.approval import fields_of, for_person
from acor.cli.mcp import results
from acor.cli.mcp.calls import current
from acor.cli.mcp.questions import form_of, with_answers
from acor.cli.mcp.tools import tool_args
from acor.cli.mcp.versions import MODERN_VERSIONS
from acor.cli.output.formats import write_stderr
from acor.cli.run.request import build_request
from acor.cli.signals import Cancel
from acor.cli.tasks import group
from acor.cli.tasks.lease import LEASE_S, server_id
from acor.cli.tasks.place import SERVER_ENV
from acor.cli.tasks.row import Task, iso, new_id
from acor.cli.tasks.stores import Keeper, Store, open_store
from acor.cli.textsafe import clean_event, strip_terminal

EXTENSION = "io.modelcontextprotocol/tasks"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
MISSING_CAPABILITY = -32021
TTL_ENV = "ACOR_TASK_TTL_MS"
DEFAULT_TTL_MS = 24 * 3600 * 1000
POLL_MS = 1000
NOTE_EVERY_S = 1.0    # progress written to the store at most this often
ANSWER_POLL_S = 1.0   # an answer given to another server is seen this soon
_NOT_FOUND = "Failed to retrieve task: Task not found"

# The plain call (acor.cli.mcp.calls.CallHandler): the context, the
# params, and the registry this request already loaded (None: load it).
Handler = Callable[[Any, types.CallToolRequestParams, Any], Awaitable[Any]]
# Typed names for the untyped helpers this module shares with the call path.
_clean_event: Callable[[Any], Any] = clean_event
_utf8_safe: Callable[[Any], Any] = results.utf8_safe


def declares_tasks(meta: Any) -> bool:
    """Whether the request's ``_meta`` declares the extension."""
    caps = meta.get(CAPABILITIES_KEY) if isinstance(meta, dict) else None
    extensions = caps.get("extensions") if isinstance(caps, dict) else None
    return isinstance(extensions, dict) and EXTENSION in extensions


def identity(ctx: Any) -> str:
    """Who is asking: over HTTP the bearer token (as a digest: the store
    never holds a token), else the user running this server, and, when
    the store is shared by several machines, this machine's (uid 1000
    elsewhere is someone else)."""
    request = getattr(ctx, "request", None)
    if request is None:
        user = f"user:{os.getuid()}"
        if os.environ.get(SERVER_ENV):
            return f"{user}@{socket.gethostname()}"
        return user
    # The header counts only once the server verified it: a server without
    # a token would otherwise bind tasks to whatever a client sends.
    user = request.scope.get("user")
    auth = request.headers.get("authorization")
    if not auth or not getattr(user, "is_authenticated", False):
        return "http:no-token"
    return "token:" + hashlib.sha256(auth.encode()).hexdigest()[:32]


def missing_capability(what: str) -> MCPError:
    """-32021 for a client without the extension, naming it."""
    return MCPError(MISSING_CAPABILITY, (
        f"Missing required client capability: {what} needs the Tasks "
        f"extension ({EXTENSION}); declare it in the request's _meta "
        f'["{CAPABILITIES_KEY}"].extensions'),
        data={"requiredCapabilities": {"extensions": {EXTENSION: {}}}})


def detailed(task: Task) -> dict[str, Any]:
    """The task as ``tasks/get`` and ``CreateTaskResult`` show it."""
    wire: dict[str, Any] = {
        "taskId": task.id, "status": task.status,
        "createdAt": iso(task.created), "lastUpdatedAt": iso(task.updated),
        "ttlMs": task.ttl_ms, "pollIntervalMs": task.poll_ms}
    if task.message:
        wire["statusMessage"] = task.message
    if task.status == "input_required":
        wire["inputRequests"] = task.input_requests or {}
    elif task.status == "completed":
        wire["result"] = task.result or {"content": [], "isError": False}
    elif task.status == "failed":
        wire["error"] = task.error or {"code": types.INTERNAL_ERROR,
                                       "message": task.message or "failed"}
    return wire


def _ttl_ms() -> int:
    value = os.environ.get(TTL_ENV, "")
    return int(value) if value.isdigit() and int(value) > 0 \
        else DEFAULT_TTL_MS


class UpdateTaskParams(types.GetTaskRequestParams):
    input_responses: dict[str, Any] = {}


class _TaskSink:
    """The runner's sink for a task's run: the events a result shows
    kept, progress and heartbeats written to the store as the
    statusMessage (at most once a second), checkpoints noted."""

    def __init__(self, store: Store, task_id: str) -> None:
        self.store = store
        self.task_id = task_id
        self.events: list[Any] = []
        self._noted = 0.0

    def emit(self, event: Any) -> None:
        event = _clean_event(event)
        if isinstance(event, Progress):
            self._note(f"{event.percent:g}%" + (
                f": {event.message}" if event.message else ""))
        elif isinstance(event, Checkpoint):
            self._note(f"checkpoint {event.id} saved", event.id, force=True)
        if event.type not in ("progress", "heartbeat"):
            self.events.append(event)

    def _note(self, message: str, checkpoint: str | None = None,
              force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._noted >= NOTE_EVERY_S:
            self._noted = now
            self.store.note(self.task_id, message[:500], checkpoint)

    def due(self) -> None:
        return None

    def tick(self) -> None:
        pass

    def heartbeat(self) -> None:
        self._note("working (the tool is alive)")

    def stderr(self, data: bytes) -> None:
        write_stderr(strip_terminal(data.decode("utf-8", "replace")))


class Tasks:
    """This server's tasks: the store (opened on first use), the runs in
    its worker threads, the lease keeper."""

    def __init__(self, catalog: Any, run: Callable[..., Any],
                 timeout: float | None, plain: Handler) -> None:
        self.catalog = catalog
        self._run_tool = run
        self.timeout = timeout
        self.plain = plain
        self.server = server_id()
        self._store: Store | None = None
        self._open_lock = threading.Lock()
        self._cancels: dict[str, Cancel] = {}
        # Guards _cancels: a Cancel is set only while its run holds it (a
        # set() after close() could write into a reused descriptor).
        self._runs_lock = threading.Lock()
        self._answered: dict[str, threading.Event] = {}
        self._keeper: Keeper | None = None
        self._threads: list[threading.Thread] = []
        # Set when this server stops: a run ended by it is left to the
        # server that takes the task over, not marked cancelled.
        self._closing = threading.Event()

    # -- the store and its keeper -------------------------------------------

    def store(self) -> Store:
        """The store: the state dir's embedded one, or the shared one whose
        URL ``acor mcp --task-store`` handed this server (``SERVER_ENV``)."""
        with self._open_lock:
            if self._store is None:
                config = getattr(self.catalog.registry(), "config", None)
                state_dir = getattr(config, "state_dir", None) or \
                    DEFAULT_STATE_DIR
                self._store = open_store(os.environ.get(SERVER_ENV),
                                         state_dir)
                self._keeper = self._store.keep(
                    self.server, self._take_over, self._stop, self._running)
                atexit.register(self.shutdown)
            return self._store

    def shutdown(self) -> None:
        """Stop every run of ours and end our leases: another server takes
        the tasks over at once (a resumable one resumes)."""
        self._closing.set()
        if self._keeper is not None:
            self._keeper.stop()
        with self._runs_lock:
            for cancel in self._cancels.values():
                cancel.set()
        for thread in self._threads:
            thread.join(timeout=10)
        if self._store is not None:
            self._store.release(self.server)

    def _running(self) -> set[str]:
        with self._runs_lock:
            return set(self._cancels)

    def _stop(self, task_id: str) -> None:
        with self._runs_lock:
            cancel = self._cancels.get(task_id)
            if cancel is not None:
                cancel.set()
        event = self._answered.get(task_id)
        if event is not None:
            event.set()

    def _take_over(self, task: Task) -> None:
        """A task whose server died: a resumable tool's run again from its
        session's last checkpoint; any other ends failed, saying why. The
        tool the dead server started is killed first, group and all: a
        silent one would otherwise run on beside its resumed run."""
        store = self.store()
        group.end(task.process)
        store.set_process(task.id, None)
        if task.resumable and not task.cancel:
            store.set_status(task.id, "working", f"resumed by {self.server} "
                             "from its last checkpoint", input_requests=None,
                             input_responses=None)
            self._start(task)
            return
        if task.cancel:
            store.set_status(task.id, "cancelled", "cancelled")
            return
        message = ("The server running this task stopped before the tool "
                   "finished, and the tool cannot resume a stopped run, so "
                   "it was not run again: call the tool again.")
        store.set_status(task.id, "failed", message, error={
            "code": types.INTERNAL_ERROR, "message": message})

    # -- tools/call --------------------------------------------------------

    async def call_tool(self, ctx: Any,
                        params: types.CallToolRequestParams) -> Any:
        if ctx.protocol_version not in MODERN_VERSIONS or \
                params.request_state is not None:
            return await self.plain(ctx, params, None)
        registry = await current(
            partial(self.catalog.registry_for_call, params.name),
            self.catalog.quick_for_call)
        spec = self.catalog.get(registry, params.name)
        mode = getattr(spec, "task", None) if spec is not None else None
        if mode is None:  # a plain call, on the registry found here
            return await self.plain(ctx, params, registry)
        if not declares_tasks(ctx.meta):
            if mode == "required":
                raise missing_capability(f"the tool {params.name!r}")
            return await self.plain(ctx, params, registry)
        arguments = dict(params.arguments or {})
        try:
            call_argv(spec, arguments)
        except UsageError:  # answered at once, as without a task
            return await self.plain(ctx, params, registry)
        task = await anyio.to_thread.run_sync(
            self.create, spec, arguments, identity(ctx),
            ctx.protocol_version)
        return {"resultType": "task", **detailed(task)}

    def create(self, spec: Any, arguments: dict[str, Any], owner: str,
               version: str, pair: bool = False) -> Task:
        """A task running ``spec`` (``pair``: started by a tool, for a
        client without the extension, so no question is put to it)."""
        schema = tool_args(spec)
        resumable = bool(schema and "session" in
                         (schema.get("properties") or {}))
        task_id = new_id()
        if resumable and "session" not in arguments:
            # The task's own session: a server taking it over resumes it.
            arguments["session"] = f"task-{task_id[:24]}"
        task = self.store().create(
            owner=owner, tool=spec.name,
            request={"arguments": arguments, "version": version,
                     "pair": pair},
            ttl_ms=_ttl_ms(), poll_ms=POLL_MS, resumable=resumable,
            server=self.server, lease_s=LEASE_S, task_id=task_id)
        self._start(task)
        return task

    def _start(self, task: Task) -> None:
        with self._runs_lock:
            self._cancels[task.id] = Cancel()
        self._answered[task.id] = threading.Event()
        thread = threading.Thread(target=self._execute, args=(task,),
                                  name=f"acor-task-{task.id[:8]}",
                                  daemon=True)
        self._threads = [t for t in self._threads if t.is_alive()]
        self._threads.append(thread)
        thread.start()

    # -- one task's run ----------------------------------------------------

    def _execute(self, task: Task) -> None:
        store = self.store()
        cancel = self._cancels[task.id]
        try:
            self._drive(task, cancel)
        except Exception as exc:
            import traceback
            write_stderr(f"acor mcp: task {task.id} failed in acor:\n" +
                         "".join(traceback.format_exception(exc)))
            message = (f"acor could not complete the task: "
                       f"{type(exc).__name__}: {str(exc)[:300]}")
            store.set_status(task.id, "failed", message, error={
                "code": types.INTERNAL_ERROR, "message": message})
        finally:
            with self._runs_lock:
                self._cancels.pop(task.id, None)
                cancel.close()
            self._answered.pop(task.id, None)

    def _drive(self, task: Task, cancel: Cancel) -> None:
        store = self.store()
        registry = self.catalog.registry()
        spec = self.catalog.get(registry, task.tool)
        if spec is None:
            raise LookupError(f"the tool {task.tool!r} is no longer served")
        schema = tool_args(spec)
        arguments = dict(task.request.get("arguments") or {})
        version = task.request.get("version") or MODERN_VERSIONS[-1]
        answers: dict[str, Any] = {}
        while True:
            argv = self._argv(task.id, spec, with_answers(
                arguments, answers, None, schema))
            if argv is None:
                return
            result = self._run_once(task.id, spec, argv, registry, cancel)
            if self._closing.is_set():
                return  # our lease ends now: the next server resumes it
            if cancel.is_set() and result.state == "cancelled":
                store.set_status(task.id, "cancelled", "cancelled")
                return
            reply = results.call_result(
                result, protocol_version=version,
                cwd=results.ran_in(spec, registry))
            needed = results.input_needed(result)
            form = None if needed is None or task.request.get("pair") \
                else self._form(needed, schema)
            if needed is None or form is None:
                if needed is not None:  # only a person may answer it
                    _add_text(reply, results.input_needed_text(
                        spec.name, needed, arguments if schema else None,
                        person=True, command=["acor", spec.name, *argv]))
                store.set_status(task.id, "completed", _summary(result),
                                 result=_utf8_safe(reply))
                return
            got = self._ask(task.id, needed, form, cancel)
            if got is None or got.get("action") != "accept":
                self._unanswered(task.id, reply, got)
                return
            answers.update(_accepted(got, form))

    def _argv(self, task_id: str, spec: Any,
              values: dict[str, Any]) -> list[str] | None:
        """The run's argv, or None: the task completed with the usage
        result (answers that do not fit the tool)."""
        try:
            argv: list[str] = call_argv(spec, values)
        except UsageError as exc:
            self.store().set_status(
                task_id, "completed", "completed",
                result=results.usage_result(spec.name, exc))
            return None
        return argv

    def _unanswered(self, task_id: str, reply: dict[str, Any],
                    got: dict[str, Any] | None) -> None:
        """The question was declined or dismissed (completed, saying so),
        or the task cancelled while it waited."""
        if got is None:
            self.store().set_status(task_id, "cancelled", "cancelled")
            return
        _add_text(reply, "The question was not answered; the tool was not "
                  "run again.")
        self.store().set_status(task_id, "completed", "not answered",
                                result=_utf8_safe(reply))

    def _form(self, needed: InputNeeded,
              schema: dict[str, Any] | None) -> dict[str, Any] | None:
        """The form a client may answer, or None: a question only a person
        may answer (a human-only argument, a secret, a high-level
        approval) is never taken from a client."""
        fields = fields_of(needed.fields, schema)
        if for_person(fields, needed.audience) or \
                any(f.out_of_band for f in fields):
            return None
        form: dict[str, Any] | None = form_of(fields, schema)
        return form

    def _ask(self, task_id: str, needed: InputNeeded, form: dict[str, Any],
             cancel: Cancel) -> dict[str, Any] | None:
        """Set the task ``input_required`` and wait for the answer (given
        to any server of this store), or None when cancelled."""
        store = self.store()
        # Unique over the task's life, across servers taking it over.
        key = f"{','.join(form['properties'])}#{secrets.token_hex(4)}"
        message = strip_terminal(needed.message or "The tool needs input.")
        store.set_status(task_id, "input_required", message[:500],
                         input_requests={key: {
                             "method": "elicitation/create",
                             "params": {"mode": "form", "message": message,
                                        "requestedSchema": form}}},
                         input_responses=None)
        event = self._answered[task_id]
        while not cancel.is_set():
            task = store.get(task_id)
            if task is None or task.cancel:
                return None
            answer = (task.input_responses or {}).get(key)
            if isinstance(answer, dict):
                store.set_status(task_id, "working", "answered; running "
                                 "the tool again", input_requests=None)
                return answer
            event.wait(ANSWER_POLL_S)
            event.clear()
        return None

    def _run_once(self, task_id: str, spec: Any, argv: list[str],
                  registry: Any, cancel: Cancel) -> Any:
        sink = _TaskSink(self.store(), task_id)
        request = build_request(spec, argv, registry=registry,
                                timeout=self.timeout, person=True,
                                keep_events=False)
        store = self.store()

        def spawned(pid: int) -> None:
            store.set_process(task_id, group.mark(pid))
        try:
            result = self._run_tool(request,
                                    sink=results.budgeted(sink, request),
                                    cancel=cancel, on_spawn=spawned)
        finally:
            store.set_process(task_id, None)
        if result.events is None:
            result.events = sink.events
        return result

    # -- tasks/get, tasks/update, tasks/cancel ----------------------------

    def _owned(self, ctx: Any, task_id: str) -> Task:
        if not declares_tasks(ctx.meta):
            raise missing_capability(ctx.method)
        store = self.store()
        task = store.get(task_id, identity(ctx))
        if task is not None and task.expired(time.time()):
            store.delete(task_id)
            self._stop(task_id)
            task = None
        if task is None:
            raise MCPError(types.INVALID_PARAMS, _NOT_FOUND)
        return task

    async def get(self, ctx: Any,
                  params: types.GetTaskRequestParams) -> dict[str, Any]:
        task = await anyio.to_thread.run_sync(self._owned, ctx,
                                              params.task_id)
        return {"resultType": "complete", **detailed(task)}

    async def update(self, ctx: Any,
                     params: UpdateTaskParams) -> dict[str, Any]:
        def answer() -> None:
            task = self._owned(ctx, params.task_id)
            self.store().answer(task.id, params.input_responses)
            event = self._answered.get(task.id)
            if event is not None:
                event.set()
        await anyio.to_thread.run_sync(answer)
        return {"resultType": "complete"}

    async def cancel(self, ctx: Any,
                     params: types.CancelTaskRequestParams
                     ) -> dict[str, Any]:
        def stop() -> None:
            task = self._owned(ctx, params.task_id)
            self.store().request_cancel(task.id)
            self._stop(task.id)  # ours: now; another server's: its keeper
        await anyio.to_thread.run_sync(stop)
        return {"resultType": "complete"}


def _accepted(got: dict[str, Any], form: dict[str, Any]) -> dict[str, Any]:
    """An accepted form's values for the fields asked (blank ones left
    out)."""
    content = got.get("content")
    if not isinstance(content, dict):
        return {}
    return {name: content[name] for name in form["properties"]
            if content.get(name) is not None}


def _add_text(reply: dict[str, Any], text: str) -> None:
    reply["content"].append(results.acor_text("input_needed", text))


def _summary(result: Any) -> str:
    return f"the tool ended {result.state}"


def install(server: Any, catalog: Any, run: Callable[..., Any],
            timeout: float | None) -> Tasks:
    """Serve the extension on ``server`` (the SDK's low-level server):
    ``tools/call`` wrapped, the three task methods, the capability in
    ``server/discover``."""
    plain = server.get_request_handler("tools/call").handler
    tasks = Tasks(catalog, run, timeout, plain)
    server.lifespan = _stopping_tasks(server.lifespan, tasks)

    async def discover(ctx: Any, params: Any) -> types.DiscoverResult:
        return types.DiscoverResult(
            supported_versions=list(MODERN_VERSIONS),
            capabilities=server.get_capabilities(
                protocol_version=ctx.protocol_version,
                extensions={EXTENSION: {}}),
            instructions=server.instructions)

    server.add_request_handler("tools/call", types.CallToolRequestParams,
                               tasks.call_tool)
    server.add_request_handler("tasks/get", types.GetTaskRequestParams,
                               tasks.get)
    server.add_request_handler("tasks/update", UpdateTaskParams,
                               tasks.update)
    server.add_request_handler("tasks/cancel", types.CancelTaskRequestParams,
                               tasks.cancel)
    server.add_request_handler("server/discover", types.RequestParams,
                               discover)
    # The store opens now, off the loop: a server started after another
    # died takes its tasks over without waiting for a request.
    threading.Thread(target=_open_quietly, args=(tasks,), daemon=True,
                     name="acor-task-store").start()
    return tasks


def _stopping_tasks(lifespan: Callable[[Any], Any], tasks: Tasks
                    ) -> Callable[[Any], Any]:
    """``lifespan`` (the server's: entered once around the stdio session,
    or around the HTTP session manager's run) that stops this server's
    task runs and ends its leases when it ends, before the warm start is
    closed (which kills the tools it forked): the next server takes the
    tasks over instead of finding them failed."""
    @asynccontextmanager
    async def wrapped(server: Any) -> AsyncIterator[Any]:
        try:
            async with lifespan(server) as state:
                yield state
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(tasks.shutdown)
    return wrapped


def _open_quietly(tasks: Tasks) -> None:
    try:
        config = getattr(tasks.catalog.registry(), "config", None)
        if getattr(config, "state_dir", None) is None:
            return  # no project (a test's registry): opened when needed
        tasks.store()
    except Exception as exc:  # a bad config is every call's error anyway
        write_stderr(f"acor mcp: the task store could not be opened: {exc}\n")
