"""`acor mcp`: acor's tools served to MCP clients, tested with the SDK's own
client, in process (both protocol eras: the 2025-11-25 handshake and
2026-07-28) and over stdio in a subprocess.

In-process tests drive the server with a scripted `run` (tests/mcp_helpers)
to pin the mapping down; the end-to-end tests at the bottom run real tools
through the real runner."""

import io
import itertools
import json
import os
import subprocess
import sys
import threading
import time

import pytest

from conftest import REPO, pid_alive

pytest.importorskip("mcp", reason="acor mcp needs the extra: "
                                  "pip install 'acor-cli[mcp]'")

import anyio
import mcp_types as types
from mcp import Client
from mcp.shared.exceptions import MCPError

from acor.cli.mcp import handshake, start as mcp_start
from acor.cli.mcp.transports import stdio as mcp_stdio
from acor.cli.mcp import versions
from acor.cli.mcp.server import build_server
from acor.cli.mcp.progress import ProgressRelay
from acor.cli.mcp.tools import Catalog
from acor.events import (AIDirective, Error, Heartbeat, Output,
                         OutputData, OutputFiles, Progress, Suggestions)
from mcp_helpers import (GREET_ARGS, FakeRegistry, FakeResult,
                         FakeRun, asks_for, blocks_until_cancelled, spec)

# The handshake era (the client negotiates 2025-11-25) and 2026-07-28.
MODES = ["legacy", "2026-07-28"]
VERSION = {"legacy": "2025-11-25", "2026-07-28": "2026-07-28"}


@pytest.fixture
def anyio_backend():
    return "asyncio"


def serve(*specs, run, only=None, timeout=None, log=None, skipped=()):
    registry = FakeRegistry(*specs, skipped=skipped)
    catalog = Catalog(lambda: registry, only, log=log or io.StringIO())
    return build_server(catalog, run, timeout=timeout)


def texts(result):
    return [block.text for block in result.content if block.type == "text"]


def acor_meta(result):
    return result.meta["acor/result"]


def greet_behaviour(argv, emit, cancel):
    return FakeResult(emit(Output("hello " + argv[-1])), argv=argv)


# --- tools/list -----------------------------------------------------------

@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_list_has_one_mcp_tool_per_acor_tool(mode):
    server = serve(
        spec("greet", "Greet someone", GREET_ARGS,
             {"readOnlyHint": True, "idempotentHint": True}),
        spec("raw", "Free argv", usage="acor raw [FILE...]"), run=FakeRun())
    async with Client(server, mode=mode) as client:
        assert client.protocol_version == VERSION[mode]
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == {"greet", "raw", "acor_read"}
    greet = tools["greet"]
    assert greet.description == "Greet someone"
    # The manifest's schema, minus how each value reaches the command line.
    assert "x-acor" not in json.dumps(greet.input_schema)
    assert greet.input_schema["properties"]["times"] == {"type": "integer",
                                                         "minimum": 1}
    assert greet.input_schema["required"] == ["name"]
    assert greet.annotations.read_only_hint is True
    assert greet.annotations.idempotent_hint is True
    assert greet.annotations.destructive_hint is None
    raw = tools["raw"]
    assert raw.input_schema["properties"]["argv"]["items"] == {
        "type": "string"}
    assert raw.input_schema["additionalProperties"] is False
    assert "acor raw [FILE...]" in raw.description
    assert raw.annotations is None


@pytest.mark.anyio
async def test_names_mcp_cannot_carry_and_skipped_manifests_are_reported():
    log = io.StringIO()
    skipped = [type("Skipped", (), {"path": "tools/broken",
                                    "reason": "malformed JSON",
                                    "recovery": "fix it"})()]
    server = serve(spec("ok"), spec("bad name"), run=FakeRun(), log=log,
                   skipped=skipped)
    async with Client(server, mode="legacy") as client:
        first = [t.name for t in (await client.list_tools()).tools]
        await client.list_tools(cache_mode="bypass")
    assert first == ["ok", "acor_read"]
    report = log.getvalue()
    assert "'bad name' is not served" in report
    assert "tools/broken is not served: malformed JSON" in report
    assert report.count("\n") == 2  # once each, not once per listing


@pytest.mark.anyio
async def test_tools_filter_serves_only_the_named_tools():
    run = FakeRun(greet=greet_behaviour, other=greet_behaviour)
    server = serve(spec("greet"), spec("other"), run=run, only={"greet"})
    async with Client(server, mode="legacy") as client:
        assert [t.name for t in (await client.list_tools()).tools] == \
            ["greet", "acor_read"]
        with pytest.raises(MCPError, match="Unknown tool: 'other'"):
            await client.call_tool("other", {"argv": ["x"]})
    assert run.calls == []


def test_a_changed_manifest_is_listed_as_it_now_is():
    """Discovery hands out a new registry when anything changed (and the
    same one while nothing did): each is listed as it is."""
    greet = spec("greet", "v1", GREET_ARGS)
    current = [FakeRegistry(greet)]
    catalog = Catalog(lambda: current[0], log=io.StringIO())
    first = catalog.listing()
    assert catalog.listing() is first  # the same registry: the same listing
    current[0] = FakeRegistry(greet)
    assert catalog.listing()[0] is first[0]  # unchanged tool: not rebuilt
    current[0] = FakeRegistry(spec("greet", "v2", {**GREET_ARGS,
                                                   "required": []}))
    (tool,) = catalog.listing()
    assert tool["description"] == "v2"
    assert tool["inputSchema"]["required"] == []
    current[0] = FakeRegistry()
    assert catalog.listing() == []


# --- tools/call: arguments and results ------------------------------------

@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_typed_call_becomes_argv_with_flags_then_positionals(mode):
    run = FakeRun(greet=greet_behaviour)
    server = serve(spec("greet", args=GREET_ARGS), run=run, timeout=7.5)
    async with Client(server, mode=mode) as client:
        result = await client.call_tool(
            "greet", {"name": "-rf", "times": 2, "loud": True})
    assert not result.is_error
    assert run.calls == [("greet", ["--times", "2", "--loud", "--", "-rf"],
                          7.5)]
    assert texts(result) == ["hello -rf"]
    meta = acor_meta(result)
    assert meta["exit_code"] == 0 and meta["state"] == "complete"
    assert meta["duration_ms"] == 250.0


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_argument_violations_are_all_listed_and_nothing_runs(mode):
    run = FakeRun(greet=greet_behaviour)
    server = serve(spec("greet", args=GREET_ARGS), run=run)
    async with Client(server, mode=mode) as client:
        result = await client.call_tool(
            "greet", {"name": 3, "times": "two", "shout": True})
    assert result.is_error
    text = texts(result)[0]
    assert text.startswith("Error E_USAGE")
    for field in ("name", "times", "shout"):
        assert f"- {field}" in text
    assert acor_meta(result)["error_code"] == "E_USAGE"
    assert run.calls == []


@pytest.mark.anyio
async def test_free_argv_tools_take_a_list_of_strings_only():
    run = FakeRun(raw=greet_behaviour)
    server = serve(spec("raw"), run=run)
    async with Client(server, mode="legacy") as client:
        bad = await client.call_tool("raw", {"argv": ["a", 1]})
        good = await client.call_tool("raw", {"argv": ["$(rm -rf /)", "b c"]})
    assert bad.is_error and "argv" in texts(bad)[0]
    # Passed as they are: no shell ever sees them.
    assert run.calls == [("raw", ["$(rm -rf /)", "b c"], 120.0)]
    assert not good.is_error


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_error_is_an_error_result_with_code_recovery_and_next(mode):
    def fails(argv, emit, cancel):
        return FakeResult(emit(Output("partial"), Error(
            "Input file not found", "E_FILE_NOT_FOUND", "path: x.csv",
            "Check the path", ["acor", "csvprofile", "y.csv"])),
            1, "failed", error_code="E_FILE_NOT_FOUND")
    server = serve(spec("csvprofile"), run=FakeRun(csvprofile=fails))
    async with Client(server, mode=mode) as client:
        result = await client.call_tool("csvprofile", {"argv": ["x.csv"]})
    assert result.is_error
    assert texts(result) == ["partial", (
        "Error E_FILE_NOT_FOUND: Input file not found\npath: x.csv\n"
        "Recovery: Check the path\nNext call: "
        '{"name": "csvprofile", "arguments": {"argv": ["y.csv"]}}')]
    assert acor_meta(result)["error_code"] == "E_FILE_NOT_FOUND"
    assert acor_meta(result)["exit_code"] == 1


# A tool with a schema that fails, naming as next the command given in its
# argument (JSON): what an agent over MCP gets is the call that does it.
NEXT_ARGS = {"type": "object", "properties": {
    "next": {"type": "string", "x-acor": {"position": 0}},
    "files": {"type": "array", "items": {"type": "string"},
              "x-acor": {"position": 1}},
    "count": {"type": "integer", "x-acor": {"flag": "--count"}},
    "loud": {"type": "boolean", "x-acor": {"flag": "--loud"}}}}
NEXT_TOOL = """import json
from acor import AcorTool
with AcorTool() as tool:
    args = tool.parse_args()
    tool.fail("E_AGAIN", "Try again", next=json.loads(args.next))
"""


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("command, expected", [
    (["acor", "again", "--count", "3", "--", "{}", "-a.txt", "b c"],
     'Next call: {"name": "again", "arguments": {"next": "{}", "files": '
     '["-a.txt", "b c"], "count": 3}}'),
    (["acor", "--format", "json", "again", "--loud", "x"],
     'Next call: {"name": "again", "arguments": {"next": "x", '
     '"loud": true}}'),
    (["acor", "free", "--lf", "tests"],
     'Next call: {"name": "free", "arguments": {"argv": ["--lf", '
     '"tests"]}}'),
    (["acor", "--timeout", "60", "again", "x"],
     "Next command (in a shell: no tool call does this): "
     "acor --timeout 60 again x"),
    (["acor", "show", "again"],
     "Next command (in a shell: no tool call does this): acor show again"),
    (["acor", "again", "x", "--count", "many"],
     "Next command (in a shell: no tool call does this): "
     "acor again x --count many"),
    (["acor", "unserved", "x"],
     "Next command (in a shell: no tool call does this): acor unserved x"),
])
async def test_next_is_the_tool_call_that_does_it(project, mode, command,
                                                  expected):
    """Through a real acor mcp: an error's next command, when a call of
    a tool this server serves can do the same, is that call (name and
    arguments as the inputSchema takes them); otherwise the command, said
    to be one for a shell."""
    from mcp_helpers import acor_mcp_stdio
    project.add_tool("again", NEXT_TOOL, args=NEXT_ARGS)
    project.add_wrapped("free", ["true"])
    project.add_wrapped("unserved", ["true"])
    server = acor_mcp_stdio(project, "--tools", "again,free")
    async with Client(server, mode=mode) as client:
        result = await client.call_tool(
            "again", {"next": json.dumps(command)})
    (error,) = [b.text for b in result.content
                if (b.meta or {}).get("acor/block") == "error"]
    assert error.splitlines()[-1] == expected
    assert acor_meta(result)["next"] == command  # the record keeps argv


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_every_section_has_its_place_in_the_result(mode, tmp_path):
    report = tmp_path / "report.csv"
    report.write_text("a,b\n")

    def rich(argv, emit, cancel):
        return FakeResult(emit(
            Output("Profiled 3 rows"),
            OutputData("json", {"first": True}),
            OutputData("json", [1, 2, 3]),
            OutputFiles([
                {"path": str(report), "description": "the profile",
                 "kind": "file", "bytes": 4, "sha256": "0123456789ab"},
                {"path": str(tmp_path), "description": "all outputs",
                 "kind": "directory", "bytes": None, "sha256": None},
                {"path": "gone.txt", "description": "", "kind": "missing",
                 "bytes": None, "sha256": None}]),
            AIDirective(["Review row 2"]),
            Suggestions(["Plot it"], title="Next"),
            Heartbeat()), session="orders-1")
    server = serve(spec("profile"), run=FakeRun(profile=rich))
    async with Client(server, mode=mode) as client:
        result = await client.call_tool("profile", {})
    kinds = [block.type for block in result.content]
    assert kinds == ["text", "text", "text", "resource_link",
                     "resource_link", "text", "text", "text"]
    assert texts(result) == [
        "Profiled 3 rows", '{\n  "first": true\n}', "[\n  1,\n  2,\n  3\n]",
        "Output file missing: gone.txt", "AI Directive:\n- Review row 2",
        "Suggestions: Next:\n- Plot it"]
    # The last Output Data is the structured result; a non-object is
    # wrapped before 2026-07-28, which allows any JSON value.
    expected = [1, 2, 3] if mode == "2026-07-28" else {"data": [1, 2, 3]}
    assert result.structured_content == expected
    file_link, dir_link = result.content[3], result.content[4]
    # A link acor serves (resources/read, acor_read); over stdio the file's
    # path too, for a client on this machine.
    assert file_link.uri.startswith("acor://file/") and file_link.size == 4
    assert file_link.name == "report.csv" and file_link.mime_type == "text/csv"
    assert file_link.description == "the profile"
    assert file_link.meta == {"acor/sha256": "0123456789ab",
                              "acor/path": os.path.realpath(report)}
    assert dir_link.mime_type == "inode/directory"
    assert acor_meta(result)["session"] == "orders-1"
    assert not result.is_error


# --- progress --------------------------------------------------------------

@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_progress_is_relayed_rate_limited_increasing_latest_kept(mode):
    def busy(argv, emit, cancel):
        for i in range(1, 2001):
            emit(Progress(i / 20, f"step {i}"))
            if i % 200 == 0:
                time.sleep(0.05)
        emit(Heartbeat(), Progress(40, "a second pass"), Heartbeat())
        return FakeResult([Output("done")])
    server = serve(spec("busy"), run=FakeRun(busy=busy))
    seen = []

    async def on_progress(progress, total, message):
        seen.append((time.monotonic(), progress, total, message))
    async with Client(server, mode=mode) as client:
        start = time.monotonic()
        result = await client.call_tool("busy", {},
                                        progress_callback=on_progress)
        elapsed = time.monotonic() - start
        await anyio.sleep(0.05)  # callbacks run as tasks on a real wire
    assert texts(result) == ["done"]
    values = [value for _, value, _, _ in seen]
    assert len(seen) >= 3
    assert len(seen) <= elapsed / 0.1 + 3  # ~10 a second at most
    assert all(b > a for a, b in itertools.pairwise(values))
    assert all(total == 100 for _, _, total, _ in seen)
    # The latest is never lost: going back to 40% still moves forward, with
    # the message the tool gave last.
    assert seen[-1][3] == "a second pass"


@pytest.mark.anyio
async def test_relay_sends_the_latest_and_nudges_repeats():
    sent = []

    async def send(value, total, message):
        sent.append((value, message))
    relay = ProgressRelay(send, interval=0.05)
    async with anyio.create_task_group() as tg:
        tg.start_soon(relay.pump)

        def from_tool():
            for event in (Progress(10, "a"), Progress(10), Heartbeat(),
                          Progress(5, "back")):
                relay.on_event(event)
                time.sleep(0.08)
            for i in range(1000):  # a burst: only the last one matters
                relay.on_event(Progress(50 + i / 100, f"burst {i}"))
        await anyio.to_thread.run_sync(from_tool)
        tg.cancel_scope.cancel()
    await relay.flush()
    assert sent[:4] == [(10.0, "a"), (10.01, "a"), (10.02, "a"),
                        (10.03, "back")]
    assert sent[-1] == (59.99, "burst 999")
    assert len(sent) <= 6


# --- input needed ------------------------------------------------------------

COUNT = {"type": "integer", "description": "How many", "minimum": 1}


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_input_needed_is_asked_and_the_run_resumed(mode):
    run = FakeRun(greet=asks_for("times", COUNT))
    server = serve(spec("greet", args=GREET_ARGS), run=run)
    asked = []

    async def answer(ctx, params):
        asked.append(params)
        return types.ElicitResult(action="accept", content={"times": 3})
    async with Client(server, mode=mode,
                      elicitation_callback=answer) as client:
        result = await client.call_tool("greet", {"name": "Ada"})
    assert texts(result) == ["done --times 3 -- Ada"]
    assert [argv for _, argv, _ in run.calls] == [
        ["--", "Ada"], ["--times", "3", "--", "Ada"]]
    (question,) = asked
    assert question.message.splitlines() == [
        "greet needs input:", "  tool:    greet 1.0.0",
        "  command: acor greet -- Ada", "  reason:  Which times?"]
    assert question.requested_schema == {
        "type": "object", "required": ["times"],
        "properties": {"times": {"type": "integer", "minimum": 1,
                                 "description": "How many"}}}


def _answering_2026_client(run):
    """A 2026-07-28 client of a server running ``run`` as greet, that
    answers 2 to every question about times."""
    server = serve(spec("greet", args=GREET_ARGS), run=run)

    async def answer(ctx, params):
        return types.ElicitResult(action="accept", content={"times": 2})
    return Client(server, mode="2026-07-28", elicitation_callback=answer)


@pytest.mark.anyio
async def test_2026_request_state_is_sealed_and_bound_to_the_call():
    run = FakeRun(greet=asks_for("times", COUNT))
    async with _answering_2026_client(run) as client:
        first = await client.session.call_tool(
            "greet", {"name": "Ada"}, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult)
        state = first.request_state
        assert "times" not in state and "s-1" not in state  # encrypted
        assert list(first.input_requests) == ["times"]  # the tool's name
        answers = {"times": types.ElicitResult(
            action="accept", content={"times": 2})}
        with pytest.raises(MCPError, match="Invalid or expired"):
            await client.session.call_tool(  # other arguments: refused
                "greet", {"name": "Bob"}, input_responses=answers,
                request_state=state, allow_input_required=True)
        with pytest.raises(MCPError, match="Invalid or expired"):
            await client.session.call_tool(
                "greet", {"name": "Ada"}, input_responses=answers,
                request_state=state[:-2] + "AA", allow_input_required=True)
        done = await client.session.call_tool(
            "greet", {"name": "Ada"}, input_responses=answers,
            request_state=state, allow_input_required=True)
    assert texts(done) == ["done --times 2 -- Ada"]
    assert len(run.calls) == 2


@pytest.mark.anyio
async def test_a_replayed_or_expired_answer_is_refused_with_invalid_params(
        monkeypatch):
    """Issue 20, item 10: acor's own refusals keep their JSON-RPC code
    (they reached the SDK wrapped by the call's task group, as code 0)."""
    run = FakeRun(greet=asks_for("times", COUNT))
    async with _answering_2026_client(run) as client:
        first = await client.session.call_tool(
            "greet", {"name": "Ada"}, allow_input_required=True)
        answers = {"times": types.ElicitResult(
            action="accept", content={"times": 2})}
        again = dict(input_responses=answers, allow_input_required=True,
                     request_state=first.request_state)
        await client.session.call_tool("greet", {"name": "Ada"}, **again)
        with pytest.raises(MCPError, match="already answered") as replayed:
            await client.session.call_tool("greet", {"name": "Ada"}, **again)
        second = await client.session.call_tool(
            "greet", {"name": "Ada"}, allow_input_required=True)
        import acor.cli.mcp.retry as retry
        monkeypatch.setattr(retry.time, "time", lambda: 1e12)
        with pytest.raises(MCPError, match="expired") as expired:
            await client.session.call_tool(
                "greet", {"name": "Ada"}, input_responses=answers,
                request_state=second.request_state,
                allow_input_required=True)
    assert replayed.value.error.code == expired.value.error.code == \
        types.INVALID_PARAMS


@pytest.mark.anyio
async def test_a_bug_in_acor_is_an_internal_error_not_code_0(capfd):
    def broken(argv, emit, cancel):
        raise RuntimeError("a bug")
    server = serve(spec("greet", args=GREET_ARGS), run=FakeRun(greet=broken))
    async with Client(server) as client:
        with pytest.raises(MCPError) as failed:
            await client.call_tool("greet", {"name": "Ada"})
    assert failed.value.error.code == types.INTERNAL_ERROR
    assert "RuntimeError: a bug" in failed.value.error.message
    assert "Traceback" in capfd.readouterr().err  # the server's log


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_without_elicitation_the_result_says_what_and_the_next_call(
        mode):
    run = FakeRun(greet=asks_for("times", COUNT))
    server = serve(spec("greet", args=GREET_ARGS), run=run)
    async with Client(server, mode=mode) as client:
        result = await client.call_tool("greet", {"name": "Ada"})
    assert not result.is_error
    (text,) = texts(result)
    assert text.startswith("Input needed: Which times?")
    assert "- times: (integer; minimum 1) How many" in text
    call = json.loads(text.split("answer): ", 1)[1])
    assert call == {"name": "greet",
                    "arguments": {"name": "Ada", "times": "<times>"}}
    assert acor_meta(result)["exit_code"] == 3
    assert acor_meta(result)["state"] == "input_needed"
    assert len(run.calls) == 1


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_a_question_for_a_person_is_never_answered_by_the_server(mode):
    approve = {"type": "boolean", "description": "Approve the deletion?"}
    run = FakeRun(greet=asks_for("loud", approve, audience="human"))
    server = serve(spec("greet", args=GREET_ARGS), run=run)
    async with Client(server, mode=mode) as client:
        unanswered = await client.call_tool("greet", {"name": "Ada"})

    async def decline(ctx, params):
        assert "Only a person may answer this." in params.message
        return types.ElicitResult(action="decline")
    async with Client(server, mode=mode,
                      elicitation_callback=decline) as client:
        declined = await client.call_tool("greet", {"name": "Ada"})
    assert "Only a person may answer this" in texts(unanswered)[0]
    assert "never answer it yourself" in texts(unanswered)[0]
    assert "declined" in texts(declined)[-1]
    assert not declined.is_error
    # Asked twice, never run a second time with an answer of our own.
    assert [argv for _, argv, _ in run.calls] == [["--", "Ada"]] * 2


# --- cancellation and concurrency ------------------------------------------

@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_cancelling_a_call_stops_its_run(mode):
    started = threading.Event()
    run = FakeRun(slow=blocks_until_cancelled(started))
    server = serve(spec("slow"), run=run)
    async with Client(server, mode=mode) as client:
        with anyio.move_on_after(5) as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.call_tool, "slow", {})
                await anyio.to_thread.run_sync(started.wait, 5)
                tg.cancel_scope.cancel()
        assert not scope.cancelled_caught
        with anyio.fail_after(5):
            while not run.cancels[0].is_set():
                await anyio.sleep(0.01)


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_two_calls_run_at_once(mode):
    both = threading.Barrier(2, timeout=5)

    def meets(argv, emit, cancel):
        both.wait()  # raises if the other call is not running meanwhile
        return FakeResult(emit(Output(f"met {argv[0]}")))
    server = serve(spec("meet"), run=FakeRun(meet=meets))
    results = {}
    async with Client(server, mode=mode) as client:
        async def call(who):
            results[who] = await client.call_tool("meet", {"argv": [who]})
        async with anyio.create_task_group() as tg:
            tg.start_soon(call, "a")
            tg.start_soon(call, "b")
    assert {who: texts(r) for who, r in results.items()} == {
        "a": ["met a"], "b": ["met b"]}


# --- start-up --------------------------------------------------------------

def _sdk_answers(requests):
    """The SDK server's own answers to raw JSON-RPC requests, in order."""
    from mcp.shared.message import SessionMessage
    server = serve(run=FakeRun())

    async def main():
        to_server, server_in = anyio.create_memory_object_stream(10)
        server_out, from_server = anyio.create_memory_object_stream(10)
        answers = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.run, server_in, server_out,
                          server.create_initialization_options())
            for request in requests:
                await to_server.send(SessionMessage(
                    types.jsonrpc_message_adapter.validate_python(request)))
                reply = await from_server.receive()
                answers.append(json.loads(reply.message.model_dump_json(
                    by_alias=True, exclude_unset=True)))
            await to_server.aclose()
        return answers
    return anyio.run(main)


def _initialize(version, **params):
    return {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "test", "version": "1"}, **params}}


DISCOVER = {"jsonrpc": "2.0", "id": "d", "method": "server/discover",
            "params": {"_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "t",
                                                       "version": "1"}}}}


@pytest.mark.parametrize("request_", [
    _initialize("2024-11-05"), _initialize("2025-06-18"),
    _initialize("2025-11-25"), _initialize("2099-01-01"), DISCOVER],
    ids=["2024-11-05", "2025-06-18", "2025-11-25", "unknown", "discover"])
def test_the_early_answer_is_the_sdks_own(request_):
    request_id, early = handshake.early_answer(json.dumps(request_).encode())
    assert early is not None
    (sdk,) = _sdk_answers([request_])
    assert request_id == sdk["id"] and early == sdk["result"]


def test_the_first_answer_knows_the_sdks_protocol_versions():
    from mcp_types import version
    assert versions.HANDSHAKE_VERSIONS == version.HANDSHAKE_PROTOCOL_VERSIONS
    assert versions.MODERN_VERSIONS == version.MODERN_PROTOCOL_VERSIONS


@pytest.mark.parametrize("line", [
    b"not json", b"[1]", b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}',
    json.dumps({**_initialize("2025-06-18"), "id": True}).encode(),
    json.dumps(_initialize(None)).encode(),
    json.dumps({**DISCOVER, "params": {"_meta": {}}}).encode()])
def test_anything_unusual_is_left_to_the_sdk(line):
    assert handshake.early_answer(line) == (None, None)


def test_stdout_belongs_to_json_rpc_once_claimed(tmp_path):
    code = ("import os; from acor.cli.mcp.transports.stdio import Wire; w = Wire.claim();"
            "print('stray print'); os.write(1, b'stray write\\n');"
            "w.write(b'{\"jsonrpc\": \"2.0\"}\\n')")
    # Not from the checkout: its acor/ would shadow the installed package.
    done = subprocess.run([sys.executable, "-c", code], capture_output=True,
                          cwd=tmp_path, timeout=30, check=False)
    assert done.stdout == b'{"jsonrpc": "2.0"}\n'
    assert b"stray print" in done.stderr and b"stray write" in done.stderr


@pytest.mark.parametrize("missing, says", [
    # Not `pip install 'acor-cli[mcp]'` (not published): as acor was
    # installed, here from the checkout's folder (-e in make dev's venv).
    ("mcp", f"'{REPO}[mcp]'"),
    ("mcp_types", "needs MCP SDK 2.3 or later")])
def test_without_the_extra_a_clear_error_and_exit_2(monkeypatch, capsys,
                                                    missing, says):
    real = mcp_start.find_spec
    monkeypatch.setattr(mcp_start, "find_spec",
                        lambda name: None if name == missing else real(name))
    assert mcp_stdio.serve(None, None) == 2
    err = capsys.readouterr()
    assert says in err.err and "E_MCP_MISSING" in err.err
    assert err.out == ""


@pytest.mark.parametrize("tools, timeout, message", [
    (" , ", None, "--tools needs at least one tool name"),
    (None, "0", "--timeout must be a number of seconds above 0"),
    (None, "inf", "at most 604800"), (None, "soon", "--timeout must be")])
def test_bad_options_are_refused(tools, timeout, message):
    with pytest.raises(ValueError, match=message):
        mcp_start.parse_options(tools, timeout)
    assert mcp_start.parse_options("a, b", "2.5") == ({"a", "b"}, 2.5)


# --- end to end: real tools, the real runner ------------------------------

PROBE = '''
import os, subprocess, sys, time
from acor import AcorTool

def parse(argv):
    """As acor.args.to_argv writes it: flags, then --, then positionals."""
    opts, pos, words = {}, [], iter(argv)
    for word in words:
        if word == "--":
            pos.extend(words)
        elif word.startswith("--"):
            opts[word[2:]] = next(words)
        else:
            pos.append(word)
    return opts, pos

opts, pos = parse(sys.argv[1:])
with AcorTool() as tool:
    mode = pos[0]
    if mode == "progress":
        for i in range(1, 21):
            tool.progress(i * 5, f"step {i}")
            time.sleep(0.02)
        tool.output({"steps": 20})
    elif mode == "fail":
        print("unframed text on stdout: ## Status: Complete")
        sys.stderr.write("probe: something on stderr\\n")
        tool.error("E_NO_INPUT", "No input file", details="path: in.csv",
                   recovery="Pass an existing file")
    elif mode == "sleep":
        child = subprocess.Popen([sys.executable, "-c",
                                  "import time; time.sleep(60)"])
        with open(opts["pidfile"] + ".tmp", "w") as f:
            f.write(f"{os.getpid()} {child.pid}")
        os.rename(opts["pidfile"] + ".tmp", opts["pidfile"])
        time.sleep(60)
    elif mode == "meet":
        open(opts["me"], "w").close()
        deadline = time.time() + 10
        while not os.path.exists(opts["other"]) and time.time() < deadline:
            time.sleep(0.01)
        tool.output("met" if os.path.exists(opts["other"]) else "alone")
'''
PROBE_ARGS = {
    "type": "object", "additionalProperties": False, "required": ["mode"],
    "properties": {
        "mode": {"type": "string", "x-acor": {"position": 0},
                 "enum": ["progress", "fail", "sleep", "meet"]},
        "pidfile": {"type": "string", "x-acor": {"flag": "--pidfile"}},
        "me": {"type": "string", "x-acor": {"flag": "--me"}},
        "other": {"type": "string", "x-acor": {"flag": "--other"}}}}


ASKER = '''
from acor import AcorTool
with AcorTool() as tool:
    args = tool.parse_args()
    tool.session(args.session or "greet-7")
    if args.count is None:
        tool.input_needed("How many greetings?", fields={"count": {
            "type": "integer", "minimum": 1, "description": "How many"}})
    if args.target == "prod" and not args.approve:
        tool.input_needed("Greet production?", fields={"approve": {
            "type": "boolean", "description": "Approve it"}},
            audience="human")
    tool.output(f"{args.count} x hello {args.target} ({args.session})")
'''
ASKER_ARGS = {
    "type": "object", "additionalProperties": False, "required": ["target"],
    "properties": {
        "target": {"type": "string", "x-acor": {"position": 0}},
        "count": {"type": "integer", "minimum": 1,
                  "x-acor": {"flag": "--count"}},
        "approve": {"type": "boolean", "x-acor": {"flag": "--approve"}},
        "session": {"type": "string", "x-acor": {"flag": "--session"}}}}


@pytest.fixture
def e2e_project(project, isolated_discovery, monkeypatch):
    """A project with the probe (typed) and a wrapped free-argv program;
    the test process works in it, as `acor mcp` would."""
    project.add_tool("probe", PROBE, args=PROBE_ARGS,
                     annotations={"readOnlyHint": True})
    project.add_tool("napper", PROBE, args=PROBE_ARGS, timeout=0.5)
    project.add_tool("asker", ASKER, args=ASKER_ARGS)
    project.add_wrapped("echo", ["{python}", "-c",
                                 "import sys; print(' '.join(sys.argv[1:]))"],
                        usage="acor echo WORD...")
    monkeypatch.chdir(project.root)
    return project


def in_process_server(root):
    from acor.cli.discovery.registry import load_registry
    return build_server(Catalog(lambda: load_registry(cwd=str(root))))


def stdio_server(project, *args):
    from mcp import StdioServerParameters
    return StdioServerParameters(
        command=sys.executable, args=["-m", "acor", "mcp", *args],
        cwd=str(project.root), env={
            k: v for k, v in project.env.items()
            if k.startswith("ACOR_") or k in ("PATH", "HOME", "NO_COLOR")})


def a_person(asked):
    """The client's elicitation callback: each form, filled in."""
    async def answer(ctx, params):
        asked.append(params)
        return types.ElicitResult(action="accept",
                                  content={"count": 3, "approve": True})
    return answer


async def _scenario(client, asked, tmp_path):
    """What every transport and protocol version must do, end to end."""
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == {"probe", "napper", "echo", "asker", "acor_read"}
    assert tools["probe"].annotations.read_only_hint is True
    assert "acor echo WORD..." in tools["echo"].description

    # Progress arrives as notifications, before the result, increasing.
    seen = []

    async def on_progress(value, total, message):
        seen.append(value)
    done = await client.call_tool("probe", {"mode": "progress"},
                                  progress_callback=on_progress)
    assert not done.is_error and done.structured_content == {"steps": 20}
    assert seen and seen == sorted(seen) and seen[-1] == 100

    # A typed-argument violation: listed, nothing run.
    bad = await client.call_tool("probe", {"mode": "explode", "me": 1})
    assert bad.is_error and "mode" in texts(bad)[0] and "me" in texts(bad)[0]

    # An error with its code and recovery; stray stdout stays text.
    failed = await client.call_tool("probe", {"mode": "fail"})
    assert failed.is_error
    assert failed.meta["acor/result"]["error_code"] == "E_NO_INPUT"
    error_text = texts(failed)[-1]
    assert error_text.startswith("Error E_NO_INPUT: No input file")
    assert "Recovery: Pass an existing file" in error_text

    # Input Needed, answered through the client and resumed: two questions,
    # the second for a person; the session the tool opened carries over.
    greeted = await client.call_tool("asker", {"target": "prod"})
    assert texts(greeted) == ["3 x hello prod (greet-7)"]
    assert [q.message.splitlines()[3] for q in asked] == [
        "  reason:  How many greetings?", "  reason:  Greet production?"]
    assert "Only a person may answer this." in asked[1].message
    assert "Only a person" not in asked[0].message
    assert asked[0].requested_schema["properties"]["count"] == {
        "type": "integer", "minimum": 1, "description": "How many"}

    # Free argv goes to the program as it is.
    echoed = await client.call_tool("echo", {"argv": ["$(id)", "a b"]})
    assert texts(echoed) == ["$(id) a b"]

    # Two calls at once: each waits for the other to have started.
    me, other = tmp_path / "a", tmp_path / "b"
    pair = []

    async def meet(mine, theirs):
        result = await client.call_tool("probe", {
            "mode": "meet", "me": str(mine), "other": str(theirs)})
        pair.append(texts(result))
    async with anyio.create_task_group() as tg:
        tg.start_soon(meet, me, other)
        tg.start_soon(meet, other, me)
    assert pair == [["met"], ["met"]]

    # A cancelled call leaves no process of the tool alive.
    pidfile = tmp_path / "pids"
    async with anyio.create_task_group() as tg:
        tg.start_soon(client.call_tool, "probe",
                      {"mode": "sleep", "pidfile": str(pidfile)})
        with anyio.fail_after(10):
            while not pidfile.exists():
                await anyio.sleep(0.02)
        tg.cancel_scope.cancel()
    await _all_gone(pidfile)
    pidfile.unlink()

    # A timeout (napper's manifest says 0.5 s) is an error result.
    timed = await client.call_tool("napper", {"mode": "sleep",
                                              "pidfile": str(pidfile)})
    assert timed.is_error
    assert timed.meta["acor/result"]["error_code"] == "E_TIMEOUT"
    assert timed.meta["acor/result"]["state"] == "timeout"
    await _all_gone(pidfile)


async def _all_gone(pidfile):
    """The tool and its child: signalled as one group, gone within moments
    (a child the tool left behind is reparented and reaped apart from the
    run, so it is waited for, not expected dead at once)."""
    pids = [int(p) for p in pidfile.read_text().split()]
    with anyio.fail_after(5):
        while any(pid_alive(pid) for pid in pids):
            await anyio.sleep(0.02)


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_end_to_end_in_process(mode, e2e_project, tmp_path):
    server = in_process_server(e2e_project.root)
    asked = []
    async with Client(server, mode=mode,
                      elicitation_callback=a_person(asked)) as client:
        assert client.protocol_version == VERSION[mode]
        await _scenario(client, asked, tmp_path)


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_end_to_end_over_stdio(mode, e2e_project, tmp_path):
    # "auto" opens with server/discover and lands on 2026-07-28.
    asked = []
    async with Client(stdio_server(e2e_project), mode=mode,
                      elicitation_callback=a_person(asked)) as client:
        assert client.protocol_version == (
            "2026-07-28" if mode == "auto" else "2025-11-25")
        assert client.server_info.name == "acor"
        await _scenario(client, asked, tmp_path)


def test_every_stdout_line_is_json_rpc(e2e_project):
    """A raw session: nothing but JSON-RPC on stdout, progress before the
    result, the tool's stderr on stderr, exit 0 when stdin closes."""
    requests = [
        _initialize("2025-06-18"),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "probe", "arguments": {"mode": "progress"},
            "_meta": {"progressToken": "p"}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
            "name": "probe", "arguments": {"mode": "fail"}}},
        {"jsonrpc": "2.0", "id": 5, "method": "no/such/method"}]
    stdin = "".join(json.dumps(r) + "\n" for r in requests)
    server = subprocess.Popen(
        [sys.executable, "-m", "acor", "mcp"], cwd=e2e_project.root,
        env=e2e_project.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    # All at once, stdin left open until every answer is in: the server
    # must not stop the calls early.
    server.stdin.write(stdin)
    server.stdin.flush()
    lines = []
    while len([m for m in lines if "id" in m and "method" not in m]) < 5:
        line = server.stdout.readline()
        assert line, server.stderr.read()
        lines.append(json.loads(line))
    server.stdin.close()
    assert server.wait(timeout=15) == 0
    rest = server.stdout.read()
    err = server.stderr.read()
    for message in lines + [json.loads(x) for x in rest.splitlines()]:
        assert message["jsonrpc"] == "2.0"
    answers = {m["id"]: m for m in lines if "id" in m}
    assert answers[1]["result"]["serverInfo"]["name"] == "acor"
    assert len(answers[2]["result"]["tools"]) == 5  # and acor_read
    assert answers[5]["error"]["code"] == -32601
    progress = [i for i, m in enumerate(lines)
                if m.get("method") == "notifications/progress"]
    result_at = next(i for i, m in enumerate(lines) if m.get("id") == 3)
    assert progress and max(progress) < result_at
    assert lines[max(progress)]["params"]["progress"] == 100
    assert "probe: something on stderr" in err


@pytest.mark.parametrize("goes_away", ["stdin closed", "SIGTERM"])
def test_a_client_that_goes_away_stops_every_running_tool(e2e_project,
                                                          tmp_path,
                                                          goes_away):
    import signal
    server = subprocess.Popen(
        [sys.executable, "-m", "acor", "mcp"], cwd=e2e_project.root,
        env=e2e_project.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE)
    pidfiles = [tmp_path / "one", tmp_path / "two"]
    lines = [_initialize("2025-11-25"),
             {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    lines += [{"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call",
               "params": {"name": "probe", "arguments": {
                   "mode": "sleep", "pidfile": str(path)}}}
              for i, path in enumerate(pidfiles)]
    server.stdin.write(b"".join(json.dumps(m).encode() + b"\n"
                                for m in lines))
    server.stdin.flush()
    deadline = time.monotonic() + 20
    while not all(p.exists() for p in pidfiles):
        assert time.monotonic() < deadline, server.stderr.read1()
        time.sleep(0.02)
    pids = [int(p) for path in pidfiles for p in path.read_text().split()]
    assert all(pid_alive(pid) for pid in pids)
    if goes_away == "SIGTERM":
        server.send_signal(signal.SIGTERM)
    else:
        server.stdin.close()
    assert server.wait(timeout=15) == (130 if goes_away == "SIGTERM" else 0)
    deadline = time.monotonic() + 5
    while any(pid_alive(pid) for pid in pids):
        assert time.monotonic() < deadline, "a tool outlived the server"
        time.sleep(0.02)
    for line in server.stdout.read().splitlines():  # no answer is owed
        assert json.loads(line)["jsonrpc"] == "2.0"
