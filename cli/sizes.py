"""Sizes in bytes, from any source (``--max-output``, the config, a
manifest), checked against one range; and the output budget a run gets
when nothing sets one.

Standard library only, and nothing imported: the launcher's hot path
reads ``--max-output`` with it, and the config reader below the output
layer reads ``max_output`` with it.
"""

from __future__ import annotations

DEFAULT_MAX_OUTPUT = 32 * 1024
"""The default budget: 32 KiB is about 8,000 tokens of English text or
code (some 4 bytes a token) and at most about 16,000 for the densest
output (2 bytes a token: hex, JSON punctuation), under the 25,000 tokens
Claude Code allows one MCP result and near its 10,000-token warning."""
MIN_MAX_OUTPUT = 4096      # below this, head, tail and ending cannot fit
MAX_MAX_OUTPUT = 1 << 40   # a limit, not a promise: 1 TiB

_SUFFIXES = (("kib", 10), ("mib", 20), ("gib", 30), ("kb", 10), ("mb", 20),
             ("gb", 30), ("k", 10), ("m", 20), ("g", 30), ("b", 0))


def parse_size(value: object, what: str = "--max-output") -> int:
    """A byte count from ``32768``, ``32k``, ``32KiB``, ``1M``, ``0``
    (no limit). Raises ValueError saying what is wrong."""
    if isinstance(value, bool):
        raise ValueError(f"{what} must be a size in bytes, not {value!r}")
    if isinstance(value, int):
        number = value
    else:
        text = str(value).strip().lower().replace(" ", "")
        scale = 1
        for suffix, shift in _SUFFIXES:
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
