"""The warm start: Python tools forked from a server that has acor's
library loaded, instead of a fresh interpreter per run.

A long-lived caller that runs many tools (``acor mcp``, a test session
using ``acor_run``) makes one :class:`WarmStarter`; :func:`acor.cli.run.
launch.run` then starts each eligible tool through it, and gets a
:class:`WarmProcess`, which behaves as :class:`acor.cli.run.process.
ToolProcess` does: the same pipes, a group of its own to signal, its exit
code, and nothing left behind when it is reaped. The server side is
:mod:`acor.cli.run.forkserver`.

A tool is eligible when its entry is a Python file run by this interpreter
and its manifest does not say ``"warm": false``, and when the call's
environment sets no ``PYTHON*`` variable other than the server's (those
shape an interpreter's start-up, which a fork does not redo). Any other
tool is executed by a process the server forks (:meth:`WarmStarter.
spawn` with ``program=True``): a fresh start, with the same supervision,
so that a daemon a shell tool leaves is ended as a Python tool's is. Only
when the server cannot start does a run start on its own.
"""

from __future__ import annotations

import errno
import marshal
import os
import select
import signal
import socket
import subprocess
import sys
import threading

from acor.cli.run.own_secrets import without_secrets
from acor.cli.run.process import kill_group, widen_pipe

TYPE_CHECKING = False  # typing costs every run ~3 ms: only mypy
if TYPE_CHECKING:
    from typing import Any, BinaryIO, Mapping, Optional, Sequence

# Set for the server by the starter; a tool's own env decides its own.
_SERVER_ENV = {"PYTHONUNBUFFERED": "1", "PYTHONIOENCODING": "utf-8"}


class WarmStartUnavailable(Exception):
    """The server is gone or refused the call: start the tool cold."""


class WarmStarter:
    """One fork server, started now, ended by :meth:`close` (or with this
    process). Thread-safe: concurrent runs share it."""

    def __init__(self, env: Optional[Mapping[str, str]] = None) -> None:
        from acor.cli.run.forkserver import BOOT, FD_VAR
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # Every warm tool is forked from the server: it holds none of
        # acor's secrets, so none can be inherited from its memory.
        base = without_secrets(os.environ if env is None else env)
        base.update(_SERVER_ENV)
        # What a forked tool's process starts with: a call sends only what
        # its environment changes of it.
        self._server_env = dict(base)
        base[FD_VAR] = str(theirs.fileno())
        self._python_env = _python_vars(base, exclude=(FD_VAR,))
        self._server = subprocess.Popen(
            # -P: no "" (the directory) first on its path, so that it loads
            # acor from where this acor came from, whatever it runs in.
            [sys.executable, "-u", "-P", "-c", BOOT], cwd="/",
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, env=base, pass_fds=(theirs.fileno(),))
        theirs.close()
        self._control = mine
        self._lock = threading.Lock()

    def eligible(self, argv: Sequence[str], env: Mapping[str, str]) -> bool:
        """Whether ``argv`` (the tool's full command) can start warm with
        ``env`` (its environment)."""
        return (len(argv) >= 3 and argv[0] == sys.executable and
                argv[1] == "-u" and argv[2].endswith(".py") and
                self._server.poll() is None and
                _python_vars(env) == self._python_env)

    def serving(self) -> bool:
        """Whether the server is there to start a call."""
        return self._server.poll() is None

    def spawn(self, argv: Sequence[str], *, cwd: Optional[str],
              env: Mapping[str, str], pass_fds: Sequence[int] = (),
              inherit_stdin: bool = False,
              sandbox: Optional[dict[str, Any]] = None,
              program: bool = False) -> WarmProcess:
        """Start ``argv`` forked from the server: a Python entry (eligible,
        see :meth:`eligible`), or with ``program`` any command, executed.
        Raises :class:`WarmStartUnavailable` if the server cannot, and
        what a spawn raises (:class:`OSError`) if the command cannot
        start."""
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        widen_pipe(out_r)
        stdin = 0 if inherit_stdin else os.open(os.devnull, os.O_RDONLY)
        call, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        # The environment as what differs from the server's (a few
        # variables of dozens): the server and the forked process then
        # unmarshal and set only those, and every string they make costs
        # them a page copied since the fork.
        server_env = self._server_env
        request = {"argv": list(argv if program else argv[2:]),
                   "exec": program,
                   "env": {key: value for key, value in env.items()
                           if server_env.get(key) != value},
                   "unset": [key for key in server_env if key not in env],
                   "cwd": os.path.abspath(cwd or os.getcwd()),
                   "pass_fds": list(pass_fds)}
        if sandbox is not None:
            request["sandbox"] = sandbox
        try:
            with self._lock:
                socket.send_fds(self._control, [marshal.dumps(request)],
                                [theirs.fileno(), stdin, out_w, err_w,
                                 *pass_fds])
        except OSError as exc:
            for fd in (out_r, err_r):
                os.close(fd)
            call.close()
            raise WarmStartUnavailable(str(exc)) from None
        finally:
            for fd in (out_w, err_w) + (() if inherit_stdin else (stdin,)):
                os.close(fd)
            theirs.close()
        try:
            return WarmProcess(call, out_r, err_r)
        except (WarmStartUnavailable, OSError):
            for fd in (out_r, err_r):
                os.close(fd)
            call.close()
            raise

    def close(self) -> None:
        """End the server (its running tools keep their supervisors)."""
        self._control.close()
        try:
            self._server.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self._server.kill()
            self._server.wait()


class _Pipes:
    """What the relay reads of a process: ``stdout`` and ``stderr``, and
    ``poll()``, as on a Popen."""

    def __init__(self, owner: WarmProcess, out_fd: int, err_fd: int) -> None:
        self.stdout: BinaryIO = os.fdopen(out_fd, "rb", buffering=0)
        self.stderr: BinaryIO = os.fdopen(err_fd, "rb", buffering=0)
        self._owner = owner

    def poll(self) -> Optional[int]:
        return self._owner.poll()


class WarmProcess:
    """A tool forked by the server: what :class:`ToolProcess` offers, its
    exit code reported by its supervisor over the call's socket."""

    def __init__(self, call: socket.socket, out_fd: int, err_fd: int) -> None:
        self._call = call
        self._buffer = b""
        self.returncode: Optional[int] = None
        self._reaped = False
        line = self._line(timeout=10.0)
        if line is not None and line.startswith(b"error "):
            raise _start_error(line[6:])
        if line is None or not line.startswith(b"pid "):
            raise WarmStartUnavailable("the fork server did not start it")
        self.pid = int(line[4:])
        self.proc = _Pipes(self, out_fd, err_fd)

    def _line(self, timeout: Optional[float]) -> Optional[bytes]:
        """The supervisor's next line; None on timeout or when it is gone."""
        while b"\n" not in self._buffer:
            ready, _, _ = select.select([self._call], [], [], timeout)
            if not ready:
                return None
            try:
                data = self._call.recv(256)
            except OSError:
                data = b""
            if not data:
                return None
            self._buffer += data
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def poll(self) -> Optional[int]:
        if self.returncode is None:
            self._read_exit(0)
        return self.returncode

    def _read_exit(self, timeout: Optional[float]) -> None:
        line = self._line(timeout)
        if line is not None and line.startswith(b"exit "):
            code, _, done = line[5:].partition(b" ")
            self.returncode = int(code)
            self._reaped = done == b"done"  # it left nothing to end
        elif line is None and timeout is None:
            self.returncode = -signal.SIGKILL  # its supervisor is gone

    def kill_group(self, sig: int) -> None:
        kill_group(self.pid, sig)

    def reap(self, grace: float, reap_orphans: bool) -> None:
        """Wait for the tool (``grace`` seconds, then SIGKILL), then have
        its supervisor end whatever it left behind, group and orphans
        alike (the supervisor is their subreaper, whatever
        ``reap_orphans`` says: on this path nothing else would be)."""
        if self.returncode is None:
            self._read_exit(grace)
        if self.returncode is None:
            self.kill_group(signal.SIGKILL)
            self._read_exit(None)
        if not self._reaped:
            self.kill_group(signal.SIGKILL)
            try:
                self._call.sendall(b"reap\n")
            except OSError:
                pass
            self._line(timeout=5.0)  # "done": the orphans are ended
        self._call.close()
        for stream in (self.proc.stdout, self.proc.stderr):
            stream.close()


def _start_error(said: bytes) -> OSError:
    """What a spawn raises, from what the server said of a program that
    could not start."""
    if said == b"sandbox":
        from acor.cli.sandbox.enter import SandboxError
        return SandboxError(1, "the tool's process could not enter its "
                            "sandbox")
    try:
        number = int(said)
    except ValueError:
        number = errno.ENOEXEC
    return OSError(number, os.strerror(number))


def _python_vars(env: Mapping[str, str], exclude: Sequence[str] = ()
                 ) -> dict[str, str]:
    return {key: value for key, value in env.items()
            if key.startswith("PYTHON") and key not in exclude}
