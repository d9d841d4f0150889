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
- **Sections are kept, text is bounded.** The budget has three parts: the
  head (half), the tail of text (a quarter) and the ending (a quarter).
  Raw text and Output sections fill the head in order; once it is full,
  the rest of the text goes into a rolling tail (the last quarter's worth)
  and only the tail is shown, after a line saying how much was left out
  and where the whole output is. A section too large for its share (an
  Error with megabytes of details, a long AI Directive) is cut head and
  tail, with the same line in the middle; a large Output Data value is
  written whole to a file of its own and summarised (size, sha256, type,
  top-level keys or length, the file).
- **Repeats cost nothing once the head is full**: from then on progress,
  checkpoints, intermediate statuses, errors, directives and suggestions
  are held (the latest of each) and shown at the end, before the final
  status; other sections are shown while the head and tail allow, then
  counted.

``cost(event)`` is the number of bytes the format writes for an event (0:
the format shows nothing of it, so it passes untouched: progress in MCP).
Memory is bounded whatever the tool writes: the spill holds at most
:data:`MEMORY_HOLD` bytes before it is a file, the tail a quarter of the
budget, the held events one of each kind.
"""

from __future__ import annotations

import os
import time

from acor.events import Event, OutputData, OutputFiles, Status, Text
from acor.cli.textsafe import clean_event


class Note(Text):
    """Text acor adds to a run (what the budget left out), not the tool's:
    written as text everywhere, and marked as acor's where a reader can
    tell (an MCP block's ``_meta``)."""

    __slots__ = ()

# Loaded once the tool is starting up (Budget.started), not before the
# spawn: `acor TOOL` is the hot path (hashlib loads OpenSSL).
hashlib: Any = None
RawJSON: Any = None

TYPE_CHECKING = False  # typing costs every run ~3 ms: only mypy
if TYPE_CHECKING:
    from typing import Any, Callable, Optional

DEFAULT_MAX_OUTPUT = 32 * 1024
"""The default budget: 32 KiB is about 8,000 tokens of English text or
code (some 4 bytes a token) and at most about 16,000 for the densest
output (2 bytes a token: hex, JSON punctuation), under the 25,000 tokens
Claude Code allows one MCP result and near its 10,000-token warning."""
MIN_MAX_OUTPUT = 4096      # below this, head, tail and ending cannot fit
MAX_MAX_OUTPUT = 1 << 40   # a limit, not a promise: 1 TiB
MEMORY_HOLD = 1 << 20      # spill bytes kept in memory before a file
OUTPUT_DIR = ".output"     # under the state dir; no tool can be named so
MAX_AGE = 7 * 24 * 3600    # spill files older than this are removed
DATA_SHARE = 4             # an Output Data over limit/DATA_SHARE is a file
HELD = ("progress", "checkpoint", "status", "error", "ai_directive",
        "suggestions")
TEXTS = ("text", "output")
ENDINGS = ("input_needed",)
_NOTE = "[acor: {what} left out here; the whole output is in {path}]"


def parse_size(value: Any, what: str = "--max-output") -> int:
    """A byte count from ``32768``, ``32k``, ``32KiB``, ``1M``, ``0``
    (no limit). Raises ValueError saying what is wrong."""
    if isinstance(value, bool):
        raise ValueError(f"{what} must be a size in bytes, not {value!r}")
    if isinstance(value, int):
        number = value
    else:
        text = str(value).strip().lower().replace(" ", "")
        scale = 1
        for suffix, shift in (("kib", 10), ("mib", 20), ("gib", 30),
                              ("kb", 10), ("mb", 20), ("gb", 30),
                              ("k", 10), ("m", 20), ("g", 30), ("b", 0)):
            if text.endswith(suffix) and text[:-len(suffix)]:
                text, scale = text[:-len(suffix)], 1 << shift
                break
        if not (text.isascii() and text.isdigit()) or len(text) > 15:
            raise ValueError(
                f"{what} must be a size in bytes (32768, 32k, 1M) or 0 for "
                f"no limit, not {str(value)[:40]!r}")
        number = int(text) * scale
    if number == 0:
        return 0
    if number < MIN_MAX_OUTPUT or number > MAX_MAX_OUTPUT:
        raise ValueError(f"{what} must be 0 (no limit) or from 4k "
                         f"({MIN_MAX_OUTPUT} bytes) to 1 TiB, not {number}")
    return number


def output_dir(state_dir: str) -> str:
    return os.path.join(state_dir, OUTPUT_DIR)


def _count(n: int) -> str:
    return f"{n:,}"


class Spill:
    """The whole output of a run as ACOR Markdown: bytes in memory until
    :meth:`keep` (or :data:`MEMORY_HOLD`), then a private file."""

    def __init__(self, directory: str, tool: str) -> None:
        self.directory = directory
        self.tool = tool
        self.path: Optional[str] = None
        self.size = 0
        self.kept = False
        self.error: Optional[str] = None
        self._buf: Optional[bytearray] = bytearray()
        self._fd: Optional[int] = None
        self._hash: Any = None  # from the first byte, once there are bytes
        self._data_files = 0

    def write(self, data: bytes) -> None:
        self.size += len(data)
        if self._hash is None:
            _load()
            self._hash = hashlib.sha256()
        self._hash.update(data)
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
        if self._fd is None and self.error is None:
            self._open()
        return self.path

    def _open(self) -> None:
        buffered, self._buf = self._buf, None
        try:
            self._fd, self.path = self._create(".md")
        except OSError as exc:
            self.error = f"cannot write {self.directory}: " \
                f"{exc.strerror or exc}"
            return
        self._write(bytes(buffered or b""))

    def _create(self, suffix: str) -> tuple[int, str]:
        os.makedirs(self.directory, mode=0o700, exist_ok=True)
        _prune(self.directory)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        name = f"{stamp}-{self.tool}-{os.getpid()}-{os.urandom(4).hex()}"
        path = os.path.abspath(os.path.join(self.directory, name + suffix))
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | \
            getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        return os.open(path, flags, 0o600), path

    def _write(self, data: bytes) -> None:
        if self._fd is None:
            return
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view):]
        except OSError as exc:  # a full disk must not stop the run
            self.error = f"cannot write {self.path}: {exc.strerror or exc}"
            self._close()

    def _close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def finish(self) -> Optional[tuple[str, int, str]]:
        """Close the file: (path, size, sha256) when kept, else None (and
        a file opened for a large run that was never cut is removed)."""
        self._close()
        self._buf = None
        if not self.kept:
            if self.path is not None:
                _unlink(self.path)
            return None
        if self.path is None or self.error is not None:
            return None
        digest = self._hash.hexdigest() if self._hash is not None else \
            _empty_digest()
        return self.path, self.size, digest

    def data_file(self, data: bytes | memoryview
                  ) -> tuple[Optional[str], str]:
        """A value written whole to a file of its own: (path or None,
        its sha256)."""
        digest = hashlib.sha256(data).hexdigest()
        path: Optional[str]
        try:
            fd, path = self._create(f".data{self._data_files}.json")
        except OSError:
            return None, digest
        self._data_files += 1
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        except OSError:
            path = None
        finally:
            os.close(fd)
        return path, digest


def _load() -> None:
    global hashlib, RawJSON
    if hashlib is None:
        import hashlib as _hashlib

        from acor.layout import RawJSON as _RawJSON
        hashlib, RawJSON = _hashlib, _RawJSON


def _empty_digest() -> str:
    _load()
    return hashlib.sha256(b"").hexdigest()


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def spill_tool(name: str) -> Optional[str]:
    """The tool whose run wrote the spill file ``name``
    (``STAMP-TOOL-PID-HEX.ext``, the stamp ``YYYYmmdd-HHMMSS``)."""
    parts = name.split("-", 2)
    if len(parts) < 3 or "-" not in parts[2]:
        return None
    return parts[2].rsplit("-", 2)[0]


def _prune(directory: str) -> None:
    """Remove this user's spill files older than :data:`MAX_AGE`."""
    cutoff = time.time() - MAX_AGE
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if st.st_mtime < cutoff and entry.is_file(
                        follow_symlinks=False) and st.st_uid == os.getuid():
                    _unlink(entry.path)
    except OSError:
        pass


def clear_outputs(state_dir: str, tool: Optional[str] = None) -> int:
    """Remove every spill file, or ``tool``'s only (``acor sessions
    --clear [--tool NAME]``); how many."""
    directory = output_dir(state_dir)
    removed = 0
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                if entry.is_file(follow_symlinks=False) and (
                        tool is None or spill_tool(entry.name) == tool):
                    _unlink(entry.path)
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
        self.spill = Spill(directory, tool)
        self.spent = 0
        self.end_share = limit // 4
        self.tail_share = limit // 4
        self.head_share = limit - self.end_share - self.tail_share
        self.over = False        # the head is full: text goes to the tail
        self.truncated = False   # something was cut or left out
        self.tail = _Tail(self.tail_share)
        self.tail_left = self.tail_share  # what tails may still show
        self.gap_bytes = 0       # text left out since the last shown text
        self.left_out_bytes = 0  # over the whole run
        self.left_out: dict[str, int] = {}  # sections not shown, by type
        self.held: dict[str, Event] = {}
        self.ended = False
        self.outcome: Optional[tuple[str, int, str]] = None
        # Output Data over this is summarised, so it is not even decoded.
        self.max_data = limit // DATA_SHARE

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
        if cost == 0 or self.ended:
            self.sink.emit(event)
            return
        if kind in ENDINGS or kind == "status" and event.is_final:
            self._end(event)
            return
        if kind == "output_data" and cost > self.limit // DATA_SHARE:
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
            if room >= self.limit // 16:
                self._show_cut(event, room)
                return
            self.over = True
            self._keep()
        self._over(event)

    def _over(self, event: Any) -> None:
        kind = event.type
        if kind in TEXTS:
            self._to_tail(event)
        elif kind in HELD:
            self.left_out[kind] = self.left_out.get(kind, 0) + \
                (kind in self.held)
            self.held.pop(kind, None)
            self.held[kind] = event  # re-inserted: arrival order
        else:
            # Shown in place while the budget allows, after the text
            # before it (its note, and as much of its tail as is left).
            room = self.limit - self.end_share - self.spent
            cost = self.cost(event)
            if room - min(cost, self.limit // 16) >= 0:
                self._flush_gap(True, min(self.tail_left, room - min(
                    cost, self.limit // 16)))
                room = self.limit - self.end_share - self.spent
                self._show_cut(event, min(room, max(self.limit // 16,
                                                    room - self.tail_left)))
            else:
                self.left_out[kind] = self.left_out.get(kind, 0) + 1

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
            self.left_out[event.type] = self.left_out.get(event.type, 0) + 1
            self._keep()
            return
        self._show(cut, self.cost(cut))

    def _keep(self) -> str:
        """The run is cut: its whole output goes to a file; the file's
        path for the notes."""
        self.truncated = True
        path = self.spill.keep()
        return path or "(not saved: " + (self.spill.error or "") + ")"

    def _note(self, what: str) -> str:
        return _NOTE.format(what=what, path=self._keep())

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
        (``with_tail``) the last of that text, within ``room`` bytes."""
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

    def _data(self, event: Any, encoded: memoryview) -> Event:
        """Output Data over its share: the value whole in a file of its
        own (``encoded``, the fenced block's content as the stream has
        it), and a summary in its place."""
        share = self.limit // DATA_SHARE
        data = event.data
        path, digest = self.spill.data_file(encoded)
        self._keep()
        summary: dict[str, Any] = {
            "acor_truncated": True, "format": event.format,
            "bytes": encoded.nbytes, "sha256": digest, "file": path,
            "note": "The whole value is in the file; the stream shows "
                    "only this summary."}
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
        return shown if shown is not None else cut

    # --- cutting ------------------------------------------------------------

    def _cut(self, event: Any, room: int) -> Optional[Event]:
        """``event`` cut to cost at most ``room`` (its largest text field
        head and tail, a note in the middle; long lists shortened), or
        None when it cannot be."""
        copy = object.__new__(type(event))
        for name in event.__slots__:
            setattr(copy, name, getattr(event, name))
        for _ in range(40):
            cost = self.cost(copy)
            if cost <= room:
                return copy
            name, size = _largest(copy)
            if name is None or size <= 8:
                return None
            value = getattr(copy, name)
            target = max(0, int(size * min(0.5, room / cost)))
            if isinstance(value, str):
                setattr(copy, name, self._middle(value, target))
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

    # --- the end --------------------------------------------------------

    def _end(self, event: Any) -> None:
        """The final status or Input Needed (None: the run ends without
        one): the tail, the held sections, the file, then the ending."""
        self.ended = True
        if self.truncated or self.gap_bytes:
            room = self.limit - self.end_share - self.spent
            self._flush_gap(True, max(room, self.tail_share // 2))
            held = list(self.held.values())
            self.held.clear()
            each = max(256, (self.limit - self.spent - 1024) //
                       max(1, len(held) + 1) - 64)
            for item in held:
                if isinstance(item, Status) and item.is_final:
                    continue
                self._show_cut(item, each)
            if event is not None:
                ending = self._cut(event, each) or event
            else:
                ending = None
            self.outcome = self.spill.finish()
            self._files_entry()
            if ending is not None:
                self.spent += self.cost(ending)
                self.sink.emit(ending)
            return
        self.spill.finish()
        if event is not None:
            self.spent += self.cost(event)
            self.sink.emit(event)

    def _files_entry(self) -> None:
        outcome = self.outcome
        left = ", ".join(f"{n} {kind.replace('_', ' ')}"
                         for kind, n in self.left_out.items() if n)
        parts = [f"{_count(self.left_out_bytes)} bytes of text"] \
            if self.left_out_bytes else []
        if left:
            parts.append(f"sections not shown ({left})")
        what = " and ".join(parts) + " left out" if parts else \
            "long sections cut"
        if outcome is None:
            self.sink.emit(Note(
                f"[acor: this run's output was truncated to fit the "
                f"budget of {_count(self.limit)} bytes ({what}), "
                f"and the whole output could not be saved: "
                f"{self.spill.error}]"))
            return
        path, size, digest = outcome
        description = (
            f"The whole output of this run (ACOR Markdown). The stream was "
            f"truncated to fit its budget of {_count(self.limit)} bytes "
            f"(--max-output): {what}. Search or read this file "
            f"(grep -n, sed -n 'A,Bp', acor parse) rather than running the "
            f"tool again.")
        entry = OutputFiles([{"path": path, "description": description,
                              "kind": "file", "bytes": size,
                              "sha256": digest, "truncated": True}])
        self.spent += self.cost(entry)
        self.sink.emit(entry)


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


def _largest(event: Any) -> tuple[Optional[str], int]:
    best, size = None, 0
    for name in event.__slots__:
        value = getattr(event, name)
        if isinstance(value, str):
            length = len(value)
        elif isinstance(value, list):
            length = sum(len(v) if isinstance(v, str) else 64
                         for v in value)
        elif isinstance(value, dict) and name == "fields":
            length = len(repr(value))
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


def markdown_cost(event: Event) -> int:
    from acor.grammar import render
    return len(render(event).encode("utf-8", "replace")) + 1


def json_cost(tool: str) -> Callable[[Event], int]:
    from acor.cli.output.jsonline import event_line

    def cost(event: Event) -> int:
        return len(event_line(event.to_dict()))
    return cost


MCP_SILENT = frozenset({"progress", "status", "checkpoint", "session",
                        "heartbeat"})


def mcp_cost(event: Event) -> int:
    """What an event adds to an MCP result: its content as JSON (progress
    and statuses go out as notifications or in ``_meta``: nothing)."""
    if event.type in MCP_SILENT:
        return 0
    from acor.cli.output.jsonline import json_line
    return len(json_line(event.to_dict())) + 32


__all__ = ["Budget", "DEFAULT_MAX_OUTPUT", "Spill", "clear_outputs",
           "json_cost", "markdown_cost", "mcp_cost", "parse_size"]
