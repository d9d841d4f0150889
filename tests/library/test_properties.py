"""Property tests (Hypothesis) for the grammar and the tool.

1. Round trip: whatever text a tool passes to any method, parsing what the
   tool wrote gives that text back. The one change allowed is line-ending
   folding: CRLF and a lone CR become LF, as CommonMark reads them (JSON
   data is exempt: json.dumps escapes CR inside strings).
2. Markdown oracle: for any sequence of calls, markdown-it-py (CommonMark)
   finds exactly the top-level headings the tool emitted, in order, with
   their text; so no text a tool passes can add, hide or merge a section
   for an agent reading the Markdown.
3. A framed run decodes to the same events as the plain one, and the
   incremental Parser gives the same events however the text is split.

The budget is ACOR_FUZZ_EXAMPLES examples per property (default 100;
``make fuzz`` raises it).
"""

import io
import json
import os

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.common import utils as md_utils

from acor import AcorTool, ToolState
from acor.events import (AIDirective, Checkpoint, Error, InputNeeded, Output,
                         OutputData, Progress, Session, Status, Suggestions)
import acor.acortool as acor_tool
from acor.events import Heartbeat
from acor.decode import StreamDecoder
from acor.grammar import (Parser, fold_newlines, is_error_code, parse,
                          render, unescape_inline)

EXAMPLES = int(os.environ.get("ACOR_FUZZ_EXAMPLES", "100"))
fuzz = settings(max_examples=EXAMPLES, deadline=None,
                suppress_health_check=[HealthCheck.too_slow])

# --- strategies -----------------------------------------------------------

# Fragments that mean something to CommonMark or to ACOR at the start or
# the end of a line, and the separators between lines (real line ends and
# characters that only look like them, which some renderers treat as
# spaces).
BLANKS = ["", " ", "\t", "  ", "\x0b", "\x0c", "\xa0", "\x85", "\u2028"]
DANGEROUS = st.one_of(
    st.builds("{}{}".format, st.sampled_from(["#", "##", "######", "#######"]),
              st.sampled_from(BLANKS + ["AI Directive", "Status: Complete"])),
    st.builds("{}{}{}".format, st.sampled_from([" #", " ##", "#"]),
              st.sampled_from(BLANKS), st.sampled_from(BLANKS)),
    st.builds("{}{}".format,
              st.sampled_from(["<pre", "<PRE", "<script", "<style",
                               "<textarea", "<div", "<a"]),
              st.sampled_from(BLANKS + [">", " x>"])),
    st.builds(lambda char, n, tail: char * n + tail,
              st.sampled_from("`~=-"), st.integers(1, 12),
              st.sampled_from(BLANKS + ["python", "x`"])),
    st.sampled_from([
        "- ", "* ", "> ", "1. ", "<!--", "-->", "<?", "?>", "<!X",
        "<![CDATA[", "]]>", "\\", "\\\\", "\\n", "\\#", "\x1e",
        "\x1eacor:", "\x1eend", "<!-- acor:heartbeat -->", "**Code**: ",
        "**Details**: ", "**Recovery**: ", "`",
    ]),
)
INDENT = st.sampled_from(["", "", "", " ", "  ", "   ", "    ", "\t", " \t"])
BREAK = st.sampled_from(["\n", "\n", "\n", "\r", "\r\n", "\n\n", "\u2028",
                         "\u2029", "\x85", "\x0b", "\x0c", "\x00",
                         "\x1b[31m", "\x1b[0m", " ", "\t", ""])
LINE = st.tuples(INDENT, DANGEROUS | st.text(max_size=6),
                 DANGEROUS | st.text(max_size=6), BREAK).map("".join)
DANGEROUS_TEXT = st.lists(LINE, max_size=6).map("".join)
TEXT = st.one_of(st.text(), DANGEROUS_TEXT)
# Heading text: what matters most is how it ends, in what CommonMark could
# take for a closing sequence (` ##`, then spaces or tabs).
CLOSING = st.builds("{}{}{}".format, st.sampled_from(["", " ", "\t"]),
                    st.text("#", min_size=1, max_size=3),
                    st.text(" \t", max_size=3))
TITLE = st.builds("{}{}".format, TEXT, st.just("") | DANGEROUS | CLOSING)
CODES = st.from_regex(r"[A-Za-z0-9_.:-]{1,64}", fullmatch=True)
# A path must be one line; that it exists or not does not matter here.
PATHS = st.text(st.characters(blacklist_characters="\r\n"), min_size=1)
SCALAR = {"string": st.text(max_size=20),
          "integer": st.integers(-10**15, 10**15),
          "number": st.integers(-10**15, 10**15) |
          st.floats(-1e300, 1e300),
          "boolean": st.booleans()}
JSON_DATA = st.recursive(
    st.none() | st.booleans() | st.integers() | TEXT,
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8)


def run(*calls):
    """Start a tool on a StringIO, make the calls, stop it; its events
    after Ready and before the final status."""
    stream = io.StringIO()
    tool = AcorTool("prop", stream=stream, frame_token=None).start()
    for call in calls:
        call(tool)
    tool.stop()
    events = parse(stream.getvalue())
    assert events[0] == Status("ready")
    assert events[-1] == Status("complete")
    return events[1:-1]


# --- 1. round trip through every method that takes text -------------------

@fuzz
@given(message=TEXT)
def test_property_status_message_round_trips(message):
    assert run(lambda t: t.status("working", message)) == [
        Status("working", fold_newlines(message))]


@fuzz
@given(message=TEXT)
def test_property_progress_message_round_trips(message):
    assert run(lambda t: t.progress(0.5, message)) == [
        Progress(50, fold_newlines(message))]


@fuzz
@given(label=TEXT)
def test_property_progress_bar_label_round_trips(label):
    assert run(lambda t: t.progress_bar(1, 4, label)) == [
        Progress(25, fold_newlines(f"{label} (1/4)".lstrip()))]


@fuzz
@given(text=TEXT)
def test_property_output_text_round_trips(text):
    assert run(lambda t: t.output(text)) == [Output(fold_newlines(text))]


@fuzz
@given(text=TEXT, format=st.sampled_from(["text", "markdown"]))
def test_property_fenced_output_round_trips(text, format):
    assert run(lambda t: t.output(text, format=format)) == [
        OutputData(format, fold_newlines(text))]


@fuzz
@given(text=TEXT, data=JSON_DATA)
def test_property_json_output_round_trips_exactly(text, data):
    value = {"text": text, text: [text, data]}
    assert run(lambda t: t.output(value)) == [OutputData("json", value)]


@fuzz
@given(title=TITLE, code=CODES, details=st.none() | TEXT,
       recovery=st.none() | TEXT)
def test_property_error_fields_round_trip(title, code, details, recovery):
    fold = lambda text: None if text is None else fold_newlines(text)
    assert run(lambda t: t.error(code, title, recovery, details)) == [
        Error(fold(title), code, fold(details), fold(recovery))]


@fuzz
@given(code=TEXT)
def test_property_error_code_is_refused_or_round_trips(code):
    try:
        events = run(lambda t: t.error(code, "m"))
    except ValueError:
        assert not is_error_code(code)
    else:
        assert events == [Error("m", code)]


@fuzz
@given(message=TEXT)
def test_property_input_needed_message_round_trips(message):
    stream = io.StringIO()
    tool = AcorTool("prop", stream=stream, frame_token=None).start()
    try:
        tool.input_needed(message)
    except SystemExit as exit:
        assert exit.code == 3
    assert parse(stream.getvalue()) == [
        Status("ready"), InputNeeded(fold_newlines(message))]


@fuzz
@given(items=st.lists(TEXT, max_size=5).filter(bool))
def test_property_directives_round_trip(items):
    assert run(*[lambda t, item=item: t.ai_directive(item)
                 for item in items]) == [
        AIDirective([fold_newlines(item) for item in items])]


@fuzz
@given(items=st.lists(TEXT, max_size=5), title=st.none() | TITLE)
def test_property_suggestions_round_trip(items, title):
    assert run(lambda t: t.suggestions(items, title)) == [Suggestions(
        [fold_newlines(item) for item in items],
        None if title is None else fold_newlines(title))]


@fuzz
@given(path=PATHS, description=TEXT)
def test_property_output_files_path_and_description_round_trip(path,
                                                               description):
    assume(not os.path.isfile(path))  # never hash whatever happens to exist
    (event,) = run(lambda t: t.output_files({path: description}))
    (entry,) = event.files
    assert entry["path"] == path
    assert entry["description"] == fold_newlines(description)


@fuzz
@given(value=TITLE)
def test_property_session_and_checkpoint_ids_round_trip(value):
    folded = fold_newlines(value)
    assert parse(render(Session(value))) == [Session(folded)]
    assert parse(render(Checkpoint(value))) == [Checkpoint(folded)]


# The new fields on the wire (issue 11): an exact next command, and what an
# Input Needed wants. Rendered directly: they round-trip whoever writes them.
ARGV = st.lists(TEXT | st.sampled_from(["", "'", '"', "a b", "$(x)", "-"]),
                max_size=5)
FIELD = st.fixed_dictionaries(
    {"type": st.sampled_from(["string", "integer", "number", "boolean"])},
    optional={"description": TEXT, "enum": st.lists(TEXT, max_size=3),
              "default": JSON_DATA, "minimum": st.integers(),
              "maximum": st.integers()})


def folded_argv(argv):
    return None if argv is None else [fold_newlines(arg) for arg in argv]


@fuzz
@given(title=TITLE, code=CODES, details=st.none() | TEXT,
       recovery=st.none() | TEXT, next=st.none() | ARGV)
def test_property_error_next_round_trips(title, code, details, recovery,
                                         next):
    fold = lambda text: None if text is None else fold_newlines(text)
    assert parse(render(Error(title, code, details, recovery, next))) == [
        Error(fold(title), code, fold(details), fold(recovery),
              folded_argv(next))]


@fuzz
@given(message=TEXT, fields=st.none() | st.dictionaries(TEXT, FIELD,
                                                       max_size=3),
       audience=st.sampled_from(["agent", "human"]) | TEXT,
       next=st.none() | ARGV)
def test_property_input_needed_fields_round_trip(message, fields, audience,
                                                 next):
    """Whatever fields are written, they are read as a form (issue 20,
    item 10): what the library would accept, the rest left out."""
    from acor.layout import read_input_fields
    event = InputNeeded(message, fields, audience, next)
    assert parse(render(event)) == [InputNeeded(
        fold_newlines(message), read_input_fields(fields),
        fold_newlines(audience), folded_argv(next))]


NAME = st.from_regex(r"[a-z][a-z0-9_-]{0,10}", fullmatch=True)
SCALAR_FIELD = st.sampled_from(["string", "integer", "number", "boolean"]
                               ).flatmap(lambda kind: st.fixed_dictionaries(
    {"type": st.just(kind)},
    optional={"description": st.text(max_size=50),
              "enum": st.lists(SCALAR[kind], min_size=1, max_size=4),
              "default": SCALAR[kind],
              **({"minimum": SCALAR["number"], "maximum": SCALAR["number"]}
                 if kind in ("integer", "number") else {}),
              **({"oneOf": st.lists(st.fixed_dictionaries(
                  {"const": SCALAR["string"], "title": SCALAR["string"]}),
                  min_size=1, max_size=3)} if kind == "string" else {})}))
# SEP-1330's multi-select: choices (titled or not), a default among them.
MULTI_FIELD = st.lists(SCALAR["string"], min_size=1, max_size=4).flatmap(
    lambda values: st.fixed_dictionaries(
        {"type": st.just("array"), "items": st.fixed_dictionaries(
            {"enum": st.just(values)}, optional={"type": st.just("string")})},
        optional={"description": st.text(max_size=50),
                  "default": st.lists(st.sampled_from(values), max_size=3),
                  "minItems": st.integers(0, 4),
                  "maxItems": st.integers(0, 4)}))
VALID_FIELD = SCALAR_FIELD | MULTI_FIELD


@fuzz
@given(fields=st.dictionaries(NAME, VALID_FIELD, min_size=1, max_size=4))
def test_property_fields_the_library_accepts_round_trip_whole(fields):
    from acor.checks import input_fields
    assert input_fields(fields) == fields
    [event] = parse(render(InputNeeded("pick", fields)))
    assert event.fields == fields


@fuzz
@given(fields=JSON_DATA | st.dictionaries(TEXT | NAME, JSON_DATA))
def test_fuzz_any_fields_a_tool_writes_are_read_as_a_form(fields):
    """Issue 20, item 10: an honest but odd Input Needed (an enum of 5, a
    default of the wrong type, a name that is no argument's) is read as
    fields every reader can show: what the library itself would write."""
    from acor.checks import input_fields
    [event] = parse(render(InputNeeded("pick", fields)))
    assert event.fields is None or input_fields(event.fields) == event.fields


# --- 2. the markdown-it oracle --------------------------------------------

STATES = ["working", "In review", "loading-data"]
CALLS = st.one_of(
    st.tuples(st.just("status"), st.sampled_from(STATES), TEXT),
    st.tuples(st.just("progress"),
              st.integers(-10, 200) | st.floats(-2, 200), TEXT),
    st.tuples(st.just("progress_bar"), st.integers(0, 9),
              st.integers(0, 9), TEXT),
    st.tuples(st.just("output"), TEXT),
    st.tuples(st.just("output_as"), st.sampled_from(["text", "markdown"]),
              TEXT),
    st.tuples(st.just("output_json"), JSON_DATA),
    st.tuples(st.just("error"), CODES, TITLE, st.none() | TEXT,
              st.none() | TEXT),
    st.tuples(st.just("ai_directive"), TEXT),
    st.tuples(st.just("suggestions"), st.lists(TEXT, max_size=3),
              st.none() | TITLE),
    st.tuples(st.just("output_files"),
              st.dictionaries(PATHS.map(lambda p: "no such dir/" + p), TEXT,
                              max_size=3)),
    st.tuples(st.just("heartbeat")),
)
ENDINGS = st.one_of(
    st.tuples(st.sampled_from(["complete", "failed", "cancelled"])),
    st.tuples(st.just("input_needed"), TEXT))

# The heading each call adds, as (prefix, title or None): a title is the
# caller's text, which a Markdown reader must see whole.
HEADINGS = {
    "status": lambda state, _: (f"Status: {state.capitalize()}", None),
    "progress": lambda *_: ("Progress: ", None),
    "progress_bar": lambda *_: ("Progress: ", None),
    "output": lambda _: ("Output", None),
    "output_as": lambda *_: ("Output Data", None),
    "output_json": lambda _: ("Output Data", None),
    "error": lambda code, title, *_: ("Error: ", title),
    "suggestions": lambda items, title: (
        ("Suggestions", None) if title is None else ("Suggestions: ", title)),
    "output_files": lambda _: ("Output Files", None),
}


def play(calls, ending, token=None):
    """Make the calls on a tool writing to a StringIO; its transcript."""
    stream = io.StringIO()
    tool = AcorTool("prop", stream=stream, frame_token=token,
                    progress_interval=0).start()  # every call written
    for name, *args in calls:
        if name == "output_as":
            tool.output(args[1], format=args[0])
        elif name == "output_json":
            tool.output(args[0], format="json")
        elif name == "error":
            code, title, details, recovery = args
            tool.error(code, title, recovery, details)
        else:
            getattr(tool, name)(*args)
    if ending[0] == "input_needed":
        try:
            tool.input_needed(ending[1])
        except SystemExit:
            pass
    else:
        tool.stop(ToolState(ending[0]))
    return stream.getvalue()


def expected_headings(calls, ending):
    headings = [("Status: Ready", None)]
    headings += [HEADINGS[name](*args) for name, *args in calls
                 if name in HEADINGS]
    if any(name == "ai_directive" for name, *_ in calls):
        headings.append(("AI Directive", None))
    if ending[0] == "input_needed":
        headings.append(("Input Needed", None))
    else:
        headings.append((f"Status: {ending[0].capitalize()}", None))
    return headings


# What markdown-it does to heading text: NUL becomes U+FFFD, and leading
# and trailing whitespace is trimmed (its own set where it defines one).
TRIM = getattr(md_utils, "MD_TRIM_CHARS", None)


def as_markdown_shows(text):
    return text.replace("\0", "\ufffd").strip(TRIM)


def top_level_headings(markdown):
    tokens = MarkdownIt("commonmark").parse(markdown)
    return [tokens[i + 1].content for i, token in enumerate(tokens)
            if token.type == "heading_open" and token.level == 0]


@fuzz
@given(calls=st.lists(CALLS, max_size=8), ending=ENDINGS)
def test_property_markdown_sees_exactly_the_headings_emitted(calls, ending):
    transcript = play(calls, ending)
    seen = top_level_headings(transcript)
    expected = expected_headings(calls, ending)
    assert len(seen) == len(expected), (seen, expected)
    for content, (prefix, title) in zip(seen, expected):
        if title is None and not prefix.endswith(" "):
            assert content == prefix
        else:
            assert content.startswith(prefix.rstrip())
        if title is not None:
            # The reader sees the whole title: nothing cut as a closing
            # sequence, no line break, escapes read as what they stand for.
            assert as_markdown_shows(unescape_inline(content)) == \
                as_markdown_shows(prefix + fold_newlines(title))
    # Our parser agrees with markdown-it on where sections are.
    assert len(parse(transcript)) == len(expected)


# --- 3. framing and chunking do not change the events ---------------------

@fuzz
@given(calls=st.lists(CALLS, max_size=6), ending=ENDINGS)
def test_property_framed_run_decodes_to_the_same_events(calls, ending):
    token = "0123456789abcdef" * 2
    decoder = StreamDecoder(token)
    # Framed progress is throttled (tests/library/test_tool.py covers that); here
    # every call writes, so the two transcripts must say the same thing.
    interval, acor_tool.PROGRESS_INTERVAL = acor_tool.PROGRESS_INTERVAL, 0
    try:
        lines = play(calls, ending, token).split("\n")
    finally:
        acor_tool.PROGRESS_INTERVAL = interval
    assert lines.pop() == ""
    events = [e for line in lines for e in decoder.feed(line)]
    events += decoder.close()
    assert [e for e in events if e.type != "heartbeat"] == parse(
        play(calls, ending))



@fuzz
@given(calls=st.lists(CALLS, max_size=6), ending=ENDINGS,
       raw=TEXT, cuts=st.lists(st.integers(0, 10 ** 6), max_size=12))
def test_property_parser_events_do_not_depend_on_chunking(calls, ending,
                                                          raw, cuts):
    text = raw + "\n" + play(calls, ending)
    bounds = sorted({cut % (len(text) + 1) for cut in cuts})
    chunks = [text[a:b] for a, b in zip([0] + bounds, bounds + [len(text)])]
    parser = Parser()
    events = [e for chunk in chunks for e in parser.feed(chunk)]
    assert events + parser.close() == parse(text)


@fuzz
@given(text=TEXT, cuts=st.lists(st.integers(0, 10 ** 6), max_size=8))
def test_property_parser_never_raises_on_any_text(text, cuts):
    bounds = sorted({cut % (len(text) + 1) for cut in cuts})
    parser = Parser()
    for a, b in zip([0] + bounds, bounds + [len(text)]):
        parser.feed(text[a:b])
    parser.close()
    json.dumps([e.to_dict() for e in parse(text)], default=str)
