"""Durations in seconds, from any source (``--timeout``, the config, a
manifest), checked against one bound.

The launcher's selector takes its timeout in milliseconds as a C int: from
2,147,484 s (about 24.9 days) it raises OverflowError, before any output.
No run needs more than a week, so every duration acor reads is refused
above :data:`MAX_SECONDS`, with a message that names the bound::

    >>> check_seconds("30", "--timeout")
    30.0
    >>> check_seconds(10 ** 9, "timeout")
    Traceback (most recent call last):
    ...
    ValueError: timeout must be a number of seconds above 0 and at most ...

Standard library only, and nothing imported: the launcher's hot path
checks ``--timeout`` with it.
"""

MAX_SECONDS = 604_800  # 7 days
_BOUND = f"at most {MAX_SECONDS} (7 days)"


def check_seconds(value: object, what: str,
                  zero_ok: bool = False) -> float:
    """``value`` as a float number of seconds, or ValueError naming
    ``what``, the range and :data:`MAX_SECONDS`.

    A number (not a bool), or a string holding a decimal number as argv
    gives it, finite, above 0 (or 0 itself when ``zero_ok``: a
    ``progress_interval`` of 0 means "no coalescing"), and at most
    ``MAX_SECONDS``.
    """
    lower = "0 or more" if zero_ok else "above 0"
    seconds = None
    if isinstance(value, str):
        try:
            seconds = float(value.strip())
        except ValueError:
            pass
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            seconds = float(value)
        except OverflowError:  # an int too large for a float: out of range
            seconds = float("inf")
    # NaN fails every comparison, so it fails this one too.
    if seconds is None or not (
            (0 <= seconds if zero_ok else 0 < seconds) and
            seconds <= MAX_SECONDS):
        raise ValueError(f"{what} must be a number of seconds {lower} and "
                         f"{_BOUND}, not {_shown(value)}")
    return seconds


def _shown(value: object) -> str:
    """The value as a message shows it: repr, cut, one line, valid UTF-8
    (repr escapes controls and lone surrogates)."""
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        try:
            text = repr(value)
        except ValueError:  # an int past Python's digit limit
            return "a number too large to show"
        return text if len(text) <= 40 else text[:37] + "..."
    if isinstance(value, str):
        text = value if len(value) <= 40 else value[:37] + "..."
        return repr(text)
    return f"a {type(value).__name__}"
