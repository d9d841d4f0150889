"""``tools/call``: check the arguments, run the tool, ask for what it needs.

A call is checked and turned into an argv by ``acor call``'s own
:func:`cli.call_cmd.call_argv` (every violation listed, nothing run), then
run by the runner in a worker thread, so the event loop keeps serving other
calls and their progress. Cancelling the request
(``notifications/cancelled``, or the client going away, which cancels every
request) sets the run's :class:`Cancel`: the runner stops the tool's whole
process group (TERM, grace, KILL) and the handler waits for that before it
lets go.

A run that ends with Input Needed and ``fields`` named like the tool's
arguments is answered by the client, never by this server:

* protocol 2026-07-28: an ``input_required`` result holding a form built
  from the fields; its ``requestState`` (sealed by the SDK's
  RequestStateBoundary: encrypted and authenticated, bound to this tool
  and these arguments) holds the answers so far and the run's session.
  The client's retry runs the tool again with the answers merged in.
* older protocols, on clients that can elicit: an ``elicitation/create``
  request during the call, then a run with the answers.
* otherwise: a normal result saying what is needed, from whom, and the
  exact next call.
"""

import json
import os
import secrets
import time
from functools import partial
from typing import NamedTuple

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError

from acor.events import Heartbeat, InputNeeded

from acor.cli.human.approval import (APPROVAL_TTL, fields_of, for_person,
                                     request_lines)
from acor.cli.mcp import results as results
from acor.cli.mcp.nextcall import tool_call
from acor.cli.mcp.pages import Pages
from acor.cli.arguments import call_argv
from acor.cli.errors import UsageError
from acor.cli.output.formats import write_stderr
from acor.cli.mcp.progress import ProgressRelay
from acor.cli.mcp.tools import tool_args
from acor.cli.mcp.versions import MODERN_VERSIONS
from acor.cli.signals import Cancel
from acor.cli.textsafe import clean_event, strip_terminal

MAX_ROUNDS = 5        # questions one call may ask before giving up
STATE_VERSION = 1
CONCURRENT_RUNS = 64  # tools running at once; further calls wait their turn
_ELICIT_TYPES = ("string", "integer", "number", "boolean")
_ELICIT_KEYS = {"string": ("type", "title", "description", "enum", "default",
                           "minLength", "maxLength", "format"),
                "integer": ("type", "title", "description", "default",
                            "minimum", "maximum"),
                "boolean": ("type", "title", "description", "default")}
_ELICIT_KEYS["number"] = _ELICIT_KEYS["integer"]


# How a question can end without an answer: the client's form declined
# ("decline") or dismissed ("cancel"), refused on acor's page, or none.
_ANSWERS = {"decline": "declined", "cancel": "dismissed"}


class Unanswered(NamedTuple):
    """A question that ended without an answer: which way (declined,
    dismissed, refused, none), and the text that says so and what to do."""
    answer: str
    text: str


def _unanswered(answer: str) -> Unanswered:
    if answer == "refused":
        what = ("The person refused on the page, or nobody answered there "
                "in time: nothing was approved and the tool was not run "
                "again.")
    elif answer == "none":
        what = ("No answer to the question came with this call; the tool "
                "was not run again.")
    else:
        what = (f"The question was {answer}; the tool was not run again "
                "and has not finished.")
    if answer in ("declined", "refused"):
        what += (" Tell the user, and do not call the tool again to get "
                 "around it unless they ask you to.")
    else:
        what += (" Nobody answered: call the tool again when the user is "
                 "ready to answer.")
    return Unanswered(answer, what)


class CallHandler:
    """The server's ``on_call_tool``. ``run`` is the runner's ``run``
    (tests pass their own); ``timeout`` is ``--timeout`` (None: the
    manifest's, then the config's)."""

    def __init__(self, catalog, run, *, timeout=None) -> None:
        self.catalog = catalog
        self._run_tool = run
        self.timeout = timeout
        # Not anyio's default limiter: a run holds its thread for the whole
        # run, and the transport's reads and writes must never wait behind.
        self._limiter = anyio.CapacityLimiter(CONCURRENT_RUNS)
        self._used: set[str] = set()  # requestStates already answered
        self.pages = Pages()

    async def __call__(self, ctx, params: types.CallToolRequestParams):
        registry = await anyio.to_thread.run_sync(self.catalog.registry)
        spec = self.catalog.get(registry, params.name)
        if spec is None:
            skipped = registry.skipped_named(params.name)
            if skipped is not None:  # what every command says of it
                from acor.cli.errors import invalid_manifest
                wrong = invalid_manifest(params.name, skipped)
                raise MCPError(types.INVALID_PARAMS, f"{wrong.reason} "
                               f"({wrong.code}). {wrong.recovery}")
            raise MCPError(types.INVALID_PARAMS,
                           f"Unknown tool: {params.name!r} (tools/list "
                           "names every tool this server runs)")
        relay = ProgressRelay(ctx.session.report_progress)
        failure: Exception | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(relay.pump)
            try:
                reply = await self._call(ctx, params, spec, registry, relay)
            except Exception as exc:
                # Raised out of the group, it would reach the SDK wrapped in
                # an ExceptionGroup, which it answers with code 0.
                failure = exc
            finally:
                tg.cancel_scope.cancel()
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

    async def _call(self, ctx, params, spec, registry, relay):
        schema = tool_args(spec)
        arguments = dict(params.arguments or {})
        state = _read_state(params.request_state)
        answers = dict(state["answers"]) if state else {}
        # What a person answered goes to one run, from this server's memory
        # (the page) or this retry's form: never from the state the client
        # holds, which a client with the key could have written.
        human: dict = {}
        asked = set(state.get("asked") or ()) if state else set()
        session = state.get("session") if state else None
        rounds = state["round"] if state else 0
        if state is not None:
            self._fresh(state)
            # Who may answer is the manifest's word now, not the state's.
            fields = fields_of({name: state["specs"].get(name) or {}
                                for name in state["fields"]}, schema)
            got, unanswered = await self._answers_to(state, params, spec,
                                                     arguments, fields)
            if unanswered is not None:  # the result that says so
                return unanswered
            _split(got, fields, answers, human)
        while True:
            try:
                argv = call_argv(spec, _merge(arguments, answers, session,
                                              schema))
            except UsageError as exc:
                return results.usage_result(spec.name, exc)
            result = await self._run(spec, argv, registry, relay, human)
            human = {}  # what a person answered is for that one run
            next_call = partial(tool_call, served=partial(self.catalog.get,
                                                          registry))
            reply = results.call_result(
                result, protocol_version=ctx.protocol_version,
                cwd=_run_cwd(spec, registry), next_call=next_call)
            needed = _input_needed(result)
            if needed is None:
                return reply
            session = result.session or session
            fields = fields_of(needed.fields, schema)
            person = for_person(fields, needed.audience)
            command = ["acor", spec.name, *argv]
            again = [f.name for f in fields if f.name in asked]
            if again:
                return _with_text(reply, (
                    f"The tool asked again for {', '.join(again)}, already "
                    "answered in this call: not asked twice. The call ends "
                    "here."))
            out_of_band = any(f.out_of_band for f in fields)
            form = None if out_of_band else _form(fields, schema)
            how = _how_to_ask(ctx, url=out_of_band) \
                if out_of_band or form is not None else None
            # What is needed and the exact next call, for a client that
            # does not ask (or could not).
            needs = partial(results.input_needed_text, spec.name, needed,
                            arguments if schema else None, person=person,
                            command=command, out_of_band=out_of_band,
                            next_call=next_call)
            if how is None or rounds >= MAX_ROUNDS:
                return _with_text(reply, needs())
            rounds += 1
            asked |= {f.name for f in fields}
            lines = request_lines(spec.name, spec.version, command,
                                  needed.message, fields, needed.audience)
            base_state = {
                "v": STATE_VERSION, "tool": spec.name,
                "fields": [f.name for f in fields], "specs": needed.fields,
                "answers": answers, "session": session, "round": rounds,
                "audience": "human" if person else "agent",
                "asked": sorted(asked), "command": command,
                "expires": time.time() + APPROVAL_TTL,
                "nonce": secrets.token_hex(12)}
            if how == "mrtr":  # the client asks, then calls again
                if out_of_band:
                    page = self.pages.open(lines, fields)
                    state = {**base_state, "page": page.id,
                             "key": _key(fields)}
                    # The page answers this state and these arguments
                    # alone: a state resealed with anything changed is
                    # not the one the person was shown.
                    page.binding = _binding(spec.name, arguments, state)
                    return _input_required_url(
                        fields, _url_message(lines), page.url, state)
                return _input_required(
                    fields, "\n".join(lines), form,
                    {**base_state, "key": _key(fields)})
            try:
                got = await self._ask(ctx, lines, fields, form, out_of_band)
            except MCPError as exc:  # the client could not ask after all
                return _with_text(reply, _not_asked(exc) + needs())
            if isinstance(got, Unanswered):  # not answered: why
                reply["_meta"]["acor/result"]["answer"] = got.answer
                return _with_text(reply, got.text)
            _split(got, fields, answers, human)

    async def _answers_to(self, state, params, spec, arguments, fields
                          ) -> tuple[dict, dict | None]:
        """A retry's answers ({name: value}, None), or ({}, the result of
        a question not answered). A field that is a secret or a
        high-level approval (in the manifest, now) is taken from the page
        this server opened for this very state, or not at all."""
        answer = _elicited(params.input_responses, state["key"])
        if state.get("page") is None:
            if any(f.out_of_band for f in fields):
                raise MCPError(types.INVALID_PARAMS, _NOT_FROM_A_FORM)
            if answer is None or answer.action != "accept":
                return {}, _declined(spec.name, state, answer)
            return _answers(answer, state["fields"]), None
        page = self.pages.get(state["page"])
        if page is not None and page.binding != _binding(spec.name,
                                                          arguments, state):
            # Not the state this page was opened for: refused, and the
            # page left to the call it belongs to.
            raise MCPError(types.INVALID_PARAMS, _NOT_FROM_A_FORM)
        # The client's answer first: a person who declined to open the
        # page has refused, and nothing waits for the page.
        if answer is None or answer.action != "accept":
            if page is not None:
                self.pages.close(page)
            return {}, _declined(spec.name, state, answer)
        got = None if page is None else await self.pages.wait(page)
        if got is None:
            return {}, _declined(spec.name, state, None, page=True)
        return got, None

    async def _ask(self, ctx, lines, fields, form, out_of_band
                   ) -> dict | Unanswered:
        """Ask the client now (``elicitation/create``): the answers, or
        how the question ended without them. Raises the client's
        :class:`MCPError` when it answers the request with one."""
        page = self.pages.open(lines, fields) if out_of_band else None
        try:
            if page is not None:
                answer = await ctx.session.elicit_url(
                    _url_message(lines), page.url, page.id,
                    related_request_id=ctx.request_id)
            else:
                answer = await ctx.session.elicit_form(
                    "\n".join(lines), form,
                    related_request_id=ctx.request_id)
        except MCPError:
            if page is not None:
                self.pages.close(page)
            raise
        if answer.action != "accept":
            if page is not None:
                self.pages.close(page)
            return _unanswered(_ANSWERS.get(answer.action, "none"))
        if page is None:
            return _answers(answer, [f.name for f in fields])
        got = await self.pages.wait(page)
        try:
            await ctx.session.send_elicit_complete(
                page.id, related_request_id=ctx.request_id)
        except Exception:  # the notice is a courtesy
            pass
        return _unanswered("refused") if got is None else got

    def _fresh(self, state: dict) -> None:
        """A retry's state: unexpired, and used once (an answer approves
        one call, not every replay of it)."""
        if not isinstance(state.get("expires"), (int, float)) or \
                time.time() > state["expires"]:
            raise MCPError(types.INVALID_PARAMS, (
                "This request has expired (an answer is valid for "
                f"{APPROVAL_TTL // 60} minutes): call the tool again"))
        nonce = state.get("nonce")
        if not isinstance(nonce, str) or nonce in self._used:
            raise MCPError(types.INVALID_PARAMS, (
                "This request was already answered: an answer is for one "
                "call only. Call the tool again"))
        self._used.add(nonce)

    async def _run(self, spec, argv, registry, relay, human=None):
        """Run the tool in a worker thread; a cancelled request stops it.
        ``human``: what a person answered, on the tool's own channel."""
        cancel = Cancel()
        finished = False
        sink = _Sink(relay)
        budgeted = _budget(sink, spec, registry)

        def work():
            # No events kept by the runner: the result is built from what
            # the budget lets through (sink.events), so a tool writing
            # gigabytes costs the server the budget, not the gigabytes.
            result = self._run_tool(spec, argv, registry=registry,
                                    timeout=self.timeout, sink=budgeted,
                                    cancel=cancel, keep_events=False,
                                    person=True, human=human or None)
            if result.events is None:
                result.events = sink.events
            return result

        async def stop_when_cancelled():
            try:
                await anyio.sleep_forever()
            finally:
                if not finished:
                    cancel.set()

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(stop_when_cancelled)
                try:
                    # Not abandoned on cancel: the request waits (shielded)
                    # until the runner has ended the tool's process group.
                    result = await anyio.to_thread.run_sync(
                        work, limiter=self._limiter)
                finally:
                    finished = True
                    tg.cancel_scope.cancel()
        finally:
            # Only now: a set() after close() could write into whatever
            # file reused the Cancel's descriptor.
            cancel.close()
        return result


def _budget(sink, spec, registry):
    """``sink`` within the tool's output budget (its manifest's
    max_output, else the config's, else the default; 0: none), its whole
    output spilled under the config's state dir."""
    from acor.cli.mcp.results import mcp_cost
    from acor.cli.output.budget import DEFAULT_MAX_OUTPUT, Budget
    from acor.cli.output.spill import output_dir
    config = getattr(registry, "config", None)
    limit = spec.max_output
    if limit is None:
        limit = getattr(config, "max_output", None)
    if limit is None:
        limit = DEFAULT_MAX_OUTPUT
    if not limit:
        return sink
    state_dir = getattr(config, "state_dir", None) or os.path.join(
        ".acor", "state")
    return Budget(sink, limit, output_dir(state_dir), spec.name, mcp_cost)


class _Sink:
    """The runner's sink for one run: events to the progress relay, the
    ones a result shows kept (after the budget), the tool's stderr to
    ours, which MCP clients keep as the server's log. No coalescing here:
    the relay does it."""

    def __init__(self, relay: ProgressRelay) -> None:
        self.relay = relay
        self.events: list = []

    def emit(self, event) -> None:
        event = clean_event(event)  # no control byte reaches the client
        self.relay.on_event(event)
        if event.type not in ("progress", "heartbeat"):
            self.events.append(event)

    def due(self):
        return None

    def tick(self) -> None:
        pass

    def heartbeat(self) -> None:
        """The tool beat: the client hears it as progress (nudged up)."""
        self.relay.on_event(Heartbeat())

    def stderr(self, data: bytes) -> None:
        write_stderr(strip_terminal(data.decode("utf-8", "replace")))


def _read_state(request_state: str | None) -> dict | None:
    """The plaintext this server minted (the RequestStateBoundary has
    already verified the seal), or None on a first call."""
    if request_state is None:
        return None
    try:
        state = json.loads(request_state)
    except ValueError:
        state = None
    if not (isinstance(state, dict) and state.get("v") == STATE_VERSION
            and _is_names(state.get("fields"))
            and isinstance(state.get("specs"), dict)
            and isinstance(state.get("answers"), dict)
            and isinstance(state.get("key"), str)
            and isinstance(state.get("round"), int)
            and (state.get("page") is None
                 or isinstance(state.get("page"), str))):
        raise MCPError(types.INVALID_PARAMS, "Invalid or expired requestState")
    return state


def _is_names(value) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


_NOT_FROM_A_FORM = (
    "This answer is not taken: the tool's manifest says only a person may "
    "give it, on the page acor serves (a secret or a high-level approval), "
    "and this request is not the one that page was opened for. Nothing was "
    "run. Call the tool again, and have a person answer on its page.")


def _binding(tool: str, arguments: dict, state: dict) -> str:
    """What a page's answer is bound to: the tool, the call's arguments and
    the whole state minted with the page, as one digest."""
    import hashlib
    text = json.dumps([tool, arguments, state], sort_keys=True,
                      separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _key(fields) -> str:
    """The key of a question in ``inputRequests``: the names the tool
    declared for its fields (one question per field set)."""
    return ",".join(f.name for f in fields)


def _elicited(responses, key):
    answer = (responses or {}).get(key)
    return answer if isinstance(answer, types.ElicitResult) else None


def _split(got: dict, fields, answers: dict, human: dict) -> None:
    """A person's answers: those only a person may give go on the tool's
    own channel (``human``), the others into its arguments."""
    only_human = {f.name for f in fields if f.human}
    for name, value in got.items():
        (human if name in only_human else answers)[name] = value


def _answers(answer, fields) -> dict:
    """The accepted form's values for the fields asked (None: left blank)."""
    content = answer.content or {}
    return {name: content[name] for name in fields
            if content.get(name) is not None}


def _merge(arguments, answers, session, schema) -> dict:
    values = {**arguments, **answers}
    # A tool that resumes by a "session" argument continues its own run.
    if session and schema and "session" in schema.get("properties", {}) \
            and "session" not in values:
        values["session"] = session
    return values


def _run_cwd(spec, registry) -> str:
    """Where the runner ran the tool (as ``acor TOOL`` does)."""
    if spec.cwd_mode == "project":
        return registry.config.root
    return os.getcwd()


def _input_needed(result):
    if result.exit_code != 3:
        return None
    found = [e for e in result.events if isinstance(e, InputNeeded)]
    return found[-1] if found else None


def _form(fields, schema) -> dict | None:
    """The elicitation form for ``fields``, or None when they cannot be
    asked for: no fields, a tool without a schema to merge answers into,
    a field that is not one of its arguments, or one a form cannot hold."""
    if not fields or schema is None:
        return None
    known = schema.get("properties", {})
    properties, required = {}, []
    for field in fields:
        prop, kind = field.prop, field.kind
        if field.name not in known or kind not in _ELICIT_TYPES:
            return None
        properties[field.name] = {key: prop[key]
                                  for key in _ELICIT_KEYS[kind]
                                  if key in prop}
        properties[field.name]["type"] = kind
        if "default" not in prop:
            required.append(field.name)
    return {"type": "object", "properties": properties, "required": required}


def _how_to_ask(ctx, url: bool = False) -> str | None:
    """"mrtr", "elicit", or None when this client cannot be asked: in
    form mode, or in URL mode (``url``: a secret, a high level)."""
    caps = ctx.session.client_capabilities
    elicitation = caps.elicitation if caps is not None else None
    if elicitation is None:
        return None
    if url:
        if elicitation.url is None:
            return None
    # An empty elicitation capability means form mode (pre-2025-11-25).
    elif elicitation.form is None and elicitation.url is not None:
        return None
    if ctx.protocol_version in MODERN_VERSIONS:
        return "mrtr"
    return "elicit" if ctx.session.can_send_request else None


def _url_message(lines: list[str]) -> str:
    return ("\n".join(lines) + "\nOpen the page to answer (on this "
            "machine, once, within " + str(APPROVAL_TTL // 60) +
            " minutes); nothing you type there passes through this client.")


def _input_required(fields, message, form, state
                    ) -> types.InputRequiredResult:
    ask = types.ElicitRequest(params=types.ElicitRequestFormParams(
        message=message, requested_schema=form))
    return types.InputRequiredResult(
        input_requests={_key(fields): ask},
        request_state=json.dumps(state, separators=(",", ":")))


def _input_required_url(fields, message, url, state
                        ) -> types.InputRequiredResult:
    ask = types.ElicitRequest(params=types.ElicitRequestURLParams(
        message=message, url=url))
    return types.InputRequiredResult(
        input_requests={_key(fields): ask},
        request_state=json.dumps(state, separators=(",", ":")))


def _declined(tool, state, answer, page=False) -> dict:
    """A retry whose form was declined, dismissed or not answered: not an
    error (nothing failed, and an error invites the model to correct
    itself and try again, the wrong lesson from a person's no), and the
    run's state as the command line says it, ``input_needed`` (exit 3),
    with ``_meta["acor/result"]["answer"]`` saying which ending it was."""
    unanswered = _unanswered(
        "refused" if page else "none" if answer is None else
        _ANSWERS.get(answer.action, "none"))
    lines = [unanswered.text,
             f"The tool '{tool}' still needs: {', '.join(state['fields'])}."]
    if state.get("audience") == "human":
        lines.append("Only a person may answer this: do not answer it "
                     "yourself.")
    return {"content": [results.acor_text("input_needed", "\n".join(lines))],
            "isError": False,
            "_meta": {"acor/result": results.unrun_meta(
                tool, 3, "input_needed", session=state.get("session"),
                answer=unanswered.answer)}}


def _not_asked(exc: MCPError) -> str:
    """The first line of a result whose question the client answered with
    an error: which one (its text is the client's: data, bounded)."""
    return (f"The client could not ask the question (error "
            f"{exc.error.code}: {exc.error.message[:300]}).\n")


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
    import traceback
    write_stderr(f"acor mcp: {what} failed in acor:\n" +
                 "".join(traceback.format_exception(exc)))
    return MCPError(types.INTERNAL_ERROR, (
        f"acor could not complete {what}: {type(exc).__name__}: "
        f"{str(exc)[:300]}. The server's log (stderr) has the details; "
        "please report it."))


def _with_text(reply: dict, extra: str) -> dict:
    reply["content"].append(results.acor_text("input_needed", extra))
    return reply
