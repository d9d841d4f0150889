"""The output budget: what one run may put in front of the agent.

An agent pays for every byte acor relays. :class:`Budget` stands between
the progress coalescer and a format (Markdown, JSON lines, an MCP result)
and keeps a run within ``limit`` bytes of that format's own encoding,
without losing anything:

- **Everything is kept.** Every event is also rendered as ACOR Markdown
  into a spill (:mod:`cli.output.spill`): in memory while the run fits,
  then, from the first cut on, in a file under the state dir
  (``.output/``, one per run, private to the user), from byte 0. Once
  the run ends, a run that was cut names that file in an ``## Output
  Files`` entry marked ``truncated``, with its absolute path, size and
  full sha256; a run that fitted leaves no file.
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
  top-level keys or length, the file): :mod:`cli.output.cutting`.
- **The ending always reaches the agent.** Once the head is full, the
  latest of each repeated section (progress, checkpoints, statuses,
  errors, directives, suggestions) and the last Output Data are held; at
  the end, errors, directives, the last data and an Input Needed are
  placed first (:data:`MUST`), each whole or cut within its share or
  summarised naming its file, then the repeats, then the whole-output
  entry and the final status; the tail of the text gets what is left.
  Other sections are shown in place while the head and tail allow, then
  counted.

``cost(event)`` is the number of bytes the format writes for an event
(:mod:`cli.output.cost`; 0: the format shows nothing of it, so it passes
untouched: progress in MCP). Memory is bounded whatever the tool writes:
the spill holds at most :data:`cli.output.spill.MEMORY_HOLD` bytes before
it is a file, the tail (:mod:`cli.output.tail`) a quarter of the budget,
the held events one of each kind.
"""

from __future__ import annotations

from acor.events import Event, InputNeeded, Output, OutputData, Status, Text

from acor.cli.output.cost import Cost
from acor.cli.output.cutting import Cutter, data_block, fit_head
from acor.cli.output.notes import (MOST, Note, count, files_entry,
                                   stderr_entry, stderr_note)
from acor.cli.output.spill import Spill
from acor.cli.output.tail import Tail, last_pieces, whole_lines
from acor.cli.textsafe import clean_event

TYPE_CHECKING = False  # typing costs every run ~3 ms: only mypy
if TYPE_CHECKING:
    from typing import Any, Callable, Optional

    from acor.cli.output.notes import Saved
    from acor.cli.output.tail import Piece

# Loaded once the tool is starting up (Budget.started), not before the
# spawn: `acor TOOL` is the hot path, and the grammar is not on it.
_render: Optional[Callable[[Event], str]] = None
_RawJSON: Optional[type] = None

DATA_SHARE = 4             # an Output Data over limit/DATA_SHARE is a file
END_FLOOR = 2560           # the least kept for the ending, at any budget
HELD = ("progress", "checkpoint", "status", "error", "ai_directive",
        "suggestions")
TEXTS = (Text, Output)  # the text of a run: the head, then the tail
ENDINGS = ("input_needed",)
# What always reaches the agent, whole or cut, or summarised with its file.
MUST = ("error", "ai_directive", "output_data", "input_needed")


def _load() -> tuple[Callable[[Event], str], type]:
    """The grammar's renderer and the undecoded JSON value's type."""
    global _render, _RawJSON
    if _render is None or _RawJSON is None:
        # Imported once the tool is starting up: see _render above.
        from acor.grammar import render
        from acor.layout import RawJSON
        _render, _RawJSON = render, RawJSON
    return _render, _RawJSON


class Budget:
    """A sink that keeps a run within ``limit`` bytes (see the module)."""

    def __init__(self, sink: Any, limit: int, directory: str, tool: str,
                 cost: Cost) -> None:
        self.sink = sink
        self.limit = limit
        self.cost = cost
        # What the format writes after the budget's last event (the JSON
        # result line, an MCP result's _meta): kept out of every share.
        self.reserve = cost.reserve
        self.stderr_cost = cost.stderr_cost
        self.spill = Spill(directory, tool)
        # The stderr's file is named as the output's, .stderr for .md.
        self.err_spill = Spill(directory, tool, ".stderr", beside=self.spill)
        self.cutter = Cutter(cost, self.spill, self._keep)
        self.spent = 0
        usable = limit - self.reserve
        self.end_share = min(usable * 3 // 4,
                             max(usable // 4, END_FLOOR))
        self.tail_share = (usable - self.end_share) // 3
        self.head_share = usable - self.end_share - self.tail_share
        self.over = False        # the head is full: text goes to the tail
        self.truncated = False   # something was cut or left out
        self.tail = Tail(self.tail_share)
        self.tail_left = self.tail_share  # what tails may still show
        self.left_out_bytes = 0  # over the whole run
        self.left_out: dict[str, int] = {}  # sections not shown, by type
        self.held: dict[str, Event] = {}
        self.last_data: Optional[Event] = None  # held for the ending
        self.stderr_left_out = 0
        self.ended = False
        self.outcome: Optional[Saved] = None
        # Output Data over this is summarised, so it is not even decoded.
        self.max_data = usable // DATA_SHARE

    # --- the sink protocol ---------------------------------------------

    def emit(self, event: Event) -> None:
        render, raw_json = _load()
        kind = event.type
        if isinstance(event, OutputData) and isinstance(event.data,
                                                         raw_json):
            self._raw_data(event)
            return
        markdown = render(event).encode("utf-8", "replace")
        self.spill.write(markdown)  # the whole output keeps the raw bytes
        safe = clean_event(event)  # what the agent gets is measured
        if safe is not event:
            event = safe
            markdown = render(event).encode("utf-8", "replace")
        if self.over and isinstance(event, TEXTS) and not self.ended:
            # The flood's path: no cost to measure, it goes to the tail.
            self._to_tail(event, len(markdown))
            return
        # Rendered once: an Output Data of megabytes costs seconds a render.
        cost = self.cost.rendered(event, markdown)
        if cost == 0:
            self.sink.emit(event)
        elif self.ended:
            self._after_end(event, cost)
        elif kind in ENDINGS or isinstance(event, Status) and \
                event.is_final:
            self._end(event)
        elif isinstance(event, OutputData) and cost > self.max_data:
            summary = self.cutter.data(event, data_block(markdown),
                                       self.max_data)
            del markdown
            self._place(summary, self.cost(summary))
        else:
            del markdown
            self._place(event, cost)

    def _after_end(self, event: Event, cost: int) -> None:
        """After the ending only its final status is shown (reserved with
        it); the rest is in the file."""
        if isinstance(event, Status) and event.is_final and \
                self.spent + cost <= self.limit - self.reserve:
            self._show(event, cost)
        else:
            self._left(event.type)

    def _raw_data(self, event: OutputData) -> None:
        """A large JSON value the decoder left as text: written to the
        spill as its section, in pieces (no copy of the whole section),
        then summarised."""
        # Loaded with the grammar once the tool is starting up.
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
        summary = self.cutter.data(event, memoryview(body), self.max_data)
        del body
        self._place(summary, self.cost(summary))

    def _place(self, event: Event, cost: int) -> None:
        if self.over:
            self._over(event)
        elif not self._in_head(event, cost):
            # Held for the end (an error, a directive) or placed as the
            # rest are once the head is full.
            self.over = True
            self._keep()
            self._over(event)

    def _in_head(self, event: Event, cost: int) -> bool:
        """Place ``event`` while the head has room: whole, its head (a
        text: the rest to the tail), held (Output Data) or cut; False
        when it does not fit there."""
        kind = event.type
        room = self.head_share - self.spent
        if cost <= room:
            self._show(event, cost)
        elif isinstance(event, TEXTS):
            self._overflow(event, room)
        elif kind == "output_data":
            self._hold_data(event)
        else:
            cut = self.cutter.cut(event, room) \
                if room >= self.limit // 16 else None
            if cut is None:
                return False
            self._show(cut, self.cost(cut))
        return True

    def _hold_data(self, event: Event) -> None:
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

    def _over(self, event: Event) -> None:
        kind = event.type
        if isinstance(event, TEXTS):
            self._to_tail(event)
        elif kind == "output_data":
            self._hold_data(event)
        elif kind in HELD:
            self.left_out[kind] = self.left_out.get(kind, 0) + \
                (kind in self.held)
            self.held.pop(kind, None)
            self.held[kind] = event  # re-inserted: arrival order
        else:
            self._in_place(event)

    def _in_place(self, event: Event) -> None:
        """Shown in place while the budget allows, after the text before
        it (its note, and as much of its tail as is left)."""
        room = self.head_share + self.tail_share - self.spent
        cost = self.cost(event)
        need = min(cost, self.limit // 16) + self._gap_note_cost()
        if room - need < 0:
            self._left(event.type)
            return
        self._flush_gap(min(self.tail_left, room - need))
        room = self.head_share + self.tail_share - self.spent
        self._show_cut(event, min(room, max(self.limit // 16,
                                            room - self.tail_left)))

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
        room = self._stderr_room()
        if cost > room:
            shown = whole_lines(data, room, self.stderr_cost)
            self.stderr_left_out += len(data) - len(shown)
            self.truncated = True
            self.err_spill.keep()
            data = shown
            if not data:
                return
            cost = self.stderr_cost(data)
        self.spent += cost
        self.sink.stderr(data)

    def _stderr_room(self) -> int:
        if self.over or self.stderr_left_out:
            return 0
        if self.ended:
            # A traceback printed as the tool exits comes after its final
            # status: shown while the whole budget has room for it.
            return self.limit - self.reserve - self.spent
        return self.head_share - self.spent

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

    def _show(self, event: Event, cost: int) -> None:
        self.spent += cost
        self.sink.emit(event)

    def _show_cut(self, event: Event, room: int) -> None:
        cut = self.cutter.cut(event, room)
        if cut is None:
            self._left(event.type)
            return
        self._show(cut, self.cost(cut))

    def _keep(self) -> None:
        """The run is cut: its whole output goes to a file (the spill
        names it, or why it could not be saved)."""
        self.truncated = True
        self.spill.keep()

    def _gap_note_cost(self) -> int:
        """What the note for left-out text costs (at most)."""
        return self.cost(Note(self.cutter.note(
            f"{count(MOST)} bytes of output")))

    def _overflow(self, event: Piece, room: int) -> None:
        """A text that does not fit the head: its head is shown, the rest
        goes to the tail, and from now on all text does."""
        self.over = True
        self._keep()
        text = event.text
        kind = type(event)
        head = fit_head(text, room, lambda s: self.cost(kind(s)))
        cut = head.rfind("\n")
        if cut > len(head) // 2:
            head = head[:cut + 1]
        if head.strip():
            shown = kind(head.rstrip("\n"))
            self._show(shown, self.cost(shown))
        else:
            head = ""
        rest = text[len(head):]
        if rest:
            self._to_tail(kind(rest))

    def _to_tail(self, event: Piece, size: Optional[int] = None) -> None:
        if size is None:
            size = len(event.text.encode("utf-8", "replace")) + 1
        self.left_out_bytes += size
        self.tail.add(event, size)

    def _flush_gap(self, room: Optional[int] = None) -> None:
        """The note for the text left out since the last shown text, and
        the last of that text, within ``room`` bytes (the note's cost is
        not in ``room``)."""
        gap = self.tail.gap_bytes
        pieces = self.tail.take()
        if not gap:
            return
        shown = last_pieces(pieces, self.tail_share if room is None
                            else room, self.cost)
        shown_bytes = sum(len(p.text.encode("utf-8", "replace")) + 1
                          for p in shown)
        left = max(0, gap - shown_bytes)
        note = Note(self.cutter.note(f"{count(left)} bytes of output"))
        self.spent += self.cost(note)
        self.sink.emit(note)
        for piece in shown:
            cost = self.cost(piece)
            self.tail_left = max(0, self.tail_left - cost)
            self._show(piece, cost)

    # --- the end --------------------------------------------------------

    def _end(self, event: Optional[Event]) -> None:
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
        if data is not None:
            held.append(data)
        # The final status that follows an Input Needed.
        final = Status("input_needed") \
            if isinstance(event, InputNeeded) else None
        after = self.cost(final) if final is not None else 0
        if self._fits_whole(event, held, room - after):
            self._finish_files()
            if event is not None:
                self._show(event, self.cost(event))
            return
        ending = self._place_ending(event, held, room - after)
        last = self.cost(ending) if ending is not None else 0
        self._finish_files(last + after)
        if ending is not None:
            self._show(ending, last)

    def _place_ending(self, event: Optional[Event], held: list[Event],
                      room: int) -> Optional[Event]:
        """Show the held sections and the last Output Data (``held``),
        and the tail of the text, within ``room`` less the ending and the
        files entry; the ending as it fits (an Input Needed whole, cut or
        summarised)."""
        self._keep()
        if isinstance(event, Status):
            room -= self.cost(event)
        # The files entry, at its longest (its counts can still grow).
        room -= self._files_cost()
        if self.tail.gap_bytes:
            room -= self._gap_note_cost()
        items = held + [event] if isinstance(event, InputNeeded) else held
        placed = self._share_out(items, room)
        self._close_gap(room - sum(self.cost(e) for e in placed.values()
                                   if e is not None))
        self._show_placed(held, placed)
        if isinstance(event, InputNeeded):
            return placed.get(id(event))
        return event

    def _fits_whole(self, event: Optional[Event], held: list[Event],
                    room: int) -> bool:
        """Nothing was cut or held, and the ending fits: it is shown as
        is, and no file is kept."""
        return not self.truncated and not self.tail.gap_bytes and \
            not held and (event is None or self.cost(event) <= room)

    def _close_gap(self, room: int) -> None:
        """The note for the text left out and the last of that text, in
        ``room``; when what must reach the agent took the note's room
        too, the files entry says how much text was left out."""
        if room >= 0:
            self._flush_gap(max(0, room))
        else:
            self.tail.take()

    def _show_placed(self, items: list[Event],
                     placed: dict[int, Optional[Event]]) -> None:
        """The held sections and the last Output Data as placed; a held
        section with no room is counted as left out."""
        for item in items:
            shown = placed.get(id(item))
            if shown is not None:
                self._show(shown, self.cost(shown))
            elif item.type != "output_data":
                self._left(item.type)

    def _share_out(self, items: list[Event], room: int
                   ) -> dict[int, Optional[Event]]:
        """Each item whole or cut, within ``room`` together. What must
        reach the agent (errors, directives, the last Output Data, an
        Input Needed) is placed first, the rest (progress, checkpoints,
        statuses, suggestions: repeats) in what it leaves; within each,
        the smaller ones whole first, the others sharing evenly."""
        placed: dict[int, Optional[Event]] = {}
        for must in (True, False):
            order = sorted((i for i in items if (i.type in MUST) == must),
                           key=self.cost)
            for left, item in enumerate(order):
                share = max(0, room) // (len(order) - left)
                shown = self._fit(item, share)
                if not must and shown is not None and \
                        self.cost(shown) > max(0, room):
                    shown = None  # nothing of it fits: left out, in the file
                placed[id(item)] = shown
                room -= self.cost(shown) if shown is not None else 0
        return placed

    def _fit(self, item: Event, share: int) -> Optional[Event]:
        """``item`` whole, cut or summarised within ``share``."""
        if self.cost(item) <= share:
            return item
        if isinstance(item, OutputData):
            return self.cutter.fit_data(item, share)
        return self.cutter.cut(item, share) or \
            self.cutter.summary(item, share)

    def _files_cost(self) -> int:
        """The most the whole-output entries can cost."""
        saved = self.spill.path or self.spill.keep()
        left = dict.fromkeys(("output_data", *HELD), 10 ** 6)
        size = (saved, MOST, "0" * 64) if saved else None
        cost = self.cost(files_entry(self.spill, self.limit, size, left,
                                     MOST))
        if self.stderr_left_out:
            cost += self.cost(stderr_entry(
                (self.err_spill.keep() or "", MOST, "0" * 64),
                self.stderr_left_out, self.limit))
        return cost

    def _finish_files(self, after: int = 0) -> None:
        """Close the files; name what was kept (the whole output, the
        stderr), or say why it could not be saved. ``after``: what the
        ending still to come costs."""
        self.outcome = self.spill.finish()
        err = self.err_spill.finish()
        if not self.truncated:
            return
        entries = [files_entry(self.spill, self.limit, self.outcome,
                               self.left_out, self.left_out_bytes)]
        if self.stderr_left_out and err is not None:
            entries.append(stderr_entry(err, self.stderr_left_out,
                                        self.limit))
        for entry in entries:
            self._show(entry, self.cost(entry))
        if self.stderr_left_out:
            self._stderr_where(err, after)

    def _stderr_where(self, err: Optional[Saved], after: int) -> None:
        """Where the stderr is read (Markdown's stderr, JSON's events),
        when there is room left: the entry above says it anyway."""
        note = stderr_note(err, self.stderr_left_out, self.err_spill.error)
        cost = self.stderr_cost(note)
        if cost <= self.limit - self.reserve - self.spent - after:
            self.spent += cost
            self.sink.stderr(note)


__all__ = ["Budget"]
