"""``acor export plugin --dir D``: one folder every agent host loads.

The folder is at once:

* an Agent Plugin (Agent Plugins 1.0.0, https://agent-plugins.org):
  ``plugin.json`` (``$schema``, ``name``, ...), ``mcp.json`` (the stdio
  server) and ``skills/<name>/SKILL.md`` (one Agent Skill per tool, as
  ``acor export skill`` writes it);
* a Claude Code plugin: ``.claude-plugin/plugin.json`` (its server in
  it), with ``.claude-plugin/marketplace.json`` listing the folder
  itself, so ``/plugin marketplace add D`` then ``/plugin install
  NAME@NAME`` installs it;
* a Codex plugin: ``.codex-plugin/plugin.json``, naming ``./skills/``,
  its server in it;
* a Gemini CLI extension: ``gemini-extension.json`` (its ``mcpServers``).

The server is the one ``acor mcp --print-config`` writes: this acor, by
absolute path, pinned to this project (``--config``, ``--cwd``), so the
folder is for this machine. A tool's credentials (its human-only
arguments marked ``secret``, of the standard level) become the host's
sensitive user settings where the host has them: Claude Code's
``userConfig`` (``"sensitive": true``, kept in its secure storage) and
Gemini CLI's extension ``settings`` (``"sensitive": true``, kept in the
system keychain), which the host hands ``acor mcp`` in the variable
:func:`cli.run.own_secrets.host_secret_var` names; acor gives each only
to its own tool, on its human channel. No file holds a value. Where a
host has no such settings (Codex, Agent Plugins' ``mcp.json``, which
forbids secrets in ``env``), acor asks a person when a call needs one.
A tool that is not what the project's ``acor.lock`` pins is not exported
(discovery does not offer it).
"""

from __future__ import annotations

import getpass
import os
import re
from typing import Any

import click

from acor import __version__
from acor.cli.commands.context import command_registry
from acor.cli.commands.export import (MAX_DESCRIPTION, bounded,
                                      skill_markdown, skill_name)
from acor.cli.commands.mcp_config import (ConfigProblem, SERVER_NAME,
                                          json_text, stdio_entry)
from acor.cli.errors import LauncherError, UsageError
from acor.cli.run.own_secrets import host_secret_names, host_secret_var
from acor.cli.textsafe import printable

AGENT_PLUGIN_SCHEMA = \
    "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json"
AGENT_MCP_SCHEMA = "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json"
CLAUDE_PLUGIN_SCHEMA = \
    "https://json.schemastore.org/claude-code-plugin-manifest.json"
CLAUDE_MARKETPLACE_SCHEMA = \
    "https://json.schemastore.org/claude-code-marketplace.json"
# Agent Plugins' rule for a name (Claude Code, Codex and Gemini take it).
_PLUGIN_NAME = re.compile(r"(?!.*(?:--|\.\.))[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?"
                          r"\Z")


def plugin_name(text: str) -> str | None:
    """``text`` as a plugin name (lowercase, digits, single ``-``/``.``),
    or None when nothing of it is left."""
    name = re.sub(r"[^a-z0-9.-]+", "-", text.lower())
    name = re.sub(r"-{2,}", "-", re.sub(r"\.{2,}", ".", name)).strip("-.")
    return name if name and len(name) <= 64 and _PLUGIN_NAME.match(name) \
        else None


def _owner() -> str:
    try:
        return printable(getpass.getuser()) or "acor"
    except (KeyError, OSError):
        return "acor"


def credentials(specs: list[Any]) -> list[tuple[str, str, str, str]]:
    """(settings key, variable, title, description) for each credential
    of ``specs`` a host may keep for a person."""
    found = []
    for spec in specs:
        props = (spec.args_schema or {}).get("properties") or {}
        for arg in host_secret_names(spec.args_schema):
            prop = props[arg]
            said = prop.get("description") or prop.get("title") or arg
            found.append((f"{spec.name}__{arg}".replace("-", "_"),
                          host_secret_var(spec.name, arg),
                          bounded(f"{spec.name}: {arg}", 100),
                          bounded(f"The {spec.name} tool's {arg}: "
                                  f"{said}", 500)))
    return found


def _host_settings(specs: list[Any], entry: dict[str, Any]
                   ) -> tuple[dict[str, Any], dict[str, Any], list[Any]]:
    """Claude Code's server (with its credentials' variables), its
    ``userConfig``, and Gemini CLI's ``settings``."""
    found = credentials(specs)
    claude_entry = dict(entry)
    if found:
        claude_entry["env"] = {var: f"${{user_config.{key}}}"
                               for key, var, _, _ in found}
    user_config = {key: {"type": "string", "title": title,
                         "description": said, "sensitive": True,
                         "required": False}
                   for key, _, title, said in found}
    settings = [{"name": title, "description": said, "envVar": var,
                 "sensitive": True} for _, var, title, said in found]
    return claude_entry, user_config, settings


def plugin_files(name: str, specs: list[Any], root: str,
                 entry: dict[str, Any]) -> dict[str, str]:
    """Path in the folder -> text, for the plugin ``name`` serving
    ``specs`` (tools of the project at ``root``) through ``entry``."""
    tools = ", ".join(spec.name for spec in specs) or "none yet"
    description = bounded(f"The acor tools of {os.path.basename(root)} "
                          f"({tools}), served by acor mcp.",
                          MAX_DESCRIPTION)
    author = {"name": _owner()}
    claude_entry, user_config, settings = _host_settings(specs, entry)
    files: dict[str, dict[str, Any]] = {
        "plugin.json": {"$schema": AGENT_PLUGIN_SCHEMA, "name": name,
                        "version": __version__, "description": description,
                        "keywords": ["acor", "mcp", "tools"]},
        "mcp.json": {"$schema": AGENT_MCP_SCHEMA, "mcpServers": {
            SERVER_NAME: {"type": "stdio", **entry}}},
        ".claude-plugin/plugin.json": {
            "$schema": CLAUDE_PLUGIN_SCHEMA, "name": name,
            "version": __version__, "description": description,
            "author": author,
            "mcpServers": {SERVER_NAME: claude_entry}},
        ".claude-plugin/marketplace.json": {
            "$schema": CLAUDE_MARKETPLACE_SCHEMA, "name": name,
            "owner": author, "plugins": [{
                "name": name, "source": "./", "description": description,
                "version": __version__}]},
        ".codex-plugin/plugin.json": {
            "name": name, "version": __version__,
            "description": description, "author": author,
            "skills": "./skills/", "mcpServers": {SERVER_NAME: entry},
            "interface": {
                "displayName": name, "shortDescription": description,
                "longDescription": description,
                "developerName": author["name"],
                "category": "Developer Tools",
                "capabilities": ["Interactive", "Write"],
                "defaultPrompt": f"Use the acor tools of "
                                 f"{os.path.basename(root)}."}},
        "gemini-extension.json": {
            "name": name, "version": __version__,
            "description": description,
            "mcpServers": {SERVER_NAME: entry}},
    }
    if user_config:
        files[".claude-plugin/plugin.json"]["userConfig"] = user_config
        files["gemini-extension.json"]["settings"] = settings
    texts = {path: json_text(value) for path, value in files.items()}
    for spec in specs:
        skill = skill_name(spec.name)
        if skill is not None:
            texts[f"skills/{skill}/SKILL.md"] = skill_markdown(spec, skill,
                                                               root)
    return texts


def _write_all(directory: str, texts: dict[str, str]) -> None:
    for relative, text in texts.items():
        target = os.path.join(directory, *relative.split("/"))
        try:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as exc:
            raise LauncherError(f"Cannot write {printable(target)}: "
                                f"{exc.strerror}", "Check that --dir is a "
                                "folder you can write to.",
                                code="E_FILE_WRITE", exit_code=2) from None


def _check_targets(directory: str, texts: dict[str, str], force: bool,
                   argv: list[str]) -> None:
    for relative in texts:
        target = os.path.join(directory, *relative.split("/"))
        parts = relative.split("/")
        for depth in range(len(parts)):
            here = os.path.join(directory, *parts[:depth + 1])
            if os.path.islink(here):
                raise UsageError(f"{printable(here)} is a symbolic link",
                                 "Give --dir a folder of real directories.")
        if os.path.exists(target) and not force:
            raise UsageError(f"{printable(target)} exists already",
                             "Add --force to replace the files acor "
                             "writes there.", next=[*argv, "--force"])


@click.command("plugin")
@click.option("--dir", "directory", required=True, metavar="D",
              help="The plugin's folder (created if need be).")
@click.option("--name", "name", metavar="NAME",
              help="The plugin's name (default: the name of D, as Gemini "
                   "CLI wants an extension's name to be its folder's).")
@click.option("--force", is_flag=True,
              help="Replace the files a previous export wrote there.")
@click.pass_context
def export_plugin(ctx: click.Context, directory: str, name: str | None,
                  force: bool) -> int:
    """Write one folder that is an Agent Plugin, a Claude Code plugin (with
    its marketplace), a Codex plugin and a Gemini CLI extension: acor mcp
    for this project, and a skill per tool."""
    registry = command_registry(ctx)
    config = registry.config
    # Gemini CLI wants an extension's name to be its folder's.
    chosen = plugin_name(name if name is not None else os.path.basename(
        os.path.abspath(directory))) or ("acor-tools" if name is None
                                         else None)
    if chosen is None:
        raise UsageError(f"--name {printable(name or '')!r} is not a plugin "
                         "name", "Use lowercase letters, digits and single "
                         "hyphens or dots, e.g. --name my-tools.")
    try:
        entry = stdio_entry(config.path, config.root)
    except ConfigProblem as exc:
        raise UsageError(exc.message, exc.recovery) from None
    specs = list(registry.tools.values())
    texts = plugin_files(chosen, specs, config.root, entry)
    argv = ["acor", "export", "plugin", "--dir", directory]
    if name is not None:
        argv += ["--name", name]
    _check_targets(directory, texts, force, argv)
    _write_all(directory, texts)
    skills = sum(1 for path in texts if path.startswith("skills/"))
    click.echo(f"Wrote the plugin {chosen} to {printable(directory)}: "
               f"acor mcp for {printable(config.root)} and {skills} "
               "skill(s).")
    where = printable(os.path.abspath(directory))
    click.echo(f"To load it: Claude Code `/plugin marketplace add {where}` "
               f"then `/plugin install {chosen}@{chosen}`; Gemini CLI "
               f"`gemini extensions link {where}`; Codex, VS Code, Cursor: "
               "add the folder as a plugin (it holds plugin.json).",
               err=True)
    return 0
