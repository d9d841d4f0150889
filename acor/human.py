"""What only a person gave: the channel that carries human-only arguments
from the launcher to the tool, never on its command line.

A manifest's argument marked ``"x-acor": {"human": true}`` (an approval,
a secret) is never taken from the command line, from ``acor call`` JSON or
from MCP arguments. When a person has answered it, the launcher writes the
answers into a pipe, closes its writing end, passes the reading end to the
tool and names it in ``ACOR_HUMAN_FD``. :meth:`acor.AcorTool.parse_args`
reads it (:func:`take`), once, and gives each value as the argument's
attribute; a value no person gave is None.

The wire form, for tools in other languages (docs/protocol.md): one line
per value, ``NAME=VALUE``, VALUE percent-encoded UTF-8 (the bytes
``A-Z a-z 0-9 - . _ ~`` as they are, every other byte ``%HH``); a boolean
is ``true`` or ``false``, a number its decimal form. At most
:data:`MAX_BYTES` bytes in all. ``acor/share/acor.sh`` reads it with
``acor_human NAME``.
"""

import os
import stat  # loaded with os already: it costs nothing here

TYPE_CHECKING = False  # only mypy: a tool's start does not import typing
if TYPE_CHECKING:
    from typing import Mapping

FD_VAR = "ACOR_HUMAN_FD"
MAX_BYTES = 32 * 1024  # well under a pipe's buffer: the write never blocks
_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                  b"0123456789-._~")

_taken: "dict[str, str] | None" = None


def encode(values: "Mapping[str, object]") -> bytes:
    """``values`` ({name: str, bool, int or float; anything else as its
    ``str()``}) in the wire form."""
    lines = []
    for name, value in values.items():
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, (int, float)):
            text = repr(value)
        else:
            text = str(value)
        data = text.encode("utf-8", "surrogatepass")
        lines.append(name + "=" + "".join(
            chr(b) if b in _SAFE else "%%%02X" % b for b in data))
    blob = ("\n".join(lines) + "\n").encode("ascii") if lines else b""
    if len(blob) > MAX_BYTES:
        raise ValueError(f"the answers are {len(blob)} bytes encoded; at "
                         f"most {MAX_BYTES} can be passed")
    return blob


def decode(data: bytes) -> "dict[str, str]":
    """The wire form read back: {name: text}. Malformed lines are
    skipped (the launcher never writes them)."""
    values: "dict[str, str]" = {}
    for line in data.decode("ascii", "replace").splitlines():
        name, eq, encoded = line.partition("=")
        if not eq or not name:
            continue
        raw = bytearray()
        i = 0
        while i < len(encoded):
            char = encoded[i]
            if char == "%" and i + 2 < len(encoded) and \
                    _is_hex(encoded[i + 1:i + 3]):
                raw.append(int(encoded[i + 1:i + 3], 16))
                i += 3
            else:
                raw += char.encode("ascii", "replace")
                i += 1
        values[name] = raw.decode("utf-8", "replace")
    return values


def _is_hex(text: str) -> bool:
    return len(text) == 2 and all(c in "0123456789abcdefABCDEF"
                                  for c in text)


def pipe(values: "Mapping[str, object]") -> int:
    """For launchers: a pipe holding ``values`` in the wire form, its
    writing end closed; returns the reading end, to pass to the tool and
    name in ``ACOR_HUMAN_FD`` (the launcher closes its copy once the tool
    runs)."""
    blob = encode(values)
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, blob)
    finally:
        os.close(write_end)
    return read_end


def take() -> "dict[str, str]":
    """What a person gave this run, read once from ``ACOR_HUMAN_FD`` and
    the pipe closed ({} when there is none). The variable is removed, so
    programs the tool runs inherit neither it nor the descriptor."""
    global _taken
    value = os.environ.pop(FD_VAR, None)
    if value is not None:
        _taken = _read(value)
    return dict(_taken or {})


def _read(value: str) -> "dict[str, str]":
    try:
        fd = int(value)
        if fd < 3 or not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return {}  # only a pipe is the launcher's: never a terminal
    except (ValueError, OSError):
        return {}
    chunks, size = [], 0
    try:
        os.set_blocking(fd, False)  # its writing end is closed: no wait
        while size <= MAX_BYTES:
            chunk = os.read(fd, MAX_BYTES + 1)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError:
        pass
    finally:
        try:
            os.close(fd)
        except OSError:
            pass
    data = b"".join(chunks)
    return decode(data) if len(data) <= MAX_BYTES else {}
