"""``acor show TOOL`` (and ``acor help TOOL``) for a person at a terminal:
how to call the tool, each argument with its type, default and choices,
what it will ask a person for, its box and its budget. Piped, ``acor show``
writes what agents read (:mod:`acor.cli.commands.info`), and ``--json``
the tool's record, unchanged."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from acor.cli.discovery.spec import ToolSpec
from acor.cli.output.rich_view import person_console
from acor.cli.textsafe import printable, quote

TYPE_CHECKING = False  # typing costs every command ~3 ms: only mypy
if TYPE_CHECKING:
    from typing import Any


def _cell(value: object) -> str:
    return "" if value is None else printable(str(value))


def _arguments(schema: dict[str, Any]) -> tuple[Table, list[str]]:
    """The arguments a caller gives, as a table; and the lines saying what
    only a person gives (the human ones)."""
    table = Table(box=None, pad_edge=False, header_style="bold", expand=True)
    for header in ("ARGUMENT", "TYPE", "DEFAULT", "CHOICES / RANGE",
                   "DESCRIPTION"):
        table.add_column(header, overflow="fold",
                         ratio=1 if header == "DESCRIPTION" else None)
    required = set(schema.get("required") or ())
    person: list[str] = []
    for name, prop in (schema.get("properties") or {}).items():
        prop = prop if isinstance(prop, dict) else {}
        given = prop.get("x-acor")
        extra: dict[str, Any] = given if isinstance(given, dict) else {}
        kind = _cell(prop.get("type") or "string")
        if extra.get("human"):
            secret = ", secret" if extra.get("secret") else ""
            person.append(f"{printable(name)} ({kind}{secret})"
                          + (f": {printable(prop['description'])}"
                             if prop.get("description") else ""))
            continue
        spelled = extra.get("flag") or (f"<{name}>" if "position" in extra
                                        else name)
        table.add_row(Text(printable(spelled), style="bold"),
                      kind + (" (required)" if name in required else ""),
                      _cell(prop.get("default")), _limits(prop),
                      _cell(prop.get("description")))
    return table, person


def _limits(prop: dict[str, Any]) -> str:
    if isinstance(prop.get("enum"), list):
        return ", ".join(printable(str(v)) for v in prop["enum"])
    low, high = prop.get("minimum"), prop.get("maximum")
    if low is not None or high is not None:
        return f"{_cell(low) or '…'} to {_cell(high) or '…'}"
    return ""


def _budget(spec: ToolSpec) -> str:
    said = []
    if spec.timeout:
        said.append(f"stopped after {spec.timeout:g} s")
    if spec.idle_timeout:
        said.append(f"or {spec.idle_timeout:g} s of silence")
    if spec.max_output:
        said.append(f"output to an agent within {spec.max_output} bytes")
    return "; ".join(said) or "the config's (see `acor doctor`)"


def show_page(spec: ToolSpec, box: str) -> None:
    """The tool's page, on the terminal. ``box``: its sandbox in a line."""
    parts: list[Any] = [
        Text.assemble((printable(spec.name), "bold"),
                      f" {_cell(spec.version)}  ",
                      (_cell(spec.description), "")),
        Text(""),
        Text.assemble(("Usage: ", "bold"),
                      printable(spec.usage or f"acor {spec.name} [ARGS]"))]
    schema = spec.args_schema if isinstance(spec.args_schema, dict) else {}
    table, person = _arguments(schema)
    if table.row_count:
        parts += [Text(""), table]
    if person:
        parts += [Text(""), Text("Asks a person for", style="bold")]
        parts += [Text("  " + line) for line in person]
    parts += [Text(""),
              Text.assemble(("Box:    ", "bold"), box),
              Text.assemble(("Budget: ", "bold"), _budget(spec)),
              Text.assemble(("More:   ", "bold"),
                            f"acor show {printable(spec.name)} --json; "
                            f"the manifest: {quote(spec.manifest_path)}",
                            style="dim")]
    person_console().print(Group(*parts), markup=False, highlight=False)
