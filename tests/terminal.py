"""A real pseudo-terminal running `acor`, driven as a person would: what
the prompt and Ctrl-C tests type into (the `pty` module; nothing mocked)."""

import os
import pty
import select
import signal
import time

from conftest import ACOR_SCRIPT


class Terminal:
    """`acor ARGS` on a real pseudo-terminal, driven as a person would."""

    def __init__(self, project, *args):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: acor on the terminal
            os.chdir(project.root)
            os.execve(ACOR_SCRIPT, [ACOR_SCRIPT, *args], project.env)
        self.seen = b""

    def expect(self, text: str, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while text.encode() not in self.seen:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"never saw {text!r} in {self.seen!r}")
            if not self._read(left):
                raise AssertionError(f"ended before {text!r}: {self.seen!r}")
        return self.seen.decode(errors="replace")

    def echo_off(self, timeout: float = 30) -> None:
        """Wait until the terminal no longer echoes what is typed (a
        hidden prompt turns echo off after writing its text)."""
        import termios
        deadline = time.monotonic() + timeout
        while termios.tcgetattr(self.fd)[3] & termios.ECHO:
            if time.monotonic() >= deadline:
                raise AssertionError(f"echo never went off: {self.seen!r}")
            self._read(0.01)

    def type(self, line: str) -> None:
        os.write(self.fd, line.encode() + b"\r")

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
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                while self._read(0.05):
                    pass
                os.close(self.fd)
                return os.waitstatus_to_exitcode(status)
        while time.monotonic() < deadline:
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                os.close(self.fd)
                return os.waitstatus_to_exitcode(status)
            time.sleep(0.05)
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        raise AssertionError(f"acor did not end: {self.seen!r}")

    @property
    def text(self) -> str:
        return self.seen.decode(errors="replace")
