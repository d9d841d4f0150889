"""Manifests: what each field must be, and a checked
:class:`acor.cli.discovery.spec.ToolSpec`.

Two kinds of manifest live in a tools dir:

* ``<folder>/manifest.json``: an ACOR tool, a program in that folder that
  speaks ACOR (``name``, ``description``, ``entry``);
* ``<name>.json``: a wrapped plain program (``name``, ``description``,
  ``command``), which the launcher speaks ACOR for.

Either may instead name a click program (``"click": "package.module:cli"``,
:mod:`acor.cli.discovery.clicktools`): one tool per command.

Manifests are data from the project, so they are checked, never trusted: a
bad one raises :class:`ManifestError` (why, and the fix) and nothing is
executed while checking. Every string that can reach a terminal or an
agent is refused if it holds a control character, and error codes must
look like codes. The published JSON Schema of both kinds is
``acor/schemas/manifest.schema.json`` (``acor schema manifest``); this
module checks the same rules without importing a validator, because
discovery is on every run's path.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import stat
import sys
from collections.abc import Iterator
from typing import Any

from acor.args import public_schema, schema_problems, usage
from acor.cli.command_names import BUILTIN_COMMANDS
from acor.cli.discovery import trust
from acor.cli.discovery.cache import Fingerprint
from acor.cli.discovery.clicktools import ClickError, click_specs
from acor.cli.discovery.fields import (ACOR_FIELDS, CLICK_FIELDS,
                                       WRAPPED_FIELDS, is_name)
from acor.cli.discovery.problems import ManifestError as ManifestError
from acor.cli.discovery.problems import Problems, field_path, json_type
from acor.cli.discovery.problems import unprintable as unprintable
from acor.cli.discovery.spec import ToolSpec
from acor.cli.textsafe import printable, quote

Fields = dict[str, tuple[bool, Any, str]]

MAX_MANIFEST_BYTES = 256 * 1024
MAX_STRING = 4096
DEFAULT_VERSION = "1.0.0"
_ERROR_CODE = re.compile(r"[A-Z][A-Z0-9_]{0,63}\Z")


def tool_specs(manifest: str, st: os.stat_result, folder: str | None,
               folder_real: str, fp: Fingerprint,
               origin: str) -> list[ToolSpec]:
    """The tools of ``manifest`` (stat ``st``): a tool folder's
    manifest.json (``folder``, resolved ``folder_real``), or with
    ``folder`` None a wrapper manifest in the tools dir ``folder_real``.
    A click manifest gives one per command; the others one."""
    raw = load(manifest, st)
    if "click" in raw:
        return _click_specs(manifest, raw, folder_real, fp, origin)
    if folder is None:
        data, warnings = checked(raw, WRAPPED_FIELDS, manifest)
        return [_wrapped(manifest, data, warnings, folder_real, fp, origin)]
    data, warnings = checked(raw, ACOR_FIELDS, manifest)
    return [_acor(folder, manifest, data, warnings, folder_real, fp,
                  origin)]


def acor_spec(folder: str, manifest: str, mst: os.stat_result,
              folder_real: str, fp: Fingerprint, origin: str) -> ToolSpec:
    """The ToolSpec of tool folder ``folder`` (its manifest stat ``mst``)."""
    data, warnings = read(manifest, mst, ACOR_FIELDS)
    return _acor(folder, manifest, data, warnings, folder_real, fp, origin)


def _acor(folder: str, manifest: str, data: dict[str, Any],
          warnings: list[str], folder_real: str, fp: Fingerprint,
          origin: str) -> ToolSpec:
    entry = program(folder_real, data["entry"], "entry", fp, python_ok=True,
                    owner_check=not origin.startswith("package "))
    argv = [sys.executable, "-u", entry] if data["entry"].endswith(".py") \
        else [entry]
    return ToolSpec(
        name=data["name"], version=data.get("version", DEFAULT_VERSION),
        description=data["description"], kind="acor", path=folder,
        manifest_path=manifest, argv=argv, timeout=data.get("timeout"),
        idle_timeout=data.get("idle_timeout"), usage=_usage(data),
        max_output=data.get("max_output"), task=data.get("task"),
        errors={}, cwd_mode=data.get("cwd", "invocation"), warnings=warnings,
        args_schema=data.get("args"), args_public=_public(data),
        stdin=data.get("stdin", False),
        examples=data.get("examples"), annotations=data.get("annotations"),
        origin=origin, warm=data.get("warm", True),
        sandbox=data.get("sandbox"))


def wrapped_spec(path: str, st: os.stat_result, dir_real: str,
                 fp: Fingerprint, origin: str) -> ToolSpec:
    data, warnings = read(path, st, WRAPPED_FIELDS)
    return _wrapped(path, data, warnings, dir_real, fp, origin)


def _wrapped(path: str, data: dict[str, Any], warnings: list[str],
             dir_real: str, fp: Fingerprint, origin: str) -> ToolSpec:
    command = list(data["command"])
    if "/" in command[0] and not os.path.isabs(command[0]):
        command[0] = program(dir_real, command[0], "command[0]", fp,
                             owner_check=not origin.startswith("package "))
    pattern = data.get("progress_pattern")
    if pattern is not None:
        _check_pattern(pattern)
    return ToolSpec(
        name=data["name"], version=data.get("version", DEFAULT_VERSION),
        description=data["description"], kind="wrapped", path=path,
        manifest_path=path, argv=command, timeout=data.get("timeout"),
        idle_timeout=data.get("idle_timeout"), usage=_usage(data),
        max_output=data.get("max_output"), task=data.get("task"),
        progress_pattern=pattern, errors=data.get("errors", {}),
        cwd_mode=data.get("cwd", "invocation"), warnings=warnings,
        args_schema=data.get("args"), args_public=_public(data),
        stdin=data.get("stdin", False),
        examples=data.get("examples"), annotations=data.get("annotations"),
        origin=origin, warm=False, sandbox=data.get("sandbox"),
        color_env=data.get("color_env"))


def _check_pattern(pattern: str, problems: Problems | None = None) -> None:
    problems = problems or Problems()
    try:
        groups = re.compile(pattern).groupindex
    except (re.error, RecursionError, OverflowError) as exc:
        problems.add(f"'progress_pattern' is not a valid regular "
                     f"expression: {exc}", _PATTERN_FIX, "progress_pattern")
        return
    if "percent" not in groups:
        problems.add("'progress_pattern' has no named group "
                     "'percent' for the number", _PATTERN_FIX,
                     "progress_pattern")


def manifest_problems(path: str) -> list[ManifestError]:
    """Every problem of the manifest at ``path`` (a tool folder, or a
    wrapper manifest), for ``acor doctor``: the one loading it stops at,
    and every other one a person would otherwise meet one fix at a time,
    each naming its field. [] when there is no regular file to read, or
    only through a link (discovery's own reason says why); one when it is
    not a JSON object.
    Loading a tool (:func:`tool_specs`) still stops at the first."""
    folder = os.path.isdir(path)
    manifest = os.path.join(path, "manifest.json") if folder else path
    try:
        st = os.stat(manifest)
        # Never through a link: one may lead out of the project (discovery
        # said so), to a file whose values a message would quote.
        if not stat.S_ISREG(st.st_mode) or os.path.islink(path) or \
                os.path.islink(manifest):
            return []
        raw = load(manifest, st)
    except OSError:
        return []
    except ManifestError as exc:
        return [exc]
    fields = CLICK_FIELDS if "click" in raw else \
        ACOR_FIELDS if folder else WRAPPED_FIELDS
    problems = Problems(collect=True)
    _check_strings(raw, problems)
    values, _ = _check_fields(raw, fields, printable(manifest), problems)
    if fields is ACOR_FIELDS and "entry" in values:
        _check_program(path, values["entry"], "entry", problems)
    command = values.get("command") if fields is WRAPPED_FIELDS else None
    if command and "/" in command[0] and not os.path.isabs(command[0]):
        _check_program(os.path.dirname(path), command[0], "command[0]",
                       problems)
    if fields is WRAPPED_FIELDS and "progress_pattern" in values:
        _check_pattern(values["progress_pattern"], problems)
    return problems.found


def _check_program(folder: str, rel: str, field: str,
                   problems: Problems) -> None:
    """:func:`program`'s problem with ``rel`` (its owner aside: discovery
    reports that), if it has one; a NUL in it is reported already."""
    if "\0" in rel:
        return
    try:
        program(os.path.realpath(folder), rel, field, Fingerprint(),
                python_ok=field == "entry", owner_check=False)
    except ManifestError as exc:
        exc.field = field
        problems.found.append(exc)


def _click_specs(manifest: str, raw: dict[str, Any], folder_real: str,
                 fp: Fingerprint, origin: str) -> list[ToolSpec]:
    """The click program's commands, each checked as a manifest's tool
    is: its name not a built-in command's, its served strings printable."""
    data, warnings = checked(raw, CLICK_FIELDS, manifest)
    shown = printable(manifest)

    def check(name: str, schema: dict[str, Any]) -> None:
        _check_name(name, shown)
        _check_served({"args": schema}, shown)
    try:
        return click_specs(manifest, data, warnings, folder_real, fp,
                           origin, check)
    except ClickError as exc:
        raise ManifestError(exc.reason, exc.recovery,
                            data.get("name")) from None


def _usage(data: dict[str, Any]) -> str | None:
    """The usage line: the manifest's, else derived from its argument
    schema here, at discovery, so that a warm `acor list` reads it."""
    if data.get("usage") is not None or not data.get("args"):
        given: str | None = data.get("usage")
        return given
    return usage(f"acor {data['name']}", data["args"])


def _public(data: dict[str, Any]) -> dict[str, Any] | None:
    """The args schema as agents see it, derived once, here."""
    if not data.get("args"):
        return None
    return public_schema(data["args"])


_PATTERN_FIX = ('Write a Python regex whose group (?P<percent>...) captures '
                'the number, e.g. "progress_pattern": "(?P<percent>\\\\d+)%".')


def check_inside(parent_real: str, path: str, what: str) -> str:
    """realpath(path), which must lie strictly inside ``parent_real``."""
    real = os.path.realpath(path)
    if real == parent_real or not _inside(parent_real, real):
        raise ManifestError(f"{what} resolves to {printable(real)}, outside "
                            f"{printable(parent_real)}",
                            "Move it inside that directory instead of "
                            "linking to it from there.")
    return real


def _inside(parent_real: str, real: str) -> bool:
    # commonpath, not startswith: "/p/tools-evil" starts with "/p/tools".
    return os.path.commonpath([parent_real, real]) == parent_real


def program(folder_real: str, rel: str, field: str, fp: Fingerprint,
            python_ok: bool = False, owner_check: bool = True) -> str:
    """The real path of program ``rel``, which must be a file inside
    ``folder_real`` and executable (or, if ``python_ok``, named *.py: this
    interpreter runs it), and, with ``owner_check``, pass the ownership
    rule of :mod:`acor.cli.discovery.trust`."""
    if os.path.isabs(rel):
        raise ManifestError(f"'{field}' must be a path relative to its "
                            f"folder, not the absolute path {rel!r}",
                            "Put the program inside the tool folder and give "
                            'its relative path, e.g. "entry": "main.py".')
    joined = os.path.join(folder_real, rel)
    real = os.path.realpath(joined)
    if not _inside(folder_real, real):
        raise ManifestError(f"'{field}' {rel!r} resolves to "
                            f"{printable(real)}, outside "
                            f"{printable(folder_real)}", "Put the program "
                            "inside that folder (no '..', no symlink leading "
                            "out of it).")
    st = fp.stat(joined, light=True)
    if st is None or not stat.S_ISREG(st.st_mode):
        raise ManifestError(f"'{field}' {rel!r} is not an existing file "
                            f"({printable(real)})",
                            f"Create it, or fix '{field}' in the manifest.")
    if owner_check:
        why = trust.problem(real, st)
        if why is not None:
            raise ManifestError(f"'{field}' {rel!r} is not used: {why}",
                                trust.how_to_trust(real))
    if not (python_ok and rel.endswith(".py")) and \
            not os.access(real, os.X_OK):
        raise ManifestError(
            f"'{field}' {rel!r} is not executable (it needs chmod +x)",
            f"Run `chmod +x {printable(real)}` (a #! line must name its "
            "interpreter)" + (", or name it *.py to run it with Python."
                              if python_ok else "."))
    return real


def read(path: str, st: os.stat_result,
         fields: Fields) -> tuple[dict[str, Any], list[str]]:
    """The checked manifest at ``path``: (values, warnings)."""
    return checked(load(path, st), fields, path)


def load(path: str, st: os.stat_result) -> dict[str, Any]:
    """The JSON object at ``path`` (stat ``st``), not yet checked against
    any kind's fields; raises :class:`ManifestError`."""
    too_big = ManifestError(f"the manifest is over the "
                            f"{MAX_MANIFEST_BYTES // 1024} KiB limit",
                            "Keep only the tool's description in it.")
    if st.st_size > MAX_MANIFEST_BYTES:
        raise too_big
    shown = printable(path)
    try:
        # O_NONBLOCK: a FIFO swapped in since the stat must not hang acor.
        with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as f:
            raw = f.read(MAX_MANIFEST_BYTES + 1)
        if len(raw) > MAX_MANIFEST_BYTES:
            raise too_big
        data = json.loads(raw.decode("utf-8-sig"),
                          object_pairs_hook=_unique_keys,
                          parse_constant=_no_constant)
    except OSError as exc:
        raise ManifestError(f"cannot read the manifest: {exc.strerror}",
                            f"Check its permissions: `ls -l {shown}`.") \
            from None
    except json.JSONDecodeError as exc:
        raise ManifestError(f"malformed JSON at line {exc.lineno}, column "
                            f"{exc.colno}: {exc.msg}", "Fix the JSON there "
                            "(often a trailing comma or a missing quote); "
                            f"`python3 -m json.tool {shown}` checks it.") \
            from None
    except (ValueError, RecursionError) as exc:  # bad UTF-8, huge numbers
        raise ManifestError(f"unreadable JSON: {exc}",
                            "Save the manifest as plain UTF-8 JSON.") from None
    if not isinstance(data, dict):
        raise ManifestError(f"the manifest must be a JSON object, not "
                            f"{json_type(data)}", 'Write {"name": ..., '
                            '"description": ..., ...}.')
    return data


def checked(data: dict[str, Any], fields: Fields,
            path: str) -> tuple[dict[str, Any], list[str]]:
    """``data`` (a manifest's JSON object) checked against ``fields``:
    (values, warnings); a :class:`ManifestError` names the tool it
    claims."""
    name = data.get("name")
    claimed = name if is_name(name) else None
    try:
        _check_strings(data)
        return _check_fields(data, fields, printable(path))
    except ManifestError as exc:
        exc.name = claimed
        raise


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) < len(pairs):
        seen = set()
        for key, _ in pairs:
            if key in seen:
                raise ManifestError(f"key {quote(key)} appears twice "
                                    "in one object", "Keep one; JSON would "
                                    "silently use the last.")
            seen.add(key)
    return result


def _no_constant(name: str) -> Any:
    raise ManifestError(f"{name} is not valid JSON", "Use a finite number.")


def _check_strings(data: object, problems: Problems | None = None) -> None:
    """Refuse any string over MAX_STRING characters, or holding a NUL
    (no path or argv can contain one), keys included."""
    problems = problems or Problems()
    stack: list[tuple[str | None, object]] = [(None, data)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, dict):
            stack.extend((where, key) for key in value)
            stack.extend((field_path(where, key), item)
                         for key, item in value.items())
        elif isinstance(value, list):
            stack.extend((f"{where}[{i}]", item)
                         for i, item in enumerate(value))
        elif isinstance(value, str) and len(value) > MAX_STRING:
            problems.add(
                f"a string of {len(value)} characters (starting "
                f"{quote(value[:30])}) is over the {MAX_STRING} limit",
                "Shorten it: a manifest describes a tool, documentation "
                "belongs elsewhere.", where)
        elif isinstance(value, str) and "\0" in value:
            problems.add(f"the string {quote(value[:30])} "
                         "contains a NUL character", "Remove it: no "
                         "path or argument can hold one.", where)


def _check_fields(data: dict[str, Any], fields: Fields, path: str,
                  problems: Problems | None = None
                  ) -> tuple[dict[str, Any], list[str]]:
    problems = problems or Problems()
    warnings = _unknown_fields(data, fields, path)
    values = _known_values(data, fields, path, problems)
    _check_text_fields(values, path, problems)
    _check_served(values, path, problems)
    if "name" in values:
        _check_name(values["name"], path, problems)
    if "errors" in values:
        values["errors"] = _errors(values["errors"], warnings, problems)
    if "args" in values:
        _check_args(values["args"], path, problems)
    return values, warnings


_PROBLEM_PATH = re.compile(r"args[^\s:]*")


def _check_args(args: object, path: str, problems: Problems) -> None:
    """The library's rules, the ones the tool's parse_args applies: one
    problem naming them all when loading, each on its own for doctor."""
    found = schema_problems(args)
    fix = ("Fix it in " + path + "; `acor schema manifest` prints the "
           "rules.")
    if found and not problems.collect:
        problems.add(f"field 'args' is not a valid argument schema: "
                     f"{'; '.join(found)}", fix, "args")
    for problem in found:
        where = _PROBLEM_PATH.match(problem)
        problems.add(problem, fix, where.group() if where else "args")


def _unknown_fields(data: dict[str, Any], fields: Fields,
                    path: str) -> list[str]:
    """A warning for each field ``fields`` does not know."""
    warnings = []
    for key in data:
        if key not in fields:
            near = difflib.get_close_matches(key, list(fields), n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            warnings.append(f"unknown field {quote(key)} in {path} is "
                            f"ignored{hint}")
    return warnings


def _known_values(data: dict[str, Any], fields: Fields, path: str,
                  problems: Problems) -> dict[str, Any]:
    """The fields ``fields`` knows, each as it must be (one that is not
    is left out); the required ones present."""
    missing = [key for key, (required, _, _) in fields.items()
               if required and key not in data]
    if missing:
        problems.add("missing required field(s): " + ", ".join(
            missing), f"Add them to {path}; `acor new NAME` writes a "
            "complete example.", ", ".join(missing))
    values = {}
    for key, (required, valid, expected) in fields.items():
        if key not in data or data[key] is None and not required:
            continue  # absent (reported above if required), or null
        if not valid(data[key]):
            problems.add(f"field {key!r} must be {expected}, not "
                         f"{json_type(data[key])}",
                         f"Fix {key!r} in {path}.", key)
            continue
        values[key] = data[key]
    return values


def _check_text_fields(values: dict[str, Any], path: str,
                       problems: Problems) -> None:
    for key, allowed in (("version", "\t"), ("description", "\t"),
                         ("usage", "\t\n")):
        bad = unprintable(values.get(key, ""), allowed)
        if bad is not None:
            # acor list, show and help print these as they are: no line
            # break (but in usage) can start a line that reads as a
            # heading, no escape sequence can repaint the terminal.
            problems.add(
                f"field {key!r} contains {bad!r}, a control character" +
                ("" if key == "usage" else " or line break"),
                f"Remove it from {key!r} in {path}.", key)


def _check_served(values: dict[str, Any], path: str,
                  problems: Problems | None = None) -> None:
    problems = problems or Problems()
    for where, text in _served_strings(values):
        bad = unprintable(text, "\t")
        if bad is not None:
            # Served as they are in MCP's tools/list, and printed in help
            # and `acor show`: the same rule as the description.
            problems.add(
                f"{where} contains {bad!r}, a control character or line "
                f"break", f"Remove it from {where} in {path}: acor serves it "
                "to MCP clients and prints it in help.",
                where.removesuffix(" key"))


def _check_name(name: str, path: str,
                problems: Problems | None = None) -> None:
    if name in BUILTIN_COMMANDS:
        (problems or Problems()).add(
            f"the name {name!r} is an acor built-in command, so "
            f"`acor {name}` could never run this tool",
            f"Rename the tool in {path}.", "name")


def _served_strings(values: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """``(where, text)`` for every string of the manifest that reaches
    clients and help as it is: the schema ``$schema``, the annotations'
    title, and every string (keys included) of the args schema: titles,
    descriptions, enum values, defaults, x-acor metavars."""
    for key in ("$schema",):
        if isinstance(values.get(key), str):
            yield key, values[key]
    title = (values.get("annotations") or {}).get("title")
    if isinstance(title, str):
        yield "annotations.title", title
    stack: list[tuple[str, object]] = [("args", values.get("args"))]
    while stack:
        where, value = stack.pop()
        if isinstance(value, str):
            yield where, value
        elif isinstance(value, dict):
            for key, item in value.items():
                yield f"{where} key", key
                stack.append((f"{where}.{printable(key)}", item))
        elif isinstance(value, list):
            stack.extend((f"{where}[{i}]", item)
                         for i, item in enumerate(value))


_ERROR_FIELDS = ("message", "recovery", "code", "next")


def _errors(value: dict[str, Any], warnings: list[str],
            problems: Problems) -> dict[str, Any]:
    """{"<exit code>": {"message", "recovery"[, "code", "next"]}}, keys
    normalised ("01" -> "1") to match ``str(returncode)`` at run time."""
    result = {}
    for key, entry in value.items():
        digits = key[1:] if key.startswith("-") else key
        if not (digits.isascii() and digits.isdigit()):
            problems.add(f"errors key {quote(key)} is not an exit code",
                         'Key each entry by the exit code as a string, '
                         'e.g. "1" (or "-9" for a signal).',
                         field_path("errors", key))
            continue
        entry = entry if isinstance(entry, dict) else {}
        if not _check_error_entry(key, entry, problems):
            continue
        extra = sorted(set(entry) - set(_ERROR_FIELDS))
        if extra:
            warnings.append(f"errors[{key!r}]: unknown field(s) "
                            f"{', '.join(printable(k) for k in extra)} "
                            "ignored")
        result[str(int(key))] = {k: entry[k] for k in _ERROR_FIELDS
                                 if k in entry}
    return result


def _check_error_entry(key: str, entry: dict[str, Any],
                       problems: Problems) -> bool:
    """One entry of ``errors``: its fields strings, its code a code, its
    texts printable on one line. Whether it is one."""
    where = field_path("errors", key)
    bad = [k for k in ("message", "recovery")
           if not isinstance(entry.get(k), str)]
    bad += [k for k in ("code", "next")
            if not isinstance(entry.get(k, ""), str)]
    if bad:
        problems.add(f"errors[{key!r}] needs string field(s) "
                     f"{', '.join(bad)}", 'Write e.g. "1": '
                     '{"message": "Tests failed", "recovery": '
                     '"Fix them, rerun."}.', where)
        return False
    ok = True
    code = entry.get("code")
    if code is not None and not _ERROR_CODE.match(code):
        problems.add(f"errors[{key!r}].code {quote(code)} is "
                     "not an error code", "Use capital letters, "
                     "digits and '_', starting with a letter, "
                     'e.g. "E_TESTS_FAILED".', f"{where}.code")
        ok = False
    for field in ("message", "recovery", "next"):
        bad_char = unprintable(entry.get(field, ""), "\t")
        if bad_char is not None:
            problems.add(f"errors[{key!r}].{field} contains "
                         f"{bad_char!r}, a control character or "
                         "line break", f"Remove it from "
                         f"errors[{key!r}].{field}.", f"{where}.{field}")
            ok = False
    return ok
