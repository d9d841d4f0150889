"""``acor mcp`` before the MCP SDK is imported: the wire and the first answer.

An agent client gives a server about 1.5 s to answer its first request, and
importing the SDK alone takes about 0.9 s here. So this module, which imports
only the standard library, takes over stdin and stdout, reads the client's
opening request while the SDK loads in a background thread, and answers it
at once when it is the handshake every client opens with: ``initialize``
(protocol versions up to 2025-11-25) or ``server/discover`` (2026-07-28).
:mod:`cli.mcp_app` later replays that request into the SDK's server, so the
SDK's connection state is exactly what it would have been, and drops the
SDK's own answer to it (reporting on stderr if it ever differs from ours;
``tests/test_mcp.py`` checks they are equal). Anything else, or a version
this module does not know, is left for the SDK to answer.
"""

import json
import os
import select
import stat
import sys
import threading

from acor import __version__

from acor.cli.mcp.versions import HANDSHAKE_VERSIONS, MODERN_VERSIONS

SERVER_NAME = "acor"
SERVER_TITLE = "acor tools"
INSTRUCTIONS = (
    "Each tool runs a local command-line program through acor. A result "
    "whose text starts with 'Input needed' asks for more arguments: call the "
    "same tool again with them; when it says only a person may answer, ask "
    "the user and never answer it yourself. Errors carry a code, a recovery "
    "and often the next call to make.")

_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
_CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
_SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
# What the SDK's low-level server advertises with its tools and resources
# handlers (acor.cli.mcp.resources).
_CAPABILITIES = {"tools": {"listChanged": False},
                 "resources": {"subscribe": False, "listChanged": False}}
_SERVER_INFO = {"name": SERVER_NAME, "title": SERVER_TITLE,
                "version": __version__}


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
        import fcntl
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
        reader thread of :mod:`cli.mcp_app`)."""
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


class Opening:
    """The client's first line, and the answer already sent for it (or
    None: the SDK answers it)."""

    __slots__ = ("line", "request_id", "answer")

    def __init__(self, line: bytes, request_id=None, answer=None) -> None:
        self.line = line
        self.request_id = request_id
        self.answer = answer


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


def early_answer(line: bytes) -> tuple:
    """(request id, result) for a well-formed ``initialize`` or
    ``server/discover``, else (None, None). Conservative on purpose: any
    doubt about the request's shape leaves it to the SDK."""
    try:
        message = json.loads(line)
    except ValueError:
        return None, None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return None, None
    request_id = message.get("id")
    params = message.get("params")
    if isinstance(request_id, bool) or not isinstance(request_id, (int, str)) \
            or not isinstance(params, dict):
        return None, None
    method = message.get("method")
    answer = _initialize_result(params) if method == "initialize" else \
        _discover_result(params) if method == "server/discover" else None
    return (request_id, answer) if answer is not None else (None, None)


def _initialize_result(params: dict) -> dict | None:
    version = params.get("protocolVersion")
    info = params.get("clientInfo")
    if not (isinstance(version, str) and isinstance(params.get("capabilities"),
                                                    dict)
            and isinstance(info, dict) and isinstance(info.get("name"), str)
            and isinstance(info.get("version"), str)
            and _plain_meta(params)):
        return None
    # The SDK's rule: the client's version if it speaks it, else its latest.
    negotiated = version if version in HANDSHAKE_VERSIONS \
        else HANDSHAKE_VERSIONS[-1]
    return {"protocolVersion": negotiated, "capabilities": _CAPABILITIES,
            "serverInfo": dict(_SERVER_INFO), "instructions": INSTRUCTIONS}


def _plain_meta(params: dict) -> bool:
    """An ``initialize`` carrying the 2026 envelope is one the SDK refuses
    or routes differently: leave it to the SDK."""
    meta = params.get("_meta")
    return meta is None or (isinstance(meta, dict) and
                            _VERSION_KEY not in meta)


def _discover_result(params: dict) -> dict | None:
    meta = params.get("_meta")
    if not (isinstance(meta, dict) and meta.get(_VERSION_KEY) in
            MODERN_VERSIONS and isinstance(meta.get(_CAPABILITIES_KEY), dict)
            and isinstance(meta.get(_CLIENT_INFO_KEY, {}), dict)
            and set(params) <= {"_meta"}):
        return None
    return {"supportedVersions": list(MODERN_VERSIONS),
            "capabilities": _CAPABILITIES, "instructions": INSTRUCTIONS,
            "resultType": "complete", "ttlMs": 0, "cacheScope": "private",
            "_meta": {_SERVER_INFO_KEY: dict(_SERVER_INFO)}}
