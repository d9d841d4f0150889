"""The rules `acor check` holds a tool to, as pure functions.

Two kinds of rule: the manifest's (the published JSON Schema
``acor/schemas/manifest.schema.json``, and what a schema cannot say about
``args``), and the stream's (what one run of an example wrote). Each
broken rule is a :class:`Violation` with the fix, written for the tool's
author. :mod:`cli.commands.check` runs the tool and prints the report.
"""

from __future__ import annotations

import json
import re

from acor import exitcodes
from collections.abc import Mapping

from acor import args
from acor.events import (Error, Event, InputNeeded, Output, Progress,
                         Status, Text, Unknown)

from acor.cli.package_data import schema_text

TYPE_CHECKING = False  # typing costs every command ~3 ms: only mypy
if TYPE_CHECKING:
    from typing import Any, Callable, Optional, Protocol, Sequence

    from jsonschema import ValidationError

    from acor.cli.discovery.spec import ToolSpec

    class WrappedSpec(Protocol):
        """What the rules of a wrapped program need of its spec: the
        manifest's ``errors`` (exit code -> what it means)."""

        errors: Optional[dict[str, Any]]

# The endings the launcher writes itself when a run did not end on its own
# (see acor.cli.run.launch): these are the tool's fault only for "no ending".
NO_ENDING = frozenset({"E_NO_FINAL_STATUS", "E_TOOL_CRASHED",
                       "E_TOOL_KILLED"})
STOPPED = frozenset({"E_TIMEOUT", "E_IDLE_TIMEOUT"})
_HEADING_LINE = re.compile(r"^##(?:[ \t].*)?$", re.M)
_START = ("Start the run before writing anything: `with AcorTool() as tool:` "
          "(or tool.start()) in Python, acor_start in bash.")


class Violation:
    """One broken rule: where, what is wrong, and the fix."""

    __slots__ = ("where", "problem", "fix")

    def __init__(self, where: str, problem: str, fix: str) -> None:
        self.where = where
        self.problem = problem
        self.fix = fix

    def to_dict(self) -> dict[str, str]:
        return {"where": self.where, "problem": self.problem, "fix": self.fix}

    def __repr__(self) -> str:
        return f"Violation({self.where!r}, {self.problem!r})"


# --- the manifest -----------------------------------------------------------

def load_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(schema_text("manifest"))
    return schema


def manifest_violations(data: object) -> list[Violation]:
    """Every way ``data`` (a parsed manifest) breaks the published schema,
    then the rules of ``args`` a schema cannot express."""
    import jsonschema  # only `acor check` pays for it
    validator = jsonschema.Draft202012Validator(load_schema())
    found, seen = [], set()
    for error in sorted(validator.iter_errors(data),
                        key=lambda e: [str(p) for p in e.absolute_path]):
        violation = _schema_violation(error)
        # The top level and the branch for the manifest's kind may both
        # say it (not an object): once is enough.
        if (violation.where, violation.problem) not in seen:
            seen.add((violation.where, violation.problem))
            found.append(violation)
    if not found and isinstance(data, dict) and "args" in data:
        found += args_violations(data["args"])
    return found


def _where(path: Sequence[str | int]) -> str:
    parts = "".join(f"[{p}]" if isinstance(p, int) else f".{p}"
                    for p in path)
    return "manifest" + (parts if parts else "")


def _schema_violation(error: ValidationError) -> Violation:
    """One schema error in words for the tool's author: by the field it
    is about, else by the rule it breaks, else the validator's message
    and the field's description."""
    where = _where(error.absolute_path)
    kind = str(error.validator)
    if kind not in _RULES_FIRST:
        about_field = _field_violation(error, where)
        if about_field is not None:
            return about_field
    words = _BY_RULE.get(kind)
    if words is not None:
        return Violation(where, *words(error))
    hint = _schema_of(error).get("description")
    return Violation(where, error.message, hint or "See `acor schema "
                     "manifest` for what this field takes.")


def _field_violation(error: ValidationError, where: str
                     ) -> Optional[Violation]:
    """A field whose rules are said best together: the name, x-acor."""
    field = error.absolute_path[-1] if error.absolute_path else None
    if field == "name" and error.validator == "pattern":
        return Violation(where, f"the name {error.instance!r} is not "
                         "allowed", "Use 1-64 lowercase letters, digits, '-' "
                         "or '_', starting with a letter or digit "
                         '(like "my-tool").')
    if field == "x-acor" or error.validator == "oneOf":
        return Violation(where, "x-acor must say how the value reaches the "
                         "command line", 'Write {"position": 0} for a '
                         'positional argument or {"flag": "--name"} for an '
                         'option (add "repeat": true for a list), or '
                         '{"human": true} for one only a person may give.')
    return None


def _schema_of(error: ValidationError) -> Mapping[str, Any]:
    """The part of the schema ``error`` broke (a bool schema: none)."""
    schema = error.schema
    return schema if isinstance(schema, Mapping) else {}


def _required(error: ValidationError) -> tuple[str, str]:
    detail: Any = error.validator_value
    instance: Any = error.instance
    missing = [name for name in detail if name not in instance]
    name = missing[0] if missing else detail[0]
    return (f"the required field {name!r} is missing",
            f"Add {json.dumps(name)}: {_EXAMPLE.get(name, '...')}"
            f" to {_where(error.absolute_path)}.")


def _unknown_field(error: ValidationError) -> tuple[str, str]:
    known = list(_schema_of(error).get("properties", {}))
    instance: Any = error.instance
    extra = sorted(set(instance) - set(known))
    if not extra:
        return error.message, "Remove it: it is not a manifest field " \
            "(`acor schema manifest` lists them)."
    import difflib  # ~3 ms, and only for a misspelt field
    near = difflib.get_close_matches(extra[0], known, n=1)
    fix = (f"Rename it to {near[0]!r}." if near else
           "Remove it: it is not a manifest field (`acor schema "
           "manifest` lists them).")
    return f"unknown field {extra[0]!r}", fix


def _wrong_type(error: ValidationError) -> tuple[str, str]:
    detail: Any = error.validator_value
    return (f"must be {_a(detail)}, not {_json_type(error.instance)}",
            f"Write {_a(detail)} there.")


def _not_allowed(error: ValidationError) -> tuple[str, str]:
    detail: Any = error.validator_value
    allowed = detail if error.validator == "enum" else [detail]
    return (f"{json.dumps(error.instance)} is not allowed",
            "Use one of: " + ", ".join(json.dumps(v) for v in allowed) + ".")


def _too_small(error: ValidationError) -> tuple[str, str]:
    detail: Any = error.validator_value
    return (f"{error.instance} is too small",
            f"Use a number above {detail}." if error.validator ==
            "exclusiveMinimum" else f"Use {detail} or more.")


def _empty(error: ValidationError) -> tuple[str, str]:
    return "must not be empty", "Give it a value."


# Rules said as themselves wherever they are broken, the name and x-acor
# included.
_RULES_FIRST = ("required", "additionalProperties")
# A schema rule -> the problem and the fix for an error of it.
_BY_RULE: dict[str, Callable[[ValidationError], tuple[str, str]]] = {
    "required": _required, "additionalProperties": _unknown_field,
    "type": _wrong_type, "enum": _not_allowed, "const": _not_allowed,
    "exclusiveMinimum": _too_small, "minimum": _too_small,
    "minLength": _empty, "minItems": _empty}


_EXAMPLE = {"name": '"my-tool"', "description": '"What the tool does"',
            "entry": '"cli.py"', "command": '["program", "--option"]',
            "message": '"What went wrong"', "recovery": '"What to do next"',
            "args": "[...] or {...}", "exit_code": "0", "type": '"string"',
            "x-acor": '{"position": 0}', "properties": "{...}"}


def _a(kind: str | list[str]) -> str:
    kinds = kind if isinstance(kind, list) else [kind]
    words = {"object": "an object", "array": "a list", "string": "a string",
             "integer": "a whole number", "number": "a number",
             "boolean": "true or false", "null": "null"}
    return " or ".join(words.get(k, str(k)) for k in kinds)


def _json_type(value: object) -> str:
    if isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, dict) else "null"


def args_violations(schema: dict[str, Any]) -> list[Violation]:
    """Defaults that do not fit their own property (the JSON Schema cannot
    say so). The shape of ``args`` (positions, flags) is discovery's to
    check: a manifest it skips is reported with its reason; the examples'
    values are checked as `acor call` checks a call, when they run."""
    if args.schema_problems(schema):
        return []
    found = []
    for name, prop in schema.get("properties", {}).items():
        if "default" in prop:
            for message in args.validate({"type": "object", "properties": {
                    name: prop}}, {name: prop["default"]}):
                found.append(Violation(f"manifest.args.properties.{name}."
                             "default", message, "Make the default a "
                             "value the property accepts."))
    return found


# --- one run ----------------------------------------------------------------

def strip_launcher_ending(events: list[Event], error_code: str | None
                          ) -> list[Event]:
    """The tool's own events: without the Error and Failed the launcher
    adds when a run did not end (a crash, no final status, a timeout),
    without stderr and the result line."""
    own = [e for e in events if e.type not in ("stderr", "result")]
    if error_code in NO_ENDING | STOPPED and len(own) >= 2 and \
            isinstance(own[-2], Error) and own[-2].code == error_code and \
            own[-1] == Status("failed"):
        own = own[:-2]
    return own


def stream_violations(events: list[Event], where: str, *,
                      tool_exit_code: int | None,
                      error_code: str | None = None,
                      state: str | None = None,
                      late: list[Event] | tuple[Event, ...] = ()
                      ) -> list[Violation]:
    """Every way one run's stream breaks the protocol. ``events``: all the
    run's events as the runner gives them; ``late``: what the tool wrote
    after its ending (the transcript leaves it out); ``tool_exit_code``:
    what the tool's own process exited with (None if unknown, negative if
    a signal ended it)."""
    found = []
    if state == "timeout" or error_code in STOPPED:
        found.append(Violation(where, "the run was stopped by a timeout "
                     f"({error_code})", "Make the example finish quickly "
                     "(a small input), or raise \"timeout\" in the "
                     "manifest; call tool.heartbeat() during long silent "
                     "work."))
    late = [e for e in late if not _blank(e)]
    hung = _hung(late, where)
    found += hung
    own = strip_launcher_ending(events, error_code) + [
        e for e in late if not _stopped(e)]
    found += _start_violations(own, where)
    found += _raw_sections(own, where)
    found += [v for v in map(_section_violation, own, [where] * len(own))
              if v is not None]
    ending = _ending(own, where, found, error_code)
    if ending is not None and tool_exit_code is not None and \
            tool_exit_code >= 0 and state != "timeout" and not hung:
        found += _exit_agrees(ending, own, tool_exit_code, where)
    return found


def _blank(event: Event) -> bool:
    """Raw text of nothing but white space: no part of the stream."""
    return isinstance(event, Text) and not event.text.strip()


def _stopped(event: Event) -> bool:
    return isinstance(event, Error) and event.code in STOPPED


def _hung(late: list[Event], where: str) -> list[Violation]:
    """The tool did not exit after its ending: acor stopped it."""
    stopped = [e for e in late if isinstance(e, Error) and _stopped(e)]
    if not stopped:
        return []
    return [Violation(where, "the tool did not exit after its ending and "
                      f"was stopped ({stopped[0].code})", "Exit right "
                      "after the final status: stop threads and child "
                      "processes first (a daemon thread, or join).")]


def _start_violations(own: list[Event], where: str) -> list[Violation]:
    """A run starts with `## Status: Ready` (blank text before it aside)."""
    meaningful = [e for e in own if not _blank(e)]
    if meaningful and meaningful[0] == Status("ready"):
        return []
    first = _describe(meaningful[0]) if meaningful else "nothing"
    return [Violation(where, "the run does not start with "
                      f"`## Status: Ready` (it starts with {first})",
                      _START)]


def _section_violation(event: Event, where: str) -> Optional[Violation]:
    """A section the tool wrote wrong: malformed, a progress out of
    0-100, an error with no code."""
    if isinstance(event, Unknown):
        return _unknown(event, where)
    if isinstance(event, Progress) and not 0 <= event.percent <= 100:
        return Violation(where, f"progress {event.percent}% is "
                         "outside 0-100", _PROGRESS_FIX)
    if isinstance(event, Error) and not event.code:
        return Violation(where, f"the error {event.title!r} has "
                         "no code", 'Give every error a code: tool.error('
                         '"E_SOMETHING", message) (acor_error E_SOMETHING '
                         'MESSAGE in bash).')
    return None


_PROGRESS_FIX = ("Report progress as a number from 0 to 100: "
                 "tool.progress(42) or tool.progress(0.42) "
                 "(acor_progress 42 in bash).")


def _describe(event: Event) -> str:
    if isinstance(event, Text):
        line = event.text.strip().split("\n")[0]
        return f"raw text {line[:60]!r}"
    if isinstance(event, Status):
        return f"`## Status: {event.state.capitalize()}`"
    return f"a {event.type} section"


def wrapped_findings(events: list[Event], where: str, spec: WrappedSpec, *,
                     tool_exit_code: int | None,
                     error_code: str | None = None,
                     state: str | None = None,
                     seen: set[str] | None = None
                     ) -> tuple[list[Violation], list[str]]:
    """One run of a wrapped program (a ``command`` manifest): acor writes
    its stream, so the library's rules do not apply; what does is fitted
    to a program acor wraps. The violations (a run stopped by a timeout),
    and warnings: an exit code the manifest's ``errors`` does not explain
    (the agent gets ``E_EXIT_N`` and a generic recovery), and output lines
    that would read as ACOR sections (relayed escaped, as the program's
    output: never obeyed, but never a section either), each line once
    for all the runs that share ``seen``."""
    found: list[Violation] = []
    warnings: list[str] = []
    if state == "timeout" or error_code in STOPPED:
        found.append(Violation(where, "the run was stopped by a timeout "
                     f"({error_code})", "Make the example finish quickly "
                     "(a small input), or raise \"timeout\" (and "
                     "\"idle_timeout\") in the manifest."))
    errors = spec.errors or {}
    if tool_exit_code is not None and tool_exit_code > 0 and \
            str(tool_exit_code) not in errors and state != "timeout":
        warnings.append(
            f"{where}: the program exited {tool_exit_code}, which the "
            "manifest's \"errors\" does not explain, so an agent gets "
            f"E_EXIT_{tool_exit_code} and a generic recovery. Add "
            f'"errors": {{"{tool_exit_code}": {{"code": "E_...", '
            '"message": "what it means", "recovery": "what to do", '
            '"next": "acor ... {args}"}}')
    seen = set() if seen is None else seen
    said = 0
    for event in events:
        if not isinstance(event, (Output, Text)):
            continue
        for line in _HEADING_LINE.findall(event.text):
            if line not in seen and said < 3:
                seen.add(line)
                said += 1
                warnings.append(
                    f"{where}: the program printed {line!r}, which would "
                    "read as an ACOR section: acor relays it escaped, as "
                    "the program's output, so an agent never takes it "
                    "for one. If the program means to report through "
                    "acor (an error, a question), make it an acor tool "
                    "(\"entry\", writing sections with the library, "
                    "acor.sh or acor.mjs), or describe its exit codes in "
                    "\"errors\".")
    return found, warnings


def exit_warnings(events: list[Event], where: str, spec: ToolSpec
                  ) -> list[str]:
    """What an agent got when the tool ended itself inside ``with
    AcorTool()`` (sys.exit, its own argparse): the library reports it, so
    nothing is lost, but the author can say more. Each the first time."""
    warnings = []
    errors = [e for e in events if isinstance(e, Error)]
    exits = [e for e in errors if re.fullmatch(r"E_EXIT_\d+", e.code or "")]
    if exits:
        code = exits[0].code
        warnings.append(
            f"{where}: the tool ended itself with sys.exit (or an exit of "
            f"its own), which acor reports as {code} with the message "
            "and a generic recovery. Report the failure with "
            'tool.fail("E_SOMETHING", message, recovery="what to do", '
            "next=...) instead: an agent can branch on a code of yours "
            "and follow your recovery.")
    if not getattr(spec, "args_schema", None) and any(
            e.code == "E_USAGE" for e in errors):
        warnings.append(
            f"{where}: the tool's own argument parser refused its "
            "arguments (E_USAGE, with its usage and `--help` as next). "
            'Declare the arguments as "args" in manifest.json and read '
            "them with tool.parse_args(): acor then checks a call before "
            "the tool starts, and agents and MCP clients see the "
            "arguments as a schema.")
    return warnings


def _raw_sections(own: list[Event], where: str) -> list[Violation]:
    """Text that reads as a section: the tool printed a heading itself.
    It is relayed escaped, as text: it is never obeyed."""
    found, seen = [], set()
    for event in own:
        if not isinstance(event, Text):
            continue
        for line in _HEADING_LINE.findall(event.text):
            if line in seen:
                continue
            seen.add(line)
            found.append(Violation(where, f"the tool printed {line!r} "
                         "itself: acor shows it as plain text, not as a "
                         "section", "Write sections through the library "
                         "(tool.stop(), tool.output(...); acor_stop, "
                         "acor_output in bash), never with print or echo. "
                         "Text meant as output goes through "
                         "tool.output(text), which escapes it."))
    return found[:5]


def _unknown(event: Unknown, where: str) -> Violation:
    if event.heading.startswith("Progress"):
        fix = _PROGRESS_FIX
    else:
        fix = ("Write sections through the library, which writes them "
               "well-formed (see docs/protocol.md, Sections).")
    return Violation(where, f"the section `## {event.heading}` is "
                     f"malformed: {event.reason}", fix)


def _ending(own: list[Event], where: str, found: list[Violation],
            error_code: str | None) -> str | None:
    """The run's ending (a final state, or "input_needed"), or None when
    it has none; reports a missing, repeated or early ending."""
    endings = [(i, e) for i, e in enumerate(own)
               if (isinstance(e, Status) and e.is_final) or
               isinstance(e, InputNeeded)]
    if not endings and error_code in STOPPED:
        return None  # reported as a timeout: the tool was not let finish
    if not endings:
        why = " (it crashed)" if error_code in ("E_TOOL_CRASHED",
                                                 "E_TOOL_KILLED") else ""
        found.append(Violation(where, "the run ends without a final status"
                     f"{why}", "End every run: let `with AcorTool() as "
                     "tool:` end normally, or call tool.stop() / "
                     "tool.fail(...) (acor_stop / acor_fail in bash)."))
        return None
    if len(endings) > 1:
        found.append(Violation(where, f"the run has {len(endings)} endings "
                     f"({', '.join(_describe(e) for _, e in endings)})",
                     "Write exactly one final status (or one Input "
                     "Needed), last: nothing after tool.stop()."))
    index, event = endings[0]
    late = [e for e in own[index + 1:] if not _blank(e)]
    if late and len(endings) == 1:
        found.append(Violation(where, f"{_describe(late[0])} comes after "
                     "the ending", "Write nothing after the final status "
                     "or Input Needed."))
    return event.state if isinstance(event, Status) else "input_needed"


def _exit_agrees(ending: str, own: list[Event], tool_exit_code: int,
                 where: str) -> list[Violation]:
    expected = exitcodes.OF_ENDING.get(ending)
    errors = [e for e in own if isinstance(e, Error)]
    usage = ending == "failed" and bool(errors) and \
        errors[-1].code == "E_USAGE"
    if usage:
        expected = exitcodes.USAGE
    if expected is None or tool_exit_code == expected:
        return []
    label = "Input Needed" if ending == "input_needed" else \
        f"`## Status: {ending.capitalize()}`" + (" after E_USAGE" if usage
                                                  else "")
    return [Violation(where, f"the tool ended with {label} but exited "
            f"{tool_exit_code}, not {expected}", f"Exit {expected} after "
            f"{label}: let the library end the process (return from the "
            "`with` block, tool.fail(...), tool.input_needed(...)), or "
            f"exit {expected} yourself.")]


def expectation_violations(example: dict[str, Any], exit_code: int,
                           events: list[Event],
                           where: str) -> list[Violation]:
    """What the example promised: its exit code, its event types in
    order (others may come between)."""
    found = []
    if exit_code != example["exit_code"]:
        found.append(Violation(where, f"exited {exit_code}, the example "
                     f"expects {example['exit_code']}",
                     "Fix the tool, or the example's \"exit_code\" if the "
                     "tool is right."))
    wanted = list(example.get("events", []))
    got = iter(e.type for e in events)
    missing = next((w for w in wanted if not any(t == w for t in got)),
                   None)
    if missing is not None:
        found.append(Violation(where, f"no {missing!r} event where the "
                     f"example expects one (expected, in order: "
                     f"{', '.join(wanted)})", "Fix the tool, or the "
                     "example's \"events\" if the tool is right."))
    return found
