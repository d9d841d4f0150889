"""Checks of what a tool passes to AcorTool, and the events built from it.

Each check raises TypeError or ValueError naming the argument and what it
must be, before anything is written.
"""

from __future__ import annotations

import os

from .events import Error

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

    from .errors import AcorStateError


def state_error(message: str) -> AcorStateError:
    """An AcorStateError (errors.py is imported only by a misuse)."""
    from .errors import AcorStateError  # a tool that is used right skips it
    return AcorStateError(message)


def text(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a string, not {type(value).__name__}")
    return value


def argv(value: object, what: str = "next") -> list[str] | None:
    """An argv list (``next``): a list or tuple of strings, or None."""
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or \
            not value or not all(isinstance(a, str) for a in value):
        raise TypeError(f"{what} must be a non-empty list of strings (an argv "
                        f"to run as is), not {value!r}")
    return list(value)


def error_event(code: str, message: str | Exception, recovery: str | None,
                details: str | None, next: list[str] | None) -> Error:
    code = text(code, "error code")
    from . import grammar  # re: a tool that reports no error skips it
    if not grammar.is_error_code(code):
        raise ValueError(f"error code must be letters, digits, '_', '.', "
                         f"':' or '-', like E_FILE_NOT_FOUND; not {code!r}")
    if isinstance(message, Exception):
        message = str(message)
    return Error(text(message, "error message"), code,
                 None if details is None else text(details, "details"),
                 None if recovery is None else text(recovery, "recovery"),
                 argv(next))


def input_fields(value: object) -> dict[str, dict[str, Any]] | None:
    """Input Needed's fields: {name: flat JSON Schema property}, or None."""
    if value is None:
        return None
    from .layout import (  # re: only a tool that asks pays for it
        FIELD_KEYS, FIELD_TYPES, MAX_FIELDS, is_field_name, read_field)
    if not isinstance(value, dict) or not value:
        raise TypeError(f"fields must be a non-empty dict of {{name: "
                        f"property}}, not {value!r}")
    checked: dict[str, dict[str, Any]] = {}
    for name, prop in value.items():
        if not is_field_name(name):
            raise ValueError(f"field names are argument names (letters, "
                             f"digits, '_', '-'), not {name!r}")
        if not isinstance(prop, dict) or prop.get("type") not in FIELD_TYPES:
            raise ValueError(f"field {name!r} must be a property with a type "
                             f"of {', '.join(FIELD_TYPES)}, not {prop!r}")
        unknown = set(prop) - FIELD_KEYS
        if unknown:
            raise ValueError(f"field {name!r} may have only "
                             f"{', '.join(sorted(FIELD_KEYS))}; not "
                             f"{', '.join(sorted(unknown))}")
        # What a reader keeps of it (read_input_fields) must be all of it.
        read = read_field(prop)
        for key, given in prop.items():
            if read.get(key) != given:
                shown = repr(given)
                shown = shown if len(shown) <= 60 else shown[:57] + "..."
                raise ValueError(f"field {name!r}: {key} {shown} does not "
                                 f"fit a field of type {prop['type']}")
        checked[name] = dict(prop)
    if len(checked) > MAX_FIELDS:
        raise ValueError(f"at most {MAX_FIELDS} fields, not "
                         f"{len(checked)}")
    return checked


def _file_entry(path: str | os.PathLike[str],
                description: str | None) -> dict[str, Any]:
    path = os.fspath(path)
    if not isinstance(path, str) or not path or "\n" in path or "\r" in path:
        raise ValueError(f"output file path must be a non-empty single-line "
                         f"string, not {path!r}")
    entry: dict[str, Any] = {
        "path": path,
        "description": text(description or "", "file description"),
        "kind": "missing", "bytes": None, "sha256": None}
    if os.path.isdir(path):
        entry["kind"] = "directory"
    elif os.path.isfile(path):
        import hashlib  # 3.5 ms: only tools that announce files pay for it
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        entry.update(kind="file", bytes=os.path.getsize(path),
                     sha256=digest.hexdigest()[:12])
    return entry


def file_entries(files: Any) -> list[dict[str, Any]]:
    if isinstance(files, dict):
        return [_file_entry(p, d) for p, d in files.items()]
    if isinstance(files, (str, bytes)) or hasattr(files, "__fspath__"):
        files = [files]
    entries = []
    for item in files:
        if isinstance(item, dict):
            entries.append(_file_entry(item["path"], item.get("description")))
        elif isinstance(item, (tuple, list)):
            entries.append(_file_entry(*item))
        else:
            entries.append(_file_entry(item, ""))
    return entries


FORMATS = ("auto", "json", "yaml", "text", "markdown")


def output_text(data: object, format: str) -> tuple[str, str]:
    """The format and text of an ``## Output Data`` block for ``data``."""
    if format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, "
                         f"not {format!r}")
    if format == "auto":
        format = "json"
    if format == "json":
        import json  # 2 ms: only structured output pays for it
        return format, json.dumps(data, indent=2, ensure_ascii=False,
                                  default=str)
    if format == "yaml":
        try:
            import yaml  # not in the standard library: only when asked
        except ImportError:
            raise ImportError("output(format='yaml') needs PyYAML: "
                              "pip install pyyaml") from None
        return format, yaml.safe_dump(data, sort_keys=False,
                                      allow_unicode=True)
    return format, data if isinstance(data, str) else str(data)
