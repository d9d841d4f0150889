"""Click programs as tools: a manifest ``{"click": "package.module:cli"}``
serves a click command, or each command of a click group, as a tool.

A click command's parameters exist only once its module is imported, so
discovery reads them in a boxed child process
(:mod:`acor.cli.discovery.clickprobe`: no writes, no network), once per
version of the files it was read from: the reply is kept in acor's cache
folder (``click-<sha256>.marshal``), valid while every one of those files
has the signature it had (:func:`acor.cli.discovery.cache.signature`).
Those files are also fingerprinted in the registry's scan, so that editing
the module rescans. This is the one place discovery runs a project's code;
where the kernel cannot make the box, the manifest is refused.

Each command becomes a :class:`ToolSpec` of kind ``acor`` whose program is
:mod:`acor.cli.discovery.clickrun` (the command run inside an
``AcorTool``), with an argument schema from its parameters
(:mod:`acor.cli.discovery.clickschema`). A group's commands are named
``GROUP-COMMAND``, GROUP the manifest's ``name``, else the name of its
folder (``GROUP/manifest.json``) or file (``GROUP.json``), unique in its
tools dir, so that two groups' commands cannot collide (a single command
is named the same way, without ``-COMMAND``).
"""

from __future__ import annotations

import json
import marshal
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from hashlib import sha256
from typing import Any

from acor._safefs import Unsafe
from acor.args import public_schema, schema_problems, usage
from acor.cli.discovery import cache, trust
from acor.cli.discovery.cache import Fingerprint, cache_dir
from acor.cli.discovery.clickschema import (Unsupported, args_schema,
                                            first_paragraph)
from acor.cli.discovery.fields import is_name
from acor.cli.discovery.spec import ToolSpec
from acor.cli.durations import check_seconds
from acor.cli.sandbox import kernel
from acor.cli.textsafe import printable, quote

FORMAT = 1
# The reading child's box (cli.sandbox.enter): no writes but /dev/null, no
# network, no UNIX socket; reads as the user.
NO_WRITES: dict[str, Any] = {"write": ["/dev/null"], "read": None,
                             "network": False, "unix_sockets": False}
# Seconds the child has to import the module and describe the command
# (ACOR_CLICK_READ_TIMEOUT overrides it): then it and all it started are
# killed, and the manifest refused.
READ_TIMEOUT = 30.0
MAX_REPLY = 4 << 20
_PROBE = "from acor.cli.discovery.clickprobe import main; main()"
RUNNER = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                      "clickrun.py")


class ClickError(Exception):
    """This click manifest is refused: ``reason`` and ``recovery``
    (turned into a :class:`acor.cli.discovery.manifest.ManifestError`)."""

    def __init__(self, reason: str, recovery: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.recovery = recovery


def click_specs(manifest: str, data: dict[str, Any], warnings: list[str],
                folder_real: str, fp: Fingerprint, origin: str,
                check: Callable[[str, dict[str, Any]], None]
                ) -> list[ToolSpec]:
    """The tools of click manifest ``manifest`` (its checked ``data`` and
    their ``warnings``), its module looked up in ``folder_real`` first;
    ``check(name, args schema)`` holds each command to the manifest's
    rules."""
    target = data["click"]
    if not origin.startswith("package "):
        _owner_check(target, folder_real)
    reply = read_command(target, folder_real)
    for path in reply.get("files") or ():
        st = _stat(path)
        fp.add(path, st)
        if not origin.startswith("package "):
            _owner_check_file(path, st, folder_real)
    if "error" in reply:
        _watch_candidates(target, folder_real, fp)
        raise _refusal(target, reply)
    root = reply["command"]
    prefix = data.get("name") or _stem(manifest) or root.get("name")
    specs = []
    for path, command in _leaves(root, []):
        name = prefix if not path else "-".join([prefix, *path])
        if not is_name(name):
            raise ClickError(f"the command {quote(str(name))} of {target} "
                             "is not a tool name (lowercase letters, digits,"
                             " '-' and '_', at most 64)",
                             'Name the tool(s) with "name" in the manifest.')
        schema = _schema(name, command)
        check(name, schema)
        specs.append(_spec(name, path, command, schema, data, manifest,
                           folder_real, single=not path, origin=origin,
                           warnings=list(warnings)))
    if not specs:
        raise ClickError(f"the click group {target} has no command",
                         "Add a command to the group, or point \"click\" at "
                         "a command.")
    return specs


def _schema(name: str, command: dict[str, Any]) -> dict[str, Any]:
    try:
        schema = args_schema(command)
    except Unsupported as exc:
        raise ClickError(f"the command {quote(name)} cannot be served: "
                         f"{exc}", "Change that parameter to one acor can "
                         "pass (docs/authoring.md, \"Click programs\"), or "
                         "hide the command (hidden=True).") from None
    problems = schema_problems(schema)
    if problems:
        raise ClickError(f"the command {quote(name)} gives no valid argument "
                         f"schema: {'; '.join(problems)}",
                         "Change its parameters (docs/authoring.md, \"Click "
                         "programs\").")
    return schema


def _spec(name: str, path: list[str], command: dict[str, Any],
          schema: dict[str, Any], data: dict[str, Any], manifest: str,
          folder_real: str, single: bool, origin: str,
          warnings: list[str]) -> ToolSpec:
    own = first_paragraph(command.get("short_help")) or \
        first_paragraph(command.get("help"))
    description = (data.get("description") if single else None) or own or \
        f"the click command {name}"
    version = data.get("version", "1.0.0")
    argv = [sys.executable, "-u", RUNNER, name, version, folder_real,
            data["click"], str(len(path)), *path]
    return ToolSpec(
        name=name, version=version, description=description, kind="acor",
        path=os.path.dirname(manifest), manifest_path=manifest, argv=argv,
        timeout=data.get("timeout"), idle_timeout=data.get("idle_timeout"),
        usage=usage(f"acor {name}", schema),
        max_output=data.get("max_output"), errors={},
        cwd_mode=data.get("cwd", "invocation"), warnings=warnings,
        args_schema=schema, args_public=public_schema(schema),
        stdin=data.get("stdin", False),
        examples=data.get("examples") if single else None,
        annotations=data.get("annotations"), origin=origin,
        warm=data.get("warm", True), sandbox=data.get("sandbox"))


def _stem(manifest: str) -> str | None:
    """The name of the manifest's folder (``TOOL/manifest.json``) or file
    (``TOOL.json``), if it is a tool name: unique in its tools dir, where
    a click group's own name is often just "cli"."""
    base = os.path.basename(manifest)
    stem = os.path.basename(os.path.dirname(manifest)) \
        if base == "manifest.json" else os.path.splitext(base)[0]
    return stem if is_name(stem) else None


def _leaves(command: dict[str, Any],
            path: list[str]) -> list[tuple[list[str], dict[str, Any]]]:
    """(command path, command) of every command that is not a group, the
    hidden ones left out."""
    subs = command.get("commands")
    if not isinstance(subs, dict):
        return [(path, command)]
    found = []
    for name, sub in subs.items():
        if isinstance(sub, dict) and not sub.get("hidden"):
            found += _leaves(sub, [*path, str(name)])
    return found


def _refusal(target: str, reply: dict[str, Any]) -> ClickError:
    kind, message = reply["error"], printable(str(reply.get("message")))
    if kind == "sandbox":
        return ClickError(f"reading {target} in its box failed: {message}",
                          "Run `acor doctor` to see what this kernel offers.")
    if kind == "not_click":
        return ClickError(message, "Point \"click\" at the click command or "
                          "group, e.g. \"package.module:cli\" where cli is "
                          "decorated with @click.command() or @click.group()"
                          ".")
    if kind == "reply":
        return ClickError(f"reading {target} failed: {message}",
                          "Keep importing the module quick and free of "
                          "side effects (the work belongs in the command); "
                          "a slow import may be given longer with "
                          "ACOR_CLICK_READ_TIMEOUT=SECONDS.")
    return ClickError(
        f"{target} cannot be imported: {message}",
        "Make the module importable from the manifest's folder or the "
        "environment acor runs in (`python -c 'import MODULE'` there "
        "shows the error), and keep a command's call under `if __name__ "
        "== \"__main__\":`.")


# -- the module's files ------------------------------------------------------

def _candidates(target: str, folder_real: str) -> list[str]:
    """Where in ``folder_real`` each step of the module path would be."""
    parts = target.partition(":")[0].split(".")
    found = []
    base = folder_real
    for part in parts:
        found += [os.path.join(base, part), os.path.join(base, part + ".py")]
        base = os.path.join(base, part)
    return found


def _owner_check(target: str, folder_real: str) -> None:
    """The module's files in the folder pass the ownership rule of
    :mod:`acor.cli.discovery.trust`, as a tool's program does: they are run
    (boxed) to read the command."""
    for path in _candidates(target, folder_real):
        for each in (path, os.path.join(path, "__init__.py")):
            st = _stat(each)
            why = None if st is None else trust.problem(each, st)
            if why is not None:
                raise ClickError(f"the module file {printable(each)} is not "
                                 f"used: {why}", trust.how_to_trust(each))


def _owner_check_file(path: str, st: os.stat_result | None,
                      folder_real: str) -> None:
    """A file the module imported from ``folder_real`` passes the
    ownership rule too: the tool's run imports it unboxed."""
    if st is None or os.path.commonpath([folder_real, path]) != folder_real:
        return
    why = trust.problem(path, st)
    if why is not None:
        raise ClickError(f"the module file {printable(path)} is not used: "
                         f"{why}", trust.how_to_trust(path))


def _watch_candidates(target: str, folder_real: str,
                      fp: Fingerprint) -> None:
    """A module that could not be read: creating or changing it where it
    would be looked up rescans."""
    for path in _candidates(target, folder_real):
        fp.add(path, _stat(path))


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except (OSError, ValueError):
        return None


# -- reading, cached by the files' signatures --------------------------------

def read_command(target: str, folder_real: str) -> dict[str, Any]:
    """The described command at ``target`` (see :mod:`.clickprobe`), from
    the cache while none of its files changed, else read by the boxed
    child (and kept, when it was read)."""
    # Where the module is looked up after the folder: the environment's.
    key = [FORMAT, target, folder_real, sys.executable,
           os.environ.get("PYTHONPATH", "")]
    name = "click-" + sha256("\0".join(map(str, key)).encode(
        "utf-8", "surrogateescape")).hexdigest()[:16] + \
        ".marshal"
    kept = _cached(name, key)
    if kept is not None:
        return kept
    started = time.time_ns()
    reply = _run_probe(target, folder_real)
    files = reply.get("files") if "error" not in reply else None
    if isinstance(files, list):
        _keep(name, key, files, reply, started)
    return reply


def _cached(name: str, key: list[object]) -> dict[str, Any] | None:
    folder = _cache_folder(create=False)
    if folder is None:
        return None
    try:
        with folder:
            raw = folder.read(name, MAX_REPLY * 2, owner=os.geteuid())
        if raw is None:
            return None
        data = marshal.loads(raw)
        if data["key"] != key:
            return None
        for path, sig in data["files"]:
            if cache.signature(path) != sig:
                return None
        reply = data["reply"]
        return reply if isinstance(reply, dict) else None
    except (Unsafe, OSError, ValueError, EOFError, KeyError, TypeError):
        return None


def _keep(name: str, key: list[object], files: list[str],
          reply: dict[str, Any], started: int) -> None:
    """Save ``reply`` with the signatures of ``files``, unless one of them
    changed within the racy window of the reading (see
    :data:`acor.cli.discovery.cache.RACY_NS`): best effort."""
    entries = []
    for path in files:
        st = _stat(path)
        if st is None or abs(st.st_mtime_ns - started) < cache.RACY_NS:
            return
        entries.append([path, cache.signature(path)])
    folder = _cache_folder(create=True)
    if folder is None:
        return
    try:
        blob = marshal.dumps({"key": key, "files": entries, "reply": reply})
        with folder:
            folder.write(name, blob, temp=f"{name}.{os.getpid()}."
                         f"{os.urandom(4).hex()}.tmp")
    except (Unsafe, OSError, ValueError):
        pass


def _cache_folder(create: bool) -> Any:
    """acor's cache folder (an :class:`acor._safefs.Folder`, not
    annotated), or None where it is not usable."""
    folder, _ = cache._open_dir(cache_dir(), create=create)
    return folder


def _run_probe(target: str, folder_real: str) -> dict[str, Any]:
    """Start the boxed child and take its reply (``{"error": ...}`` when
    it gave none). Raises :class:`ClickError` where the kernel cannot make
    the box."""
    lacks = kernel.missing(NO_WRITES, kernel.offers(cache_dir()))
    if lacks:
        raise ClickError(
            "reading the click command's parameters runs its module, which "
            "acor does only in a sandbox, and this kernel lacks: " +
            "; ".join(lacks), "Run acor on a kernel that offers these "
            "(`acor doctor` says what this one does), or describe the tool "
            "with a manifest and an \"args\" schema (docs/authoring.md).")
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    try:
        child = subprocess.Popen(
            [sys.executable, "-P", "-c", _PROBE, target, folder_real],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, cwd=folder_real, env=env,
            start_new_session=True)
    except OSError as exc:
        return {"error": "start", "message": exc.strerror or str(exc)}
    timeout = read_timeout()
    timer = threading.Timer(timeout, _kill, (child.pid,))
    timer.start()
    try:
        assert child.stdout is not None
        raw = child.stdout.readline(MAX_REPLY + 1)
    finally:
        timer.cancel()
        _kill(child.pid)  # anything it left behind in its group
        child.wait()
        if child.stdout is not None:
            child.stdout.close()
    return _reply(raw, child.returncode, timeout)


def read_timeout() -> float:
    """:data:`READ_TIMEOUT`, or ``ACOR_CLICK_READ_TIMEOUT`` when it is a
    valid number of seconds."""
    try:
        return check_seconds(os.environ.get("ACOR_CLICK_READ_TIMEOUT", ""),
                             "ACOR_CLICK_READ_TIMEOUT")
    except ValueError:
        return READ_TIMEOUT


def _kill(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _reply(raw: bytes, returncode: int | None,
           timeout: float) -> dict[str, Any]:
    if len(raw) > MAX_REPLY:
        return {"error": "reply", "message": "its description is over "
                f"{MAX_REPLY >> 20} MiB"}
    try:
        reply = json.loads(raw.decode("utf-8"))
    except ValueError:
        why = f"the reading ended with {returncode} and no description" \
            if raw == b"" else "the reading gave no valid description"
        if returncode == -signal.SIGKILL:
            why = f"the reading took over {timeout:g} seconds"
        return {"error": "reply", "message": why}
    if not isinstance(reply, dict) or not (
            isinstance(reply.get("command"), dict) or "error" in reply):
        return {"error": "reply", "message": "the reading gave no valid "
                "description"}
    files = reply.get("files", [])
    if not isinstance(files, list) or not all(
            isinstance(f, str) and os.path.isabs(f) for f in files):
        return {"error": "reply", "message": "the reading gave no valid "
                "file list"}
    return reply
