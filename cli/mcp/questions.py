"""A run that ended with Input Needed, as a question for the client: a form
or a page, asked now or returned for the client to ask.

* A form (:class:`FormQuestion`) holds fields an agent's user may answer
  in the client's own form: at 2026-07-28 an ``input_required`` result
  whose ``requestState`` (:mod:`acor.cli.mcp.retry`) carries the call to
  its retry; before, an ``elicitation/create`` request during the call.
* A page (:class:`PageQuestion`) holds a secret or a high-level approval,
  which never passes through a client's form: acor serves the question on
  a page of its own (:mod:`acor.cli.mcp.pages`) and the client only opens
  it (URL-mode elicitation).

A question not answered (declined, dismissed, refused on the page, or
none) ends the call with a result saying so, never an error.
"""

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from acor.cli.approval import APPROVAL_TTL, Field
from acor.cli.mcp import results
from acor.cli.mcp.pages import Pages
from acor.cli.mcp.versions import MODERN_VERSIONS

Context = ServerRequestContext[Any, Any]
Answers = dict[str, Any]

_ELICIT_TYPES = ("string", "integer", "number", "boolean", "array")
_ELICIT_KEYS = {"string": ("type", "title", "description", "enum",
                           "enumNames", "oneOf", "default", "minLength",
                           "maxLength", "format"),
                "integer": ("type", "title", "description", "default",
                            "minimum", "maximum"),
                "boolean": ("type", "title", "description", "default"),
                # SEP-1330's multi-select: an array of string choices.
                "array": ("type", "title", "description", "items", "default",
                          "minItems", "maxItems")}
_ELICIT_KEYS["number"] = _ELICIT_KEYS["integer"]

# How a question can end without an answer: the client's form declined
# ("decline") or dismissed ("cancel"), refused on acor's page, or none.
ANSWERS = {"decline": "declined", "cancel": "dismissed"}


class Unanswered(NamedTuple):
    """A question that ended without an answer: which way (declined,
    dismissed, refused, none), and the text that says so and what to do."""
    answer: str
    text: str


def unanswered(answer: str) -> Unanswered:
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


def key_of(fields: list[Field]) -> str:
    """The key of a question in ``inputRequests``: the names the tool
    declared for its fields (one question per field set)."""
    return ",".join(f.name for f in fields)


def form_of(fields: list[Field], schema: dict[str, Any] | None
            ) -> dict[str, Any] | None:
    """The elicitation form for ``fields``, or None when they cannot be
    asked for: no fields, a tool without a schema to merge answers into,
    a field that is not one of its arguments, or one a form cannot hold."""
    if not fields or schema is None:
        return None
    known = schema.get("properties", {})
    properties: dict[str, Any] = {}
    required = []
    for one in fields:
        prop, kind = one.prop, one.kind
        if one.name not in known or kind not in _ELICIT_TYPES:
            return None
        if kind == "array" and not _choices(prop.get("items")):
            return None  # a form has no free-form list
        properties[one.name] = {key: prop[key] for key in _ELICIT_KEYS[kind]
                                if key in prop}
        properties[one.name]["type"] = kind
        if kind == "array":
            properties[one.name]["items"] = _choices(prop.get("items"))
        elif "oneOf" in properties[one.name]:
            # Titled choices: the titles are the form's (SEP-1330).
            properties[one.name].pop("enum", None)
            properties[one.name].pop("enumNames", None)
        if "default" not in prop:
            required.append(one.name)
    return {"type": "object", "properties": properties, "required": required}


def _choices(items: Any) -> dict[str, Any] | None:
    """A multi-select field's ``items`` as a form takes them: titled
    choices (``anyOf`` of ``const`` and ``title``) when the tool gave
    titles, else its ``enum`` of strings (see
    :func:`acor.layout.read_field`); None for anything else."""
    if not isinstance(items, dict):
        return None
    if items.get("anyOf"):
        return {"anyOf": items["anyOf"]}
    choices = items.get("enum")
    if isinstance(choices, list) and choices and all(
            isinstance(c, str) for c in choices):
        return {"type": "string", "enum": choices}
    return None


def how_to_ask(ctx: Context, url: bool = False) -> str | None:
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


def accepted(answer: types.ElicitResult, names: list[str]) -> Answers:
    """The accepted form's values for the fields asked (None: left blank)."""
    content = answer.content or {}
    return {name: content[name] for name in names
            if content.get(name) is not None}


def url_message(lines: list[str]) -> str:
    return ("\n".join(lines) + "\nOpen the page to answer (on this "
            "machine, once, within " + str(APPROVAL_TTL // 60) +
            " minutes); nothing you type there passes through this client.")


def not_asked(exc: MCPError) -> str:
    """The first line of a result whose question the client answered with
    an error: which one (its text is the client's: data, bounded)."""
    return (f"The client could not ask the question (error "
            f"{exc.error.code}: {exc.error.message[:300]}).\n")


def with_text(reply: dict[str, Any], extra: str) -> dict[str, Any]:
    reply["content"].append(results.acor_text("input_needed", extra))
    return reply


def binding(tool: str, arguments: dict[str, Any], state: dict[str, Any]
            ) -> str:
    """What a page's answer is bound to: the tool, the call's arguments and
    the whole state minted with the page, as one digest."""
    text = json.dumps([tool, arguments, state], sort_keys=True,
                      separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _input_required(fields: list[Field], ask: types.ElicitRequest,
                    state: dict[str, Any]) -> types.InputRequiredResult:
    return types.InputRequiredResult(
        input_requests={key_of(fields): ask},
        request_state=json.dumps(state, separators=(",", ":")))


class FormQuestion:
    """Fields the client's own form may ask its user for."""

    def __init__(self, lines: list[str], fields: list[Field],
                 form: dict[str, Any]) -> None:
        self.lines = lines
        self.fields = fields
        self.form = form

    def returned(self, state: dict[str, Any], tool: str,
                 arguments: dict[str, Any]) -> types.InputRequiredResult:
        """2026-07-28: the question as a result; the client asks, then
        calls again with ``state`` sealed."""
        ask = types.ElicitRequest(params=types.ElicitRequestFormParams(
            message="\n".join(self.lines), requested_schema=self.form))
        return _input_required(self.fields, ask,
                               {**state, "key": key_of(self.fields)})

    async def ask(self, ctx: Context) -> Answers | Unanswered:
        """Ask the client now (``elicitation/create``): the answers, or how
        the question ended without them. Raises the client's
        :class:`MCPError` when it answers the request with one."""
        answer = await ctx.session.elicit_form(
            "\n".join(self.lines), self.form,
            related_request_id=ctx.request_id)
        if answer.action != "accept":
            return unanswered(ANSWERS.get(answer.action, "none"))
        return accepted(answer, [f.name for f in self.fields])


class PageQuestion:
    """A secret or a high-level approval: answered by a person on a page
    this server serves, never through the client."""

    def __init__(self, lines: list[str], fields: list[Field],
                 pages: Pages) -> None:
        self.lines = lines
        self.fields = fields
        self.pages = pages

    def returned(self, state: dict[str, Any], tool: str,
                 arguments: dict[str, Any]) -> types.InputRequiredResult:
        """2026-07-28: the page's address as a result; the page answers
        this state and these arguments alone: a state resealed with
        anything changed is not the one the person was shown."""
        page = self.pages.open(self.lines, self.fields)
        state = {**state, "page": page.id, "key": key_of(self.fields)}
        page.binding = binding(tool, arguments, state)
        ask = types.ElicitRequest(params=types.ElicitRequestURLParams(
            message=url_message(self.lines), url=page.url))
        return _input_required(self.fields, ask, state)

    async def ask(self, ctx: Context) -> Answers | Unanswered:
        """Have the client open the page now, and wait for the person's
        answer there. Raises the client's :class:`MCPError` when it answers
        the request with one."""
        page = self.pages.open(self.lines, self.fields)
        try:
            answer = await ctx.session.elicit_url(
                url_message(self.lines), page.url, page.id,
                related_request_id=ctx.request_id)
        except MCPError:
            self.pages.close(page)
            raise
        if answer.action != "accept":
            self.pages.close(page)
            return unanswered(ANSWERS.get(answer.action, "none"))
        got = await self.pages.wait(page)
        try:
            await ctx.session.send_elicit_complete(
                page.id, related_request_id=ctx.request_id)
        except Exception:  # the notice is a courtesy
            pass
        return unanswered("refused") if got is None else got



@dataclass
class Gathered:
    """What one call has gathered, round after round (and across a sealed
    retry): the answers merged into its arguments, what a person answered
    for the next run alone, the fields asked, the run's session and how
    many questions it asked."""

    answers: Answers = field(default_factory=dict)
    # What a person answered goes to one run, from this server's memory
    # (the page) or this retry's form: never from the state the client
    # holds, which a client with the key could have written.
    human: Answers = field(default_factory=dict)
    # What the host gave for the person (acor.cli.run.own_secrets), for
    # every run; a person's own answer to the same field overrides it.
    preset: Answers = field(default_factory=dict)
    asked: set[str] = field(default_factory=set)
    session: str | None = None
    rounds: int = 0

    def split(self, got: Answers, fields: list[Field]) -> None:
        """A person's answers: those only a person may give go on the
        tool's own channel (``human``), the others into its arguments."""
        only_human = {f.name for f in fields if f.human}
        for name, value in got.items():
            (self.human if name in only_human else self.answers)[name] = value

    def take_human(self) -> Answers | None:
        """What a person answered (and the host's preset), for the one run
        about to start."""
        human, self.human = {**self.preset, **self.human}, {}
        return human or None


def with_answers(arguments: Answers, answers: Answers, session: str | None,
                 schema: dict[str, Any] | None) -> Answers:
    """A call's ``arguments`` with what was answered since, and the
    session the tool checkpointed when its schema takes one: what the
    tool is run with again (a plain call and a task alike)."""
    values = {**arguments, **answers}
    # A tool that resumes by a "session" argument continues its own run.
    if session and schema and "session" in schema.get("properties", {}) \
            and "session" not in values:
        values["session"] = session
    return values
