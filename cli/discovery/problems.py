"""What is wrong with a manifest, and how a message says it:
:class:`ManifestError` (one problem: why, the fix, the field at fault),
:class:`Problems` (where the checks of :mod:`acor.cli.discovery.manifest`
report them: the first raised, or all collected for ``acor doctor``), a
field's path, and how a value reads in a message."""

from __future__ import annotations

import json
import re

from acor.cli.textsafe import printable, quote

__all__ = ["ManifestError", "Problems", "field_path", "json_type",
           "unprintable"]


class ManifestError(Exception):
    """This manifest is skipped: ``reason`` and ``recovery``; ``name`` is
    the name it claims, when that much could be read; ``field`` the path
    of the field at fault (``description``, ``args.properties.n``,
    ``errors["1"].code``), None for the manifest as a whole."""

    def __init__(self, reason: str, recovery: str,
                 name: str | None = None, field: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.recovery = recovery
        self.name = name
        self.field = field


class Problems:
    """Where the checks report what is wrong with a manifest: raised at
    once (loading a tool: the first problem is the one a run reports, as
    it always was), or with ``collect`` kept, every one of them, for
    ``acor doctor`` (:func:`manifest_problems`)."""

    def __init__(self, collect: bool = False) -> None:
        self.collect = collect
        self.found: list[ManifestError] = []

    def add(self, reason: str, recovery: str,
            field: str | None = None) -> None:
        error = ManifestError(reason, recovery, field=field)
        if not self.collect:
            raise error
        self.found.append(error)


def field_path(where: str | None, key: object) -> str:
    """The path of ``key`` in the object at ``where`` (None: the top)."""
    text = printable(str(key))
    if re.fullmatch(r"[A-Za-z_$][\w$-]*", text):
        return text if where is None else f"{where}.{text}"
    return f"{where or ''}[{json.dumps(text)}]"


def unprintable(text: str, allowed: str = "") -> str | None:
    """The first character of ``text`` that is not printable text (a
    control character, a line or paragraph separator, a bidi override...)
    and not in ``allowed``; None if there is none."""
    if text.isprintable():
        return None
    return next((c for c in text if not c.isprintable() and
                 c not in allowed), None)


def json_type(value: object) -> str:
    """How a JSON value reads in a message."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {quote(value[:40])}"
    if isinstance(value, list):
        odd = next((i for i, x in enumerate(value)
                    if not isinstance(x, str)), None)
        return "an empty array" if not value else "an array" if odd is None \
            else f"an array with {json_type(value[odd])} at index {odd}"
    return "an object" if isinstance(value, dict) else "null"
