"""Text from tools and repositories, made safe for a terminal or a log.

Anything acor echoes that it did not write itself (a tool's output, a
manifest's field, a file or folder name, a config path, a tool name from
argv) can hold bytes a terminal obeys: ``ESC[2J`` clears the screen, an OSC
sequence retitles the window or plants a hyperlink, U+009B is a one-character
CSI, U+202E reverses what follows, ``\\r`` and backspace overwrite what was
shown, and a line break starts a line that looks like acor's own. Invalid
UTF-8 from argv arrives as lone surrogates, which cannot be written as UTF-8
at all.

    >>> printable("a\\x1b[2Jb\\u202e")
    'a\\\\x1b[2Jb\\\\u202e'
    >>> quote("tools/x\\n## AI Directive")
    "'tools/x\\\\n## AI Directive'"
    >>> strip_terminal("\\x1b]0;pwned\\x07red \\x1b[31mtext\\x1b[0m\\n")
    'red text\\n'

:func:`printable` and :func:`quote` are for one-line messages (every control
made visible, line breaks included); :func:`strip_terminal` is for text
shown as text (the rich view): it keeps line breaks and tabs, removes escape
sequences whole and makes every other control visible. Standard library
only, and only ``re``; the patterns are compiled on first use (``re``
caches them), so importing this module costs next to nothing.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # typing costs every run ~3 ms: only mypy
if TYPE_CHECKING:
    from typing import Any, TypeVar

    from acor.events import Event

    Value = TypeVar("Value")
    AnEvent = TypeVar("AnEvent", bound=Event)

# Every character that moves the cursor, changes the terminal's state or
# the text's direction, or breaks a line, or cannot be encoded as UTF-8:
# C0 and DEL, C1 (U+0080-U+009F: U+009B is CSI, U+009D OSC), the bidi
# controls (marks, embeddings, overrides, isolates), the line and paragraph
# separators, and lone surrogates (invalid UTF-8 decoded with
# surrogateescape).
_NOT_C0 = ("\x7f-\x9f\u061c\u200e\u200f\u2028\u2029"
           "\u202a-\u202e\u2066-\u2069\ud800-\udfff")
_UNSAFE_RE = f"[\x00-\x1f{_NOT_C0}]"
# The same, minus line feed and tab, which text shown as text keeps.
_UNSAFE_IN_TEXT_RE = f"[\x00-\x08\x0b-\x1f{_NOT_C0}]"
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}

# What a terminal would take as one escape sequence, removed whole:
# CSI (ESC [ or U+009B): parameters, intermediates, one final byte.
_CSI_RE = "(?:\x1b\\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]"
# OSC, DCS, SOS, PM, APC (7-bit and 8-bit openers), up to BEL or ST on
# the same line: cleaning stays line by line, so text cleaned in pieces
# of whole lines (however a stream was read) reads the same as cleaned
# whole.
_STRING_RE = ("(?:\x1b[\\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\n]*"
              "(?:\x07|\x1b\\\\|\x9c)")
_STRING_OPENERS = ("\x1b]", "\x1bP", "\x1bX", "\x1b^", "\x1b_")
_SEQUENCE_RE = (
    _CSI_RE + "|" + _STRING_RE +
    # Any other escape: ESC c (reset), ESC 7, ESC ( B, ... An opener left
    # unterminated (ESC ] with no BEL or ST) loses only its ESC and the
    # next character; what follows is shown as text.
    "|\x1b[\x20-\x2f]*[\x30-\x7e]")


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named:
        return named
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8, as the byte
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every control character, bidi control, line or
    paragraph separator and lone surrogate written as a visible escape
    (``\\x1b``, ``\\n``, ``\\u202e``; a byte that was not UTF-8 as
    ``\\xff``). The result is one line and always valid UTF-8; text without
    such characters comes back as it is."""
    text = str(text)
    if re.search(_UNSAFE_RE, text) is None:  # the common case
        return text
    return re.sub(_UNSAFE_RE, _escape, text)


def quote(text: str) -> str:
    """``text`` in single quotes for a message, as :func:`printable` makes
    it, with backslashes and quotes escaped too so that the quoted form
    reads back unambiguously (``'it\\'s'``)."""
    text = str(text).replace("\\", "\\\\").replace("'", "\\'")
    return f"'{printable(text)}'"


# The bytes of ASCII text strip_terminal changes: C0 but tab and line feed,
# and DEL.
_ASCII_UNSAFE = bytes(c for c in range(0x20) if c not in (9, 10)) + b"\x7f"


def _plain(text: str) -> bool:
    """Whether ``text`` has nothing :func:`strip_terminal` would change.
    Text is relayed by the megabyte: ASCII text (the usual case) is
    checked with ``bytes.translate``, five times faster than the regex."""
    if text.isascii():
        data = text.encode("ascii")
        return len(data.translate(None, _ASCII_UNSAFE)) == len(data)
    return re.search(_UNSAFE_IN_TEXT_RE, text) is None


def strip_terminal(text: str) -> str:
    """``text`` for display as text: escape sequences (CSI, colours, OSC
    titles and hyperlinks, DCS, ...) removed whole, a carriage return (which
    would overwrite the line) turned into a line break, and every other
    control, bidi control, separator and lone surrogate made visible as
    :func:`printable` does. Line breaks and tabs are kept. Every rule is
    line by line, so text cleaned a line at a time reads the same."""
    text = str(text)
    if _plain(text):
        return text
    text = re.sub(_SEQUENCE_RE, "", text)
    # A CR at the very end overwrites nothing (it is a CR LF's, cut at
    # the line end by whoever split the text into lines).
    text = text.replace("\r\n", "\n").rstrip("\r").replace("\r", "\n")
    return re.sub(_UNSAFE_IN_TEXT_RE, _escape, text)


# Select Graphic Rendition: colours and type styles, and nothing else (no
# cursor movement, no erasing, no mode): ESC [ digits, ";" or ":", "m".
_SGR_RE = "\x1b\\[[0-9;:]{0,64}m"


# SGR parameters a person's view drops: blink (5, 6), which flashes a
# tool's text, and conceal (8), which hides it.
_DROPPED_SGR = frozenset({5, 6, 8})
# How many parameters follow an extended colour's kind (after 38
# foreground or 48 background): 5 (palette) one, 2 (RGB) three.
_EXTENDED_ARGS = {5: 1, 2: 3}


def _shown_sgr(sequence: str) -> str:
    """An SGR sequence without blink and conceal (``ESC [ 5 ; 31 m`` is
    ``ESC [ 31 m``), its parameters read exactly as rich reads them
    (:meth:`rich.text.Text.from_ansi`: a parameter that is not digits is
    ignored, "" is 0, a number is at most 255; 38 and 48 take their kind
    and its values), so what is dropped is what rich would show; nothing
    at all when only they were set (an empty SGR would reset every
    style)."""
    codes = [min(255, int(param)) if param else 0
             for param in sequence[2:-1].split(";")
             if param.isdigit() or param == ""]
    if not _DROPPED_SGR.intersection(codes):
        return sequence
    kept: list[int] = []
    index = 0
    while index < len(codes):
        code = codes[index]
        if code in (38, 48):
            kind = codes[index + 1] if index + 1 < len(codes) else None
            taken = 2 + _EXTENDED_ARGS.get(kind, 0) if kind is not None \
                else 1
            kept += codes[index:index + taken]
            index += taken
            continue
        if code not in _DROPPED_SGR:
            kept.append(code)
        index += 1
    return f"\x1b[{';'.join(map(str, kept))}m" if kept else ""


def keep_colours(text: str) -> str:
    """:func:`strip_terminal`, but a tool's colours (SGR sequences, and
    only those, less blink and conceal) are kept, for a person's terminal
    that shows them. Every other sequence goes whole and every other
    control is made visible, as :func:`strip_terminal` does."""
    text = str(text)
    if "\x1b[" not in text:
        return strip_terminal(text)
    pieces = re.split(f"({_SGR_RE})", text)
    last = len(pieces) - 1
    return "".join(_shown_sgr(piece) if index % 2 else
                   _text_between(piece, index == last)
                   for index, piece in enumerate(pieces))


def _text_between(piece: str, last: bool) -> str:
    """Text between colour sequences, cleaned: a CR at its end is a line
    break, as in the whole text (``50%\\r`` then a colour, then ``60%``),
    unless it ends the text (:func:`strip_terminal` drops that one)."""
    body = piece.rstrip("\r")
    if last or body == piece:
        return strip_terminal(piece)
    return strip_terminal(body) + "\n" * (len(piece) - len(body))


# --- what reaches an agent ---------------------------------------------------
#
# Every string of every event acor relays (Markdown, JSON lines, MCP text,
# structuredContent, _meta, progress notifications) goes through
# :func:`clean_event` on its way out: an agent's terminal, a client's log
# view or a model's context window then gets no byte a terminal obeys, while
# the whole-output file keeps what the tool wrote.

def clean_value(value: Value) -> Value:
    """``value`` (a string, or a JSON-like value of any depth) with every
    string in it, keys included, as :func:`strip_terminal` makes it. The
    same object comes back when nothing in it needed cleaning, so the
    common case copies nothing; iterative, so no depth exhausts the
    stack. (A tuple in a value that needed cleaning comes back a list:
    the same JSON array.)"""
    if isinstance(value, str):
        text: Value = _cleaned_copy(value)  # strip_terminal's str
        return text
    if not isinstance(value, (dict, list, tuple)):
        return value
    # First a walk that only looks: most values have nothing to clean.
    stack: list[object] = [value]
    dirty = False
    while stack and not dirty:
        item = stack.pop()
        if isinstance(item, str):
            dirty = not _plain(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    if not dirty:
        return value
    copy: Value = _cleaned_copy(value)
    return copy


_EXIT = object()


def _cleaned_copy(value: object) -> Any:
    """A copy of ``value`` with every string cleaned (see
    :func:`clean_value`); a container met again inside itself is copied
    once more no deeper than it already is (cycles end as ``None``)."""
    root: list[object] = [None]
    # (item, the container its copy goes in, its key there); an _EXIT
    # entry carries the id of the container being left instead.
    stack: list[tuple[object, Any, object]] = [(value, root, 0)]
    path: set[object] = set()
    while stack:
        item, parent, key = stack.pop()
        if item is _EXIT:
            path.discard(parent)
            continue
        clean: object
        if isinstance(item, str):
            clean = strip_terminal(item)
        elif isinstance(item, (dict, list, tuple)):
            if id(item) in path:
                clean = None
            else:
                path.add(id(item))
                stack.append((_EXIT, id(item), None))
                if isinstance(item, dict):
                    copied: dict[object, object] = {}
                    for k, v in list(item.items()):
                        k = strip_terminal(k) if isinstance(k, str) else k
                        copied[k] = None  # keeps the key order
                        stack.append((v, copied, k))
                    clean = copied
                else:
                    items: list[object] = [None] * len(item)
                    for i, v in enumerate(item):
                        stack.append((v, items, i))
                    clean = items
        else:
            clean = item
        parent[key] = clean
    return root[0]


_SLOTS: dict[type, list[str]] = {}  # event class -> its fields' names


def _slots(kind: type) -> list[str]:
    names = _SLOTS.get(kind)
    if names is None:
        names = _SLOTS[kind] = [name for klass in kind.__mro__
                                for name in getattr(klass, "__slots__", ())]
    return names


def clean_event(event: AnEvent) -> AnEvent:
    """``event`` with every string it holds made safe for an agent, as
    :func:`clean_value` makes it: a copy of the same type when anything
    changed, else the event itself. A JSON block left as its text
    (``acor.layout.RawJSON``, which the output budget summarises) is left
    as it is: cleaning JSON text as text could break its escapes."""
    changed: dict[str, object] = {}
    for name in _slots(type(event)):
        value = getattr(event, name, None)
        if type(value) is str:
            if _plain(value):
                continue
        elif isinstance(value, str) or value is None or \
                isinstance(value, (int, float)):
            continue  # a number, nothing, or RawJSON (see above)
        clean = clean_value(value)
        if clean is not value:
            changed[name] = clean
    if not changed:
        return event
    copy = object.__new__(type(event))
    for name in _slots(type(event)):
        object.__setattr__(copy, name, changed.get(
            name, getattr(event, name, None)))
    return copy


class StreamCleaner:
    """:func:`strip_terminal` for text that arrives in pieces (a tool's
    stderr, read as it comes): an escape sequence or a CR LF cut between
    two reads is held back until the next piece completes it, so it is
    removed whole instead of leaving its tail on show. What is held is at
    most :attr:`HOLD` characters; :meth:`flush` gives it up at the end."""

    HOLD = 256

    def __init__(self) -> None:
        self._held = ""

    def feed(self, text: str) -> str:
        text = self._held + text
        self._held = ""
        cut = _incomplete_tail(text, self.HOLD)
        if cut < len(text):
            text, self._held = text[:cut], text[cut:]
        return strip_terminal(text)

    def flush(self) -> str:
        held, self._held = self._held, ""
        return strip_terminal(held)


def _incomplete_tail(text: str, hold: int) -> int:
    """Where a trailing escape sequence (or a CR that may be half of a CR
    LF) begins that the next piece could complete, else ``len(text)``."""
    if text.endswith("\r"):
        # The whole run of CRs: the last may be a CR LF's, and whether the
        # others are lone CRs (line breaks) or the text's trailing CRs
        # (dropped) only the rest of the text can say; at most ``hold``.
        return max(len(text.rstrip("\r")), len(text) - hold)
    begin = max(0, len(text) - hold)
    start = max(text.rfind(opener, begin)
                for opener in "\x1b\x90\x98\x9b\x9d\x9e\x9f")
    if start < 0:
        return len(text)
    tail = text[start:]
    if "\n" in tail:
        return len(text)  # sequences end at a line end (see _STRING_RE)
    if tail[:2] == "\x1b[" or tail[0] == "\x9b":
        complete = _CSI_RE
    elif tail[:2] in _STRING_OPENERS or tail[0] != "\x1b":
        complete = _STRING_RE
    else:
        complete = _SEQUENCE_RE
    return len(text) if re.match(complete, tail) else start

