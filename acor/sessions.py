"""Resumable sessions: checkpoints a tool saves and reads back on its next run.

    store = SessionStore(state_dir_from_env(), "etl")
    store.save("run-42", "batch-7", {"offset": 7000})
    last = store.latest("run-42")   # None before the first save
    last.id, last.state             # ('batch-7', {'offset': 7000})

One JSON file per tool and session, ``<state_dir>/<tool>/<session>.json``::

    {"format": "acor-session/1", "tool": "etl", "session": "run-42", "seq": 1,
     "checkpoints": {"batch-7": {"seq": 1, "time": "...Z", "state": {...}}}}

A save appends one line to a journal beside it, ``.<session>.journal``
(a header line, then one JSON object per checkpoint), synced, instead of
rewriting the whole file: every :data:`ROTATE` saves (or past
:data:`JOURNAL_BYTES`) the journal is folded into the file and started
afresh, so a checkpoint costs one appended line (and a 64th of a rewrite),
whatever the session holds. Readers apply the journal's entries newer than
the file's ``seq``; a torn last line (a crash mid-write) is ignored.

``seq`` only grows, so the newest checkpoint is the one with the highest
seq; saving an existing checkpoint id again replaces it and makes it the
newest. Only the last ``keep`` checkpoints are kept, and only as many as fit
in :data:`MAX_BYTES` (16 MiB). Files are replaced atomically (a crash leaves
the old file or the new one, never a torn one) and read-modify-write is
serialised across processes by an exclusive ``flock`` on
``.<session>.lock`` (``filelock`` where there is no ``fcntl``).

The state dir is the root: what is inside it is data a repository may have
committed. Nothing inside it is followed if it is a symbolic link (a tool
folder, a session file, a lock file), only regular files are read (a FIFO
or device is refused without blocking), and at most ``MAX_BYTES`` of each;
anything else is a :class:`CorruptSessionError` that names the file.
"""

from __future__ import annotations

import collections
import errno
import json
import os
import re
import time

from ._safefs import Folder, Unsafe, size

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

    from ._safefs import Lock

    Data = dict[str, Any]  # a session file's JSON object

FORMAT = "acor-session/1"
KEEP = 1000
# A session file is read whole: this bounds the memory a resume or
# `acor sessions` can take, whatever the file. A save drops the oldest
# checkpoints to stay within it.
MAX_BYTES = 16 << 20
ROTATE = 64                 # journal entries before it is folded in
JOURNAL_BYTES = 1 << 20     # or journal bytes
JOURNAL = "acor-journal/1"
SavedCheckpoint = collections.namedtuple("SavedCheckpoint",
                                         "id state time seq")
SessionSummary = collections.namedtuple(
    "SessionSummary", "tool session checkpoint time checkpoints path error")

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_BAD = re.compile(r"[^A-Za-z0-9._-]")
# Device names Windows resolves whatever the folder or extension ("nul.json").
_RESERVED = re.compile(r"(con|prn|aux|nul|com\d|lpt\d)(\..*)?", re.I)
_EXAMPLES = {"session id": "run-2024-06-01", "checkpoint id": "batch-0042",
             "tool name": "csv-profile"}


class CorruptSessionError(ValueError):
    """A session file (or the tool's folder, or a lock file) exists but is
    not one this module wrote: not JSON, not a regular file, a symbolic
    link, over :data:`MAX_BYTES`. ``path`` is the file; the message says
    why and how to fix it."""

    def __init__(self, path: str, tool: str, session: str | None,
                 reason: str, what: str = "file",
                 fix: str | None = None) -> None:
        self.path = path
        if fix is None:
            fix = (f"Delete it, or run `acor sessions --clear {session} "
                   f"--tool {tool}`, then run the tool again.")
        super().__init__(f"Session {what} {path} is not a valid ACOR "
                         f"session {what} ({reason}). {fix}")


def _validate(value: object, what: str) -> str:
    """``value`` if it is a safe file name stem, else ValueError naming the
    rule it breaks and a valid example. Checked before any path is built."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a string, not {type(value).__name__}")
    problem = None
    if not value:
        problem = "it is empty"
    elif len(value) > 128:
        problem = f"it is {len(value)} characters long (at most 128)"
    elif bad := _BAD.search(value):  # '/', '\\', NUL, spaces, non-ASCII
        problem = f"it contains {bad.group()!r}"
    elif not _ID.fullmatch(value):  # '.', '-' or '_' first
        problem = f"it starts with {value[0]!r}"
    elif ".." in value:
        problem = "it contains '..'"
    elif value.endswith("."):
        problem = "it ends with '.'"  # Windows drops it: "a." is "a"
    elif _RESERVED.fullmatch(value):
        problem = "it is a reserved device name on Windows"
    if problem:
        raise ValueError(
            f"{what} {value!r} is not allowed: {problem}. Use 1-128 ASCII "
            f"letters, digits, '.', '_' or '-', starting with a letter or "
            f"digit, without '..'; for example {_EXAMPLES[what]!r}.")
    return value


def validate_session_id(value: object) -> str:
    """The session id, or ValueError (TypeError if not a string)."""
    return _validate(value, "session id")


def validate_checkpoint_id(value: object) -> str:
    """The checkpoint id, or ValueError (TypeError if not a string)."""
    return _validate(value, "checkpoint id")


def validate_tool_name(value: object) -> str:
    """The tool name, or ValueError (TypeError if not a string)."""
    return _validate(value, "tool name")


def state_dir_from_env() -> str:
    """``$ACOR_STATE_DIR`` (the launcher sets it from the config's
    ``state_dir``), else ``.acor/state`` under the current directory."""
    return os.path.abspath(os.environ.get("ACOR_STATE_DIR")
                           or os.path.join(".acor", "state"))


def _check_json(value: object, where: str = "state",
                active: set[int] | None = None) -> None:
    """TypeError naming the type and where it is, unless ``value`` survives a
    JSON round trip as itself (tuples come back as lists)."""
    active = set() if active is None else active
    if value is None or isinstance(value, (str, bool, int)):
        return
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"{where} is {value}, which JSON cannot hold")
        return
    if not isinstance(value, (dict, list, tuple)):
        raise TypeError(f"{where} is a {type(value).__name__}; checkpoint "
                        f"state must be JSON: dict with str keys, list, str, "
                        f"int, float, bool or None")
    if id(value) in active:
        raise ValueError(f"{where} contains itself (a circular reference)")
    active.add(id(value))
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                # json would turn 1 into "1": the state would not come back.
                raise TypeError(f"{where} has the key {key!r} of type "
                                f"{type(key).__name__}; JSON keys must be str")
            _check_json(item, f"{where}[{key!r}]", active)
    else:
        for i, item in enumerate(value):
            _check_json(item, f"{where}[{i}]", active)
    active.discard(id(value))


class SessionStore:
    """The sessions of one tool under ``state_dir``. Reads need no lock
    (files are replaced atomically); ``save`` and ``clear`` take one."""

    def __init__(self, state_dir: str | os.PathLike[str], tool: str,
                 keep: int = KEEP, lock_timeout: float = 30.0) -> None:
        self.tool = validate_tool_name(tool)
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
            raise ValueError(f"keep must be a positive int, not {keep!r}")
        self.keep = keep
        self.lock_timeout = lock_timeout
        self.folder = os.path.join(os.fspath(state_dir), self.tool)

    def path(self, session_id: str) -> str:
        return os.path.join(self.folder,
                            validate_session_id(session_id) + ".json")

    def _open_folder(self, create: bool) -> Folder | None:
        """The tool folder (:class:`acor._safefs.Folder`), None if there is
        none. A folder that is a symbolic link (a repository can commit
        one pointing anywhere) is a CorruptSessionError."""
        try:
            return Folder.open(self.folder, 0o777 if create else None)
        except Unsafe as exc:
            raise CorruptSessionError(
                self.folder, self.tool, None, exc.reason, what="folder",
                fix="Remove it (acor did not make it), then run the tool "
                "again.") from None

    def _read(self, session_id: str,
              folder: Folder | None = None) -> Data | None:
        """The parsed file, None if absent, else CorruptSessionError. Only a
        regular file is read (never a link, FIFO or device), and at most
        :data:`MAX_BYTES` of it."""
        path = self.path(session_id)
        if folder is None:
            folder = self._open_folder(create=False)
            if folder is None:
                return None
            with folder:
                return self._read(session_id, folder)
        try:
            raw = folder.read(session_id + ".json", MAX_BYTES)
        except Unsafe as exc:
            raise CorruptSessionError(path, self.tool, session_id,
                                      exc.reason) from None
        if raw is None:
            return None
        try:
            data: Data = json.loads(raw)
        except (ValueError, RecursionError) as exc:  # bad UTF-8, JSON, depth
            raise CorruptSessionError(path, self.tool, session_id,
                                      f"not JSON: {exc}") from None
        reason = _format_problem(data)
        if reason:
            raise CorruptSessionError(path, self.tool, session_id, reason)
        for entry in self._journal(session_id, folder)[2]:
            if entry["seq"] > data["seq"]:
                data["checkpoints"].pop(entry["id"], None)
                data["checkpoints"][entry["id"]] = {
                    "seq": entry["seq"], "time": entry["time"],
                    "state": entry["state"]}
                data["seq"] = entry["seq"]
        extra = len(data["checkpoints"]) - self.keep
        if extra > 0:  # as a save folding the journal in would keep them
            for cid, _ in sorted(data["checkpoints"].items(),
                                 key=lambda item: item[1]["seq"])[:extra]:
                del data["checkpoints"][cid]
        return data

    def _journal(self, session_id: str, folder: Folder
                 ) -> tuple[int | None, int | None, list[Data]]:
        """(its size in bytes or None when there is none, the file's seq
        when it was started, its well-formed entries). A line that is not
        one (torn by a crash) is skipped."""
        name = f".{session_id}.journal"
        try:
            raw = folder.read(name, MAX_BYTES)
        except Unsafe as exc:
            raise CorruptSessionError(
                os.path.join(self.folder, name), self.tool, session_id,
                exc.reason, what="journal",
                fix="Delete it, then run the tool again.") from None
        if raw is None:
            return None, None, []
        lines = raw.split(b"\n")
        try:
            header = json.loads(lines[0])
            base = header["seq"] if header.get("format") == JOURNAL and \
                isinstance(header.get("seq"), int) else None
        except (ValueError, RecursionError, AttributeError, TypeError):
            base = None
        entries = []
        for line in lines[1:]:
            try:
                entry = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if isinstance(entry, dict) and isinstance(entry.get("id"), str) \
                    and isinstance(entry.get("seq"), int) and \
                    isinstance(entry.get("time"), str) and "state" in entry:
                entries.append(entry)
        return len(raw), base, entries

    def latest(self, session_id: str) -> SavedCheckpoint | None:
        """The newest :class:`SavedCheckpoint`, or None if there is none."""
        return _newest(self._read(session_id))

    def save(self, session_id: str, checkpoint_id: str,
             state: object) -> None:
        """Add ``state`` as the newest checkpoint of the session. Ids and
        state are checked before anything is created on disk."""
        validate_session_id(session_id)
        validate_checkpoint_id(checkpoint_id)
        _check_json(state)
        folder = self._open_folder(create=True)
        if folder is None:  # removed between making it and opening it
            raise FileNotFoundError(errno.ENOENT, "removed", self.folder)
        with folder, self._lock(folder, session_id):
            if self._append(folder, session_id, checkpoint_id, state):
                return
            data = self._read(session_id, folder) or \
                {"checkpoints": {}, "seq": 0}
            seq = max([data["seq"]] + [e["seq"] for e in
                                       data["checkpoints"].values()]) + 1
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            entries = sorted(data["checkpoints"].items(),
                             key=lambda item: item[1]["seq"])
            entries = [e for e in entries if e[0] != checkpoint_id]
            entries.append((checkpoint_id, {"seq": seq, "time": stamp,
                                            "state": state}))
            header = {"format": FORMAT, "tool": self.tool,
                      "session": session_id, "seq": seq}
            blob = _fit(header, entries[-self.keep:], session_id)
            self._remove_temps(folder, session_id)
            folder.write(session_id + ".json", blob, durable=True,
                         temp=f".{session_id}.{os.urandom(6).hex()}.tmp")
            # A fresh journal: a crash before this line leaves the old
            # one, whose entries are all at or below the file's seq.
            folder.write(f".{session_id}.journal", _encode(
                {"format": JOURNAL, "seq": seq}) + b"\n", durable=True,
                temp=f".{session_id}.{os.urandom(6).hex()}.tmp")

    def _append(self, folder: Folder, session_id: str, checkpoint_id: str,
                state: object) -> bool:
        """Save by one line appended to the journal; False when the
        journal is missing or due to be folded into the file."""
        if self.keep <= ROTATE:  # a small file: rewriting it costs little
            return False
        size, base, entries = self._journal(session_id, folder)
        if size is None or base is None or len(entries) + 1 >= ROTATE:
            return False
        self._remove_temps(folder, session_id)  # a dead writer's
        last = max([base] + [entry["seq"] for entry in entries])
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        line = _encode({"id": checkpoint_id, "seq": last + 1,
                        "time": stamp, "state": state}) + b"\n"
        # A read takes the journal whole too: it stays a small part of
        # what a session file may hold.
        if size + len(line) > min(JOURNAL_BYTES, MAX_BYTES // 4):
            return False
        folder.append(f".{session_id}.journal", line, durable=True)
        return True

    def clear(self, session_id: str) -> bool:
        """Delete the session (even a corrupt one: a link, a FIFO). True if
        it existed."""
        path = self.path(session_id)
        try:
            folder = self._open_folder(create=False)
        except NotADirectoryError:  # the state dir is a file: nothing here
            return False
        if folder is None:
            return False
        # The lock file stays: deleting it while another process waits on it
        # would let that process and a newcomer hold "the" lock at once.
        with folder, self._lock(folder, session_id):
            self._remove_temps(folder, session_id)
            try:
                folder.remove(f".{session_id}.journal")
            except OSError:
                pass
            try:
                folder.remove(session_id + ".json")
            except FileNotFoundError:
                return False
            except (IsADirectoryError, PermissionError):  # EISDIR / EPERM
                raise CorruptSessionError(
                    path, self.tool, session_id, "it is a directory",
                    fix="Remove it yourself if nothing needs it.") from None
            folder.sync()
            return True

    def list_sessions(self) -> list[SessionSummary]:
        """:class:`SessionSummary` of each session of this tool."""
        return list_sessions(os.path.dirname(self.folder), self.tool)

    def _lock(self, folder: Folder, session_id: str) -> Lock:
        """Hold ``.<session>.lock`` while the session is read, changed and
        replaced, across processes."""
        name = f".{session_id}.lock"
        try:
            return folder.lock(name, self.lock_timeout)
        except Unsafe as exc:
            raise CorruptSessionError(
                os.path.join(self.folder, name), self.tool, session_id,
                exc.reason, what="lock file",
                fix="Delete it, then run the tool again.") from None
        except TimeoutError:
            raise TimeoutError(
                f"session {session_id!r} of {self.tool} stayed locked for "
                f"{self.lock_timeout:g} s ({os.path.join(self.folder, name)})"
                "; another process is saving to it. Wait for it, or stop "
                "it.") from None

    def _remove_temps(self, folder: Folder, session_id: str) -> None:
        # Under the lock any temp file of this session is a dead writer's.
        for name in folder.listdir():
            if name.startswith(".") and name.endswith(".tmp") and \
                    name[1:-4].rpartition(".")[0] == session_id:
                try:
                    folder.remove(name)
                except OSError:
                    pass


def _encode(data: object) -> bytes:
    try:
        return json.dumps(data, ensure_ascii=False, allow_nan=False,
                          separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: escaped, it round-trips
        return json.dumps(data, allow_nan=False,
                          separators=(",", ":")).encode("ascii")


def _fit(header: Data, entries: list[tuple[str, Data]],
         session_id: str) -> bytes:
    """The session file holding the newest ``entries`` that fit in
    :data:`MAX_BYTES` (the older ones are dropped, as ``keep`` drops them);
    ValueError if the newest alone does not fit."""
    blob = _encode({**header, "checkpoints": dict(entries)})
    if len(blob) <= MAX_BYTES:
        return blob
    # Each entry adds its own encoding as a one-key object, minus the
    # braces, plus a comma: exactly its size minus one.
    sizes = [len(_encode({cid: entry})) - 1 for cid, entry in entries]
    first, total = 0, len(blob)
    while first < len(entries) - 1 and total > MAX_BYTES:
        total -= sizes[first]
        first += 1
    blob = _encode({**header, "checkpoints": dict(entries[first:])})
    if len(blob) > MAX_BYTES:
        raise ValueError(
            f"checkpoint {entries[-1][0]!r} of session {session_id!r} is "
            f"{sizes[-1]} bytes as JSON, over the {size(MAX_BYTES)} a "
            "session file may hold. Save large data in a file of its own "
            "and put its path in the checkpoint.")
    return blob


def _newest(data: Data | None) -> SavedCheckpoint | None:
    if not data or not data["checkpoints"]:
        return None
    cid, entry = max(data["checkpoints"].items(),
                     key=lambda item: item[1]["seq"])
    return SavedCheckpoint(cid, entry["state"], entry["time"], entry["seq"])


def _format_problem(data: object) -> str | None:
    """Why ``data`` is not a session file, or None if it is one."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return f"no \"format\": \"{FORMAT}\" object"
    if not isinstance(data.get("seq"), int) or \
            not isinstance(data.get("checkpoints"), dict):
        return "\"seq\" must be an int and \"checkpoints\" an object"
    for cid, entry in data["checkpoints"].items():
        if not (isinstance(entry, dict) and "state" in entry and
                isinstance(entry.get("seq"), int) and
                isinstance(entry.get("time"), str)):
            return f"checkpoint {cid!r} lacks an int seq, a time or a state"
    return None


def list_sessions(state_dir: str, tool: str | None = None
                  ) -> list[SessionSummary]:
    """:class:`SessionSummary` of every session under ``state_dir`` (of one
    tool if given), sorted by tool then session. A corrupt file, or a tool
    folder that is a symbolic link, is listed with ``error`` set (and
    ``session`` None for a folder) instead of raising, so one bad file
    hides nothing; none of them is followed, read past the bound, or
    blocked on."""
    tools = [validate_tool_name(tool)] if tool else sorted(
        os.listdir(state_dir) if os.path.isdir(state_dir) else [])
    found = []
    for name in tools:
        if not _ID.fullmatch(name):
            continue  # not a folder this module made
        store = SessionStore(state_dir, name)
        try:
            folder = store._open_folder(create=False)
        except CorruptSessionError as exc:
            found.append(SessionSummary(name, None, None, None, 0, exc.path,
                                        str(exc)))
            continue
        except OSError as exc:  # no permission: say so, list the others
            found.append(SessionSummary(
                name, None, None, None, 0, store.folder,
                f"Session folder {store.folder} cannot be read: "
                f"{exc.strerror}"))
            continue
        if folder is None:
            continue
        with folder:
            for file in sorted(folder.listdir()):
                session = file[:-5]
                if not file.endswith(".json") or not _ID.fullmatch(session):
                    continue  # temp and lock files start with "."
                try:
                    data = store._read(session, folder)
                except CorruptSessionError as exc:
                    found.append(SessionSummary(name, session, None, None, 0,
                                                exc.path, str(exc)))
                    continue
                except ValueError:
                    continue  # e.g. "a..b.json": not a name this module writes
                last = _newest(data)
                if data is not None:  # else cleared since listdir
                    found.append(SessionSummary(
                        name, session, last and last.id, last and last.time,
                        len(data["checkpoints"]), store.path(session), None))
    return found
