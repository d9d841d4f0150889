"""Control bytes a tool prints never reach the agent (issue 32, point 6).

A real tool writes every kind of byte a terminal obeys (C0 but tab and
line feed, a lone CR, DEL, C1 as code points, escape sequences of every
family: SGR colours, cursor movement, OSC titles, hyperlinks and the
clipboard, DCS, the 8-bit CSI; bidi controls and line separators) into
every place a tool's text can go: raw stdout, stderr, status and progress
messages, Output, Output Data (keys and values), error titles, details,
recovery and next, suggestions, directives, file descriptions, Input
Needed. What a real `acor` (Markdown, JSON lines) and a real `acor mcp`
(text content, structuredContent, _meta, progress notifications, with
the SDK's client) give the agent holds none of them, while the text
around them arrives; the whole-output file keeps the raw bytes."""

import json
import re

import pytest
from hypothesis import given, settings, strategies as st

from acor.cli.textsafe import (StreamCleaner, clean_event, clean_value,
                               strip_terminal)
from acor.events import Error, OutputData
from conftest import strings

# Every code point an agent must not be handed raw: C0 but \t and \n,
# DEL, C1, the bidi controls, the line and paragraph separators.
FORBIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f"
                       "\u2028\u2029\u202a-\u202e\u2066-\u2069]")

SEQUENCES = {
    "sgr": "\x1b[1;31m", "reset": "\x1b[0m", "clear": "\x1b[2J",
    "home": "\x1b[H", "up": "\x1b[3A", "title": "\x1b]0;pwned\x07",
    "link": "\x1b]8;;https://evil.example\x1b\\", "link_end":
    "\x1b]8;;\x1b\\", "clipboard": "\x1b]52;c;cm0gLXJmIH4=\x07",
    "dcs": "\x1bP1$r\x1b\\", "csi8": "\x9b2J", "osc8": "\x9d0;t\x9c",
    "reset_terminal": "\x1bc",
}
LONE = "".join(chr(c) for c in range(0x20) if chr(c) not in "\t\n\x1b") \
    + "\x7f" + "".join(chr(c) for c in range(0x80, 0xa0)
                       if c not in (0x90, 0x98, 0x9b, 0x9d, 0x9e, 0x9f)) \
    + "\u061c\u200e\u200f\u2028\u2029\u202a\u202b\u202c\u202d\u202e" \
    + "\u2066\u2067\u2068\u2069"
# Words around every kind: they must arrive.
HOSTILE = ("<<" + "".join(f"{name}{seq}" for name, seq in SEQUENCES.items())
           + "|" + LONE + "|cr\rover\r\nwritten\ttab>>")

TOOL = r'''
import sys
from acor import AcorTool
BAD = %r
with AcorTool() as tool:
    print("raw " + BAD, flush=True)
    if "--big" in sys.argv:  # over a 4 KiB budget
        for _ in range(40):
            print("flood " + BAD, flush=True)
    sys.stderr.write("stderr " + BAD + "\n")
    sys.stderr.flush()
    tool.status("working", "status " + BAD)
    tool.progress(50, "progress " + BAD)
    tool.output("output " + BAD)
    tool.output({"key " + BAD: ["value " + BAD, {"deep": BAD}]})
    tool.output("text data " + BAD, format="text")
    tool.output_files({"report.txt": "file " + BAD})
    tool.error("E_BAD", "title " + BAD, recovery="recovery " + BAD,
               details="details " + BAD, next=["acor", "x", BAD])
    tool.suggestions(["suggestion " + BAD], title="suggested " + BAD)
    tool.ai_directive("directive " + BAD)
    if "--ask" in sys.argv:
        tool.input_needed("ask " + BAD, fields={"n": {
            "type": "string", "description": "field " + BAD}},
            next=["acor", "ctl", BAD])
    tool.output({"done": True})
''' % HOSTILE


def assert_clean(text, where):
    bad = FORBIDDEN.search(text)
    assert bad is None, f"{where}: {bad.group()!r} in {text[:200]!r}"


@pytest.fixture
def ctl(project):
    project.add_tool("ctl", TOOL)
    return project


def test_markdown_an_agent_reads_holds_no_control_byte(ctl):
    run = ctl.run("--max-output", "0", "ctl")
    assert run.returncode == 1, run.stderr  # the tool's error
    assert_clean(run.stdout, "stdout")
    assert_clean(run.stderr, "the tool's stderr, relayed")
    for word in ("raw <<sgr", "status <<", "progress <<", "output <<",
                 "title <<", "details <<", "recovery <<", "suggestion <<",
                 "suggested <<", "directive <<", "file <<", "deep",
                 "text data <<", "written\ttab>>", "\\x00", "\\u202e"):
        assert word in run.stdout, word
    assert "stderr <<sgr" in run.stderr
    # Sequences go whole: nothing of a title, link or clipboard shows.
    for leftover in ("pwned", "evil.example", "cm0gLXJmIH4", "[1;31m",
                     "[2J", "1$r"):
        assert leftover not in run.stdout + run.stderr, leftover
    # A lone CR would overwrite what was shown: it ends the line instead.
    assert "cr\nover\nwritten" in run.stdout


def test_json_lines_hold_no_control_byte_raw_or_decoded(ctl):
    run = ctl.run("--format", "json", "--max-output", "0", "ctl")
    assert_clean(run.stdout, "stdout")
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    kinds = {line["type"] for line in lines}
    assert {"text", "stderr", "status", "progress", "output", "output_data",
            "output_files", "error", "suggestions", "ai_directive",
            "result"} <= kinds
    for line in lines:
        for text in strings(line):
            assert_clean(text, line["type"])
    (error,) = [line for line in lines if line["type"] == "error"]
    assert error["title"].startswith("title <<sgr")
    assert error["next"][:2] == ["acor", "x"]
    (data,) = [line["data"] for line in lines
               if line["type"] == "output_data" and
               isinstance(line["data"], dict) and "done" not in line["data"]]
    (key,) = data
    assert key.startswith("key <<sgr") and data[key][1]["deep"]


def test_input_needed_holds_no_control_byte(ctl):
    for fmt in ("markdown", "json"):
        run = ctl.run("--format", fmt, "ctl", "--ask")
        assert run.returncode == 3, run.stdout
        assert_clean(run.stdout, fmt)
        if fmt == "json":
            (asked,) = [line for line in map(json.loads,
                                             run.stdout.splitlines())
                        if line["type"] == "input_needed"]
            for text in strings(asked):
                assert_clean(text, "input_needed")
            assert asked["message"].startswith("ask <<sgr")


def test_the_whole_output_file_keeps_the_raw_bytes(ctl):
    run = ctl.run("--max-output", "4k", "ctl", "--big")
    assert_clean(run.stdout, "stdout")
    (path,) = re.findall(r"- `([^`]+\.md)` \[\d+ bytes, sha256 [0-9a-f]{64}, "
                         r"truncated\]", run.stdout)
    whole = open(path, "rb").read()
    assert SEQUENCES["clipboard"].encode() in whole
    assert b"\x00" in whole and "\u202e".encode() in whole


def test_the_budget_counts_what_the_agent_gets(project):
    """Escaping makes text longer (one NUL is four characters): the
    budget measures the escaped text, so it stays a hard cap."""
    project.add_tool("nuls", """
        from acor import AcorTool
        with AcorTool() as tool:
            for _ in range(64):
                tool.output("\\x00" * 1000)
    """)
    for fmt in ("markdown", "json"):
        run = project.run("--format", fmt, "--max-output", "8k", "nuls")
        assert run.returncode == 0, run.stderr
        assert len(run.stdout.encode()) <= 8 * 1024, fmt
        assert "\\x00" in run.stdout


# --- MCP, with the SDK's client against a real `acor mcp` --------------------

mcp = pytest.importorskip("mcp", reason="acor mcp needs the extra")


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_mcp_results_hold_no_control_byte(ctl, mode):
    from mcp import Client

    from mcp_helpers import acor_mcp_stdio
    messages = []

    async def on_progress(progress, total, message):
        messages.append(message or "")

    async with Client(acor_mcp_stdio(ctl), mode=mode) as client:
        result = await client.call_tool("ctl", {"argv": []},
                                        progress_callback=on_progress)
    dumped = result.model_dump(mode="json", by_alias=True)
    texts = [block["text"] for block in dumped["content"]
             if block.get("type") == "text"]
    assert any(t.startswith("raw <<sgr") for t in texts), texts
    assert any("output <<sgr" in t for t in texts)
    assert any("title <<sgr" in t for t in texts)
    for text in strings(dumped):
        assert_clean(text, "result")
    for message in messages:
        assert_clean(message, "progress notification")
    assert dumped["structuredContent"] in ({"done": True},
                                           {"data": {"done": True}})


@pytest.mark.anyio
async def test_mcp_structured_content_strings_hold_no_control_byte(project):
    from mcp import Client

    from mcp_helpers import acor_mcp_stdio
    project.add_tool("data", """
        from acor import AcorTool
        with AcorTool() as tool:
            tool.output({"name \\x1b]52;c;eA==\\x07": "a\\x00b\\u202ec",
                         "rows": [["\\x1b[31mred\\x1b[0m", 1]]})
    """)
    async with Client(acor_mcp_stdio(project), mode="2026-07-28") as client:
        result = await client.call_tool("data", {"argv": []})
    assert result.structured_content == {
        "name ": "a\\x00b\\u202ec", "rows": [["red", 1]]}


# --- the cleaning itself, for any text ------------------------------------

TERMINAL_TEXT = st.lists(st.sampled_from(
    list(LONE) + list(SEQUENCES.values()) + ["\x1b", "\x1b[", "\x1b]",
                                             "\t", "\n", "\r\n", "a", "[",
                                             "m", "\\", "é", "\ud800"]),
    max_size=30).map("".join)


@settings(max_examples=300, deadline=None)
@given(TERMINAL_TEXT)
def test_property_cleaned_text_holds_no_control_byte(text):
    clean = strip_terminal(text)
    assert FORBIDDEN.search(clean) is None and "\x1b" not in clean
    assert strip_terminal(clean) == clean  # cleaning twice changes nothing
    clean.encode("utf-8")  # lone surrogates are made visible too


@settings(max_examples=200, deadline=None)
@given(st.lists(TERMINAL_TEXT, max_size=6))
def test_property_text_in_pieces_is_cleaned_as_a_whole(pieces):
    """However a stream is cut into reads, no byte passes, and a sequence
    cut between two reads is removed whole as it would be in one."""
    cleaner = StreamCleaner()
    out = "".join(cleaner.feed(piece) for piece in pieces) + cleaner.flush()
    assert FORBIDDEN.search(out) is None and "\x1b" not in out
    whole = "".join(pieces)
    if not re.search("[\x1b\x90\x98\x9b\x9d-\x9f]", whole):
        assert out == strip_terminal(whole)


@settings(max_examples=200, deadline=None)
@given(st.recursive(TERMINAL_TEXT | st.integers() | st.none(),
                    lambda inner: st.lists(inner, max_size=4) |
                    st.dictionaries(TERMINAL_TEXT, inner, max_size=4),
                    max_leaves=20))
def test_property_every_string_of_a_value_is_cleaned(value):
    for text in strings(clean_value(value)):
        assert FORBIDDEN.search(text) is None and "\x1b" not in text


def test_an_event_with_nothing_to_clean_is_not_copied():
    event = OutputData("json", {"rows": [1, 2], "name": "plain\ttext\n"})
    assert clean_event(event) is event
    error = Error("t\x1b[2J", "E_X", "d\x00", None, ["acor", "\x1b"])
    assert clean_event(error) == Error("t", "E_X", "d\\x00", None,
                                       ["acor", "\\x1b"])


# --- the rich view, on a real terminal ---------------------------------------

def test_the_rich_view_keeps_a_tools_colours_and_nothing_else(ctl):
    """At a terminal a person may see a tool's colours: its SGR sequences
    become rich's styles. No other sequence (clearing, cursor movement,
    titles, hyperlinks, the clipboard, DCS) and no other control reaches
    the terminal."""
    from terminal import Terminal
    ctl.add_tool("colours", r'''
        from acor import AcorTool
        BAD = %r
        with AcorTool() as tool:
            print("raw \x1b[32mgreen\x1b[0m " + BAD, flush=True)
            tool.output("out \x1b[31mred\x1b[0m " + BAD)
    ''' % HOSTILE)
    ctl.env.pop("NO_COLOR", None)
    ctl.env["TERM"] = "xterm-256color"
    term = Terminal(ctl, "--format", "rich", "colours")
    assert term.finish() == 0, term.text
    seen = term.text
    assert re.search("\x1b\\[[0-9;]*31m(\x1b\\[[0-9;]*m)*red", seen), seen
    assert re.search("\x1b\\[[0-9;]*32m(\x1b\\[[0-9;]*m)*green", seen), seen
    for leftover in ("pwned", "evil.example", "cm0gLXJmIH4", "1$r"):
        assert leftover not in seen, leftover
    # Every sequence on the terminal is SGR (rich's own styling), or one
    # rich's live line redraws itself with (hide and show the cursor,
    # erase the line, up one line); the tool's are gone (above).
    live = {"\x1b[?25l", "\x1b[?25h", "\x1b[2K", "\x1b[1A"}
    others = [s for s in re.findall("\x1b(?:\\[[0-9;:?]*[ -/]*[@-~]|.)", seen)
              if not re.fullmatch("\x1b\\[[0-9;]*m", s) and s not in live]
    assert others == [], others
    redraws = re.sub("\r(?=\x1b)", "", seen)  # the live line's own CRs
    assert_clean(redraws.replace("\x1b", "").replace("\r\n", "\n"),
                 "terminal")
