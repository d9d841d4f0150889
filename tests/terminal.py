"""A real pseudo-terminal running `acor`, driven as a person would: what
the prompt and Ctrl-C tests type into (a pty from os.openpty; nothing
mocked)."""

import codecs
import fcntl
import os
import platform
import re
import select
import shutil
import signal
import struct
import subprocess
import termios
import time

from conftest import ACOR_SCRIPT

SETSID = shutil.which("setsid") or "/usr/bin/setsid"  # util-linux

# System call numbers, as /proc/PID/syscall shows what a process waits in.
READ = {"x86_64": {0}, "aarch64": {63}}
WAITS = {"x86_64": {7, 23, 232, 270, 271, 281, 441},  # poll, select, epoll
         "aarch64": {22, 72, 73, 441}}


def wait_blocked_in(pid: int, calls: dict, timeout: float = 30) -> None:
    """Wait until ``pid`` is blocked in one of ``calls`` (by machine).

    A signal that arrives after a program wrote its prompt but before it
    entered the read (or poll) that waits for the answer does not
    interrupt that wait: CPython's handler only notes it, and the Python
    code that acts on it runs once the call returns. A person is never
    that fast; a test is, on a loaded machine. So a test that types Ctrl-C
    at a prompt first waits, as a person does, until the program waits."""
    wanted = calls.get(platform.machine())
    if wanted is None:
        return  # a machine this table does not know: send at once
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/syscall") as f:
                number = f.read().split()[0]
        except (OSError, IndexError):
            return  # no /proc, or not allowed to look: send at once
        if number.isdigit() and int(number) in wanted:
            return
        time.sleep(0.01)
    raise AssertionError(f"{pid} never waited in {sorted(wanted)}")


_CONTROL = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z])|\x1b\][^\x07]*\x07|"
                      r"[\r\n]|[^\x1b\r\n]+")


def screen_lines(text: str) -> list:
    """The lines ``text`` leaves on a terminal of unlimited width."""
    lines, row, col = [""], 0, 0
    for found in _CONTROL.finditer(text):
        piece, final = found.group(0), found.group(2)
        if piece == "\n":
            row += 1
            col = 0
            if row == len(lines):
                lines.append("")
        elif piece == "\r":
            col = 0
        elif final == "A":
            row = max(0, row - int(found.group(1) or 1))
        elif final == "K":
            lines[row] = lines[row][:col] if found.group(1) in ("", "0") \
                else ""
        elif not piece.startswith("\x1b"):
            line = lines[row].ljust(col)
            lines[row] = line[:col] + piece + line[col + len(piece):]
            col += len(piece)
    return [line.rstrip() for line in lines]


class _Grid:
    """A terminal ``columns`` wide and 40 rows high as tmux is: a line
    longer than the width wraps onto the next row (autowrap); a resize
    rewraps every line at the new width, the cursor kept where it was in
    its line and on its row of the window (the rows that no longer fit
    above it go into the scrollback, where the cursor cannot go)."""

    ROWS = 40

    def __init__(self, columns: int) -> None:
        self.columns = columns
        self.rows = [""]
        self.wrapped = [False]  # row i goes on in row i + 1
        self.row = self.col = 0
        self.top = 0  # the window's first row; those above: scrollback

    def _at(self, row: int) -> None:
        while len(self.rows) <= row:
            self.rows.append("")
            self.wrapped.append(False)
        self.row = row
        self.top = max(self.top, row - self.ROWS + 1)  # scrolled

    def write(self, text: str) -> None:
        for found in _CONTROL.finditer(text):
            piece, final = found.group(0), found.group(2)
            count = int(found.group(1) or 1) if final and \
                found.group(1).isdigit() else 1
            if piece == "\n":
                self._at(self.row + 1)
                self.col = 0
            elif piece == "\r":
                self.col = 0
            elif final == "A":
                self.row = max(self.top, self.row - count)
                self.col = min(self.col, self.columns - 1)
            elif final == "B":
                self._at(self.row + count)
            elif final == "G":
                self.col = count - 1
            elif final == "K":
                self._erase(found.group(1))
            elif not piece.startswith("\x1b"):
                for char in piece:
                    self._put(char)

    def _put(self, char: str) -> None:
        if self.col >= self.columns:  # the last column was written: wrap
            self.wrapped[self.row] = True
            self._at(self.row + 1)
            self.col = 0
        line = self.rows[self.row].ljust(self.col)
        self.rows[self.row] = line[:self.col] + char + line[self.col + 1:]
        self.col += 1

    def _erase(self, mode: str) -> None:
        line = self.rows[self.row]
        if mode in ("", "0"):
            self.rows[self.row] = line[:self.col]
            self.wrapped[self.row] = False
        elif mode == "1":
            self.rows[self.row] = " " * (self.col + 1) + line[self.col + 1:]
        else:
            self.rows[self.row] = ""
            self.wrapped[self.row] = False

    def cut(self, columns: int) -> None:
        """Cut every row at ``columns``, as xterm does when made narrower
        (it does not rewrap): a row stays a row, the cursor on it."""
        self.rows = [row[:columns] for row in self.rows]
        self.wrapped = [False] * len(self.rows)
        self.columns, self.col = columns, min(self.col, columns)

    def resize(self, columns: int) -> None:
        """Rewrap every line at ``columns``, as tmux does."""
        lines, cursor, on_window = [], None, self.row - self.top
        for index, row in enumerate(self.rows):
            if index == 0 or not self.wrapped[index - 1]:
                lines.append("")
            if index == self.row:
                cursor = (len(lines) - 1, len(lines[-1]) + self.col)
            lines[-1] += row.ljust(self.columns) if self.wrapped[index] \
                else row
        self.columns, self.rows, self.wrapped = columns, [], []
        for number, line in enumerate(lines):
            first = len(self.rows)
            pieces = [line[i:i + columns]
                      for i in range(0, len(line), columns)] or [""]
            self.rows += pieces
            self.wrapped += [True] * (len(pieces) - 1) + [False]
            if cursor is not None and cursor[0] == number:
                row, col = divmod(cursor[1], columns)
                if col == 0 and row and row == len(pieces):
                    row, col = row - 1, columns  # just after the last cell
                self._at(first + row)
                self.col = col
        self.top = max(0, self.row - on_window)


def made_for_old_width(data: bytes, offset: int, columns: int) -> int:
    """Where in ``data`` a terminal made ``columns`` wide at ``offset``
    had drawn the lines acor wrote for its old width: past the whole
    lines (each begun by a carriage return) right after ``offset`` that
    are wider than ``columns``. acor made them before the resize reached
    it, and wrote them after (a frame of the live line in flight). A
    terminal that draws such a line after its resize keeps a stale row
    of the line before, which acor cannot know of; that race is named in
    docs/terminal.md. The tests model the resize without it."""
    text, moved = data[offset:], 0
    start = text.find(b"\r")
    while start >= 0:
        end = text.find(b"\r", start + 1)
        if end < 0:
            break  # the last line may still be being written
        line = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\n", "",
                      text[start + 1:end].decode(errors="replace"))
        if len(line) <= columns:
            break
        moved = start = end  # drawn before the resize
    return offset + moved


def wrapped_screen(data: bytes, columns: int, resizes=(),
                   rewraps=True) -> list:
    """The rows ``data`` leaves (the scrollback's too) on a terminal
    ``columns`` wide that wraps long lines and rewraps them when resized,
    as tmux does (``rewraps`` False: cuts them, as xterm does);
    ``resizes``: (offset in ``data``, new width) in order. What a person
    sees after the window was made narrower mid-run."""
    grid = _Grid(columns)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    done = 0
    for offset, width in resizes:
        grid.write(decoder.decode(data[done:offset]))
        grid.resize(width) if rewraps else grid.cut(width)
        done = offset
    grid.write(decoder.decode(data[done:], final=True))
    return [row.rstrip() for row in grid.rows]


class Terminal:
    """`acor ARGS` on a real pseudo-terminal, driven as a person would."""

    def __init__(self, project, *args, columns=None, env=None,
                 rewraps=True):
        """``columns``: the terminal's width (rows: 40); ``env``: set
        in the project's environment (a None value removes it);
        ``rewraps``: the terminal rewraps its lines when resized, as tmux
        does, and says so as tmux does (``TERM_PROGRAM=tmux``), else it
        cuts them as xterm does, and says nothing."""
        environ = dict(project.env)
        for mark in ("TMUX", "STY", "TERM_PROGRAM", "VTE_VERSION",
                     "KONSOLE_VERSION", "KITTY_WINDOW_ID", "WT_SESSION",
                     "ALACRITTY_WINDOW_ID", "WEZTERM_PANE"):
            environ.pop(mark, None)  # the terminal is this one
        if rewraps:
            environ["TERM_PROGRAM"] = "tmux"
        # A terminal's size is its own (the ioctl below): pytest-xdist's
        # workers export COLUMNS=80 and LINES=24, which rich would believe.
        environ.pop("COLUMNS", None)
        environ.pop("LINES", None)
        for key, value in (env or {}).items():
            if value is None:
                environ.pop(key, None)
            else:
                environ[key] = value
        self.fd, terminal = os.openpty()
        if columns is not None:
            fcntl.ioctl(terminal, termios.TIOCSWINSZ,
                        struct.pack("HHHH", 40, columns, 0, 0))
        # Not pty.fork(): forking this process (pytest-xdist's worker has
        # threads) is what Python 3.12 warns may deadlock. subprocess runs
        # no Python in the child, and `setsid --ctty` makes the terminal
        # acor's controlling one in a session of its own, as forkpty does.
        self._process = subprocess.Popen(
            [SETSID, "--ctty", ACOR_SCRIPT, *args], stdin=terminal,
            stdout=terminal, stderr=terminal, cwd=project.root, env=environ)
        os.close(terminal)
        self.pid = self._process.pid
        self.seen = b""
        self.columns = columns or 80
        self.rewraps = rewraps
        self.resizes = []  # (offset in seen, new width)

    def resize(self, columns: int) -> None:
        """The window made ``columns`` wide, as a terminal emulator does
        it: the new size set on the terminal, SIGWINCH to the process
        group in front (the kernel sends it too), and what was already
        on the screen rewrapped (see :func:`wrapped_screen`)."""
        while select.select([self.fd], [], [], 0)[0]:
            try:
                chunk = os.read(self.fd, 65536)  # drawn before the resize
            except OSError:  # EIO: acor has ended
                break
            if not chunk:
                break
            self.seen += chunk
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ,
                    struct.pack("HHHH", 40, columns, 0, 0))
        os.killpg(os.tcgetpgrp(self.fd), signal.SIGWINCH)
        self.resizes.append((len(self.seen), columns))

    def expect(self, text: str, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while text.encode() not in self.seen:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"never saw {text!r} in {self.seen!r}")
            if not self._read(left):
                raise AssertionError(f"ended before {text!r}: {self.seen!r}")
        return self.seen.decode(errors="replace")

    def wait(self, done, timeout: float = 30) -> None:
        """Read until ``done(seen)`` holds for what was written."""
        deadline = time.monotonic() + timeout
        while not done(self.seen):
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"never came: {self.seen!r}")
            if not self._read(left):
                raise AssertionError(f"ended first: {self.seen!r}")

    def echo_off(self, timeout: float = 30) -> None:
        """Wait until the terminal no longer echoes what is typed (a
        hidden prompt turns echo off after writing its text)."""
        deadline = time.monotonic() + timeout
        while termios.tcgetattr(self.fd)[3] & termios.ECHO:
            if time.monotonic() >= deadline:
                raise AssertionError(f"echo never went off: {self.seen!r}")
            self._read(0.01)

    def type(self, line: str) -> None:
        os.write(self.fd, line.encode() + b"\r")

    def prompted(self, prompt: str, timeout: float = 30) -> None:
        """Wait until the last thing written is ``prompt``: a person types
        after the question, not ahead of it (typed ahead, the answer's
        echo lands before the prompt)."""
        deadline = time.monotonic() + timeout
        while not self.plain.endswith(prompt):
            left = deadline - time.monotonic()
            if left <= 0 or not self._read(min(left, 0.1)):
                raise AssertionError(f"never prompted {prompt!r}: "
                                     f"{self.seen!r}")

    def eof(self) -> None:
        """Ctrl-D at the start of a line: the end of the input."""
        os.write(self.fd, b"\x04")

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return True
        try:
            chunk = os.read(self.fd, 65536)
        except OSError:  # EIO: the other side closed
            return False
        self.seen += chunk
        return bool(chunk)

    def finish(self, timeout: float = 30) -> int:
        """Read to the end; acor's exit code."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self._read(0.2):
                break  # the terminal closed: acor has ended
            # Reaped through Popen, never os.waitpid: a Popen that never
            # saw its child end reaps its pid later, whoever has it then.
            code = self._process.poll()
            if code is not None:
                while self._read(0.05):
                    pass
                os.close(self.fd)
                return code
        while time.monotonic() < deadline:
            code = self._process.poll()
            if code is not None:
                os.close(self.fd)
                return code
            time.sleep(0.05)
        self._process.kill()
        self._process.wait()
        raise AssertionError(f"acor did not end: {self.seen!r}")

    @property
    def text(self) -> str:
        return self.seen.decode(errors="replace")

    @property
    def screen(self) -> list:
        """The lines a person sees at the end, scrollback included: the
        text with carriage returns, cursor-up and erase-line obeyed (what
        rich's live display redraws with), colours dropped."""
        return screen_lines(self.text)

    @property
    def rows(self) -> list:
        """The rows a person sees at the end on a terminal of this width
        that wraps long lines (and rewraps or cuts them at each
        :meth:`resize`), colours dropped."""
        ends = [offset for offset, _ in self.resizes[1:]] + [len(self.seen)]
        resizes = [(made_for_old_width(self.seen[:end], offset, width), width)
                   for (offset, width), end in zip(self.resizes, ends)]
        return wrapped_screen(self.seen, self.columns, resizes,
                              self.rewraps)

    @property
    def plain(self) -> str:
        """What was written, without escape sequences (colours, cursor
        moves) and with CR LF as LF."""
        text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07", "",
                      self.text)
        return text.replace("\r\n", "\n")
