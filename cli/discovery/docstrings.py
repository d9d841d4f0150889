"""A function tool's docstring, read (:mod:`acor.cli.discovery.functions`):
its first paragraph is the tool's description, its Google-style ``Args:``
section describes the parameters."""

from __future__ import annotations


def docstring_parts(text: str | None) -> tuple[str, dict[str, str]]:
    """The first paragraph, on one line, and each parameter's description
    from an ``Args:`` (or ``Arguments:``, ``Parameters:``) section."""
    if not text:
        return "", {}
    paragraphs = text.strip().split("\n\n")
    description = " ".join(line.strip() for line in
                           paragraphs[0].splitlines())
    helps: dict[str, str] = {}
    current, indent, inside = None, None, False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped in ("Args:", "Arguments:", "Parameters:"):
            inside, indent = True, None
            continue
        if not inside or not stripped:
            continue
        depth = len(line) - len(line.lstrip())
        if indent is None:
            indent = depth
        if depth < indent or (depth == indent and ":" not in stripped):
            inside = False
        elif depth == indent:
            head, _, rest = stripped.partition(":")
            current = head.split("(")[0].strip().lstrip("*")
            helps[current] = rest.strip()
        elif current is not None:
            helps[current] = f"{helps[current]} {stripped}".strip()
    return description, helps
