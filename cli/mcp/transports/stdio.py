"""``acor mcp`` over stdio: from the client's first line to the last.

Claude Code, Claude Desktop, Cursor and other agent clients start ``acor
mcp`` and speak the Model Context Protocol on its stdin and stdout. This
module imports only the standard library (the MCP SDK is an optional
extra, ``mcp``, see the README, and takes about 0.9 s to import): it takes
over stdin and stdout, reads the client's opening request while the SDK
loads in a background thread, and answers it at once when it is a
handshake :mod:`acor.cli.mcp.handshake` knows. Then it hands the wire and
that opening to the SDK's server (:mod:`acor.cli.mcp.transports.stdio_streams`),
which replays the request, so the SDK's connection state is exactly what it
would have been, and drops the SDK's own answer to it. The click command
is :mod:`acor.cli.commands.mcp`.

Start-up, in order: check the extra is there (else an error on stderr,
exit 2); move stdin and stdout aside (stdout belongs to JSON-RPC); start
importing the SDK; load the registry and check ``--tools`` (an error on
stderr, exit 2); answer the opening request; serve.
"""

import fcntl
import importlib
import json
import os
import select
import stat
import sys
import threading
from types import ModuleType

from acor import exitcodes
from acor.events import Error

from acor.cli.mcp.handshake import Opening, early_answer
from acor.cli.mcp.start import INSTALL, fail, sdk_problem, start_problem
from acor.cli.mcp.tools import Catalog
from acor.cli.run.warm import WarmStarter

EARLY_WAIT = 0.2  # seconds to wait for the opening request before importing


def serve(only: set[str] | None, timeout: float | None,
          config_path: str | None = None, key: str | None = None) -> int:
    """Serve over stdio until the client closes stdin (0) or a signal
    stops us (130). ``key``: ``ACOR_MCP_KEY`` as the command took it from
    the environment (:mod:`acor.cli.run.own_secrets`)."""
    problem = sdk_problem()
    if problem is not None:
        return fail(problem)
    wire = Wire.claim()
    loader = SdkLoader()
    catalog = Catalog.of_project(config_path, only)
    problem = start_problem(catalog, key)
    if problem is not None:
        return fail(problem)
    # A client sends its opening request as soon as it has started us, so
    # it is usually waiting already: answer it before the SDK import starts
    # competing for the interpreter. A client that waits gets the import
    # started meanwhile.
    waiting = wire.readable(timeout=EARLY_WAIT)
    if not waiting:
        loader.start()
    opening = open_session(wire)
    if opening is None:
        return exitcodes.OK  # the client left without a word
    if waiting:
        loader.start()
    try:
        streams = loader.result()
    except ImportError as exc:
        return fail(Error(f"The MCP SDK failed to import: {exc}",
                          "E_MCP_MISSING", f"python: {sys.executable}",
                          f"Reinstall it: `{INSTALL}`."))
    # Started now, from this thread, once the client has its answer: every
    # call of a Python tool then forks from it (see acor.cli.run.warm).
    warm = WarmStarter()
    try:
        code: int = streams.serve_stdio(catalog, wire, opening,
                                        timeout=timeout, warm=warm, key=key)
        return code
    finally:
        warm.close()


class SdkLoader(threading.Thread):
    """Imports :mod:`acor.cli.mcp.transports.stdio_streams` (and with it
    the SDK) in the background: the one import that waits, so that the
    first answer need not."""

    def __init__(self) -> None:
        super().__init__(name="acor-mcp-import", daemon=True)
        self.module: ModuleType | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.module = importlib.import_module(
                "acor.cli.mcp.transports.stdio_streams")
        except BaseException as exc:  # result() raises it in the main thread
            self.error = exc

    def result(self) -> ModuleType:
        self.join()
        if self.error is not None:
            raise self.error
        assert self.module is not None  # run() set one or the other
        return self.module


class Wire:
    """The JSON-RPC stream: the process's stdin and stdout, moved to private
    descriptors.

    fd 0 then reads /dev/null and fd 1 writes to stderr, so a stray
    ``print``, a library's warning or a child that inherits them can neither
    consume a request nor corrupt the stream: stdout belongs to JSON-RPC.
    """

    def __init__(self, in_fd: int, out_fd: int) -> None:
        self.in_fd = in_fd
        self.out_fd = out_fd
        self._buffer = bytearray()
        self._eof = False
        # The writer thread sends the server's messages; the reader thread
        # answers lines that are not JSON-RPC at all. One message at a time.
        self._write_lock = threading.Lock()
        # A socket or a file does not promise what a pipe does of a write
        # no larger than PIPE_BUF (see try_write).
        try:
            self._out_is_pipe = stat.S_ISFIFO(os.fstat(out_fd).st_mode)
        except OSError:
            self._out_is_pipe = False

    @classmethod
    def claim(cls) -> "Wire":
        # Above 2 and close-on-exec: a tool never inherits the client's pipes.
        in_fd = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
        out_fd = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
        sys.stdout.flush()
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        os.dup2(2, 1)
        return cls(in_fd, out_fd)

    def readable(self, timeout: float) -> bool:
        """Whether a read would not block, waiting up to ``timeout`` s."""
        if self._buffer or self._eof:
            return True
        return bool(select.select([self.in_fd], [], [], timeout)[0])

    def read_line(self) -> bytes | None:
        """The next line without its end, or None at end of input. Blocks;
        called by one thread at a time (first the main thread, then the
        reader thread of :mod:`acor.cli.mcp.transports.stdio_streams`)."""
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line = bytes(self._buffer[:end])
                del self._buffer[:end + 1]
                return line.rstrip(b"\r")
            if self._eof:
                if not self._buffer:
                    return None
                line = bytes(self._buffer)
                self._buffer.clear()
                return line
            chunk = os.read(self.in_fd, 1 << 16)
            if chunk:
                self._buffer += chunk
            else:
                self._eof = True

    def try_write(self, data: bytes) -> bool:
        """Write ``data`` now if that cannot block, from the event loop:
        a message no larger than PIPE_BUF to a pipe that has room for it
        (a pipe reports writable with at least that much free), while no
        other thread is writing. False: nothing written, use :meth:`write`
        from a worker thread."""
        if len(data) > select.PIPE_BUF or not self._write_lock.acquire(
                blocking=False):
            return False
        try:
            if not self._out_is_pipe or not select.select(
                    [], [self.out_fd], [], 0)[1]:
                return False
            view = memoryview(data)
            while view:  # one write, all of it, for a pipe with room
                view = view[os.write(self.out_fd, view):]
            return True
        finally:
            self._write_lock.release()

    def write(self, data: bytes) -> None:
        """Write all of ``data`` (a whole message and its newline)."""
        view = memoryview(data)
        with self._write_lock:
            while view:
                view = view[os.write(self.out_fd, view):]


def open_session(wire: Wire) -> Opening | None:
    """Read the first non-blank line; answer it now if it is a handshake we
    know. None when the client closed stdin without a word."""
    line = wire.read_line()
    while line is not None and not line.strip():
        line = wire.read_line()
    if line is None:
        return None
    request_id, answer = early_answer(line)
    if answer is not None:
        wire.write(json.dumps({"jsonrpc": "2.0", "id": request_id,
                               "result": answer},
                              separators=(",", ":")).encode() + b"\n")
    return Opening(line, request_id, answer)
