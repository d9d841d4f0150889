"""``acor install --host HOST [--uninstall]``: register ``acor mcp`` for
this project with an agent host, in one step, and take it back out.

Each host keeps a project's MCP servers in a file of the project; acor
writes its entry (the one ``acor mcp --print-config`` prints: this acor by
absolute path, pinned to the project) into that file, keeping everything
else in it, and ``--uninstall`` removes only that entry:

* claude: ``.mcp.json`` (``mcpServers``), the file ``claude mcp add-json
  --scope project`` writes;
* cursor: ``.cursor/mcp.json`` (``mcpServers``);
* vscode: ``.vscode/mcp.json`` (``servers``, each with its ``type``);
* gemini: ``.gemini/settings.json`` (``mcpServers``), the file ``gemini
  mcp add --scope project`` writes;
* codex: ``.codex/config.toml`` (a ``[mcp_servers.acor]`` table; Codex
  reads a project's file once the project is trusted). ``codex mcp add``
  writes only the user's file, for every project, so it is not used.

The files are written directly, not through the hosts' commands: the
result is the same file, and it does not depend on which hosts are
installed. Both directions are idempotent: installing what is there, or
removing what is not, changes nothing and says so.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import tomllib
from typing import Any

import click

from acor import exitcodes
from acor.cli.commands.context import command_registry
from acor.cli.commands.mcp_config import (CODEX_MARGIN, ConfigProblem,
                                          SERVER_NAME, codex, json_text,
                                          stdio_entry)
from acor.cli.errors import LauncherError, UsageError
from acor.cli.textsafe import printable

HOSTS = ("claude", "codex", "gemini", "cursor", "vscode")
# host -> (its file in the project, the object that holds servers)
PLACES = {"claude": (".mcp.json", "mcpServers"),
          "cursor": (os.path.join(".cursor", "mcp.json"), "mcpServers"),
          "vscode": (os.path.join(".vscode", "mcp.json"), "servers"),
          "gemini": (os.path.join(".gemini", "settings.json"),
                     "mcpServers"),
          "codex": (os.path.join(".codex", "config.toml"), "mcp_servers")}
NAMES = {"claude": "Claude Code", "cursor": "Cursor", "vscode": "VS Code",
         "gemini": "Gemini CLI", "codex": "Codex"}
# A TOML table header: [mcp_servers.acor] or one of its sub-tables.
_OURS = re.compile(r"\s*\[\s*mcp_servers\s*\.\s*(?:acor|\"acor\")\s*[\].]")
_HEADER = re.compile(r"\s*\[")


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise LauncherError(f"Cannot read {printable(path)}: "
                            f"{getattr(exc, 'strerror', None) or exc}",
                            "Check the file, then run this again.",
                            code="E_FILE_READ") from None


def _write(path: str, text: str | None) -> None:
    """``text`` as the whole of ``path`` (None: remove the file), through
    a temporary file, keeping the mode of the one it replaces."""
    try:
        if text is None:
            os.unlink(path)
            return
        os.makedirs(os.path.dirname(path), exist_ok=True)
        mode = os.stat(path).st_mode & 0o777 if os.path.exists(path) \
            else None
        fd, temp = tempfile.mkstemp(prefix=".acor-install.",
                                    dir=os.path.dirname(path))
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(temp, mode if mode is not None else 0o644)
        os.replace(temp, path)
    except OSError as exc:
        raise LauncherError(f"Cannot write {printable(path)}: "
                            f"{exc.strerror}", "Check that the project's "
                            "folder is writable.",
                            code="E_FILE_WRITE") from None


def _unreadable(path: str, why: str) -> UsageError:
    return UsageError(f"{printable(path)} is not one acor can edit: {why}",
                      "Fix the file (or move it away), then run this "
                      "again; acor changes nothing in it until then.")


def _json_change(path: str, key: str, entry: dict[str, Any] | None
                 ) -> tuple[str | None, bool]:
    """The new text of the JSON file at ``path`` with ``entry`` as server
    ``acor`` under ``key`` (None: without it), and whether it changes."""
    text = _read(path)
    try:
        data = json.loads(text) if text is not None and text.strip() \
            else {}
    except ValueError as exc:
        raise _unreadable(path, f"not JSON ({exc})") from None
    servers = data.get(key, {}) if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise _unreadable(path, f"its {key!r} is not an object")
    if servers.get(SERVER_NAME) == entry or (
            entry is None and SERVER_NAME not in servers):
        return text, False
    if entry is None:
        del servers[SERVER_NAME]
    else:
        servers[SERVER_NAME] = entry
    data[key] = servers
    if not servers and set(data) == {key}:
        return None, True  # nothing left but what acor put there
    return json_text(data), True


def _toml_change(path: str, table: str | None) -> tuple[str | None, bool]:
    """The new text of the TOML file at ``path`` with ``table`` as its
    ``[mcp_servers.acor]`` (None: without it), and whether it changes."""
    text = _read(path) or ""
    try:
        before = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _unreadable(path, f"not TOML ({exc})") from None
    kept, ours = [], False
    for line in text.splitlines(keepends=True):
        if _HEADER.match(line):
            ours = bool(_OURS.match(line))
        if not ours:
            kept.append(line)
    rest = "".join(kept).rstrip("\n")
    if SERVER_NAME in tomllib.loads(rest).get("mcp_servers", {}):
        raise _unreadable(path, "it defines mcp_servers.acor in a form "
                          "other than its own table")
    new = rest + ("\n\n" if rest and table else "\n" if rest else "") + \
        (table or "")
    if table is None and new.strip() == "":
        new_text = None
    else:
        new_text = new
    wanted = tomllib.loads(table).get("mcp_servers", {}).get(SERVER_NAME) \
        if table else None
    had = before.get("mcp_servers", {}).get(SERVER_NAME)
    if had == wanted:
        return (text or None), False
    return new_text, True


def _entry(host: str, registry: Any) -> dict[str, Any]:
    config = registry.config
    try:
        entry = stdio_entry(config.path, config.root)
    except ConfigProblem as exc:
        raise UsageError(exc.message, exc.recovery) from None
    return {"type": "stdio", **entry} if host == "vscode" else entry


def _codex_table(entry: dict[str, Any], registry: Any) -> str:
    longest = max([registry.config.timeout or 0] + [
        spec.timeout for spec in registry.tools.values()
        if spec.timeout is not None])
    return codex(entry, {"tool_timeout": int(longest) + CODEX_MARGIN})


@click.command("install")
@click.option("--host", "host", type=click.Choice(HOSTS), required=True,
              help="The agent host to register acor mcp with.")
@click.option("--uninstall", is_flag=True,
              help="Remove acor's entry from the host's file instead.")
@click.pass_context
def install_command(ctx: click.Context, host: str, uninstall: bool) -> int:
    """Register acor mcp for this project with an agent host (Claude Code,
    Codex, Gemini CLI, Cursor, VS Code) in the host's file in the
    project; --uninstall takes it back out. Running it twice changes
    nothing."""
    registry = command_registry(ctx)
    root = registry.config.root
    relative, key = PLACES[host]
    path = os.path.join(root, relative)
    entry = None if uninstall else _entry(host, registry)
    if host == "codex":
        table = None if entry is None else _codex_table(entry, registry)
        text, changed = _toml_change(path, table)
    else:
        text, changed = _json_change(path, key, entry)
    shown = printable(path)
    if not changed:
        click.echo(f"{NAMES[host]}: nothing to do: acor is "
                   f"{'not in' if uninstall else 'already in'} {shown}.")
        return exitcodes.OK
    _write(path, text)
    if text is None and os.path.dirname(relative):
        try:  # the host's folder, when acor's file was all it held
            os.rmdir(os.path.dirname(path))
        except OSError:
            pass
    if uninstall:
        click.echo(f"{NAMES[host]}: removed acor from {shown}.")
    else:
        click.echo(f"{NAMES[host]}: registered acor mcp for "
                   f"{printable(root)} in {shown}.")
        click.echo(f"Restart {NAMES[host]} (or reload its MCP servers) to "
                   "use it; undo with `acor install --host "
                   f"{host} --uninstall`.", err=True)
    return exitcodes.OK
