"""``acor mcp --print-config CLIENT``: the exact snippet that makes an MCP
client start ``acor mcp`` for this project, on this machine.

What a copied example gets wrong, this gets right by construction:

* GUI clients (Claude Desktop, Cursor, VS Code) do not have a virtualenv's
  ``acor`` on their PATH: the command is the absolute path of the ``acor``
  script that is running now (beside ``sys.executable``).
* Clients start servers in a working directory of their choosing (``/``,
  the home folder), where acor finds no project: the arguments pin it,
  ``--config`` the project's config file (when it has one) and ``--cwd``
  its root, so tools are found there and run there, as ``acor TOOL`` run
  in the project would.
* Each client's own shape: ``mcpServers`` (Claude Code, Claude Desktop,
  Cursor), ``servers`` with ``"type": "stdio"`` (VS Code), a
  ``[mcp_servers.acor]`` TOML table (Codex).

The snippet goes to stdout, alone, so it can be redirected or parsed; where
to put it goes to stderr. A server entry is a dict (``command`` and
``args`` for stdio); a client's shape wraps the entry, so another transport
only needs an entry of its own (``{"type": "http", "url": ...}``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from typing import Any, Callable

CLIENTS = ("claude", "cursor", "vscode", "codex")
SERVER_NAME = "acor"
# Codex stops a tool call after 60 s by default; acor's own timeouts are
# longer, so the snippet allows the longest of them plus this margin.
CODEX_MARGIN = 30

# Characters a JSON or TOML parser accepts raw but a terminal or an editor
# may act on (C1 controls, bidi controls, line separators), written as
# \\u escapes instead; both formats read those back as the character.
_INVISIBLE = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029"
                        "\u202a-\u202e\u2066-\u2069]")


class ConfigProblem(Exception):
    """The snippet cannot be written: ``message`` and ``recovery``."""

    def __init__(self, message: str, recovery: str) -> None:
        super().__init__(message)
        self.message = message
        self.recovery = recovery


def acor_command() -> list[str]:
    """The absolute command that runs this acor: the ``acor`` script
    beside the running interpreter (a virtualenv's bin folder; the path is
    not resolved, since a venv's python is a symlink that must stay one),
    else the one on PATH, else ``python -m acor`` with this interpreter."""
    here = os.path.join(os.path.dirname(os.path.abspath(sys.executable)),
                        "acor")
    if os.path.isfile(here) and os.access(here, os.X_OK):
        return [here]
    found = shutil.which("acor")
    if found:
        return [os.path.abspath(found)]
    return [os.path.abspath(sys.executable), "-m", "acor"]


def stdio_entry(config_path: str | None, root: str,
                tools: list[str] | None = None,
                timeout: str | None = None) -> dict[str, Any]:
    """The server entry that starts ``acor mcp`` pinned to the project at
    ``root`` (its config file ``config_path``, None when it has none)."""
    command = acor_command()
    args = command[1:]
    if config_path is not None:
        args += ["--config", config_path]
    args += ["mcp", "--cwd", root]
    if tools:
        args += ["--tools", ",".join(tools)]
    if timeout is not None:
        args += ["--timeout", timeout]
    for word in [command[0], *args]:
        _check_encodable(word)
    return {"command": command[0], "args": args}


def _check_encodable(word: str) -> None:
    try:
        word.encode("utf-8")
    except UnicodeEncodeError:
        from acor.cli.textsafe import quote
        raise ConfigProblem(
            f"the path {quote(word)} is not valid UTF-8, which JSON and "
            "TOML configs cannot hold",
            "Move the project (or acor's virtualenv) to a folder whose "
            "name is valid UTF-8, then run this again.") from None


def json_text(value: Any) -> str:
    """``value`` as indented JSON, every invisible character escaped."""
    text = json.dumps(value, indent=2, ensure_ascii=False)
    return _INVISIBLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n"


def _toml_string(text: str) -> str:
    """A TOML basic string: JSON's escapes are TOML's, but for DEL, which
    TOML also wants escaped."""
    quoted = json.dumps(text, ensure_ascii=False)
    return _INVISIBLE.sub(lambda m: f"\\u{ord(m.group()):04x}", quoted)


def claude(entry: dict[str, Any], extra: dict[str, Any]) -> str:
    """Claude Code's ``.mcp.json`` and Claude Desktop's
    ``claude_desktop_config.json``: ``mcpServers``."""
    return json_text({"mcpServers": {SERVER_NAME: entry}})


def cursor(entry: dict[str, Any], extra: dict[str, Any]) -> str:
    """Cursor's ``.cursor/mcp.json``: ``mcpServers``, as Claude's."""
    return json_text({"mcpServers": {SERVER_NAME: entry}})


def vscode(entry: dict[str, Any], extra: dict[str, Any]) -> str:
    """VS Code's ``.vscode/mcp.json``: ``servers``, each with its type."""
    typed = {"type": "stdio", **entry} if "command" in entry else entry
    return json_text({"servers": {SERVER_NAME: typed}})


def codex(entry: dict[str, Any], extra: dict[str, Any]) -> str:
    """Codex's ``config.toml``: a ``[mcp_servers.acor]`` table."""
    lines = [f"[mcp_servers.{SERVER_NAME}]"]
    for key, value in entry.items():
        if isinstance(value, list):
            items = ", ".join(_toml_string(v) for v in value)
            lines.append(f"{key} = [{items}]")
        else:
            lines.append(f"{key} = {_toml_string(value)}")
    if extra.get("tool_timeout") is not None:
        lines.append(f"tool_timeout_sec = {extra['tool_timeout']}")
    return "\n".join(lines) + "\n"


SHAPES: dict[str, Callable[[dict[str, Any], dict[str, Any]], str]] = {
    "claude": claude, "cursor": cursor, "vscode": vscode, "codex": codex}


def where_to_put_it(client: str, root: str, entry: dict[str, Any]) -> str:
    """What to do with the snippet, for stderr (paths made printable)."""
    from acor.cli.textsafe import printable
    root = printable(root)
    if client == "claude":
        one = json.dumps(entry)
        return ("Claude Code: save it as .mcp.json in the project "
                f"({os.path.join(root, '.mcp.json')}), or run: claude mcp "
                f"add-json --scope project {SERVER_NAME} "
                f"{_shell_quote(one)}\nClaude Desktop: merge it into "
                "claude_desktop_config.json (Settings > Developer > Edit "
                "Config), then restart Claude Desktop.")
    if client == "cursor":
        return ("Cursor: save it as .cursor/mcp.json in the project "
                f"({os.path.join(root, '.cursor', 'mcp.json')}), or merge "
                "it into ~/.cursor/mcp.json for every project.")
    if client == "vscode":
        return ("VS Code: save it as .vscode/mcp.json in the project "
                f"({os.path.join(root, '.vscode', 'mcp.json')}), or merge "
                "it into your user mcp.json (MCP: Open User "
                "Configuration).")
    return ("Codex: add it to ~/.codex/config.toml (or .codex/config.toml "
            "in a trusted project).")


def http_url(host: str, port: int, allow_hosts: list[str]) -> str:
    """The URL clients reach ``acor mcp --http`` at: the first
    ``--allow-host`` name when given (a proxy's, a DNS name), else the
    host it listens on (this machine's name for a wildcard address)."""
    import socket
    if allow_hosts:
        name = allow_hosts[0]
    elif host in ("0.0.0.0", "::", ""):
        name = socket.getfqdn()
    else:
        name = host
    if ":" in name and not name.startswith("["):
        name = f"[{name}]"  # an IPv6 address
    return f"http://{name}:{port}/mcp"


def http_entry(client: str, url: str, token: bool) -> dict[str, Any]:
    """The entry that makes ``client`` reach the server at ``url``; with
    ``token``, its bearer token is taken from the client's environment
    (``$ACOR_MCP_TOKEN``) or asked of the person (VS Code), never written
    into the file."""
    from acor.cli.run.own_secrets import TOKEN_VAR
    entry: dict[str, Any] = {"type": "http", "url": url}
    if client == "codex":
        entry = {"url": url}
        if token:
            entry["bearer_token_env_var"] = TOKEN_VAR
        return entry
    if token:
        value = {"claude": f"Bearer ${{{TOKEN_VAR}}}",
                 "cursor": f"Bearer ${{env:{TOKEN_VAR}}}",
                 "vscode": f"Bearer ${{input:{VSCODE_INPUT}}}"}[client]
        entry["headers"] = {"Authorization": value}
    return entry


# The VS Code input that asks the person for the token (kept in its
# secret storage).
VSCODE_INPUT = "acor-mcp-token"


def print_http_config(client: str, url: str, token: bool) -> int:
    """``acor mcp --http --print-config CLIENT``: the URL entry on
    stdout, where it goes and what it needs on stderr; 0."""
    from acor.cli.run.own_secrets import TOKEN_VAR
    entry = http_entry(client, url, token)
    extra: dict[str, Any] = {}
    if client == "vscode" and token:
        text = json_text({"inputs": [{
            "type": "promptString", "id": VSCODE_INPUT, "password": True,
            "description": "The bearer token of acor mcp --http"}],
            "servers": {SERVER_NAME: entry}})
    else:
        text = render(client, entry, extra)
    sys.stdout.write(text)
    sys.stdout.flush()
    notes = [where_to_put_it(client, os.getcwd(), entry)]
    if token and client != "vscode":
        notes.append(f"The client reads the token from ${TOKEN_VAR} in its "
                     "own environment: set it there (the file holds no "
                     "token).")
    print("\n".join(notes), file=sys.stderr)
    return 0


def _shell_quote(text: str) -> str:
    import shlex
    return shlex.quote(text)


def render(client: str, entry: dict[str, Any],
           extra: dict[str, Any] | None = None) -> str:
    """The snippet for ``client`` (one of :data:`CLIENTS`)."""
    return SHAPES[client](entry, extra or {})


def print_config(client: str, only: set[str] | None, timeout: str | None,
                 seconds: float | None, config_path: str | None) -> int:
    """Write the snippet for ``client`` to stdout, where to put it to
    stderr; 0, or 2 with an ACOR error on stderr (no project config that
    loads, a ``--tools`` name that is not a tool)."""
    from acor import exitcodes
    from acor.events import Error
    from acor.cli.discovery.config import ConfigError
    from acor.cli.mcp.start import fail, sdk_problem, unknown_tools
    from acor.cli.mcp.tools import Catalog, UnknownTools
    catalog = Catalog.of_project(config_path, only)
    try:
        registry = catalog.registry()
        catalog.check_only(registry)
        config = registry.config
        entry = stdio_entry(config.path, config.root,
                            sorted(only) if only else None, timeout)
    except ConfigError as exc:
        from acor.cli.errors import config_error
        return fail(config_error(exc).to_event())
    except UnknownTools as exc:
        return fail(unknown_tools(exc, registry.config))
    except ConfigProblem as exc:
        return fail(Error(exc.message, "E_USAGE", None, exc.recovery))
    served = catalog.served(registry)
    longest = max([seconds or config.timeout or 0] + [
        spec.timeout for spec in served
        if seconds is None and spec.timeout is not None])
    extra = {"tool_timeout": int(longest) + CODEX_MARGIN}
    sys.stdout.write(render(client, entry, extra))
    sys.stdout.flush()
    notes = [where_to_put_it(client, config.root, entry)]
    if not served:
        notes.append("Note: no tool is served from this project yet "
                     "(`acor list` shows what acor finds here).")
    problem = sdk_problem()
    if problem is not None:
        notes.append(f"Note: {problem.title}. {problem.recovery}")
    print("\n".join(notes), file=sys.stderr)
    return exitcodes.OK
