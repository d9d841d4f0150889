"""What a person is asked, and what their answer approves.

One question (an Input Needed that names its ``fields``) is asked of a
person as one approval request, shaped on seed 004's authorization
request: the tool, the exact command (its arguments), the tool's reason
(its message), the fields, a security level, and an expiry. The answer is
for that call only: it goes to the one run that follows, and is refused
once :data:`APPROVAL_TTL` has passed since the question was shown.

A field is one of the tool's arguments. Its ``x-acor`` says whether only
a person may give it (``"human": true``), whether it is a secret (asked
with hidden input, never through an MCP form) and its level
(``"standard"``: an MCP client's form may carry it; ``"high"``: only out
of band, at a terminal or on the page acor serves).
"""

from __future__ import annotations

import shlex

from acor.cli.textsafe import printable, strip_terminal

TYPE_CHECKING = False  # only mypy: the typing module is not needed to run
if TYPE_CHECKING:
    from typing import Any

APPROVAL_TTL = 600  # seconds an approval request stays valid (README)


class Field:
    """One field of a question, with what the tool's schema says of it."""

    __slots__ = ("name", "prop", "human", "secret", "level", "flag")

    def __init__(self, name: str, prop: dict[str, Any],
                 schema_prop: dict[str, Any] | None) -> None:
        where = (schema_prop or {}).get("x-acor") or {}
        self.name = name
        self.prop = prop if isinstance(prop, dict) else {}
        self.human = where.get("human") is True
        self.secret = self.human and where.get("secret") is True
        self.level = (where.get("level") or "standard") if self.human \
            else "standard"
        # A field the schema does not place is asked for as --name (as
        # the launcher's own next command writes it).
        self.flag = where.get("flag") if where.get("flag") or \
            self.human or "position" in where else \
            "--" + name.replace("_", "-")
        if self.human:  # the schema is the truth, not what the tool wrote
            self.prop = {k: v for k, v in (schema_prop or {}).items()
                         if k != "x-acor"} | {
                k: v for k, v in self.prop.items()
                if k in ("description", "title")}

    @property
    def kind(self) -> str:
        kind = self.prop.get("type", "string")
        return kind if isinstance(kind, str) else "string"

    @property
    def out_of_band(self) -> bool:
        """Never through a client's form: a secret, or a high level."""
        return self.secret or self.level == "high"


def fields_of(fields: dict[str, Any] | None,
              schema: dict[str, Any] | None) -> list[Field]:
    """The question's fields, each with its argument's schema."""
    props = (schema or {}).get("properties") or {} \
        if isinstance(schema, dict) else {}
    return [Field(name, prop, props.get(name)
                  if isinstance(props.get(name), dict) else None)
            for name, prop in (fields or {}).items()]


def for_person(fields: list[Field], audience: str) -> bool:
    """Whether only a person may answer: the tool said so, or a field
    is an argument only a person may give."""
    return audience == "human" or any(f.human for f in fields)


def level_of(fields: list[Field]) -> str:
    return "high" if any(f.level == "high" for f in fields) else "standard"


def safe_line(value: object) -> str:
    """Text from a tool, made safe for one line of a terminal or a form:
    no escape sequences, every control character visible."""
    return printable(strip_terminal("" if value is None else str(value)))


def command_text(argv: list[str]) -> str:
    return safe_line(shlex.join(str(a) for a in argv))


def request_lines(tool: str, version: str | None, command: list[str],
                  reason: str, fields: list[Field], audience: str
                  ) -> list[str]:
    """The approval request as lines of plain text: what a person reads
    before answering (at a terminal, in an MCP form's message, on the
    page acor serves)."""
    person = for_person(fields, audience)
    head = f"{tool} {_asks(fields)}" if person else f"{tool} needs input"
    lines = [head + ":",
             f"  tool:    {safe_line(tool)}"
             + (f" {safe_line(version)}" if version else ""),
             f"  command: {command_text(command)}",
             f"  reason:  {safe_line(reason)}"]
    if person:
        lines.append(f"  level:   {level_of(fields)}; valid for this call "
                     f"only, for {APPROVAL_TTL // 60} minutes")
        lines.append("Only a person may answer this.")
    return lines


def _asks(fields: list[Field]) -> str:
    """What a person is asked for, in a request's heading: a secret is
    not an approval, nor is a value only a person may give."""
    if any(f.secret for f in fields):
        return "asks a person for a secret"
    if all(f.kind == "boolean" for f in fields):
        return "asks a person to approve"
    return "asks a person for an answer"


def field_prompt(field: Field) -> str:
    """How one field is asked: its name, type and description."""
    text = safe_line(field.name) + f" ({field.kind}"
    if field.secret:
        text += ", secret: not shown as you type"
    text += ")"
    description = field.prop.get("description")
    if description:
        text += " " + safe_line(description)
    return text
