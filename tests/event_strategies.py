"""Hypothesis strategies for every event type: the JSON Schema test and the
typed-consumer test generate events from the same table."""

from hypothesis import strategies as st

from acor.events import (AIDirective, Checkpoint, Error, Heartbeat,
                         InputNeeded, Output, OutputData, OutputFiles,
                         Progress, Result, Session, Status, Stderr,
                         Suggestions, Text, Unknown)

TEXT = st.text(max_size=20)
MAYBE_TEXT = st.none() | TEXT
ARGV = st.lists(TEXT, max_size=4)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | TEXT,
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(TEXT, inner, max_size=3), max_leaves=8)
NUMBER = st.integers(-10 ** 6, 10 ** 6) | st.floats(allow_nan=False,
                                                    allow_infinity=False)
FIELD = st.fixed_dictionaries(
    {"type": st.sampled_from(["string", "integer", "number", "boolean",
                              "array"])},
    optional={"description": TEXT, "enum": st.lists(TEXT | st.integers()),
              "default": JSON, "minimum": NUMBER, "maximum": NUMBER})
FILE = st.one_of(
    st.fixed_dictionaries({
        "path": TEXT.filter(bool), "description": TEXT,
        "kind": st.just("file"), "bytes": st.integers(0, 2 ** 40),
        "sha256": st.from_regex(r"[0-9a-f]{12}", fullmatch=True)}),
    st.fixed_dictionaries({
        "path": TEXT.filter(bool), "description": TEXT,
        "kind": st.sampled_from(["missing", "directory"]),
        "bytes": st.none(), "sha256": st.none()}))

STRATEGIES = {
    "status": st.builds(Status, st.from_regex(r"[a-z][a-z0-9_ -]{0,63}",
                                              fullmatch=True), TEXT),
    "progress": st.builds(Progress, st.integers(0, 100)
                          | st.floats(0, 100), TEXT),
    "output": st.builds(Output, TEXT),
    "output_data": st.builds(OutputData, st.sampled_from(
        ["json", "yaml", "text", "markdown"]), JSON),
    "output_files": st.builds(OutputFiles, st.lists(FILE, max_size=3)),
    "error": st.builds(Error, TEXT, st.from_regex(r"E_[A-Z_]{1,10}",
                                                  fullmatch=True),
                       MAYBE_TEXT, MAYBE_TEXT, st.none() | ARGV),
    "input_needed": st.builds(
        InputNeeded, TEXT, st.none() | st.dictionaries(TEXT, FIELD,
                                                       max_size=3),
        st.sampled_from(["agent", "human"]), st.none() | ARGV),
    "ai_directive": st.builds(AIDirective, st.lists(TEXT, max_size=3)),
    "suggestions": st.builds(Suggestions, st.lists(TEXT, max_size=3),
                             MAYBE_TEXT),
    "session": st.builds(Session, TEXT),
    "checkpoint": st.builds(Checkpoint, TEXT),
    "text": st.builds(Text, TEXT),
    "heartbeat": st.builds(Heartbeat),
    "unknown": st.builds(Unknown, TEXT, TEXT, TEXT),
    "stderr": st.builds(Stderr, TEXT),
    "result": st.builds(
        Result, st.sampled_from([0, 1, 2, 3, 124, 130]),
        st.sampled_from(["complete", "failed", "cancelled", "input_needed",
                         "timeout"]),
        st.none() | st.from_regex(r"E_[A-Z_]{1,10}", fullmatch=True),
        st.integers(0, 10 ** 9), TEXT, MAYBE_TEXT, ARGV, MAYBE_TEXT,
        st.none() | ARGV),
}
