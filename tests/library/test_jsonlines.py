"""JSON in and out of acor (acor.jsonlines): bounded decoding of the JSON a
tool writes (issue 10, item 2) and strict JSON lines (item 11)."""

import json

import pytest

from acor import jsonlines
from acor.decode import decode
from acor.events import OutputData, Status
from acor.framing import frame
from acor.grammar import Parser, parse, render


def nested(depth, leaf="1"):
    return "[" * depth + leaf + "]" * depth


def output_data(text):
    return f"## Output Data\n```json\n{text}\n```\n\n## Status: Complete\n\n"


# --- deep JSON (issue 10, item 2) ------------------------------------------

@pytest.mark.parametrize("depth", [257, 1_000, 100_000])
def test_deep_json_stays_text_and_never_crashes_parsing(depth):
    text = nested(depth)
    assert parse(output_data(text)) == [OutputData("json", text),
                                        Status("complete")]


@pytest.mark.parametrize("text", [
    nested(100_000, ""), '{"a":' * 5_000 + "1" + "}" * 5_000,
    "[1," * 3_000 + "2" + "]" * 3_000, "[" * 100_000,
    "[" + "[[]]," * 10 + nested(2_000) + "]",
])
def test_deep_json_of_any_shape_is_kept_as_text(text):
    (event, _) = parse(output_data(text))
    assert event == OutputData("json", text)


def test_json_up_to_the_depth_limit_is_decoded():
    value = json.loads(nested(jsonlines.MAX_DEPTH))
    assert parse(output_data(nested(jsonlines.MAX_DEPTH)))[0] == \
        OutputData("json", value)
    assert jsonlines.MAX_DEPTH == 256


def test_brackets_inside_strings_do_not_count_as_depth():
    text = json.dumps({"s": "[" * 1_000 + '\\"{' * 500, "rows": [[1]] * 300})
    assert parse(output_data(text))[0] == OutputData("json", json.loads(text))


def test_many_shallow_containers_are_decoded():
    value = [{"id": i, "tags": [i, [i]]} for i in range(5_000)]
    assert parse(output_data(json.dumps(value)))[0] == \
        OutputData("json", value)


def test_deep_json_through_the_incremental_parser_and_the_decoder():
    text = output_data(nested(100_000))
    parser = Parser()
    events = [e for at in range(0, len(text), 4096)
              for e in parser.feed(text[at:at + 4096])] + parser.close()
    assert events[0] == OutputData("json", nested(100_000))
    token = "ab" * 16
    framed = "".join(frame(s + "\n\n", token) for s in text.split("\n\n")
                     if s)
    assert decode(framed.encode(), token)[0] == \
        OutputData("json", nested(100_000))


def test_a_decoded_value_re_encodes_without_recursing():
    (event, _) = parse(output_data(nested(jsonlines.MAX_DEPTH)))
    json.dumps(event.to_dict())
    assert parse(render(event))[0] == event


def test_loads_raises_only_value_error():
    for text in (nested(100_000), "[" * 100_000, "{", "nope", ""):
        with pytest.raises(ValueError):
            jsonlines.loads(text)
    assert jsonlines.loads('{"a": [1, 2]}') == {"a": [1, 2]}
    assert jsonlines.loads(nested(3), max_depth=3) == [[[1]]]
    with pytest.raises(ValueError, match="deeper than 2"):
        jsonlines.loads(nested(3), max_depth=2)


# --- strict JSON lines (issue 10, item 11) ---------------------------------

import math
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

EXAMPLES = int(os.environ.get("ACOR_FUZZ_EXAMPLES", "100"))
fuzz = settings(max_examples=EXAMPLES, deadline=None,
                suppress_health_check=[HealthCheck.too_slow])


def refuse(constant):
    raise ValueError(f"not strict JSON: {constant}")


def strict_loads(line):
    """The strict oracle: RFC 8259 JSON, one line for every line splitter,
    valid UTF-8."""
    assert line.splitlines() == [line] and "\n" not in line
    line.encode("utf-8")
    return json.loads(line, parse_constant=refuse)


class Odd:
    def __str__(self):
        return "odd\u2028one"


class Unprintable:
    def __str__(self):
        raise RuntimeError("no")

    def __repr__(self):
        raise RuntimeError("no")


# Every character, lone surrogates and line separators included.
ANY_TEXT = st.text(st.characters(exclude_categories=()), max_size=20) | \
    st.sampled_from(["\u2028", "\u2029", "\x85", "\ud800", "\udfff",
                     "\ud83d\ude00", "a\udcffb", "\x00\x1e\r\n"])
LEAVES = (st.none() | st.booleans() | st.integers() | st.floats() |
          ANY_TEXT | st.sampled_from([math.nan, math.inf, -math.inf,
                                      b"bytes", {1, 2}, 1j]) |
          # built, not sampled: Hypothesis shows sampled values with repr()
          st.builds(Odd) | st.builds(Unprintable) |
          st.builds(lambda: 10 ** 5000))
KEYS = ANY_TEXT | st.integers() | st.floats() | st.booleans() | st.none() | \
    st.sampled_from([(1, 2), math.nan]) | st.builds(Odd)
VALUES = st.recursive(
    LEAVES, lambda inner: st.lists(inner, max_size=4)
    | st.tuples(inner, inner) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=12)
# What strict JSON can carry unchanged.
PLAIN_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=20)
PLAIN = st.recursive(
    st.none() | st.booleans() | st.integers(-2 ** 64, 2 ** 64) |
    st.floats(allow_nan=False, allow_infinity=False) | PLAIN_TEXT,
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(PLAIN_TEXT, inner, max_size=4), max_leaves=12)


@fuzz
@given(value=VALUES)
def test_property_any_record_is_one_line_of_strict_json(value):
    strict_loads(jsonlines.dumps({"type": "output_data", "data": value}))


@fuzz
@given(value=PLAIN)
def test_property_strict_json_values_round_trip_exactly(value):
    record = {"type": "output_data", "data": value}
    assert strict_loads(jsonlines.dumps(record)) == record


def test_non_finite_numbers_are_carried_as_strings():
    line = jsonlines.dumps({"mean": math.nan, "max": math.inf,
                            "min": -math.inf, "n": 1.5})
    assert strict_loads(line) == {"mean": "NaN", "max": "Infinity",
                                  "min": "-Infinity", "n": 1.5}


def test_line_separators_are_escaped():
    line = jsonlines.dumps({"text": "a\u2028b\u2029c\x85d\ne"})
    assert line == '{"text": "a\\u2028b\\u2029c\\u0085d\\ne"}'
    assert strict_loads(line) == {"text": "a\u2028b\u2029c\x85d\ne"}


def test_lone_surrogates_become_replacement_characters():
    line = jsonlines.dumps({"text": "a\udcffb \ud83d\ude00"})
    assert strict_loads(line) == {"text": "a\ufffdb \U0001F600"}


def test_deep_and_circular_values_never_raise():
    deep = []
    inner = deep
    for _ in range(100_000):
        inner.append([])
        inner = inner[0]
    loop = {"a": 1}
    loop["self"] = loop
    record = strict_loads(jsonlines.dumps({"deep": deep, "loop": loop}))
    assert record["loop"] == {"a": 1, "self": "[acor: circular reference]"}
    # 512 levels as structure, the rest as the JSON text it would have been.
    level, depth = record["deep"], 0
    while isinstance(level, list):
        level, depth = level[0], depth + 1
    count = level.count("[")
    assert depth == 512 - 1  # the record itself is the first level
    assert level == "[" * count + "]" * count
    assert depth + count == 100_001


def test_shared_values_are_not_taken_for_cycles():
    shared = [1]
    assert strict_loads(jsonlines.dumps(
        {"a": shared, "b": shared, "c": math.nan})) == {
            "a": [1], "b": [1], "c": "NaN"}


def test_unknown_objects_and_keys_become_strings():
    record = strict_loads(jsonlines.dumps(
        {"odd": Odd(), "bad": Unprintable(), (1, 2): 3, 1: True, None: 0,
         2.5: 1, "big": 10 ** 5000}))
    assert record["odd"] == "odd\u2028one"
    assert record["bad"] == "<Unprintable>"
    assert record["(1, 2)"] == 3 and record["1"] is True
    assert record["null"] == 0 and record["2.5"] == 1
    assert record["big"] == hex(10 ** 5000)


def test_schema_two_lines_leave_out_nulls_and_defaults_and_read_back_whole():
    assert jsonlines.SCHEMA_VERSION == 2
    from acor.events import Error, InputNeeded, OutputFiles, Result
    cases = [
        (Status("ready"), {"type": "status", "state": "ready", "v": 2}),
        (Error("t", "E_X", None, None, None),
         {"type": "error", "title": "t", "code": "E_X", "v": 2}),
        (InputNeeded("m", None, "agent", None),
         {"type": "input_needed", "message": "m", "v": 2}),
        (InputNeeded("m", None, "human", ["acor", "x"]),
         {"type": "input_needed", "message": "m", "audience": "human",
          "next": ["acor", "x"], "v": 2}),
        (OutputFiles([{"path": "a", "description": "", "kind": "missing",
                       "bytes": None, "sha256": None}]),
         {"type": "output_files", "files": [{"path": "a",
                                             "kind": "missing"}], "v": 2}),
        (Result(0, "complete", tool="t", acor="9"),
         {"type": "result", "exit_code": 0, "state": "complete",
          "duration_ms": 0, "tool": "t", "acor": "9", "v": 2}),
        # A value that only equals the default is kept: 0 is not "".
        (Status("working", ""), {"type": "status", "state": "working",
                                 "v": 2}),
    ]
    for event, written in cases:
        assert jsonlines.line_record(event.to_dict()) == written
        assert jsonlines.full_record(written) == event.to_dict()
    # Keys and types a reader does not know pass through.
    assert jsonlines.full_record({"type": "status", "state": "x", "new": 1,
                                  "v": 2}) == {
        "type": "status", "state": "x", "message": "", "new": 1}
    assert jsonlines.full_record({"type": "later", "v": 3}) == \
        {"type": "later"}


def test_output_data_blocks_are_strict_json_too():
    (event,) = parse(render(OutputData("json", {"mean": math.nan,
                                                "max": math.inf})))
    assert event == OutputData("json", {"mean": "NaN", "max": "Infinity"})


@pytest.mark.parametrize("depth", [900, 100_000])
def test_rendering_deep_output_data_never_raises(depth):
    deep = []
    inner = deep
    for _ in range(depth - 1):
        inner.append([])
        inner = inner[0]
    (event,) = parse(render(OutputData("json", deep)))
    assert event.format == "json"
    strict_loads(jsonlines.dumps(event.to_dict()))
