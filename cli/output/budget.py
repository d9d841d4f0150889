"""The output budget: what one run may put in front of the agent.

An agent pays for every byte acor relays. :class:`Budget` stands between
the progress coalescer and a format (Markdown, JSON lines, an MCP result)
and keeps a run within ``limit`` bytes of that format's own encoding,
without losing anything:

- **Everything is kept.** Every event is also rendered as ACOR Markdown
  into a :class:`Spill`: in memory while the run fits, then, from the first
  cut on, in a file under the state dir (``.output/``, one per run, private
  to the user), from byte 0. Once the run ends, a run that was cut names
  that file in an ``## Output Files`` entry marked ``truncated``, with its
  absolute path, size and full sha256; a run that fitted leaves no file.
- **Sections are kept, text is bounded.** The budget, less what the
  format writes after it (``cost.reserve``: JSON's result line, an MCP
  result's ``_meta``), has three parts: the ending (a quarter, at least
  :data:`END_FLOOR` bytes), then the head (two thirds of the rest) and the
  tail of text (a third). Raw text, Output sections and the tool's stderr
  (where the format shows it: ``cost.stderr_cost``) fill the head in
  order; once it is full, the rest of the text goes into a rolling tail
  and only its end is shown, after a line saying how much was left out
  and where the whole output is; the stderr that did not fit is kept in a
  ``.stderr`` file beside the output's. A section too large for its share
  (an Error with megabytes of details, a long AI Directive) is cut head
  and tail, with the same line in the middle; a large Output Data value is
  written whole to a file of its own and summarised (size, sha256, type,
  top-level keys or length, the file).
- **The ending always reaches the agent.** Once the head is full, the
  latest of each repeated section (progress, checkpoints, statuses,
  errors, directives, suggestions) and the last Output Data are held; at
  the end, errors, directives, the last data and an Input Needed are
  placed first (:data:`MUST`), each whole or cut within its share or
  summarised naming its file, then the repeats, then the whole-output
  entry and the final status; the tail of the text gets what is left.
  Other sections are shown in place while the head and tail allow, then
  counted.

``cost(event)`` is the number of bytes the format writes for an event (0:
the format shows nothing of it, so it passes untouched: progress in MCP).
Memory is bounded whatever the tool writes: the spill holds at most
:data:`MEMORY_HOLD` bytes before it is a file, the tail a quarter of the
budget, the held events one of each kind.
"""

from __future__ import annotations

import errno
import os
import re
import shlex
import stat
import time

from acor._safefs import Unsafe
from acor.events import (AIDirective, Error, Event, InputNeeded, OutputData,
                         OutputFiles, Status, Text)
from acor.cli.sizes import DEFAULT_MAX_OUTPUT, parse_size
from acor.cli.textsafe import clean_event, strip_terminal


class Note(Text):
    """Text acor adds to a run (what the budget left out), not the tool's:
    written as text everywhere, and marked as acor's where a reader can
    tell (an MCP block's ``_meta``). No ``__slots__`` of its own: an
    event's fields are its class's ``__slots__``, and an empty tuple here
    would hide ``text`` (a JSON line of a note had no text)."""

# Loaded once the tool is starting up (Budget.started), not before the
# spawn: `acor TOOL` is the hot path (hashlib loads OpenSSL).
hashlib: Any = None
RawJSON: Any = None

TYPE_CHECKING = False  # typing costs every run ~3 ms: only mypy
if TYPE_CHECKING:
    from typing import Any, Callable, Optional

MEMORY_HOLD = 1 << 20      # spill bytes kept in memory before a file
OUTPUT_DIR = ".output"     # under the state dir; no tool can be named so
MAX_AGE = 7 * 24 * 3600    # spill files older than this are removed
DATA_SHARE = 4             # an Output Data over limit/DATA_SHARE is a file
END_FLOOR = 2560           # the least kept for the ending, at any budget
HELD = ("progress", "checkpoint", "status", "error", "ai_directive",
        "suggestions")
TEXTS = ("text", "output")
ENDINGS = ("input_needed",)
# What always reaches the agent, whole or cut, or summarised with its file.
MUST = ("error", "ai_directive", "output_data", "input_needed")
_NOTE = "[acor: {what} left out here; the whole output is in {path}]"


def output_dir(state_dir: str) -> str:
    return os.path.join(state_dir, OUTPUT_DIR)


# The names acor gives what it keeps of a run: STAMP-TOOL-PID-HEX.md, its
# large Output Data values (.dataN.json) and its stderr (.stderr). Nothing
# else in the output folder is ever pruned or cleared.
SPILL_NAME = re.compile(r"(?P<stamp>\d{8}-\d{6})-"
                        r"(?P<tool>[A-Za-z0-9][A-Za-z0-9._-]{0,127})"
                        r"-\d{1,10}-[0-9a-f]{8}"
                        r"\.(?:md|data\d{1,9}\.json|stderr)")


def _count(n: int) -> str:
    return f"{n:,}"


def open_output(directory: str, create: bool = True) -> Any:
    """The output folder (an :class:`acor._safefs.Folder`), or None when
    it is missing and not ``create``: no link followed from the project
    root down (from the parent of the state dir's ``.acor``, or of the
    state dir itself when it is elsewhere), owned by this user, private.
    Raises :class:`acor._safefs.Unsafe` (a link, a file, another owner)
    or OSError."""
    from acor._safefs import open_below, private
    parts = os.path.abspath(directory).split(os.sep)
    below = os.path.dirname(os.path.dirname(os.path.abspath(directory)))
    if ".acor" in parts[:-1]:
        at = len(parts) - 1 - parts[::-1].index(".acor")
        below = os.sep.join(parts[:at]) or os.sep
    folder = open_below(directory, below, 0o700 if create else None)
    if folder is None:
        return None
    try:
        return private(folder)
    except BaseException:
        folder.close()
        raise


def disk_full_text(where: str) -> str:
    """What to say when the disk holding ``where`` is full."""
    return (f"the disk is full: no space left on the filesystem holding "
            f"{where}; free space there (`acor sessions --clear-output` "
            f"removes the saved whole outputs of past runs; `df -h "
            f"{shlex.quote(where)}` shows what is left), then run the tool "
            f"again")


def _os_error(exc: OSError, where: str) -> str:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return disk_full_text(where)
    if exc.errno == errno.EFBIG:
        return (f"cannot write {where}: the file is over the size this "
                f"process may write (ulimit -f)")
    return f"cannot write {where}: {exc.strerror or exc}"


class Spill:
    """The whole output of a run as ACOR Markdown (or, ``suffix``
    ``.stderr``, the tool's stderr as it wrote it): bytes in memory until
    :meth:`keep` (or :data:`MEMORY_HOLD`), then a private file in the
    output folder. A file that cannot be written whole keeps what was
    written (``complete`` False, ``error`` saying why); one with nothing
    written is removed: no file is named that holds nothing."""

    def __init__(self, directory: str, tool: str, suffix: str = ".md",
                 stem: Optional[str] = None) -> None:
        self.directory = os.path.abspath(directory)
        self.tool = tool
        self.suffix = suffix
        self.stem = stem
        self.path: Optional[str] = None
        self.size = 0            # bytes of output, written or not
        self.written = 0         # bytes in the file
        self.kept = False
        self.finished = False
        self.error: Optional[str] = None
        self._buf: Optional[bytearray] = bytearray()
        self._fd: Optional[int] = None
        self._folder: Any = None
        self._hash: Any = None   # of the bytes in the file
        self._data_files = 0

    def write(self, data: bytes) -> None:
        self.size += len(data)
        if self._buf is not None:
            self._buf += data
            if len(self._buf) > MEMORY_HOLD:
                self._open()
            return
        if self._fd is not None:
            self._write(data)

    def keep(self) -> Optional[str]:
        """From now on the output is kept on disk; its path (None when the
        file cannot be written: ``error`` says why)."""
        self.kept = True
        if not self.finished and self._fd is None and self.error is None:
            self._open()
        return self.path

    def _folder_fd(self) -> Any:
        if self._folder is None:
            self._folder = open_output(self.directory)
            _prune(self._folder)
        return self._folder

    def _open(self) -> None:
        buffered, self._buf = self._buf, None
        try:
            self._fd, self.path = self._create(self.suffix)
        except OSError as exc:
            self.error = _os_error(exc, self.directory)
            return
        except Unsafe as exc:  # a link, another owner
            self.error = f"acor does not write there: {exc.reason}"
            return
        _load()
        self._hash = hashlib.sha256()
        self._write(bytes(buffered or b""))

    def _name(self, suffix: str) -> str:
        if self.stem is None:
            stamp = time.strftime("%Y%m%d-%H%M%S")
            self.stem = f"{stamp}-{self.tool}-{os.getpid()}-" \
                f"{os.urandom(4).hex()}"
        return self.stem + suffix

    def _create(self, suffix: str) -> tuple[int, str]:
        folder = self._folder_fd()
        name = self._name(suffix)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | \
            getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(name, flags, 0o600, dir_fd=folder.fd)
        return fd, os.path.join(self.directory, name)

    def _write(self, data: bytes) -> None:
        if self._fd is None:
            return
        try:
            view = memoryview(data)
            while view:
                done = os.write(self._fd, view)
                self._hash.update(view[:done])
                self.written += done
                view = view[done:]
        except OSError as exc:  # a full disk must not stop the run
            self.error = _os_error(exc, self.directory)
            self._close()
            if not self.written:
                self._remove()

    def _remove(self) -> None:
        if self.path is not None and self._folder is not None:
            try:
                os.unlink(os.path.basename(self.path),
                          dir_fd=self._folder.fd)
            except OSError:
                pass
        self.path = None

    def _close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    @property
    def complete(self) -> bool:
        return self.error is None and self.written == self.size

    def finish(self) -> Optional[tuple[str, int, str]]:
        """Close the file: (path, bytes in it, their sha256) when kept and
        anything was written, else None (and a file opened for a large
        run that was never cut is removed)."""
        self._close()
        self._buf = None
        self.finished = True
        if not self.kept:
            self._remove()
        outcome = None
        if self.kept and self.path is not None and self.written:
            outcome = (self.path, self.written, self._hash.hexdigest())
        elif self.path is not None:
            self._remove()
        if self._folder is not None:
            self._folder.close()
            self._folder = None
        return outcome

    def data_file(self, data: bytes | memoryview
                  ) -> tuple[Optional[str], str, Optional[str]]:
        """A value written whole to a file of its own: (path or None, its
        sha256, why it could not be written or None). A file that could
        not be written whole is removed."""
        _load()
        digest = hashlib.sha256(data).hexdigest()
        try:
            fd, path = self._create(f".data{self._data_files}.json")
        except OSError as exc:
            return None, digest, _os_error(exc, self.directory)
        except Unsafe as exc:
            return None, digest, f"acor does not write there: {exc.reason}"
        self._data_files += 1
        error = None
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        except OSError as exc:
            error = _os_error(exc, self.directory)
        finally:
            os.close(fd)
        if error is not None:
            try:
                os.unlink(os.path.basename(path), dir_fd=self._folder.fd)
            except OSError:
                pass
            return None, digest, error
        return path, digest, None


def _load() -> None:
    global hashlib, RawJSON
    if hashlib is None:
        import hashlib as _hashlib

        from acor.layout import RawJSON as _RawJSON
        hashlib, RawJSON = _hashlib, _RawJSON


def spill_tool(name: str) -> Optional[str]:
    """The tool whose run wrote the file ``name``, None when ``name`` is
    not one acor gives (``STAMP-TOOL-PID-HEX.md``, ``.dataN.json``,
    ``.stderr``)."""
    match = SPILL_NAME.fullmatch(name)
    return match.group("tool") if match else None


def _ours(folder: Any, name: str) -> bool:
    """``name`` is a regular file of this user's, named as acor names
    them: the only files the clean-up and ``--clear-output`` remove."""
    if spill_tool(name) is None:
        return False
    try:
        st = os.stat(name, dir_fd=folder.fd, follow_symlinks=False)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and (
        not hasattr(os, "getuid") or st.st_uid == os.getuid())


def _prune(folder: Any) -> None:
    """Remove this user's spill files older than :data:`MAX_AGE`."""
    cutoff = time.time() - MAX_AGE
    try:
        names = folder.listdir()
    except OSError:
        return
    for name in names:
        if not _ours(folder, name):
            continue
        try:
            if os.stat(name, dir_fd=folder.fd,
                       follow_symlinks=False).st_mtime < cutoff:
                os.unlink(name, dir_fd=folder.fd)
        except OSError:
            pass


def clear_outputs(state_dir: str, tool: Optional[str] = None) -> int:
    """Remove every spill file, or ``tool``'s only (``acor sessions
    --clear-output [--tool NAME]``); how many. Only files acor made, named
    as it names them, in a folder opened as :func:`open_output` does;
    raises :class:`acor._safefs.Unsafe` for a folder that is not one."""
    folder = open_output(output_dir(state_dir), create=False)
    if folder is None:
        return 0
    removed = 0
    with folder:
        for name in folder.listdir():
            if _ours(folder, name) and (tool is None or
                                        spill_tool(name) == tool):
                try:
                    os.unlink(name, dir_fd=folder.fd)
                    removed += 1
                except OSError:
                    pass
    return removed


class _Tail:
    """The last ``size`` characters of text and Output, as events."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.pieces: list[Any] = []
        self.chars = 0

    def add(self, event: Any) -> None:
        text = event.text
        if len(text) >= self.size:
            self.pieces = [type(event)(text[-self.size:])]
            self.chars = self.size
            return
        self.pieces.append(event)
        self.chars += len(text)
        while self.chars > self.size and self.pieces:
            first = self.pieces[0]
            excess = self.chars - self.size
            if len(first.text) <= excess:
                self.pieces.pop(0)
                self.chars -= len(first.text)
            else:
                self.pieces[0] = type(first)(first.text[excess:])
                self.chars -= excess

    def take(self) -> list[Any]:
        pieces, self.pieces, self.chars = self.pieces, [], 0
        return pieces


class Budget:
    """A sink that keeps a run within ``limit`` bytes (see the module)."""

    def __init__(self, sink: Any, limit: int, directory: str, tool: str,
                 cost: Callable[[Event], int]) -> None:
        self.sink = sink
        self.limit = limit
        self.cost = cost
        # What the format writes after the budget's last event (the JSON
        # result line, an MCP result's _meta): kept out of every share.
        self.reserve = getattr(cost, "reserve", 0)
        self.stderr_cost: Callable[[bytes], int] = getattr(
            cost, "stderr_cost", len)
        self.spill = Spill(directory, tool)
        # The stderr's file is named as the output's, .stderr for .md.
        self.err_spill = Spill(directory, tool, ".stderr")
        self.err_spill._name = self.spill._name  # type: ignore[method-assign]
        self.spent = 0
        usable = limit - self.reserve
        self.end_share = min(usable * 3 // 4,
                             max(usable // 4, END_FLOOR))
        self.tail_share = (usable - self.end_share) // 3
        self.head_share = usable - self.end_share - self.tail_share
        self.over = False        # the head is full: text goes to the tail
        self.truncated = False   # something was cut or left out
        self.tail = _Tail(self.tail_share)
        self.tail_left = self.tail_share  # what tails may still show
        self.gap_bytes = 0       # text left out since the last shown text
        self.left_out_bytes = 0  # over the whole run
        self.left_out: dict[str, int] = {}  # sections not shown, by type
        self.held: dict[str, Event] = {}
        self.last_data: Optional[Event] = None  # held for the ending
        self.stderr_left_out = 0
        self.ended = False
        self.outcome: Optional[tuple[str, int, str]] = None
        # Output Data over this is summarised, so it is not even decoded.
        self.max_data = usable // DATA_SHARE

    # --- the sink protocol ---------------------------------------------

    def emit(self, event: Any) -> None:
        from acor.grammar import render
        _load()
        kind = event.type
        if kind == "output_data" and isinstance(event.data, RawJSON):
            self._raw_data(event)
            return
        markdown = render(event).encode("utf-8", "replace")
        self.spill.write(markdown)  # the whole output keeps the raw bytes
        safe = clean_event(event)  # what the agent gets is measured
        if safe is not event:
            event = safe
            markdown = render(event).encode("utf-8", "replace")
        if self.over and kind in TEXTS and not self.ended:
            # The flood's path: no cost to measure, it goes to the tail.
            self._to_tail(event, len(markdown))
            return
        # Rendered once: an Output Data of megabytes costs seconds a render.
        cost = len(markdown) + 1 if self.cost is markdown_cost else \
            self.cost(event)
        if cost == 0:
            self.sink.emit(event)
            return
        if self.ended:
            # After the ending only its final status is shown (reserved
            # with it); the rest is in the file.
            if kind == "status" and event.is_final and \
                    self.spent + cost <= self.limit - self.reserve:
                self._show(event, cost)
            else:
                self._left(kind)
            return
        if kind in ENDINGS or kind == "status" and event.is_final:
            self._end(event)
            return
        if kind == "output_data" and cost > self.max_data:
            start = markdown.find(b"\n", markdown.find(b"\n") + 1) + 1
            end = markdown.rfind(b"\n", 0,
                                 markdown.rstrip(b"\n").rfind(b"\n")) + 1
            view = memoryview(markdown)
            event = self._data(event, view[start:end] if 0 < start <= end
                               else view)
            del view
            cost = self.cost(event)
        del markdown
        self._place(event, cost)

    def _raw_data(self, event: Any) -> None:
        """A large JSON value the decoder left as text: written to the
        spill as its section, in pieces (no copy of the whole section),
        then summarised."""
        from acor.escaping import escape_inline, fence_for, fold_newlines
        text = fold_newlines(event.data)
        fence = fence_for(text)
        info = escape_inline(event.format).replace("`", "")
        body = text.encode("utf-8", "replace")
        del text
        self.spill.write(f"## Output Data\n{fence}{info}\n".encode())
        self.spill.write(body)
        self.spill.write(f"\n{fence}\n\n".encode())
        if self.ended:
            self._left("output_data")
            return
        summary = self._data(event, memoryview(body))
        del body
        self._place(summary, self.cost(summary))

    def _place(self, event: Any, cost: int) -> None:
        kind = event.type
        if not self.over:
            room = self.head_share - self.spent
            if cost <= room:
                self._show(event, cost)
                return
            if kind in TEXTS:
                self._overflow(event, room)
                return
            if kind == "output_data":
                self._hold_data(event)
                return
            if room >= self.limit // 16:
                cut = self._cut(event, room)
                if cut is not None:
                    self._show(cut, self.cost(cut))
                    return
            # Held for the end (an error, a directive) or placed as the
            # rest are once the head is full.
            self.over = True
            self._keep()
        self._over(event)

    def _hold_data(self, event: Any) -> None:
        """The latest Output Data that does not fit where it came: shown
        at the end (the last one is what a client takes as the result);
        an earlier one held is left out (it is in the file)."""
        if self.last_data is not None:
            self._left("output_data")
        self.last_data = event
        self._keep()

    def _left(self, kind: str) -> None:
        self.left_out[kind] = self.left_out.get(kind, 0) + 1
        self._keep()

    def _over(self, event: Any) -> None:
        kind = event.type
        if kind in TEXTS:
            self._to_tail(event)
        elif kind == "output_data":
            self._hold_data(event)
        elif kind in HELD:
            self.left_out[kind] = self.left_out.get(kind, 0) + \
                (kind in self.held)
            self.held.pop(kind, None)
            self.held[kind] = event  # re-inserted: arrival order
        else:
            # Shown in place while the budget allows, after the text
            # before it (its note, and as much of its tail as is left).
            room = self.head_share + self.tail_share - self.spent
            cost = self.cost(event)
            need = min(cost, self.limit // 16) + self._gap_note_cost()
            if room - need >= 0:
                self._flush_gap(True, min(self.tail_left, room - need))
                room = self.head_share + self.tail_share - self.spent
                self._show_cut(event, min(room, max(self.limit // 16,
                                                    room - self.tail_left)))
            else:
                self._left(kind)

    def due(self) -> Optional[float]:
        return self.sink.due() if hasattr(self.sink, "due") else None

    def heartbeat(self) -> None:
        beat = getattr(self.sink, "heartbeat", None)
        if beat is not None:
            beat()

    def tick(self) -> None:
        if hasattr(self.sink, "tick"):
            self.sink.tick()

    def started(self) -> None:
        _load()
        if hasattr(self.sink, "started"):
            self.sink.started()

    def stderr(self, data: bytes) -> None:
        """The tool's stderr: what a format puts in front of the agent
        (JSON's stderr events, Markdown's stderr) shares the head with
        the text; the rest is left out, and the whole stderr kept in a
        file of its own."""
        cost = self.stderr_cost(data)
        if cost == 0:  # not in front of the agent (MCP: the server's log)
            self.sink.stderr(data)
            return
        self.err_spill.write(data)
        room = self.head_share - self.spent
        if self.over or self.stderr_left_out:
            room = 0
        elif self.ended:
            # A traceback printed as the tool exits comes after its final
            # status: shown while the whole budget has room for it.
            room = self.limit - self.reserve - self.spent
        if cost > room:
            shown = data[:max(0, room)]
            for _ in range(30):  # the longest head of whole lines in room
                cut = shown.rfind(b"\n")
                shown = shown[:cut + 1] if cut >= 0 else b""
                over = self.stderr_cost(shown) - room if shown else 0
                if over <= 0:
                    break
                shown = shown[:max(0, len(shown) - over - 1)]
            self.stderr_left_out += len(data) - len(shown)
            self.truncated = True
            self.err_spill.keep()
            data = shown
            if not data:
                return
            cost = self.stderr_cost(data)
        self.spent += cost
        self.sink.stderr(data)

    def late(self, tool: str, event: Event) -> None:
        if hasattr(self.sink, "late"):
            self.sink.late(tool, event)

    def result(self, result: Any) -> None:
        if not self.ended:
            self._end(None)
        info = self.outcome
        result.truncated = self.truncated
        result.output_bytes = info[1] if info else None
        result.output_sha256 = info[2] if info else None
        result.output_file = info[0] if info else None
        if hasattr(self.sink, "result"):
            self.sink.result(result)

    def close(self) -> None:
        if not self.ended:
            self._end(None)
        if hasattr(self.sink, "close"):
            self.sink.close()

    def close_failed(self, error: Any) -> None:
        self.sink.close_failed(error)

    # --- showing --------------------------------------------------------

    def _show(self, event: Any, cost: int) -> None:
        self.spent += cost
        self.sink.emit(event)

    def _show_cut(self, event: Any, room: int) -> None:
        cut = self._cut(event, room)
        if cut is None:
            self._left(event.type)
            return
        self._show(cut, self.cost(cut))

    def _keep(self) -> str:
        """The run is cut: its whole output goes to a file; the file's
        path for the notes."""
        self.truncated = True
        path = self.spill.keep()
        return path or "(not saved: " + (self.spill.error or "") + ")"

    def _note(self, what: str) -> str:
        self._keep()
        if self.spill.path is None:  # never a file that holds nothing
            return f"[acor: {what} left out here; the whole output could " \
                f"not be saved: {self.spill.error}]"
        return _NOTE.format(what=what, path=self.spill.path)

    def _gap_note_cost(self) -> int:
        """What the note for left-out text costs (at most)."""
        return self.cost(Note(self._note(f"{_count(10 ** 15)} bytes of "
                                         "output")))

    def _overflow(self, event: Any, room: int) -> None:
        """A text that does not fit the head: its head is shown, the rest
        goes to the tail, and from now on all text does."""
        self.over = True
        self._keep()
        text = event.text
        head = _fit(text, room, lambda s: self.cost(type(event)(s)))
        cut = head.rfind("\n")
        if cut > len(head) // 2:
            head = head[:cut + 1]
        if head.strip():
            self._show(type(event)(head.rstrip("\n")), self.cost(
                type(event)(head.rstrip("\n"))))
        else:
            head = ""
        rest = text[len(head):]
        if rest:
            self._to_tail(type(event)(rest))

    def _to_tail(self, event: Any, size: Optional[int] = None) -> None:
        if size is None:
            size = len(event.text.encode("utf-8", "replace")) + 1
        self.gap_bytes += size
        self.left_out_bytes += size
        self.tail.add(event)

    def _flush_gap(self, with_tail: bool, room: Optional[int] = None) -> None:
        """The note for the text left out since the last shown text, and
        (``with_tail``) the last of that text, within ``room`` bytes (the
        note's cost is not in ``room``)."""
        pieces = self.tail.take()
        if not self.gap_bytes:
            return
        shown: list[Any] = []  # Text and Output pieces
        if with_tail and pieces:
            room = self.tail_share if room is None else room
            for piece in reversed(pieces):
                cost = self.cost(piece)
                if cost <= room:
                    shown.append(piece)
                    room -= cost
                    continue
                kind = type(piece)

                def cost_as(s: str, kind: Any = kind) -> int:
                    return self.cost(kind(s))
                end = _fit_end(piece.text, room, cost_as)
                cut = end.find("\n")
                if 0 <= cut < len(end) // 2:
                    end = end[cut + 1:]
                if end.strip():
                    shown.append(type(piece)(end))
                break
        shown_bytes = sum(len(p.text.encode("utf-8", "replace")) + 1
                          for p in shown)
        left = max(0, self.gap_bytes - shown_bytes)
        self.gap_bytes = 0
        note = Note(self._note(f"{_count(left)} bytes of output"))
        self.spent += self.cost(note)
        self.sink.emit(note)
        for piece in reversed(shown):
            cost = self.cost(piece)
            self.tail_left = max(0, self.tail_left - cost)
            self._show(piece, cost)

    # --- output data ----------------------------------------------------

    def _data(self, event: Any, encoded: memoryview,
              share: Optional[int] = None) -> Event:
        """Output Data over its share: the value whole in a file of its
        own (``encoded``, the fenced block's content as the stream has
        it), and a summary in its place."""
        share = self.max_data if share is None else share
        data = event.data
        path, digest, error = self.spill.data_file(encoded)
        self._keep()
        summary: dict[str, Any] = {
            "acor_truncated": True, "format": event.format,
            "bytes": encoded.nbytes, "sha256": digest, "file": path,
            "note": "The whole value is in the file; the stream shows "
                    "only this summary." if path else
                    f"The whole value could not be saved ({error}); the "
                    f"stream shows only this summary."}
        _load()
        if isinstance(data, RawJSON):
            summary.update(_outline(data))
        elif isinstance(data, dict):
            keys = list(data)
            summary["type"] = "object"
            summary["key_count"] = len(keys)
            summary["keys"] = [str(k)[:64] for k in keys[:50]]
        elif isinstance(data, list):
            summary["type"] = "array"
            summary["length"] = len(data)
        else:
            summary["type"] = "string" if isinstance(data, str) else \
                type(data).__name__
            summary["head"] = bytes(encoded[:200]).decode("utf-8",
                                                           "replace")
        cut = OutputData("json", summary)
        shown = self._cut(cut, share)
        if shown is None:  # the bare summary: what, where, its digest
            shown = OutputData("json", {
                k: summary[k] for k in ("acor_truncated", "bytes", "sha256",
                                        "file", "type") if k in summary})
        return shown

    def _fit_data(self, event: Any, share: int) -> Event:
        """The last Output Data within ``share``: whole, or summarised
        with its file."""
        if self.cost(event) <= share or (
                isinstance(event.data, dict) and
                event.data.get("acor_truncated") is True):
            return event
        from acor.grammar import render
        markdown = render(event).encode("utf-8", "replace")
        start = markdown.find(b"\n", markdown.find(b"\n") + 1) + 1
        end = markdown.rfind(b"\n", 0,
                             markdown.rstrip(b"\n").rfind(b"\n")) + 1
        view = memoryview(markdown)
        return self._data(event, view[start:end] if 0 < start <= end
                          else view, share)

    # --- cutting ------------------------------------------------------------

    def _cut(self, event: Any, room: int) -> Optional[Event]:
        """``event`` cut to cost at most ``room`` (its largest text field
        head and tail, a note in the middle; long lists shortened; an
        Input Needed's fields bounded as a schema), or None when it
        cannot be."""
        copy = object.__new__(type(event))
        for name in event.__slots__:
            setattr(copy, name, getattr(event, name))
        stuck: set[str] = set()  # fields no cut can make smaller
        for _ in range(40):
            cost = self.cost(copy)
            if cost <= room:
                return copy
            name, size = _largest(copy, stuck)
            if name is None or size <= 8:
                return None
            value = getattr(copy, name)
            target = max(0, int(size * min(0.5, room / cost)))
            if isinstance(value, str):
                setattr(copy, name, self._middle(value, target))
            elif name == "fields" and isinstance(value, dict):
                bounded = self._bound_fields(value, target)
                if bounded is None or bounded == value:
                    stuck.add(name)  # the message may still give way
                    continue
                copy.fields = bounded
            elif isinstance(value, list):
                keep = max(0, min(len(value) - 1, target if
                                  not value or isinstance(value[0], dict)
                                  else len(value) // 2))
                if value and isinstance(value[0], str):
                    short = [self._middle(v, max(16, target // max(1, len(
                        value)))) if len(v) > target // max(1, len(value))
                        else v for v in value]
                    if short != value:
                        setattr(copy, name, short)
                        continue
                    note = self._note(f"{len(value) - keep} more items")
                    setattr(copy, name, value[:keep] + [note])
                else:
                    setattr(copy, name, value[:keep])
            else:
                setattr(copy, name, None)
        return None

    def _bound_fields(self, fields: dict, target: int) -> Optional[dict]:
        """An Input Needed's fields with their text (title, description,
        a string default) cut to fit about ``target`` characters: still
        the same JSON Schema properties (types, enums, bounds kept whole,
        since an answer must match them). None when even that is too
        large (too many fields, a long enum)."""
        texts = [(name, key) for name, prop in fields.items()
                 if isinstance(prop, dict)
                 for key in ("title", "description", "default")
                 if isinstance(prop.get(key), str)]
        fixed = len(json_dumps({n: {k: v for k, v in p.items()
                                    if (n, k) not in texts}
                                if isinstance(p, dict) else p
                                for n, p in fields.items()}))
        each = (target - fixed) // max(1, len(texts))
        if each < 0:
            return None
        if each < 24:
            each = 0  # no room for words: the texts go, the schema stays
        bounded = {}
        for name, prop in fields.items():
            if not isinstance(prop, dict):
                bounded[name] = prop
                continue
            prop = dict(prop)
            for key in ("title", "description"):
                value = prop.get(key)
                if isinstance(value, str) and len(value) > each:
                    half = (each - 5) // 2
                    if half > 0:
                        prop[key] = value[:half] + " [...] " + value[-half:]
                    else:
                        del prop[key]
            if isinstance(prop.get("default"), str) and \
                    len(prop["default"]) > each:
                del prop["default"]  # a cut default is not the default
            bounded[name] = prop
        return bounded

    def _middle(self, text: str, target: int) -> str:
        """``text`` cut to about ``target`` characters: its head and its
        tail, with a note in the middle saying how much is left out."""
        half = max(0, (target - 200) // 2)
        left = text[half:len(text) - half] if half else text
        note = self._note(f"{_count(len(left.encode('utf-8', 'replace')))}"
                          " bytes")
        if half == 0:
            return note
        return text[:half] + "\n" + note + "\n" + text[len(text) - half:]

    def _summary(self, event: Any, share: int) -> Optional[Event]:
        """An ending section too large for any cut, in a few words and
        its file (None for a kind that may be left out: progress, an
        intermediate status, a checkpoint, suggestions)."""
        self._keep()
        where = f"is in {self.spill.path}" if self.spill.path else \
            f"could not be saved: {self.spill.error}"
        # The least form does not repeat the path (the files entry that
        # ends the run names it): its size then does not grow with it.
        named = "is in the whole-output file named below" \
            if self.spill.path else f"could not be saved: {self.spill.error}"
        summary: Optional[Event] = None
        if isinstance(event, InputNeeded):
            head = event.message[:max(0, share // 4)]
            summary = InputNeeded(
                f"{head}\n[acor: this request was too large to show "
                f"({_count(self.cost(event))} bytes); the whole of it, "
                f"its fields included, {where}]", None,
                event.audience, event.next)
            # At the least, that there is a request and where it is.
            least: Event = InputNeeded(
                f"[acor: a request too large to show; it {named}]", None,
                event.audience, None)
        elif isinstance(event, Error):
            summary = Error(
                event.title[:max(0, share // 4)], event.code[:64],
                f"[acor: this error was too large to show; the whole of "
                f"it {where}]")
            least = Error("[acor: an error too large to show]",
                          event.code[:64], f"[acor: the whole error {named}]")
        elif isinstance(event, AIDirective):
            summary = AIDirective([
                f"[acor: a directive was too large to show; the whole of "
                f"it {where}]"])
            least = AIDirective([f"[acor: a directive too large to show; "
                                 f"it {named}]"])
        else:
            return None
        return self._cut(summary, share) or least

    # --- the end --------------------------------------------------------

    def _end(self, event: Any) -> None:
        """The final status or Input Needed (None: the run ends without
        one). Whatever the run wrote before, the ending always reaches
        the agent: the held sections (errors, directives, ...), the last
        Output Data, the whole-output file and the ending itself are
        placed first, each whole within its share or cut (summarised with
        its file when no cut fits); the tail of the text gets what is
        left."""
        self.ended = True
        room = self.limit - self.reserve - self.spent
        held = [e for e in self.held.values()
                if not (isinstance(e, Status) and e.is_final)]
        self.held.clear()
        data, self.last_data = self.last_data, None
        final = Status("input_needed") if isinstance(event, InputNeeded) \
            else None  # the final status that follows an Input Needed
        fixed = self.cost(final) if final is not None else 0
        if not self.truncated and not self.gap_bytes and not held and \
                data is None and (event is None or
                                  self.cost(event) + fixed <= room):
            self._finish_files()
            if event is not None:
                self._show(event, self.cost(event))
            return
        self._keep()
        if isinstance(event, Status):
            fixed += self.cost(event)
        # The files entry, at its longest (its counts can still grow).
        fixed += self._files_cost()
        gap_note = self._gap_note_cost() if self.gap_bytes else 0
        items = list(held)
        if data is not None:
            items.append(data)
        if isinstance(event, InputNeeded):
            items.append(event)
        placed = self._share_out(items, room - fixed - gap_note)
        used = sum(self.cost(e) for e in placed.values() if e is not None)
        if self.gap_bytes and used <= room - fixed - gap_note:
            self._flush_gap(True, max(0, room - fixed - gap_note - used))
        elif self.gap_bytes:
            # What must reach the agent took the note's room too: the
            # files entry says how much text was left out.
            self.tail.take()
            self.gap_bytes = 0
        for item in held:
            shown = placed.get(id(item))
            if shown is None:
                self._left(item.type)
            else:
                self._show(shown, self.cost(shown))
        if data is not None:
            shown = placed.get(id(data))
            if shown is not None:
                self._show(shown, self.cost(shown))
        ending = event
        if isinstance(event, InputNeeded):
            ending = placed.get(id(event))
        last = self.cost(ending) if ending is not None else 0
        self._finish_files(last + (self.cost(final) if final else 0))
        if ending is not None:
            self._show(ending, last)

    def _share_out(self, items: list, room: int) -> dict:
        """Each item whole or cut, within ``room`` together. What must
        reach the agent (errors, directives, the last Output Data, an
        Input Needed) is placed first, the rest (progress, checkpoints,
        statuses, suggestions: repeats) in what it leaves; within each,
        the smaller ones whole first, the others sharing evenly."""
        placed: dict[int, Any] = {}
        for must in (True, False):
            order = sorted((i for i in items if (i.type in MUST) == must),
                           key=self.cost)
            for left, item in enumerate(order):
                share = max(0, room) // (len(order) - left)
                cost = self.cost(item)
                if cost <= share:
                    shown = item
                elif isinstance(item, OutputData):
                    shown = self._fit_data(item, share)
                else:
                    shown = self._cut(item, share) or \
                        self._summary(item, share)
                if not must and shown is not None and \
                        self.cost(shown) > max(0, room):
                    shown = None  # nothing of it fits: left out, in the file
                placed[id(item)] = shown
                room -= self.cost(shown) if shown is not None else 0
        return placed

    def _files_cost(self) -> int:
        """The most the whole-output entries can cost."""
        saved = self.spill.path or self.spill.keep()
        left = dict.fromkeys(("output_data", *HELD), 10 ** 6)
        size = (saved, 10 ** 15, "0" * 64) if saved else None
        entry = self._files_event(size, left, 10 ** 15)
        cost = self.cost(entry)
        if self.stderr_left_out:
            cost += self.cost(self._stderr_entry(
                (self.err_spill.keep() or "", 10 ** 15, "0" * 64)))
        return cost

    def _finish_files(self, after: int = 0) -> None:
        """Close the files; name what was kept (the whole output, the
        stderr), or say why it could not be saved. ``after``: what the
        ending still to come costs."""
        self.outcome = self.spill.finish()
        err = self.err_spill.finish()
        if not self.truncated:
            return
        entries = [self._files_event(self.outcome, self.left_out,
                                     self.left_out_bytes)]
        if self.stderr_left_out and err is not None:
            entries.append(self._stderr_entry(err))
        for entry in entries:
            self.spent += self.cost(entry)
            self.sink.emit(entry)
        if self.stderr_left_out:
            # Where the stderr is read (Markdown's stderr, JSON's events),
            # when there is room left: the entry above says it anyway.
            note = self._stderr_note(err)
            if self.stderr_cost(note) <= self.limit - self.reserve - \
                    self.spent - after:
                self.spent += self.stderr_cost(note)
                self.sink.stderr(note)

    def _stderr_note(self, err: Optional[tuple]) -> bytes:
        where = f"the whole stderr is in {err[0]}" if err else \
            f"it could not be saved: {self.err_spill.error}"
        return (f"[acor: {_count(self.stderr_left_out)} bytes of the tool's "
                f"stderr left out to fit the output budget; {where}]\n"
                ).encode("utf-8", "replace")

    def _stderr_entry(self, err: tuple) -> Event:
        path, size, digest = err
        return OutputFiles([{
            "path": path, "kind": "file", "bytes": size, "sha256": digest,
            "truncated": True, "description": (
                "The tool's whole stderr. The stream left out "
                f"{_count(self.stderr_left_out)} bytes of it to fit the "
                f"budget of {_count(self.limit)} bytes.")}])

    def _files_event(self, outcome: Optional[tuple], left_out: dict,
                     left_bytes: int) -> Event:
        left = ", ".join(f"{n} {kind.replace('_', ' ')}"
                         for kind, n in left_out.items() if n)
        parts = [f"{_count(left_bytes)} bytes of text"] if left_bytes else []
        if left:
            parts.append(f"sections not shown ({left})")
        what = " and ".join(parts) + " left out" if parts else \
            "long sections cut"
        if outcome is None:
            return Note(
                f"[acor: this run's output was truncated to fit the "
                f"budget of {_count(self.limit)} bytes ({what}), "
                f"and the whole output could not be saved: "
                f"{self.spill.error or 'nothing was written'}]")
        path, size, digest = outcome
        if self.spill.complete or size == 10 ** 15:
            whole = "The whole output of this run (ACOR Markdown)."
        else:
            whole = (f"Only the first {_count(size)} of this run's "
                     f"{_count(self.spill.size)} bytes of output (ACOR "
                     f"Markdown): the rest could not be saved "
                     f"({self.spill.error}).")
        description = (
            f"{whole} The stream was cut to fit --max-output "
            f"{_count(self.limit)} bytes: {what}. Search it (grep -n, sed "
            f"-n 'A,Bp', acor parse) rather than running the tool again.")
        return OutputFiles([{"path": path, "description": description,
                             "kind": "file", "bytes": size,
                             "sha256": digest, "truncated": True}])


def _outline(text: str) -> dict:
    """The top-level shape of JSON ``text`` without decoding it: its type
    and its keys (the first 50) or its length. Memory: one token."""
    import re
    tokens = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{},]')
    depth, top, count, want_key = 0, None, 0, False
    keys: list[str] = []
    for match in tokens.finditer(text):
        token = match.group()
        first = token[0]
        if first in "[{":
            depth += 1
            if depth == 1:
                top = first
                want_key = first == "{"
        elif first in "]}":
            depth -= 1
        elif depth == 1:
            if first == ",":
                want_key = top == "{"
            elif want_key:
                count += 1
                if len(keys) < 50:
                    keys.append(token[1:-1][:64])
                want_key = False
            if top == "[" and first == ",":
                count += 1
    if top == "{":
        return {"type": "object", "key_count": count, "keys": keys}
    if top == "[":
        empty = re.match(r"\s*\[\s*\]", text) is not None
        return {"type": "array", "length": 0 if empty else count + 1}
    return {"type": "scalar"}


def _largest(event: Any, stuck: Any = ()) -> tuple[Optional[str], int]:
    best, size = None, 0
    for name in event.__slots__:
        if name in stuck:
            continue
        value = getattr(event, name)
        if isinstance(value, str):
            length = len(value)
        elif isinstance(value, list):
            length = sum(len(v) if isinstance(v, str) else 64
                         for v in value)
        elif isinstance(value, dict) and name == "fields":
            length = len(json_dumps(value))
        else:
            continue
        if name in ("id", "state", "code", "format", "audience", "type"):
            continue
        if length > size:
            best, size = name, length
    return best, size


def _fit(text: str, room: int, cost: Callable[[str], int]) -> str:
    """The longest head of ``text`` (about) whose cost fits ``room``."""
    n = min(len(text), max(0, room))
    for _ in range(30):
        if n <= 0:
            return ""
        c = cost(text[:n])
        if c <= room:
            return text[:n]
        n = int(n * room / c * 0.95) - 1
    return ""


def _fit_end(text: str, room: int, cost: Callable[[str], int]) -> str:
    n = min(len(text), max(0, room))
    for _ in range(30):
        if n <= 0:
            return ""
        c = cost(text[-n:])
        if c <= room:
            return text[-n:]
        n = int(n * room / c * 0.95) - 1
    return ""


def json_dumps(value: Any) -> str:
    import json
    return json.dumps(value, ensure_ascii=False)


def markdown_cost(event: Event) -> int:
    from acor.grammar import render
    return len(render(event).encode("utf-8", "replace")) + 1


def shown_stderr(data: bytes) -> str:
    """A piece of the tool's stderr as a format shows it (cleaned of
    control bytes), for its cost: removing a sequence cut between two
    pieces costs nothing here, so the count is never below what is shown."""
    return strip_terminal(data.decode("utf-8", "replace"))


# Markdown: the tool's stderr goes to acor's stderr, cleaned, and nothing
# follows the final status.
markdown_cost.reserve = 0  # type: ignore[attr-defined]
markdown_cost.stderr_cost = lambda data: len(  # type: ignore[attr-defined]
    shown_stderr(data).encode("utf-8", "replace"))

# The run's result record (JSON's last line, an MCP result's _meta): the
# launcher's fields, the whole output's path and digest; the argv the
# agent sent comes on top.
RESULT_RESERVE = 768


def json_cost(tool: str) -> Callable[[Event], int]:
    from acor.cli.output.jsonline import event_line

    def cost(event: Event) -> int:
        return len(event_line(event.to_dict()))

    def stderr_cost(data: bytes) -> int:
        return len(event_line({"type": "stderr",
                               "text": shown_stderr(data)}))
    cost.reserve = RESULT_RESERVE  # type: ignore[attr-defined]
    cost.stderr_cost = stderr_cost  # type: ignore[attr-defined]
    return cost


MCP_SILENT = frozenset({"progress", "status", "checkpoint", "session",
                        "heartbeat"})


def mcp_cost(event: Event) -> int:
    """What an event adds to an MCP result: its content as JSON (progress
    and statuses go out as notifications or in ``_meta``: nothing). Output
    Data counts twice (its text, and ``structuredContent`` when last); an
    Input Needed once and a half (its text lists the fields and the next
    call)."""
    if event.type in MCP_SILENT:
        return 0
    from acor.cli.output.jsonline import json_line
    size = len(json_line(event.to_dict())) + 32
    if event.type == "output_data":
        return 2 * size
    if event.type == "input_needed":
        return size + size // 2 + 256
    return size


# MCP: the tool's stderr goes to the server's log, not to the client.
mcp_cost.reserve = RESULT_RESERVE + 256  # type: ignore[attr-defined]
mcp_cost.stderr_cost = lambda data: 0  # type: ignore[attr-defined]


__all__ = ["Budget", "DEFAULT_MAX_OUTPUT", "Spill", "clear_outputs",
           "json_cost", "markdown_cost", "mcp_cost", "parse_size"]
