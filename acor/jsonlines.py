"""JSON in and out of acor, safely.

:func:`loads` reads a JSON value a tool wrote (an ``Output Data`` block)
without ever raising anything but :class:`ValueError`: a value nested deeper
than :data:`MAX_DEPTH` levels is refused before decoding, so neither the
decoder nor anything that re-encodes the value later can run out of stack.
"""

import json
import re

MAX_DEPTH = 256
"""The deepest nesting :func:`loads` decodes; deeper values stay text."""

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_INNERMOST = re.compile(r"\[\]|\{\}")


def _nesting_over(text: str, limit: int) -> bool:
    """Whether the JSON ``text`` nests containers more than ``limit`` deep.

    Fewer opening brackets than the limit settle it at C speed (the common
    case). Otherwise strings (which may hold brackets) and everything but
    brackets are dropped, then innermost pairs are removed one level per
    pass: the passes needed are the depth. A run of more than ``limit``
    opening brackets, the usual shape of a deep value, ends it at once.
    Unbalanced text is not judged here: the decoder refuses it."""
    if text.count("[") + text.count("{") <= limit:
        return False
    if '"' in text:
        text = _STRING.sub("", text)
    brackets = _NOT_BRACKET.sub("", text)
    run = re.compile(r"[\[{]{%d}" % (limit + 1))
    depth = 0
    while brackets:
        if run.search(brackets):
            return True
        reduced = _INNERMOST.sub("", brackets)
        if len(reduced) == len(brackets):
            return False
        depth += 1
        if depth > limit:
            return True
        brackets = reduced
    return False


def loads(text: str, max_depth: int = MAX_DEPTH):
    """Decode one JSON value; :class:`ValueError` if ``text`` is not JSON
    or nests deeper than ``max_depth`` (never :class:`RecursionError`)."""
    if _nesting_over(text, max_depth):
        raise ValueError(f"JSON nested deeper than {max_depth} levels")
    try:
        return json.loads(text)
    except RecursionError:
        # Only when the caller's own stack is already deep.
        raise ValueError("JSON nested too deep to decode here") from None
