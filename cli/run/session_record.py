"""What acor records of a session's last run, beside the checkpoints the
tool keeps (:mod:`acor.sessions`): ``<state_dir>/<tool>/.<session>.run``,
one small JSON object the launcher replaces atomically when a run binds
the session (``running``, with the launcher's pid and when that process
started) and again when the run ends (its ending, and the exact command
that resumes it)::

    {"format": "acor-session-run/1", "state": "failed",
     "started": "...Z", "ended": "...Z", "pid": 4242, "pid_start": "81234",
     "host": "build-1", "cwd": "/home/ada/proj", "config": "/home/.../x.yaml",
     "resume": ["acor", "etl", "--session", "run-42"]}

``state`` is ``running`` or the run's ending (``complete``, ``failed``,
``cancelled``, ``timeout``, ``input_needed``). A launcher killed with
SIGKILL (or a machine that lost power) never writes its end: its record
still says ``running``, so :func:`state_of` checks the recorded process
(its pid, and on Linux its start time, so a pid reused since is not
taken for it) and says ``interrupted`` when it is gone. ``resume`` is
the run's own command (an interrupted, failed or cancelled run continues
from its last checkpoint), the one with more time acor's timeout error
gave, or for an Input Needed ending the command a person runs at a
terminal to be asked; none for a complete run. It holds only what the
command line held: a person's human-only answers (approvals, secrets)
travel on their own channel (:mod:`acor.human`), never in argv.

The record is data a repository may have committed like the rest of the
state dir: it is read through :class:`acor._safefs.Folder` (no link
followed, a regular file of at most :data:`MAX_BYTES`), and
:func:`read` takes it only in the shape this module writes, with a
``resume`` that runs ``acor`` on this very tool. Writing it is best
effort: a run never fails because its record could not be written.
"""

from __future__ import annotations

import json
import os
import time

from acor._safefs import Folder, Unsafe
from acor.sessions import validate_session_id, validate_tool_name

TYPE_CHECKING = False  # typing costs every run ~3 ms: only mypy
if TYPE_CHECKING:
    from typing import Any, Optional, Sequence

__all__ = ["ENDINGS", "FORMAT", "MAX_BYTES", "clear", "ended", "read",
           "started", "state_of"]

FORMAT = "acor-session-run/1"
MAX_BYTES = 64 * 1024
# The endings a record may hold (a run's final state, acor.exitcodes).
ENDINGS = ("complete", "failed", "cancelled", "timeout", "input_needed")


def _name(session: str) -> str:
    return f".{session}.run"


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _host() -> str:
    uname = getattr(os, "uname", None)
    return uname().nodename if uname is not None else ""


def _process_start(pid: int) -> Optional[str]:
    """When process ``pid`` started, in clock ticks since boot (Linux's
    /proc); None where that cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return fields[19].decode("ascii")  # field 22: starttime
    except (OSError, IndexError, UnicodeDecodeError):
        return None


def started(state_dir: str, tool: str, session: str, cwd: str,
            config: Optional[str], resume: Sequence[str]) -> None:
    """A run of ``tool`` in this process has bound ``session``: recorded
    as running; ``resume`` is its command, what continues it should this
    process die before :func:`ended`."""
    pid = os.getpid()
    _write(state_dir, tool, session, {
        "format": FORMAT, "state": "running", "started": _now(),
        "ended": None, "pid": pid, "pid_start": _process_start(pid),
        "host": _host(), "cwd": cwd, "config": config,
        "resume": list(resume)})


def ended(state_dir: str, tool: str, session: str, state: str,
          resume: Optional[Sequence[str]]) -> None:
    """The run that bound ``session`` ended in ``state``: recorded, with
    the command that resumes it (None: nothing to resume)."""
    record = read(state_dir, tool, session)
    if record is None or record["pid"] != os.getpid():
        return  # not this process's run (or unreadable): left as it is
    record.update(state=state if state in ENDINGS else "failed",
                  ended=_now(),
                  resume=None if resume is None else list(resume))
    _write(state_dir, tool, session, record)


def _write(state_dir: str, tool: str, session: str,
           record: dict[str, Any]) -> None:
    try:
        validate_tool_name(tool)
        validate_session_id(session)
        folder = Folder.open(os.path.join(state_dir, tool), 0o777)
        if folder is None:
            return
        with folder:
            folder.write(_name(session), json.dumps(record).encode(),
                         temp=f".{session}.run.{os.urandom(6).hex()}.tmp")
    except (OSError, Unsafe, ValueError, TypeError):
        pass  # the run goes on; `acor sessions` shows no state for it


def read(state_dir: str, tool: str, session: str
         ) -> Optional[dict[str, Any]]:
    """The record of ``session``'s last run, or None: there is none, or
    it is not one this module wrote."""
    try:
        folder = Folder.open(os.path.join(state_dir,
                                          validate_tool_name(tool)))
        if folder is None:
            return None
        with folder:
            raw = folder.read(_name(validate_session_id(session)),
                              MAX_BYTES)
        record = json.loads(raw) if raw is not None else None
    except (OSError, Unsafe, ValueError, TypeError, RecursionError):
        return None
    return record if _well_formed(record, tool) else None


# The options a resume command may give acor before the tool's name: none
# that weakens what protects the person (``--no-sandbox``) or changes which
# tools there are (``--config``): a repository may commit a record offering
# them, and a person may paste what `acor sessions` offers.
_SAFE_FLAGS = frozenset({"--no-input", "--sandbox"})
_SAFE_VALUED = frozenset({"--format", "--timeout", "--idle-timeout",
                          "--max-output"})


def _offers_only_acor_on(resume: object, tool: str) -> bool:
    """Whether ``resume`` is ``acor``, options that weaken nothing, then
    ``tool`` and its own arguments."""
    if not isinstance(resume, list) or resume[:1] != ["acor"] or \
            not all(isinstance(word, str) for word in resume):
        return False
    index = 1
    while index < len(resume) and resume[index] != tool:
        word = resume[index]
        flag = word.split("=", 1)[0]
        if word in _SAFE_FLAGS or (flag in _SAFE_VALUED and "=" in word):
            index += 1
        elif word in _SAFE_VALUED:
            index += 2
        else:
            return False
    return index < len(resume)


def _well_formed(record: object, tool: str) -> bool:
    """Whether ``record`` has this module's shape, and its command runs
    ``acor`` on ``tool`` with no option that weakens a protection (a
    committed file cannot make `acor sessions` offer any other command)."""
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        return False
    resume = record.get("resume")
    if resume is not None and not _offers_only_acor_on(resume, tool):
        return False
    return (record.get("state") in ("running", *ENDINGS) and
            isinstance(record.get("pid"), int) and
            isinstance(record.get("cwd"), str) and
            os.path.isabs(record["cwd"]) and
            isinstance(record.get("config"), (str, type(None))) and
            isinstance(record.get("host"), str) and
            isinstance(record.get("pid_start"), (str, type(None))))


def clear(state_dir: str, tool: str, session: str) -> None:
    """Remove the record of ``session`` (with its session)."""
    try:
        folder = Folder.open(os.path.join(state_dir,
                                          validate_tool_name(tool)))
        if folder is None:
            return
        with folder:
            folder.remove(_name(validate_session_id(session)))
    except (OSError, Unsafe, ValueError, TypeError):
        pass


def _alive(record: dict[str, Any]) -> Optional[bool]:
    """Whether the recorded process still runs: None when that cannot
    be told here (it ran on another host)."""
    if record["host"] != _host():
        return None
    pid = record["pid"]
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, as another user: its start time tells
    except (OSError, OverflowError, ValueError):
        return False
    mark = record["pid_start"]
    return mark is None or _process_start(pid) == mark


def state_of(record: dict[str, Any]) -> str:
    """The session's state: the recorded ending; ``running`` only while
    the process that recorded it still runs, ``interrupted`` once it is
    gone without recording an end, ``unknown`` when it ran on another
    host."""
    if record["state"] != "running":
        return str(record["state"])
    alive = _alive(record)
    return "unknown" if alive is None else \
        "running" if alive else "interrupted"
