"""Framing: how the launcher tells the library's sections from raw stdout.

A tool's stdout carries more than the library writes: raw ``print`` calls,
subprocess output, file contents. Any of it could look like ``## AI
Directive``. So the launcher gives each run a fresh random token and marks
are checked against it; the library marks every section::

    \\x1eacor:<token>\\x1e## Status: Ready
    <body lines, escaped>
    <blank line>
    \\x1eacor:<token>\\x1eend

Only marked sections are sections. Everything else is raw text, relayed as
escaped text in its place. Escaped text can never begin with ``\\x1e``
(:mod:`acor.grammar` escapes such lines), so a marked line cannot come from
data a tool passed to the library, and raw output cannot forge one without
knowing the run's 128-bit token.

The token reaches the tool through an inherited pipe, not the environment:
the launcher writes it into a pipe, closes the writing end and names the
reading end in ``ACOR_FRAME_FD``. The first reader takes it (the library does
so on import) and closes the descriptor, so programs the tool starts later
find an empty pipe or none, and ``/proc/<pid>/environ`` shows only a number.
``ACOR_FRAME_TOKEN`` in the environment is still accepted (tests, other
launchers); the library removes it and scrubs it from the process's initial
environment block.
"""

import os
import stat  # loaded with os already: it costs nothing here


ENV_VAR = "ACOR_FRAME_TOKEN"
FD_VAR = "ACOR_FRAME_FD"
TOKEN_BYTES = 64  # a token is 32 hex digits; more than that is not one
# Every framed line begins so: the one definition of the mark.
FRAME_PREFIX = b"\x1eacor:"


def mark(token: str) -> str:
    """The mark that starts every framed line of the run with ``token``."""
    return "\x1eacor:" + token + "\x1e"


def inherited_token() -> str | None:
    """The token the launcher passed, read once and removed from the
    environment so that programs the tool runs cannot frame sections."""
    return _inherited or None


def _scrub_initial_environment(token: str) -> None:
    """Overwrite the token in the environment block the process started
    with. ``os.environ.pop`` unsets the variable, but Linux still shows the
    original block in ``/proc/<pid>/environ`` to every process of the same
    user: a program the tool runs could read its parent's token there.
    Best effort: nothing to do off Linux, or if the kernel refuses."""
    try:
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        start, end = int(fields[47]), int(fields[48])  # env_start, env_end
        with open("/proc/self/mem", "r+b", buffering=0) as mem:
            mem.seek(start)
            block = mem.read(end - start)
            entry = f"{ENV_VAR}={token}".encode()
            at = block.find(entry)
            while at >= 0:
                mem.seek(start + at + len(ENV_VAR) + 1)
                mem.write(b"x" * len(token))
                at = block.find(entry, at + 1)
    except (OSError, ValueError, IndexError):
        pass


def _read_token_fd(value: str) -> str:
    """The token from the pipe named by ``ACOR_FRAME_FD``, and the pipe
    closed. Anything but a readable pipe holding a token gives "" (never a
    block: a descriptor that is a terminal or a file is not ours to read)."""
    try:
        fd = int(value)
        if fd < 3 or not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return ""
    except (ValueError, OSError):
        return ""
    try:
        os.set_blocking(fd, False)
        data = os.read(fd, TOKEN_BYTES + 1)
    except OSError:
        data = b""
    finally:
        try:
            os.close(fd)
        except OSError:
            pass
    token = data.decode("ascii", "replace").strip()
    return token if 0 < len(token) <= TOKEN_BYTES and token.isalnum() else ""


def take_token() -> str:
    """Take the launcher's token, once: from ``ACOR_FRAME_FD``, else from
    ``ACOR_FRAME_TOKEN``. Both variables are removed from the environment so
    that programs the tool runs inherit neither."""
    fd_value = os.environ.pop(FD_VAR, None)
    token = os.environ.pop(ENV_VAR, "")
    if token:
        _scrub_initial_environment(token)
    if fd_value is not None:
        token = _read_token_fd(fd_value) or token
    return token


def token_pipe(token: str) -> int:
    """For launchers: a pipe holding ``token``, its writing end closed.
    Returns the reading end, to pass to the tool (``pass_fds``) and name in
    ``ACOR_FRAME_FD``; the launcher closes its copy once the tool runs."""
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, token.encode("ascii"))
    finally:
        os.close(write_end)
    return read_end


# Taken when the library is first imported (``from acor import AcorTool``),
# before the tool has had a chance to start any program.
_inherited = take_token()


def new_token() -> str:
    """A fresh token for one run (os.urandom: ``secrets`` costs 20 ms)."""
    return os.urandom(16).hex()


def frame(section: str, token: str) -> str:
    """Wrap the text of one rendered section in the run's marks."""
    start = mark(token)
    return f"{start}{section}{start}end\n"


def heartbeat_frame(token: str) -> str:
    return mark(token) + "heartbeat\n"


def truncation_note(dropped_bytes: int, sha256_hex: str) -> str:
    """The marker put in place of data the launcher would not hold."""
    return (f"[acor: truncated {dropped_bytes} bytes, "
            f"sha256 {sha256_hex}]")
