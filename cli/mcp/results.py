"""A run's result as an MCP ``CallToolResult`` (its JSON form).

What each ACOR section becomes (the README has the same table):

* Output, and text outside any section: text content, in order.
* Output Data: its text, in order; the last one is also
  ``structuredContent`` (a JSON object as it is; any other value as
  ``{"data": value}`` before protocol 2026-07-28, which allows any value).
* Output Files: one ``resource_link`` per file (``file://`` URI, size,
  and ``_meta["acor/sha256"]``, the digest prefix the tool reported).
* AI Directive, Suggestions: labelled text.
* Error: ``isError: true``, and text with the code, message, details,
  recovery and the next command.
* Input Needed: text saying what is needed, from whom, and the exact next
  call (when the server cannot ask the client itself, see
  :mod:`acor.cli.mcp.questions`).
* ``_meta["acor/result"]``: exit code, state, error code, duration, tool,
  version, argv, session and next, as in the last line of ``--format json``.

Status, Progress, Session Checkpoint and heartbeats have no content: the
final status is in ``_meta``, progress went out as notifications.
"""

import json
import mimetypes
import os
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acor.events import (AIDirective, Checkpoint, Error, Event, Heartbeat,
                         InputNeeded, Output, OutputData, OutputFiles,
                         Progress, Result, Session, Status, Stderr,
                         Suggestions, Text, Unknown)

from acor.cli.discovery.registry import Registry
from acor.cli.discovery.spec import ToolSpec
from acor.cli.errors import UsageError
from acor.cli.handlers import EventHandler
from acor.cli.output.budget import Budget
from acor.cli.output.cost import RESULT_RESERVE, Cost
from acor.cli.output.jsonline import json_line
from acor.cli.output.notes import Note
from acor.cli.output.spill import output_dir

from acor.cli.mcp.nextcall import next_text
from acor.cli.mcp.tools import ServedTools
from acor.cli.mcp.versions import MODERN_VERSIONS
from acor.cli.run.request import RunRequest, run_directory
from acor.cli.run.result import RunResult
from acor.cli.textsafe import clean_value, printable, strip_terminal

if TYPE_CHECKING:  # the Protocol exists for mypy only
    from acor.cli.run.relay import Sink

Block = dict[str, Any]  # a content block, a result, its _meta: JSON


def call_result(result: RunResult, *, protocol_version: str, cwd: str,
                served: ServedTools | None = None) -> Block:
    """The ``CallToolResult`` of a finished run (any ending but cancelled,
    which is never answered). ``cwd`` is where the tool ran: relative
    output file paths are resolved against it. ``served``: the tools this
    server serves, which an error's next command may call
    (:func:`acor.cli.mcp.nextcall.tool_call`)."""
    events = result.events or []
    data = [e for e in events if isinstance(e, OutputData)]
    failed = result.state in ("failed", "timeout") or any(
        isinstance(e, Error) for e in events)
    wire: Block = {"content": content_blocks(result, cwd, protocol_version,
                                      served),
            "isError": failed,
            "_meta": {"acor/result": result_meta(result)}}
    if data:
        wire["structuredContent"] = structured(data[-1].data,
                                               protocol_version)
    safe: Block = utf8_safe(wire)
    return safe


def utf8_safe(value: Any) -> Any:
    """``value`` with every lone surrogate (a JSON ``\\ud800`` escape in a
    tool's Output Data decodes to one) as U+FFFD: the wire is UTF-8, and
    one such character made the SDK fail the whole result. Walked only
    when there is one."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
        return value
    except UnicodeEncodeError:
        return _replace_surrogates(value)


def _replace_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass").decode("utf-8",
                                                              "replace")
    if isinstance(value, dict):
        return {_replace_surrogates(k): _replace_surrogates(v)
                for k, v in value.items()}
    if isinstance(value, list):
        return [_replace_surrogates(item) for item in value]
    return value


def result_meta(result: RunResult) -> Block:
    """The run's outcome for the client application (not the model): the
    result line of ``acor --format json``."""
    meta: Block = clean_value(result.to_dict())
    return meta


def unrun_meta(tool: str, exit_code: int, state: str,
               error_code: str | None = None, session: str | None = None,
               **more: Any) -> Block:
    """``_meta["acor/result"]`` of a call that ran nothing: the same record
    as a run's."""
    return {**Result(exit_code, state, error_code, tool=tool,
                     session=session).to_dict(), **more}


def text_only(reply: Block, exc: Exception) -> Block:
    """``reply`` (a result the SDK refused as invalid) with its text blocks
    alone, and one saying what was left out and why."""
    kept = [block for block in reply.get("content", [])
            if isinstance(block, dict) and block.get("type") == "text"
            and isinstance(block.get("text"), str)]
    left = len(reply.get("content", [])) - len(kept)
    kept.append(acor_text("odd", (
        f"{left} block(s) of this result and its structured content were "
        "left out: the MCP SDK refused them "
        f"({printable(str(exc).splitlines()[0] if str(exc) else '')[:300]})"
        ". The run's outcome is in _meta.")))
    return {"content": kept, "isError": bool(reply.get("isError")),
            "_meta": reply.get("_meta") or {}}


def structured(data: Any, protocol_version: str) -> Any:
    """``structuredContent``: an object before 2026-07-28, any value since."""
    if isinstance(data, dict) or protocol_version in MODERN_VERSIONS:
        return data
    return {"data": data}


class _Content(EventHandler):
    """The content blocks of each event (one method per event type: a
    new type cannot be left out unnoticed)."""

    def __init__(self, cwd: str, protocol_version: str,
                 served: ServedTools | None) -> None:
        self.cwd = cwd
        self.protocol_version = protocol_version
        self.served = served

    def on_output(self, event: Output) -> list[Block]:
        return [tool_text(event.text)]

    def on_text(self, event: Text) -> list[Block]:
        if isinstance(event, Note):  # acor's own, what the budget left out
            return [acor_text("budget", event.text)]
        return [tool_text(event.text)] if event.text.strip() else []

    def on_output_data(self, event: OutputData) -> list[Block]:
        return [tool_text(data_text(event))]

    def on_output_files(self, event: OutputFiles) -> list[Block]:
        return files_blocks(event, self.cwd, self.protocol_version)

    def on_ai_directive(self, event: AIDirective) -> list[Block]:
        return [acor_text("directive",
                          "AI Directive:\n" + _bullets(event.items))]

    def on_suggestions(self, event: Suggestions) -> list[Block]:
        label = f"Suggestions: {event.title}" if event.title else \
            "Suggestions"
        return [acor_text("suggestions",
                          f"{label}:\n" + _bullets(event.items))]

    def on_error(self, event: Error) -> list[Block]:
        return [acor_text("error", error_text(event, self.served))]

    def on_input_needed(self, event: InputNeeded) -> list[Block]:
        return []  # the caller decides: ask, or input_needed_text

    def on_unknown(self, event: Unknown) -> list[Block]:
        return [tool_text(f"{event.heading}\n{event.body}".rstrip())]

    def on_status(self, event: Status) -> list[Block]:
        return []  # the final state is in _meta["acor/result"]

    def on_progress(self, event: Progress) -> list[Block]:
        return []  # sent as progress notifications while it ran

    def on_heartbeat(self, event: Heartbeat) -> list[Block]:
        return []  # likewise

    def on_session(self, event: Session) -> list[Block]:
        return []  # in _meta["acor/result"]["session"]

    def on_checkpoint(self, event: Checkpoint) -> list[Block]:
        return []  # what a resumed call starts from: the tool's to read

    def on_stderr(self, event: Stderr) -> list[Block]:
        return []  # the server's log (stderr), which clients keep

    def on_result(self, event: Result) -> list[Block]:
        return []  # _meta["acor/result"]


def content_blocks(result: RunResult, cwd: str,
                   protocol_version: str = MODERN_VERSIONS[0],
                   served: ServedTools | None = None) -> list[Block]:
    """Every content block of ``result``, files expanded in place."""
    content = _Content(cwd, protocol_version, served)
    blocks: list[Block] = []
    for event in _text_joined(result.events or []):
        try:
            blocks.extend(content.handle(event))
        except Exception as exc:
            # Whatever a section holds, the run's outcome reaches the
            # client: a section acor cannot turn into content is shown as
            # data, never a protocol error in place of the result.
            blocks.append(odd_block(event, exc))
    # A test's stand-in for a result may hold only its events.
    session: str | None = getattr(result, "session", None)
    if session and result.next and result.state in (
            "failed", "cancelled") and not any(
            isinstance(e, Error) and e.next for e in result.events or []):
        # How a session run that did not complete resumes (the final
        # status says it elsewhere; here statuses are in _meta).
        blocks.append(acor_text("next", next_text(
            "Next", result.next, served) + f"\nIt resumes session "
            f"{strip_terminal(session)}."))
    return blocks


ODD_LIMIT = 2000  # characters of an odd section shown


def odd_block(event: Event, exc: Exception) -> Block:
    """A section acor could not turn into MCP content, as one labelled
    block of escaped, bounded text saying so."""
    try:
        shown = json.dumps(event.to_dict(), ensure_ascii=True, default=repr)
    except Exception:  # a value json cannot even repr: its type suffices
        shown = type(event).__name__
    if len(shown) > ODD_LIMIT:
        shown = shown[:ODD_LIMIT] + f"... ({len(shown) - ODD_LIMIT} " \
            "more characters)"
    return acor_text("odd", (
        f"A {printable(getattr(event, 'type', '?'))} section acor could not "
        f"show as MCP content ({type(exc).__name__}: "
        f"{printable(str(exc))[:200]}); here it is as data: {shown}"))


def _text_joined(events: list[Event]) -> list[Event]:
    """Adjacent runs of the tool's raw text as one event. Where its lines
    were cut into reads is timing (how the tool flushed, how busy the
    machine was), not meaning: the agent gets the same blocks either way,
    and a forged heading followed by its lines is labelled as one block."""
    joined: list[Event] = []
    lines: list[str] = []  # the run of text being joined (linear, however long)
    for event in events:
        if type(event) is Text:
            lines.append(event.text)
            continue
        if lines:
            joined.append(Text("\n".join(lines)))
            lines = []
        joined.append(event)
    if lines:
        joined.append(Text("\n".join(lines)))
    return joined


def text(value: str) -> Block:
    return {"type": "text", "text": value}


# The labels acor's own blocks start with. On the command line a section's
# provenance is its framed heading; in MCP it is the block's _meta, which
# nothing a tool prints can set, and no block of the tool's text may start
# like one of acor's.
ACOR_LABELS = ("[acor", "ai directive", "suggestions", "error", "input needed",
               "input_needed", "only a person", "ask the user", "recovery",
               "next", "output file", "acor", "the tool", "the person",
               "not answered", "this request", "fields")
TOOL_PREFIX = "[tool output] "


def acor_text(kind: str, value: str) -> Block:
    """A block acor itself wrote (a directive, suggestions, an error, what
    to ask or do next): marked in ``_meta["acor/block"]``. What it quotes
    of a tool is data: no escape sequence or control character passes."""
    return {"type": "text", "text": strip_terminal(value),
            "_meta": {"acor/block": kind}}


def tool_text(value: str) -> Block:
    """A block of the tool's own text (Output, Output Data, text outside
    any section). Text that would begin like one of acor's blocks is
    labelled as the tool's, so that no raw line passes for acor's."""
    head = value.lstrip().lower()
    if head.startswith(ACOR_LABELS) or head.startswith(TOOL_PREFIX.strip()):
        value = TOOL_PREFIX + value
    return {"type": "text", "text": value}


def data_text(event: OutputData) -> str:
    if event.format == "json":
        return json.dumps(event.data, ensure_ascii=False, indent=2)
    return event.data if isinstance(event.data, str) else \
        json.dumps(event.data, ensure_ascii=False)


def _bullets(items: list[str]) -> str:
    return "\n".join(f"- {item}" for item in items)


def error_text(error: Error, served: ServedTools | None = None) -> str:
    lines = [f"Error {error.code}: {error.title}"]
    if error.details:
        lines.append(error.details)
    if error.recovery:
        lines.append(f"Recovery: {error.recovery}")
    if error.next:
        lines.append(next_text("Next", error.next, served))
    return "\n".join(lines)


# resource_link content came with protocol 2025-06-18: clients of the
# versions before it reject a whole result that holds one.
RESOURCE_LINK_SINCE = "2025-06-18"


def files_blocks(event: OutputFiles, cwd: str,
                 protocol_version: str = MODERN_VERSIONS[0]) -> list[Block]:
    """Resource links for the files a tool wrote (text naming each file,
    for a session that negotiated a version without resource links); a
    missing one as text."""
    blocks = []
    links = protocol_version >= RESOURCE_LINK_SINCE
    for entry in event.files:
        given = entry.get("path")
        path = os.path.join(cwd, given if isinstance(given, str) else "")
        description = entry.get("description") or None
        kind = entry.get("kind", "file")
        uri = None if kind == "missing" else _file_uri(path)
        if uri is None:
            what = "missing" if kind == "missing" else \
                "with a path no file can have"
            blocks.append(acor_text(
                "file", f"Output file {what}: {printable(str(given))}"
                + (f" ({description})" if description else "")))
            continue
        link: dict[str, Any] = {
            "type": "resource_link", "uri": uri,
            "name": os.path.basename(os.path.normpath(path)) or path}
        if description:
            link["description"] = description
        if kind == "directory":
            link["mimeType"] = "inode/directory"
        else:
            mime = _mime_type(path)
            if mime:
                link["mimeType"] = mime
        if isinstance(entry.get("bytes"), int):
            link["size"] = entry["bytes"]
        if entry.get("sha256"):
            link["_meta"] = {"acor/sha256": entry["sha256"]}
        if entry.get("truncated") is True:
            link.setdefault("_meta", {})["acor/truncated"] = True
        blocks.append(link if links else acor_text("file", _link_text(link)))
    return blocks


def _file_uri(path: str) -> str | None:
    """The ``file://`` URI of ``path``, or None when no file can have it
    (a NUL byte, a name too long to resolve)."""
    try:
        return Path(path).resolve().as_uri()
    except (ValueError, OSError):
        return None


def _link_text(link: Block) -> str:
    """A resource link as one text block, for older clients."""
    meta = link.get("_meta") or {}
    facts = [f"{link['size']} bytes"] if "size" in link else []
    if meta.get("acor/sha256"):
        facts.append(f"sha256 {meta['acor/sha256']}")
    if meta.get("acor/truncated"):
        facts.append("truncated: the result above is cut to fit the "
                     "output budget; this file holds the whole output")
    if link.get("mimeType") == "inode/directory":
        facts.append("directory")
    line = f"Output file: {link['uri']}"
    if facts:
        line += f" ({'; '.join(facts)})"
    if link.get("description"):
        line += f"\n{link['description']}"
    return line


def _mime_type(path: str) -> str | None:
    return mimetypes.guess_type(path)[0]


def usage_result(tool: str, error: UsageError) -> Block:
    """Arguments that do not fit the tool (a :class:`acor.cli.errors.UsageError`
    from ``acor call``'s conversion): every problem listed, nothing run."""
    # Line feeds only: splitlines() would also cut at U+2028, U+0085, ...
    # inside a value the client sent, making a line of it look like one of
    # these problems.
    problems = (error.details or "").split("\n") if error.details else []
    lines = [f"Error {error.code}: {error.reason}",
             *[f"- {problem}" for problem in problems],
             f"Recovery: fix every argument listed and call '{tool}' again "
             "(its input schema says what each one takes). Nothing was run."]
    return {"content": [acor_text("error", "\n".join(lines))],
            "isError": True,
            "_meta": {"acor/result": unrun_meta(tool, 2, "failed", error.code,
                                                problems=problems)}}


def input_needed_text(tool: str, needed: InputNeeded,
                      arguments: dict[str, Any] | None,
                      reason: str | None = None, *, person: bool = False,
                      command: list[str] | None = None,
                      out_of_band: bool = False,
                      served: ServedTools | None = None) -> str:
    """What the tool needs, from whom, and the exact call to make next.
    ``arguments`` is None for a tool without an args schema (the launcher's
    ``next`` command is given instead). A question only a person may
    answer (``person``) has no next call: the text says to hand
    ``command`` to a person, who runs it in a terminal."""
    lines = [f"Input needed: {needed.message}"]
    if reason:
        lines.append(reason)
    if person or needed.audience == "human":
        why = (" It is a secret or a high-level approval, which is never "
               "asked through a client's form, and this client cannot open "
               "a page for it (URL-mode elicitation)." if out_of_band else
               " This client cannot ask its user (elicitation).")
        lines.append("Only a person may answer this (an approval or a "
                     "credential): never answer it yourself, and do not "
                     "look for another way to do it." + why)
        if command:
            lines.append("Ask the user to run this in their terminal, "
                         "where acor asks them: " + shlex.join(command))
        return "\n".join(lines)
    fields = needed.fields or {}
    if fields:
        lines.append("Fields:")
        lines.extend(f"- {name}: {_field_text(prop)}"
                     for name, prop in fields.items())
    if arguments is not None and fields:
        placeholders = {name: f"<{name}>" for name in fields}
        call = {"name": tool, "arguments": {**arguments, **placeholders}}
        lines.append("Next call (replace each <placeholder> with the "
                     "answer): " + json.dumps(call, ensure_ascii=False))
    elif needed.next:
        lines.append(next_text("Next", needed.next, served))
    return "\n".join(lines)


def _field_text(prop: dict[str, Any]) -> str:
    parts = [prop.get("type", "string")]
    if prop.get("enum"):
        parts.append("one of " + _enum_text(prop["enum"],
                                            prop.get("enumNames")))
    if prop.get("oneOf"):
        parts.append("one of " + _titled_text(prop["oneOf"]))
    # SEP-1330's multi-select: a JSON list of the choices.
    items = prop.get("items") or {}
    offered = [str(v) for v in items.get("enum") or []]
    if items.get("anyOf"):
        offered.append(_titled_text(items["anyOf"]))
    if offered:
        parts.append("a list of any of " + ", ".join(offered))
    for key, what in (("minItems", "at least"), ("maxItems", "at most")):
        if key in prop:
            parts.append(f"{what} {prop[key]}")
    if "default" in prop:
        parts.append(f"default {prop['default']!r}")
    for key in ("minimum", "maximum"):
        if key in prop:
            parts.append(f"{key} {prop[key]}")
    description = prop.get("description")
    return f"({'; '.join(parts)})" + (f" {description}" if description else "")


def _enum_text(values: list[Any], names: Any) -> str:
    """Choices as ``VALUE``, or ``VALUE (TITLE)`` with the older titles
    (``enumNames``, one per value)."""
    if not (isinstance(names, list) and len(names) == len(values)):
        return ", ".join(map(str, values))
    return ", ".join(f"{v} ({n})" for v, n in zip(values, names,
                                                  strict=True))


def _titled_text(choices: list[dict[str, Any]]) -> str:
    """Titled choices as ``VALUE (TITLE)``: the value is what to pass."""
    return ", ".join(f"{c['const']} ({c['title']})" for c in choices)


# Progress and statuses go out as notifications or in ``_meta``.
MCP_SILENT = frozenset({"progress", "status", "checkpoint", "session",
                        "heartbeat"})


class McpCost(Cost):
    """What an event adds to an MCP result: its content as JSON (progress
    and statuses: nothing). Output Data counts twice (its text, and
    ``structuredContent`` when last); an Input Needed once and a half (its
    text lists the fields and the next call). The tool's stderr goes to
    the server's log, not to the client."""

    reserve = RESULT_RESERVE + 256

    def __call__(self, event: Event) -> int:
        if event.type in MCP_SILENT:
            return 0
        size = len(json_line(event.to_dict())) + 32
        if event.type == "output_data":
            return 2 * size
        if event.type == "input_needed":
            return size + size // 2 + 256
        return size

    def stderr_cost(self, data: bytes) -> int:
        return 0


mcp_cost = McpCost()


def budgeted(sink: "Sink", request: RunRequest) -> "Sink":
    """``sink`` within the run's output budget (0: none), its whole output
    spilled under the state dir (both worked out in the request), each
    event costed as a result shows it: for a plain call and a task."""
    if not request.max_output:
        return sink
    return Budget(sink, request.max_output, output_dir(request.state_dir),
                  request.tool, mcp_cost)


def input_needed(result: RunResult) -> InputNeeded | None:
    """The Input Needed a run ended with (its last), or None."""
    if result.exit_code != 3:
        return None
    found = [e for e in result.events or () if isinstance(e, InputNeeded)]
    return found[-1] if found else None


def ran_in(spec: ToolSpec, registry: Registry) -> str:
    """Where the runner ran ``spec`` for an MCP call (which names no
    directory of its own): the rule of
    :func:`acor.cli.run.request.run_directory`, else the server's
    directory. A result's file paths are relative to it."""
    return run_directory(spec, registry.config, None) or os.getcwd()
