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
