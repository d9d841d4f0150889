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

import re

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
_SEQUENCE_RE = (
    # CSI (ESC [ or U+009B): parameters, intermediates, one final byte.
    "(?:\x1b\\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]"
    # OSC, DCS, SOS, PM, APC (7-bit and 8-bit openers), up to BEL or ST.
    "|(?:\x1b[\\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*"
    "(?:\x07|\x1b\\\\|\x9c)"
    # Any other escape: ESC c (reset), ESC 7, ESC ( B, ... An opener left
    # unterminated (ESC ] with no BEL or ST) loses only its ESC and the
    # next character; what follows is shown as text.
    "|\x1b[\x20-\x2f]*[\x30-\x7e]")


def _escape(match: "re.Match[str]") -> str:
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


def strip_terminal(text: str) -> str:
    """``text`` for display as text: escape sequences (CSI, colours, OSC
    titles and hyperlinks, DCS, ...) removed whole, a carriage return (which
    would overwrite the line) turned into a line break, and every other
    control, bidi control, separator and lone surrogate made visible as
    :func:`printable` does. Line breaks and tabs are kept."""
    text = str(text)
    if re.search(_UNSAFE_IN_TEXT_RE, text) is None:
        return text
    text = re.sub(_SEQUENCE_RE, "", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return re.sub(_UNSAFE_IN_TEXT_RE, _escape, text)
