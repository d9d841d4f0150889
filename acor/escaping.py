"""Escaping: what keeps text a tool passes from meaning anything to Markdown.

Three rules, from the widest to the narrowest context (``docs/protocol.md``,
"Escaping", says why each line is there):

- :func:`escape_text`: free text in a section body (Output, messages, raw
  text). No line of it can start a section, end one, open a block that
  swallows later sections, or look like a field line.
- :func:`escape_nested`: text inside a list item or a field (directives,
  suggestions, error details, file descriptions). Stricter: no line can
  open any block at all (list item, thematic break, block quote, HTML,
  link definition), so nothing can end the item or the field early or pull
  the next field into a block of its own.
- :func:`escape_inline`: text that stays on one line (heading values,
  single-line fields).

Block escaping puts one backslash before a line's first non-blank
character; :func:`unescape_text` removes it again, so both block rules share
one exact inverse.
"""

import re

# A line is "risky" when, after any leading blanks, it could begin a heading
# (ATX or a setext underline), a fence, an HTML block that does not end at a
# blank line (CommonMark types 1-5), a field line (``**Next**:``), or when it
# begins with our own escape character or the framing mark. Risky lines get
# one backslash in front of that first character: CommonMark shows `\#` as
# `#`, so people read the text as written, and the parser removes exactly
# that one backslash. `<pre` and its kin are risky whatever follows them:
# CommonMark wants a space, tab or `>`, but markdown-it and others accept any
# Unicode space (`<pre\v`, `<pre\u2028`), and one escape too many costs
# nothing.
_FIELD_LIKE = r"\*\*[A-Z][A-Za-z ]{0,30}\*\*:|__[A-Z][A-Za-z ]{0,30}__:"
_RISKY_STARTS = (r"\#{1,6}(?:[ \t]|$)"
                 r"|=+[ \t]*$|-+[ \t]*$"
                 r"|`{3}|~{3}"
                 r"|<(?i:script|pre|style|textarea)|<[!?]"
                 r"|" + _FIELD_LIKE +
                 r"|\\|\x1e")
# Matching at every line start with ``^`` and re.M makes the regex engine try
# every position of a megabyte of output. A line can only be risky if its
# first non-blank character is one of these, so candidates are found with a
# literal "\n" search (fast in C) and only they are checked in full.
_RISKY_FIRST = frozenset(" \t\f\v#=-`~<*_\\\x1e")
_CANDIDATE = re.compile(r"\n[ \t\f\v]*[#=\-`~<*_\\\x1e]")
_RISKY_AT = re.compile(r"[ \t\f\v]*(?=" + _RISKY_STARTS + ")", re.M)
_ESCAPED_AT = re.compile(r"(\n[ \t\f\v]*)\\")
_NEWLINES = re.compile(r"\r\n?")

# Nested text: the risky lines, and every line that could open a block of
# its own inside a list item or a paragraph: a bullet (`-`, `+`, `*` then a
# blank or the end), a thematic break (`- -`, `* * *`, `_ _ _`, any blanks),
# an ordered list marker (`1.`, `1)`), a block quote, any HTML, a link
# reference definition (`[x]: /url`, which hides its line), a table row, and
# anything bold-first that could pass for a field. A line that starts with
# spaces or tabs gets its backslash in column 0, before them: indented, it
# could become code, or move a list item's content (the backslash makes it
# a paragraph line, and unescaping still removes the first backslash after
# the line's blanks, here none).
_NESTED_AT = re.compile(
    r"^(?:([ \t]+)(?=[^ \t\n])|[ \t\f\v]*(?=" + _RISKY_STARTS +
    r"|[-+*](?:[ \t]|$)|-[ \t]*-[ \t]*-|_[ \t]*_[ \t]*_"
    r"|\d{1,9}[.)](?:[ \t]|$)|[>\[<|]|\*\*|__))", re.M)


def fold_newlines(text: str) -> str:
    """CRLF and lone CR become LF, as CommonMark reads them. Other separators
    (U+2028, U+0085, form feed) are not line ends in CommonMark and stay."""
    return _NEWLINES.sub("\n", text) if "\r" in text else text


def escape_text(text: str) -> str:
    """Escape multi-line free text so that no line of it has block meaning."""
    if "\r" in text:
        text = fold_newlines(text)
    parts: list[str] = []
    last = 0
    # The first line has no "\n" before it: checked on its own, so that a
    # megabyte is scanned where it lies, not first copied behind a "\n".
    if text[:1] in _RISKY_FIRST:
        match = _RISKY_AT.match(text)
        if match:
            parts += (text[:match.end()], "\\")
            last = match.end()
    if "\n" in text:  # one line (a message, a status): nothing more
        for candidate in _CANDIDATE.finditer(text):
            match = _RISKY_AT.match(text, candidate.start() + 1)
            if match:
                parts += (text[last:match.end()], "\\")
                last = match.end()
    if not parts:
        return text
    parts.append(text[last:])
    return "".join(parts)


def escape_nested(text: str) -> str:
    """Escape text that lives inside a list item or a field: like
    :func:`escape_text`, and no line may open a block of any kind."""
    return _NESTED_AT.sub(_nested_escape, fold_newlines(text))


def _nested_escape(match: "re.Match[str]") -> str:
    blanks = match.group(0)
    return "\\" + blanks if match.group(1) else blanks + "\\"


def unescape_text(text: str) -> str:
    """Undo :func:`escape_text` and :func:`escape_nested`: drop the
    backslash after a line's blanks."""
    if "\\" not in text:
        return text
    return _ESCAPED_AT.sub(r"\1", "\n" + text)[1:]


_INLINE_UNESCAPE = re.compile(r"\\([\\n#])")
_INLINE_MAP = {"\\": "\\", "n": "\n", "#": "#"}
_CLOSING_HASHES = re.compile(r"#+[ \t]*\Z")


def escape_inline(text: str) -> str:
    """Escape text that must stay on one line: a backslash doubles, a line
    break becomes ``\\n`` and a trailing run of ``#``, alone or followed by
    spaces and tabs (which CommonMark would strip from a heading as a
    closing sequence), gets a backslash."""
    text = fold_newlines(text).replace("\\", "\\\\").replace("\n", "\\n")
    return _CLOSING_HASHES.sub(r"\\\g<0>", text)


def unescape_inline(text: str) -> str:
    """Undo :func:`escape_inline`."""
    if "\\" not in text:
        return text
    return _INLINE_UNESCAPE.sub(lambda m: _INLINE_MAP[m.group(1)], text)


def fence_for(text: str) -> str:
    """A backtick fence longer than any backtick run in ``text``."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def code_span(text: str) -> str:
    """``text`` as one code span: one backtick more than its longest run,
    padded with a space on each side when a backtick or a space pair at
    both ends would otherwise be read as part of the delimiters."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    if text[:1] == "`" or text[-1:] == "`" or (
            text[:1] == " " and text[-1:] == " " and text.strip(" ")):
        text = " " + text + " "
    return ticks + text + ticks


def uncode_span(text: str) -> str:
    """The inside of a code span back to the text :func:`code_span` got."""
    if len(text) >= 2 and text[0] == " " and text[-1] == " " and \
            text.strip(" "):
        return text[1:-1]
    return text
