"""Text from a repository or a tool, made safe to echo: every control
character, bidi override and lone surrogate is written as its escape, so
nothing echoed can start a line, repaint a terminal or be invalid UTF-8."""

from __future__ import annotations


def printable(text: str) -> str:
    """``text`` with every unprintable character written as its escape."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
