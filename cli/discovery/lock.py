"""Pinned tool definitions: ``acor.lock`` at the project's root.

A person runs ``acor lock`` after reading the tools; from then on a tool
is served (over MCP, to ``acor TOOL``, to ``acor export``) only while it
is what was pinned: the same served definition (its name, description,
usage, input schema, human-only arguments, annotations, sandbox, output
budget) and the same bytes in its manifest and its entry file. A tool
whose description or code changed after it was approved (a rug pull), and
a tool added after the lock, are not served until a person runs ``acor
lock`` again: discovery moves them to the skipped manifests, with what
changed, so every front end refuses them as it refuses a broken manifest
and ``acor doctor`` lists them. The message never offers ``acor lock`` as
a next command: accepting a change is a person's decision.

The check runs on every load of a project that has a lock (the discovery
cache does not re-read a tool's code when it is edited in place, so the
cache cannot be trusted with it): it reads each tool's manifest and entry
file and hashes them, which is what the lock costs.

The file, JSON::

    {"acor_lock": 1,
     "tools": {"NAME": {"definition": SHA256, "manifest": SHA256,
                        "entry": SHA256 or null,
                        "parts": {"description": SHA256, ...}}}}

``parts`` holds one digest per part of the definition, so a refusal names
what changed; ``definition`` is the digest of them all.
"""

from __future__ import annotations

import os
import sys

# Every load asks lock_path, so this module is on the warm path, where
# importing typing costs more than the rest of a lookup: mypy alone reads it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

LOCK_NAME = "acor.lock"
FORMAT = 1
# The parts of a served definition, as a refusal names them.
PART_NAMES = {"name": "name", "description": "description",
              "usage": "usage line", "input_schema": "input schema",
              "human": "human-only arguments", "annotations": "annotations",
              "sandbox": "sandbox", "output_schema": "output schema",
              "max_output": "output budget"}
_CHUNK = 1 << 20


class LockProblem(Exception):
    """``acor.lock`` cannot be read or used: ``reason``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def lock_path(root: str) -> str:
    """Where the project at ``root`` keeps its lock."""
    return os.path.join(root, LOCK_NAME)


def _canonical(value: Any) -> str:
    """One text for one JSON value whatever its keys' order (no json
    import on the warm path: the repr of sorted items is as exact)."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{key!r}:{_canonical(value[key])}"
                              for key in sorted(value, key=str)) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_canonical(item) for item in value) + "]"
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, float) and value.is_integer():
        return repr(int(value))  # 1.0 and 1 are one JSON number
    return repr(value)


def _sha256() -> Any:
    # hashlib costs 4 ms to import; every load asks lock_path, few hash.
    import hashlib
    return hashlib.sha256()


def _digest(text: str | bytes) -> str:
    digest = _sha256()
    digest.update(text.encode("utf-8", "surrogatepass")
                  if isinstance(text, str) else text)
    return str(digest.hexdigest())


def definition_parts(spec: Any) -> dict[str, Any]:
    """What a client is shown of tool ``spec``, part by part."""
    schema = spec.args_schema if isinstance(spec.args_schema, dict) else {}
    props = schema.get("properties")
    props = props if isinstance(props, dict) else {}
    human = {name: prop for name, prop in props.items()
             if isinstance(prop, dict) and isinstance(prop.get("x-acor"),
                                                      dict)
             and prop["x-acor"].get("human") is True}
    return {"name": spec.name, "description": spec.description,
            "usage": spec.usage, "input_schema": spec.args_public,
            "human": human, "annotations": spec.annotations,
            "sandbox": spec.sandbox,
            "output_schema": spec.__dict__.get("output_schema"),
            "max_output": spec.max_output}


def entry_file(spec: Any) -> str | None:
    """The program file tool ``spec`` runs, when it is a file acor can
    name (a Python entry, a program by path); None for a bare command
    name found on PATH at run time."""
    argv = spec.argv or []
    if len(argv) >= 3 and argv[0] == sys.executable and argv[1] == "-u":
        return str(argv[2])
    if argv and os.path.isabs(argv[0]):
        return str(argv[0])
    return None


def file_digest(path: str | None) -> str | None:
    """The sha256 of the file at ``path``; None when there is no path;
    ``"missing"`` when it cannot be read."""
    if path is None:
        return None
    digest = _sha256()
    try:
        with open(path, "rb") as f:
            while chunk := f.read(_CHUNK):
                digest.update(chunk)
    except OSError:
        return "missing"
    return str(digest.hexdigest())


def pin(spec: Any) -> dict[str, Any]:
    """The lock entry of tool ``spec`` as it is now."""
    parts = {key: _digest(_canonical(value))
             for key, value in definition_parts(spec).items()}
    return {"definition": _digest(_canonical(parts)),
            "manifest": file_digest(spec.manifest_path),
            "entry": file_digest(entry_file(spec)), "parts": parts}


def changes(pinned: dict[str, Any] | None, now: dict[str, Any]) -> list[str]:
    """What differs between a tool's lock entry and its state now, in
    words (empty: it is what was pinned)."""
    if pinned is None:
        return ["it is not in acor.lock (added after the lock)"]
    found = []
    old_parts = pinned.get("parts")
    old_parts = old_parts if isinstance(old_parts, dict) else {}
    if pinned.get("definition") != now["definition"]:
        found += [f"its {words} changed" for key, words in PART_NAMES.items()
                  if old_parts.get(key) != now["parts"].get(key)]
        if not found:
            found.append("its definition changed")
    if pinned.get("manifest") != now["manifest"]:
        found.append("its manifest file changed")
    if pinned.get("entry") != now["entry"]:
        found.append("its entry file (its code) changed")
    return found


def read_lock(path: str) -> dict[str, Any] | None:
    """The tools pinned in the lock at ``path`` (name -> entry), None when
    there is no lock; :class:`LockProblem` when it cannot be used."""
    try:
        with open(path, "rb") as f:
            raw = f.read(64 << 20)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise LockProblem(f"acor.lock cannot be read: {exc.strerror}") \
            from None
    import json  # only in a project that has a lock
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise LockProblem("acor.lock is not valid JSON") from None
    if not isinstance(data, dict) or data.get("acor_lock") != FORMAT or \
            not isinstance(data.get("tools"), dict) or not all(
                isinstance(entry, dict) for entry in data["tools"].values()):
        raise LockProblem(f"acor.lock is not an acor lock of format "
                          f"{FORMAT}")
    return dict(data["tools"])


def lock_text(specs: list[Any]) -> str:
    """The lock file pinning ``specs`` as they are now."""
    import json
    tools = {spec.name: pin(spec) for spec in sorted(
        specs, key=lambda s: s.name)}
    return json.dumps({"acor_lock": FORMAT, "tools": tools}, indent=2,
                      sort_keys=True) + "\n"


RECOVERY = ("A person reviews the change (`git diff`, the tool's folder) "
            "and, to accept it, runs acor lock at a terminal, which shows "
            "it and asks.")


def drift(registry: Any) -> dict[str, list[str]]:
    """Tool name -> what changed, for every tool of ``registry`` that is
    not what its project's lock pins ({} when there is no lock)."""
    pinned = read_lock(lock_path(registry.config.root))
    if pinned is None:
        return {}
    found = {}
    for name, spec in registry.tools.items():
        changed = changes(pinned.get(name), pin(spec))
        if changed:
            found[name] = changed
    return found
