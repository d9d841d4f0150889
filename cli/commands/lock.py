"""``acor lock``: pin the project's tools as they are now (``acor.lock``).

The first lock, and a lock over nothing that changed but tools removed,
are written at once. A lock over a change (a pinned tool whose
definition, manifest or code changed, a tool added since) is a person's
decision: at a terminal the command shows each change and asks before it
writes; anywhere else it refuses, and its error names no next command, so
an agent cannot take a rug pull for an instruction.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from typing import Any

import click

from acor import exitcodes
from acor.cli.discovery.lock import (LockProblem, PART_NAMES,
                                     definition_parts, entry_file, lock_path,
                                     lock_text, pin, read_lock, changes)
from acor.cli.discovery.registry import load_registry
from acor.cli.errors import LauncherError
from acor.cli.textsafe import printable

SHOWN = 600  # characters of one changed value shown at the prompt


def _shown_value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(
        value, ensure_ascii=False, sort_keys=True)
    text = printable(text)
    return text if len(text) <= SHOWN else text[:SHOWN - 1] + "\u2026"


def _drifted(specs: dict[str, Any],
             pinned: dict[str, Any]) -> dict[str, list[str]]:
    """Tool name -> what changed since ``pinned``, for each that did."""
    found = {}
    for name, spec in specs.items():
        changed = changes(pinned.get(name), pin(spec))
        if changed:
            found[name] = changed
    return found


def _report(spec: Any, changed: list[str], pinned: dict[str, Any]) -> str:
    """The change to tool ``spec`` as a person reads it before accepting:
    what changed, and the new value of each changed part."""
    lines = [f"{printable(spec.name)} ({printable(spec.manifest_path)}):"]
    lines += [f"  - {printable(words)}" for words in changed]
    old = pinned.get(spec.name)
    old_parts = old.get("parts", {}) if isinstance(old, dict) else {}
    now = pin(spec)["parts"]
    values = definition_parts(spec)
    for key, words in PART_NAMES.items():
        if old_parts.get(key) != now[key] and values[key] is not None:
            lines.append(f"    {words} now: {_shown_value(values[key])}")
    if any("entry file" in words for words in changed):
        lines.append(f"    entry file: {printable(entry_file(spec) or '')} "
                     "(read it, or `git diff` it, before accepting)")
    return "\n".join(lines)


def _write(path: str, text: str) -> None:
    folder = os.path.dirname(path)
    try:
        fd, temp = tempfile.mkstemp(prefix=".acor.lock.", dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(temp, path)
    except OSError as exc:
        raise LauncherError(f"Cannot write {printable(path)}: "
                            f"{exc.strerror}", "Check that the project's "
                            "folder is writable.", code="E_FILE_WRITE") \
            from None


def _ask(path: str, specs: dict[str, Any], pinned: dict[str, Any],
         drifted: dict[str, list[str]], problem: str | None) -> bool:
    """Show the changes at the terminal and ask; True to write."""
    if problem is not None:
        click.echo(f"{problem}: every tool is shown as new.")
    click.echo(f"{len(drifted)} tool(s) differ from {printable(path)}:")
    for name, changed in drifted.items():
        click.echo(_report(specs[name], changed, pinned))
    return click.confirm("Pin these tools as they are now?", default=False)


@click.command("lock")
@click.pass_context
def lock_command(ctx: click.Context) -> int:
    """Pin every tool's definition and code in acor.lock: from then on a
    tool that changed is not served until a person runs acor lock again
    (at a terminal, where it shows the change and asks)."""
    obj = ctx.find_root().ensure_object(dict)
    registry = load_registry(config_path=obj.get("config"), pinned=False)
    path = lock_path(registry.config.root)
    specs = dict(registry.tools)
    problem = None
    try:
        pinned = read_lock(path)
    except LockProblem as exc:
        pinned, problem = {}, exc.reason
    drifted = {} if pinned is None else _drifted(specs, pinned)
    if pinned is not None and not drifted and problem is None:
        removed = sorted(set(pinned) - set(specs))
        if not removed:
            click.echo(f"{printable(path)} already pins the {len(specs)} "
                       "tool(s) as they are.")
            return exitcodes.OK
    elif drifted or problem is not None:
        if not sys.stdin.isatty():
            names = ", ".join(printable(n) for n in sorted(drifted))
            raise LauncherError(
                f"{len(drifted)} tool(s) differ from acor.lock ({names}): "
                "accepting a changed tool is a person's decision",
                "A person runs acor lock at a terminal, where it shows "
                "each change and asks; `acor doctor` lists what changed.",
                code="E_LOCK_CHANGED", exit_code=exitcodes.FAILED)
        if not _ask(path, specs, pinned or {}, drifted, problem):
            click.echo(f"{printable(path)} is unchanged.")
            return exitcodes.FAILED
    _write(path, lock_text(list(specs.values())))
    click.echo(f"Pinned {len(specs)} tool(s) in {printable(path)}.")
    return exitcodes.OK
