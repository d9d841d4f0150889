"""``tools/call``: check the arguments, run the tool, ask for what it needs.

A call is checked and turned into an argv by ``acor call``'s own
:func:`acor.cli.arguments.call_argv` (every violation listed, nothing
run), then run by the runner in a worker thread, so the event loop keeps
serving other calls and their progress. Cancelling the request
(``notifications/cancelled``, or the client going away, which cancels every
request) sets the run's :class:`Cancel`: the runner stops the tool's whole
process group (TERM, grace, KILL) and the handler waits for that before it
lets go.

A run that ends with Input Needed and ``fields`` named like the tool's
arguments is answered by the client, never by this server
(:mod:`acor.cli.mcp.questions`): a form or a page, returned as an
``input_required`` result at protocol 2026-07-28 (its retry is a
:class:`acor.cli.mcp.retry.SealedRetry`), asked during the call before it
(``elicitation/create``), or, for a client that cannot ask, a normal result
saying what is needed, from whom, and the exact next call.
"""

import threading
import traceback
from collections.abc import Callable
from functools import partial
from typing import Any, Protocol, TypeVar

import anyio
import anyio.abc
import anyio.from_thread
import anyio.to_thread
import mcp_types as types
from mcp.shared.exceptions import MCPError

from acor.events import Event, Heartbeat, InputNeeded

from acor.cli.arguments import call_argv
from acor.cli.discovery.registry import Registry
from acor.cli.discovery.spec import ToolSpec
from acor.cli.errors import UsageError, invalid_manifest
from acor.cli.approval import Field, fields_of, for_person, request_lines
from acor.cli.mcp import results
from acor.cli.mcp.pages import Pages
from acor.cli.mcp.progress import ProgressRelay
from acor.cli.mcp.questions import (Context, FormQuestion, Gathered,
                                    PageQuestion, Unanswered, form_of,
                                    how_to_ask, not_asked, with_answers,
                                    with_text)
from acor.cli.mcp.retry import SealedRetry, mint, read_state
from acor.cli.mcp.tools import Catalog, tool_args
from acor.cli.output.formats import write_stderr
from acor.cli.run.own_secrets import host_secrets
from acor.cli.run.request import build_request
from acor.cli.run.result import RunResult
from acor.cli.signals import Cancel
from acor.cli.textsafe import clean_event, strip_terminal

MAX_ROUNDS = 5        # questions one call may ask before giving up
CONCURRENT_RUNS = 64  # tools running at once; further calls wait their turn

#: The runner's ``run`` (:func:`acor.cli.run.launch.run`), or a test's.
RunTool = Callable[..., RunResult]
Reply = dict[str, Any] | types.InputRequiredResult
T = TypeVar("T")


class CallHandler:
    """The server's ``on_call_tool``. ``run`` is the runner's ``run``
    (tests pass their own); ``timeout`` is ``--timeout`` (None: the
    manifest's, then the config's)."""

    def __init__(self, catalog: Catalog, run: RunTool, *,
                 timeout: float | None = None) -> None:
        self.catalog = catalog
        self._run_tool = run
        self.timeout = timeout
        # Not anyio's default limiter: a run holds its thread for the whole
        # run, and the transport's reads and writes must never wait behind.
        self._limiter = anyio.CapacityLimiter(CONCURRENT_RUNS)
        self._used: set[str] = set()  # requestStates already answered
        self.pages = Pages()

    async def __call__(self, ctx: Context,
                       params: types.CallToolRequestParams,
                       registry: Registry | None = None
                       ) -> types.CallToolResult | types.InputRequiredResult:
        """The call; ``registry``: the one a layer in front (the tasks
        extension) already loaded for this request, else loaded here."""
        if registry is None:
            registry = await current(
                partial(self.catalog.registry_for_call, params.name),
                self.catalog.quick_for_call)
        spec = self.catalog.get(registry, params.name)
        if spec is None:
            skipped = registry.skipped_named(params.name)
            if skipped is not None:  # what every command says of it
                wrong = invalid_manifest(params.name, skipped)
                raise MCPError(types.INVALID_PARAMS, f"{wrong.reason} "
                               f"({wrong.code}). {wrong.recovery}")
            raise MCPError(types.INVALID_PARAMS,
                           f"Unknown tool: {params.name!r} (tools/list "
                           "names every tool this server runs)")
        relay = ProgressRelay(ctx.session.report_progress)
        failure: Exception | None = None
        async with anyio.create_task_group() as tg:
            pump = _Pump(relay, tg)
            try:
                reply = await self._call(ctx, params, spec, registry, pump)
            except Exception as exc:
                # Raised out of the group, it would reach the SDK wrapped in
                # an ExceptionGroup, which it answers with code 0.
                failure = exc
            finally:
                pump.stop()
        if failure is not None:
            raise protocol_error(failure, f"the call to {spec.name!r}")
        await relay.flush()  # the latest progress goes out before the result
        if isinstance(reply, dict):
            try:
                return types.CallToolResult.model_validate(reply)
            except ValueError as exc:  # pydantic's ValidationError
                # A block the SDK refuses costs that block, not the result.
                return types.CallToolResult.model_validate(
                    results.text_only(reply, exc))
        return reply

    async def _call(self, ctx: Context, params: types.CallToolRequestParams,
                    spec: ToolSpec, registry: Registry,
                    pump: "_Pump") -> Reply:
        call = PlainCall(ctx, spec, registry, dict(params.arguments or {}),
                         partial(self._run, pump=pump), self.catalog,
                         self.pages)
        state = read_state(params.request_state)
        if state is not None:
            declined = await SealedRetry(state, self._used, self.pages
                                         ).resume(call.gathered, spec.name,
                                                  params, call.arguments,
                                                  call.schema)
            if declined is not None:  # the result that says so
                return declined
        return await call.rounds()

    async def _run(self, spec: ToolSpec, argv: list[str],
                   registry: Registry, pump: "_Pump",
                   human: dict[str, Any] | None = None) -> RunResult:
        """Run the tool in a worker thread; a cancelled request stops it.
        ``human``: what a person answered, on the tool's own channel."""
        cancel = Cancel()
        sink = _Sink(pump)
        # No events kept by the runner: the result is built from what the
        # budget lets through (sink.events), so a tool writing gigabytes
        # costs the server the budget, not the gigabytes.
        request = build_request(spec, argv, registry=registry,
                                timeout=self.timeout, person=True,
                                human=human, keep_events=False)
        budgeted = results.budgeted(sink, request)

        run = _Abandonable(partial(self._run_tool, request, sink=budgeted,
                                   cancel=cancel))
        try:
            try:
                # Abandoned on cancel, so that no task has to stand by each
                # run to notice a cancel (a task group, a task and an event
                # a call: about 3% of the event loop's CPU under 20 clients
                # over HTTP); the request then waits, shielded, until the
                # runner has ended the tool's process group.
                result = await anyio.to_thread.run_sync(
                    run, limiter=self._limiter, abandon_on_cancel=True)
            except anyio.get_cancelled_exc_class():
                if run.abandon():
                    cancel.set()
                    with anyio.CancelScope(shield=True):
                        await anyio.to_thread.run_sync(run.wait,
                                                       limiter=self._limiter)
                raise
        finally:
            # Only once the run ended: a set() after close() could write
            # into whatever file reused the Cancel's descriptor.
            cancel.close()
        if result.events is None:
            result.events = sink.events
        return result


async def current(load: Callable[[], T], quick: bool) -> T:
    """``load()`` (the catalog's registry or listing) on the event loop
    when the catalog's last such load was ``quick``, else in a worker
    thread (:attr:`acor.cli.mcp.tools.Catalog.quick`)."""
    if quick:
        return load()
    return await anyio.to_thread.run_sync(load)


class _Abandonable:
    """A run for a worker thread whose caller may stop waiting for it: it
    either never starts or is known to have started, so a cancelled caller
    knows whether there is a run to stop and to wait for."""

    def __init__(self, run: Callable[[], RunResult]) -> None:
        self._run = run
        self._lock = threading.Lock()
        self._running = threading.Lock()  # held by the thread while it runs
        self._abandoned = False
        self._started = False

    def __call__(self) -> RunResult:
        with self._lock:
            if self._abandoned:  # cancelled before a thread took it
                raise RuntimeError("the call was cancelled before its run")
            self._started = True
            self._running.acquire()
        try:
            return self._run()
        finally:
            self._running.release()

    def abandon(self) -> bool:
        """From the caller, once cancelled: whether the run started (then
        it is to be stopped and waited for); else it never will."""
        with self._lock:
            self._abandoned = True
            return self._started

    def wait(self) -> None:
        """In a worker thread: until a run that started has ended."""
        with self._running:
            pass


class _Pump:
    """A call's progress pump (:meth:`ProgressRelay.pump`), started in the
    call's task group at the run's first progress event or heartbeat: most
    calls report none, and are spared the task and its cancelling."""

    def __init__(self, relay: ProgressRelay,
                 group: anyio.abc.TaskGroup) -> None:
        self.relay = relay
        self._group = group
        self._started = False

    def start(self) -> None:
        """From the run's thread: the pump running before this returns."""
        if not self._started:
            self._started = True
            try:
                anyio.from_thread.run_sync(self._group.start_soon,
                                           self.relay.pump)
            except anyio.RunFinishedError:
                pass  # the server is shutting down: nobody is listening

    def stop(self) -> None:
        """In the event loop, once no run is left: the pump cancelled."""
        if self._started:
            self._group.cancel_scope.cancel()


class _Sink:
    """The runner's sink for one run: events to the progress relay, the
    ones a result shows kept (after the budget), the tool's stderr to
    ours, which MCP clients keep as the server's log. No coalescing here:
    the relay does it."""

    def __init__(self, pump: _Pump) -> None:
        self.pump = pump
        self.relay = pump.relay
        self.events: list[Event] = []

    def emit(self, event: Event) -> None:
        event = clean_event(event)  # no control byte reaches the client
        if event.type in ("progress", "heartbeat"):
            self.pump.start()
            self.relay.on_event(event)
        else:
            self.events.append(event)

    def due(self) -> float | None:
        return None

    def tick(self) -> None:
        pass

    def heartbeat(self) -> None:
        """The tool beat: the client hears it as progress (nudged up)."""
        self.pump.start()
        self.relay.on_event(Heartbeat())

    def stderr(self, data: bytes) -> None:
        write_stderr(strip_terminal(data.decode("utf-8", "replace")))


def protocol_error(exc: Exception, what: str) -> MCPError:
    """What a request that failed in acor itself answers: its own protocol
    error as it is, anything else as an internal error (-32603) that says
    what happened; never the SDK's code 0. The traceback goes to the
    server's log (stderr), which MCP clients keep."""
    # A task group wraps what fails in it: the one error is what happened.
    while isinstance(exc, ExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if isinstance(exc, MCPError):
        return exc
    write_stderr(f"acor mcp: {what} failed in acor:\n" +
                 "".join(traceback.format_exception(exc)))
    return MCPError(types.INTERNAL_ERROR, (
        f"acor could not complete {what}: {type(exc).__name__}: "
        f"{str(exc)[:300]}. The server's log (stderr) has the details; "
        "please report it."))



class PlainCall:
    """One ``tools/call``, round after round: run the tool; when it needs
    input, ask the client (a form or a page) and run it again with the
    answers, until it ends, a question is not answered, or the question
    goes back to the client as a result."""

    def __init__(self, ctx: Context, spec: ToolSpec, registry: Registry,
                 arguments: dict[str, Any], run: "Run", catalog: Catalog,
                 pages: Pages) -> None:
        self.ctx = ctx
        self.spec = spec
        self.registry = registry
        self.arguments = arguments
        self.schema = tool_args(spec)
        # A credential the host keeps for the person (its sensitive user
        # settings, in this server's environment) is theirs: each run has it.
        self.gathered = Gathered(
            preset=host_secrets(spec.name, self.schema))
        self._run = run
        self._pages = pages
        self.served = catalog.served_tools(registry)

    async def rounds(self) -> Reply:
        while True:
            reply = await self._round()
            if reply is not None:
                return reply

    async def _round(self) -> Reply | None:
        """One run, and its reply; None: answered, run again."""
        spec, gathered = self.spec, self.gathered
        try:
            argv = call_argv(spec, with_answers(
                self.arguments, gathered.answers, gathered.session,
                self.schema))
        except UsageError as exc:
            return results.usage_result(spec.name, exc)
        result = await self._run(spec, argv, self.registry,
                                 human=gathered.take_human())
        reply = results.call_result(
            result, protocol_version=self.ctx.protocol_version,
            cwd=results.ran_in(spec, self.registry), served=self.served)
        needed = results.input_needed(result)
        if needed is None:
            return reply
        gathered.session = result.session or gathered.session
        return await self._ask(reply, needed, ["acor", spec.name, *argv])

    async def _ask(self, reply: dict[str, Any], needed: InputNeeded,
                   command: list[str]) -> Reply | None:
        spec, gathered = self.spec, self.gathered
        fields = fields_of(needed.fields, self.schema)
        again = [f.name for f in fields if f.name in gathered.asked]
        if again:
            return with_text(reply, (
                f"The tool asked again for {', '.join(again)}, already "
                "answered in this call: not asked twice. The call ends "
                "here."))
        lines = request_lines(spec.name, spec.version, command,
                              needed.message, fields, needed.audience)
        question, how = self._question(lines, fields)
        if question is None or how is None or gathered.rounds >= MAX_ROUNDS:
            return with_text(reply, self._needs(needed, fields, command))
        gathered.rounds += 1
        gathered.asked |= {f.name for f in fields}
        if how == "mrtr":  # the client asks, then calls again
            return question.returned(mint(
                spec.name, fields, gathered, specs=needed.fields or {},
                person=for_person(fields, needed.audience),
                command=command), spec.name, self.arguments)
        try:
            got = await question.ask(self.ctx)
        except MCPError as exc:  # the client could not ask after all
            return with_text(reply, not_asked(exc) +
                             self._needs(needed, fields, command))
        if isinstance(got, Unanswered):  # not answered: why
            reply["_meta"]["acor/result"]["answer"] = got.answer
            return with_text(reply, got.text)
        gathered.split(got, fields)
        return None

    def _question(self, lines: list[str], fields: list[Field]
                  ) -> tuple[FormQuestion | PageQuestion | None, str | None]:
        """The question for ``fields`` and how this client can be asked
        it ("mrtr", "elicit"), or None where it cannot."""
        if any(f.out_of_band for f in fields):
            return (PageQuestion(lines, fields, self._pages),
                    how_to_ask(self.ctx, url=True))
        form = form_of(fields, self.schema)
        if form is None:
            return None, None
        return FormQuestion(lines, fields, form), how_to_ask(self.ctx)

    def _needs(self, needed: InputNeeded, fields: list[Field],
               command: list[str]) -> str:
        """What is needed and the exact next call, for a client that does
        not ask (or could not)."""
        return results.input_needed_text(
            self.spec.name, needed, self.arguments if self.schema else None,
            person=for_person(fields, needed.audience), command=command,
            out_of_band=any(f.out_of_band for f in fields),
            served=self.served)


class Run(Protocol):
    """What a plain call needs of :meth:`CallHandler._run`."""

    async def __call__(self, spec: ToolSpec, argv: list[str],
                       registry: Registry, *,
                       human: dict[str, Any] | None = None) -> RunResult: ...
