"""acor/schemas/events.schema.json: the JSON Schema (draft 2020-12) of every
JSON line, checked against the events themselves.

For every event type (generated with Hypothesis), the line acor writes for
it (``jsonlines.line_record``: nulls and defaults left out, ``v``) validates,
so does the line as written (``jsonlines.dumps``), it reads back as the
event's whole dict (``jsonlines.full_record``), and the event's keys are
exactly the ones the schema declares for its type. A new event type without
a schema (or without a strategy here) fails
``test_every_event_type_has_a_schema_and_a_strategy``.
"""

import json
import os
from importlib import resources

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acor import jsonlines
from acor.events import (EVENT_TYPES, AIDirective, Checkpoint, Error,
                         Heartbeat, InputNeeded, Output, OutputData,
                         OutputFiles, Progress, Result, Session, Status,
                         Stderr, Suggestions, Text, Unknown)
from acor.grammar import parse, render
from event_strategies import STRATEGIES

EXAMPLES = int(os.environ.get("ACOR_FUZZ_EXAMPLES", "100"))
fuzz = settings(max_examples=EXAMPLES, deadline=None,
                suppress_health_check=[HealthCheck.too_slow])

SCHEMA = json.loads(resources.files("acor").joinpath(
    "schemas", "events.schema.json").read_text(encoding="utf-8"))
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
OPTIONAL: dict = {}  # properties an event may leave out (none today)

EVENTS = st.one_of(*STRATEGIES.values())


def line(event):
    """The JSON line acor writes for ``event``."""
    return jsonlines.line_record(event.to_dict())


def errors(record):
    return [e.message for e in VALIDATOR.iter_errors(record)]


# --- the schema and the event model agree ----------------------------------

def test_the_schema_is_valid_draft_2020_12():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == \
        "https://json-schema.org/draft/2020-12/schema"


def test_every_event_type_has_a_schema_and_a_strategy():
    declared = SCHEMA["properties"]["type"]["enum"]
    assert declared == list(EVENT_TYPES)
    assert set(STRATEGIES) == set(EVENT_TYPES)
    for kind in EVENT_TYPES:
        assert SCHEMA["$defs"][kind]["properties"]["type"] == {"const": kind}


@fuzz
@given(event=EVENTS)
def test_property_every_event_validates_as_a_json_line(event):
    declared = SCHEMA["$defs"][event.type]
    assert set(event.to_dict()) == set(declared["properties"]) - \
        OPTIONAL.get(event.type, set())
    written = line(event)
    assert set(declared["required"]) <= set(written)
    assert None not in written.values()
    assert errors(written) == []
    # As written on the wire: strict JSON (NaN carried as "NaN").
    wire = json.loads(jsonlines.dumps(written, compact=True))
    assert errors(wire) == []
    # A line read alone gives the whole event back.
    assert jsonlines.full_record(written) == event.to_dict()


@fuzz
@given(event=st.one_of(*(STRATEGIES[s] for s in (
    "status", "progress", "output", "output_data", "output_files", "error",
    "input_needed", "ai_directive", "suggestions", "session",
    "checkpoint"))))
def test_property_parsed_sections_validate(event):
    for parsed in parse(render(event)):
        assert errors(line(parsed)) == [], parsed


def test_the_result_line_acor_writes_validates():
    record = {"type": "result", "exit_code": 124, "state": "timeout",
              "error_code": "E_TIMEOUT", "duration_ms": 2004,
              "tool": "csvprofile", "version": "1.0.0",
              "argv": ["data.csv"],
              "next": ["acor", "--timeout", "4", "csvprofile", "data.csv"],
              "acor": "0.2.0", "v": 2}
    assert errors(record) == []


@pytest.mark.parametrize("record, complaint", [
    ({"type": "output", "text": "x"}, "'v' is a required property"),
    ({"type": "output", "text": "x", "v": 1}, "2 was expected"),
    ({"type": "frobnicate", "v": 2}, "is not one of"),
    ({"type": "output", "v": 2}, "'text' is a required property"),
    ({"type": "progress", "percent": "NaN", "v": 2},
     "is not of type 'number'"),
    ({"type": "input_needed", "message": "m", "audience": "robot", "v": 2},
     "is not one of"),
    ({"type": "error", "title": "t", "code": "E", "next": "acor x", "v": 2},
     "is not of type 'array', 'null'"),
    ({"type": "result", "exit_code": 0, "state": "done", "duration_ms": 1,
      "tool": "t", "acor": "0.2.0", "v": 2}, "is not one of"),
    ({"type": "result", "exit_code": 0, "state": "complete", "v": 2},
     "'tool' is a required property"),
])
def test_the_schema_refuses_what_is_not_an_event_line(record, complaint):
    found = errors(record)
    assert any(complaint in message for message in found), found
