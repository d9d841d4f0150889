"""Find the tools: scan the tools dirs, check every manifest, build a
:class:`Registry`.

Two kinds of manifest live in a tools dir:

* ``<folder>/manifest.json``: an ACOR tool, a program in that folder that
  speaks ACOR (``name``, ``version``, ``description``, ``entry``);
* ``<name>.json``: a wrapped plain program (``name``, ``description``,
  ``command``), which the launcher speaks ACOR for.

Manifests are data from the project, so they are checked, never trusted: a
bad one is skipped with a reason and a fix (``acor doctor`` lists them)
while the others keep working, and nothing is executed while checking.
Programs must resolve, symlinks and ``..`` included, inside their tool
folder. When two manifests claim one name, the first tools dir wins
(within a dir, the first file name) and the other is reported as shadowed.

Scanning is the cold path; :func:`load_registry` serves a warm run from
:mod:`cli.cache` with a few ``stat()`` calls.
"""

import json
import math
import os
import stat
import sys

from . import cache
from .cache import Record
from .config import (Config, ConfigError, config_root, find_config,
                     read_config)

MAX_MANIFEST_BYTES = 256 * 1024
MAX_STRING = 4096
# cli.main dispatches these itself, so a tool with such a name is unreachable.
RESERVED = frozenset({"list", "show", "parse", "doctor", "sessions", "help",
                      "mcp"})
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-")


class ToolSpec(Record):
    """A runnable tool. ``argv`` is complete but for the user's arguments;
    ``path`` is the tool folder (acor) or the manifest file (wrapped)."""

    __slots__ = ("name", "version", "description", "kind", "path",
                 "manifest_path", "argv", "timeout", "idle_timeout", "usage",
                 "progress_pattern", "errors", "cwd_mode", "warnings")


class Skipped(Record):
    """A manifest that was not loaded: why, and the fix."""

    __slots__ = ("path", "reason", "recovery")


class Shadowed(Record):
    """A tool hidden by an earlier one with the same name."""

    __slots__ = ("name", "winner_path", "loser_path")


class Registry:
    """The configuration and what discovery found in it."""

    __slots__ = ("config", "tools", "skipped", "shadowed")

    def __init__(self, config, tools=None, skipped=None, shadowed=None):
        self.config = config
        self.tools = {} if tools is None else tools  # name -> ToolSpec
        self.skipped = [] if skipped is None else skipped
        self.shadowed = [] if shadowed is None else shadowed

    def get(self, name):
        """The tool called ``name``, or None."""
        return self.tools.get(name)

    def close_matches(self, name, n=3):
        """Known names that look like ``name`` (for "did you mean")."""
        import difflib  # only when a name was not found
        return difflib.get_close_matches(name, list(self.tools), n=n)

    def to_dict(self):
        return {"config": self.config.to_dict(),
                "tools": [spec.to_dict() for spec in self.tools.values()],
                "skipped": [s.to_dict() for s in self.skipped],
                "shadowed": [s.to_dict() for s in self.shadowed]}

    @classmethod
    def from_dict(cls, data):
        tools = {}
        for item in data["tools"]:
            spec = ToolSpec.from_dict(item)
            tools[spec.name] = spec
        return cls(Config.from_dict(data["config"]), tools,
                   [Skipped.from_dict(s) for s in data["skipped"]],
                   [Shadowed.from_dict(s) for s in data["shadowed"]])


def load_registry(cwd=None, config_path=None):
    """The registry for ``cwd`` (default: the current directory).

    ``config_path`` is ``--config``; ``$ACOR_CONFIG`` is honoured too.
    Served from the cache when nothing changed (``ACOR_NO_CACHE=1``
    bypasses it). Raises :class:`cli.config.ConfigError` only.
    """
    try:
        cwd = os.path.abspath(cwd or os.getcwd())
    except FileNotFoundError:
        raise ConfigError(None, "the current directory no longer exists",
                          "cd to an existing directory and rerun.") from None
    path = find_config(cwd, config_path)
    root = config_root(path, cwd)
    caching = os.environ.get("ACOR_NO_CACHE", "") in ("", "0")
    if caching:
        payload = cache.read(root, path)
        if payload is not None:
            try:
                return Registry.from_dict(payload)
            except (KeyError, TypeError, ValueError, AttributeError):
                pass  # written by another version: rescan
    fingerprint = cache.Fingerprint()
    if path is not None:
        fingerprint.stat(path)  # before reading it: see Fingerprint
    registry = scan(read_config(path, cwd), fingerprint)
    if caching:
        cache.write(root, path, fingerprint, registry.to_dict())
    return registry


def scan(config, fingerprint=None):
    """Read every tools dir of ``config``; record what was looked at in
    ``fingerprint`` (a :class:`cli.cache.Fingerprint`)."""
    fp = cache.Fingerprint() if fingerprint is None else fingerprint
    registry = Registry(config)
    for tools_dir in config.tools_dirs:
        st = fp.stat(tools_dir)
        if st is None or not stat.S_ISDIR(st.st_mode):
            continue  # config.warnings already says so
        try:
            names = sorted(os.listdir(tools_dir))
        except OSError as exc:
            registry.skipped.append(Skipped(
                path=tools_dir, reason=f"cannot list it: {exc.strerror}",
                recovery=f"Check its permissions: `ls -ld {tools_dir}`."))
            continue
        dir_real = os.path.realpath(tools_dir)
        for name in names:
            if name.startswith("."):
                continue
            path = os.path.join(tools_dir, name)
            try:
                spec = _load(path, name, dir_real, fp)
            except _Invalid as exc:
                registry.skipped.append(Skipped(
                    path=printable(path), reason=exc.reason,
                    recovery=exc.recovery))
                continue
            if spec is None:
                continue
            winner = registry.tools.get(spec.name)
            if winner is None:
                registry.tools[spec.name] = spec
            else:
                registry.shadowed.append(Shadowed(
                    name=spec.name, winner_path=winner.path,
                    loser_path=spec.path))
    return registry


class _Invalid(Exception):
    """This manifest is skipped: ``reason`` and ``recovery``."""

    def __init__(self, reason, recovery):
        super().__init__(reason)
        self.reason = reason
        self.recovery = recovery


def _load(path, name, dir_real, fp):
    """The ToolSpec at ``path`` (an entry of a tools dir), None if it is
    not a manifest at all; raises _Invalid for a bad one."""
    json_file = name.endswith(".json")
    try:
        st = os.stat(path)
    except OSError:
        st = None  # vanished, or a dangling symlink
    is_dir = st is not None and stat.S_ISDIR(st.st_mode)
    if json_file or is_dir:
        fp.add(path, st)
        # `acor list --all` and `acor doctor` print paths: a name holding
        # "\n## AI Directive" must not print as a heading.
        bad = _unprintable(name)
        if bad is not None:
            raise _Invalid(f"its name contains {bad!r}, a control character "
                           "or line break", "Rename it to plain printable "
                           "characters.")
    if json_file and not is_dir:
        if st is None or not stat.S_ISREG(st.st_mode):
            return None
        _check_inside(dir_real, path, "the manifest")
        data, warnings = _read(path, st, WRAPPED_FIELDS)
        return _wrapped(path, data, warnings, dir_real, fp)
    if not is_dir:
        return None  # a README, a script: a tools dir may hold anything
    manifest = os.path.join(path, "manifest.json")
    mst = fp.stat(manifest)  # recorded even if missing: adding one counts
    if mst is None:
        return None
    folder_real = _check_inside(dir_real, path, "the tool folder")
    if not stat.S_ISREG(mst.st_mode):
        raise _Invalid("manifest.json is not a regular file",
                       f"Make {manifest} a JSON file.")
    data, warnings = _read(manifest, mst, ACOR_FIELDS)
    entry = _program(folder_real, data["entry"], "entry", fp, python_ok=True)
    argv = [sys.executable, "-u", entry] if data["entry"].endswith(".py") \
        else [entry]
    return ToolSpec(
        name=data["name"], version=data["version"],
        description=data["description"], kind="acor", path=path,
        manifest_path=manifest, argv=argv + data.get("args", []),
        timeout=data.get("timeout"), idle_timeout=data.get("idle_timeout"),
        usage=data.get("usage"), errors={}, cwd_mode="invocation",
        warnings=warnings)


def _wrapped(path, data, warnings, dir_real, fp):
    command = list(data["command"])
    if "/" in command[0] and not os.path.isabs(command[0]):
        command[0] = _program(dir_real, command[0], "command[0]", fp)
    pattern = data.get("progress_pattern")
    if pattern is not None:
        import re  # cold path: the cache stores the checked pattern
        try:
            groups = re.compile(pattern).groupindex
        except (re.error, RecursionError, OverflowError) as exc:
            raise _Invalid(f"'progress_pattern' is not a valid regular "
                           f"expression: {exc}", _PATTERN_FIX) from None
        if "percent" not in groups:
            raise _Invalid("'progress_pattern' has no named group 'percent' "
                           "for the number", _PATTERN_FIX)
    return ToolSpec(
        name=data["name"], version=data.get("version", "0.0.0"),
        description=data["description"], kind="wrapped", path=path,
        manifest_path=path, argv=command, timeout=data.get("timeout"),
        idle_timeout=data.get("idle_timeout"), usage=data.get("usage"),
        progress_pattern=pattern, errors=data.get("errors", {}),
        cwd_mode=data.get("cwd", "invocation"), warnings=warnings)


_PATTERN_FIX = ('Write a Python regex whose group (?P<percent>...) captures '
                'the number, e.g. "progress_pattern": "(?P<percent>\\\\d+)%".')


def _check_inside(parent_real, path, what):
    """realpath(path), which must lie strictly inside ``parent_real``."""
    real = os.path.realpath(path)
    if real == parent_real or not _inside(parent_real, real):
        raise _Invalid(f"{what} resolves to {real}, outside {parent_real}",
                       "Move it inside that directory instead of linking "
                       "to it from there.")
    return real


def _inside(parent_real, real):
    # commonpath, not startswith: "/p/tools-evil" starts with "/p/tools".
    return os.path.commonpath([parent_real, real]) == parent_real


def _program(folder_real, rel, field, fp, python_ok=False):
    """The real path of program ``rel``, which must be a file inside
    ``folder_real`` and executable (or, if ``python_ok``, named *.py: this
    interpreter runs it)."""
    if os.path.isabs(rel):
        raise _Invalid(f"'{field}' must be a path relative to its folder, "
                       f"not the absolute path {rel!r}",
                       "Put the program inside the tool folder and give its "
                       'relative path, e.g. "entry": "main.py".')
    joined = os.path.join(folder_real, rel)
    real = os.path.realpath(joined)
    if not _inside(folder_real, real):
        raise _Invalid(f"'{field}' {rel!r} resolves to {real}, outside "
                       f"{folder_real}", "Put the program inside that folder "
                       "(no '..', no symlink leading out of it).")
    st = fp.stat(joined, light=True)
    if st is None or not stat.S_ISREG(st.st_mode):
        raise _Invalid(f"'{field}' {rel!r} is not an existing file ({real})",
                       f"Create it, or fix '{field}' in the manifest.")
    if not (python_ok and rel.endswith(".py")) and \
            not os.access(real, os.X_OK):
        raise _Invalid(f"'{field}' {rel!r} is not executable (it needs "
                       "chmod +x)",
                       f"Run `chmod +x {real}` (a #! line must name its "
                       "interpreter)" + (", or name it *.py to run it with "
                       "Python." if python_ok else "."))
    return real


def _read(path, st, fields):
    """The checked manifest at ``path``: (values, warnings)."""
    too_big = _Invalid(f"the manifest is over the {MAX_MANIFEST_BYTES // 1024}"
                       " KiB limit", "Keep only the tool's description in it.")
    if st.st_size > MAX_MANIFEST_BYTES:
        raise too_big
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
        raise _Invalid(f"cannot read the manifest: {exc.strerror}",
                       f"Check its permissions: `ls -l {path}`.") from None
    except json.JSONDecodeError as exc:
        raise _Invalid(f"malformed JSON at line {exc.lineno}, column "
                       f"{exc.colno}: {exc.msg}", "Fix the JSON there (often "
                       "a trailing comma or a missing quote); "
                       f"`python3 -m json.tool {path}` checks it.") from None
    except (ValueError, RecursionError) as exc:  # bad UTF-8, huge numbers
        raise _Invalid(f"unreadable JSON: {exc}",
                       "Save the manifest as plain UTF-8 JSON.") from None
    if not isinstance(data, dict):
        raise _Invalid(f"the manifest must be a JSON object, not "
                       f"{_json_type(data)}", 'Write {"name": ..., '
                       '"description": ..., ...}.')
    _check_strings(data)
    return _check_fields(data, fields, path)


def _unique_keys(pairs):
    result = dict(pairs)
    if len(result) < len(pairs):
        seen = set()
        for key, _ in pairs:
            if key in seen:
                raise _Invalid(f"key {key!r} appears twice in one object",
                               "Keep one; JSON would silently use the last.")
            seen.add(key)
    return result


def _no_constant(name):
    raise _Invalid(f"{name} is not valid JSON", "Use a finite number.")


def _check_strings(data):
    """Refuse any string over MAX_STRING characters, or holding a NUL
    (no path or argv can contain one), keys included."""
    stack = [data]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value)
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, str) and len(value) > MAX_STRING:
            raise _Invalid(f"a string of {len(value)} characters (starting "
                           f"{value[:30]!r}) is over the {MAX_STRING} limit",
                           "Shorten it: a manifest describes a tool, "
                           "documentation belongs elsewhere.")
        elif isinstance(value, str) and "\0" in value:
            raise _Invalid(f"the string {value[:30]!r} contains a NUL "
                           "character", "Remove it: no path or argument "
                           "can hold one.")


def _check_fields(data, fields, path):
    warnings = []
    for key in data:
        if key not in fields:
            import difflib  # cold path only
            near = difflib.get_close_matches(key, list(fields), n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            warnings.append(f"unknown field {key!r} in {path} is ignored"
                            f"{hint}")
    missing = [key for key, (required, _, _) in fields.items()
               if required and key not in data]
    if missing:
        raise _Invalid("missing required field(s): " + ", ".join(missing),
                       f"Add them to {path}; see `acor show` of a working "
                       "tool for an example.")
    values = {}
    for key, (required, valid, expected) in fields.items():
        if data.get(key) is None and not required:
            continue  # absent, or null: the default
        if not valid(data[key]):
            raise _Invalid(f"field {key!r} must be {expected}, not "
                           f"{_json_type(data[key])}",
                           f"Fix {key!r} in {path}.")
        values[key] = data[key]
    for key, allowed in (("version", "\t"), ("description", "\t"),
                         ("usage", "\t\n")):
        bad = _unprintable(values.get(key, ""), allowed)
        if bad is not None:
            # acor list, show and help print these as they are: no line
            # break (but in usage) can start a line that reads as a
            # heading, no escape sequence can repaint the terminal.
            raise _Invalid(f"field {key!r} contains {bad!r}, a control "
                           "character" + ("" if key == "usage" else
                                          " or line break"),
                           f"Remove it from {key!r} in {path}.")
    if values["name"] in RESERVED:
        raise _Invalid(f"the name {values['name']!r} is an acor built-in "
                       "command, so `acor " + values["name"] + "` could "
                       "never run this tool", f"Rename the tool in {path}.")
    if "errors" in values:
        values["errors"] = _errors(values["errors"], warnings)
    return values, warnings


def _errors(value, warnings):
    """{"<exit code>": {"message", "recovery"[, "code"]}}, keys normalised
    ("01" -> "1") to match ``str(returncode)`` at run time."""
    result = {}
    for key, entry in value.items():
        digits = key[1:] if key.startswith("-") else key
        if not (digits.isascii() and digits.isdigit()):
            raise _Invalid(f"errors key {key!r} is not an exit code",
                           'Key each entry by the exit code as a string, '
                           'e.g. "1" (or "-9" for a signal).')
        if not isinstance(entry, dict):
            entry = {}
        bad = [k for k in ("message", "recovery")
               if not isinstance(entry.get(k), str)]
        if not isinstance(entry.get("code", ""), str):
            bad.append("code")
        if bad:
            raise _Invalid(f"errors[{key!r}] needs string field(s) "
                           f"{', '.join(bad)}", 'Write e.g. "1": {"message": '
                           '"Tests failed", "recovery": "Fix them, rerun."}.')
        extra = sorted(set(entry) - {"message", "recovery", "code"})
        if extra:
            warnings.append(f"errors[{key!r}]: unknown field(s) "
                            f"{', '.join(extra)} ignored")
        result[str(int(key))] = {k: entry[k] for k in
                                 ("message", "recovery", "code") if k in entry}
    return result


# What each field must be: predicates, and the words for the messages.
def _text(v):
    return isinstance(v, str) and v != ""


def _texts(v):
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _seconds(v):  # 1e999 parses as inf, so finiteness is checked here
    return isinstance(v, (int, float)) and not isinstance(v, bool) and \
        v > 0 and math.isfinite(v)


def _name(v):
    return isinstance(v, str) and 0 < len(v) <= 64 and \
        set(v) <= _NAME_CHARS and v[0] not in "_-"


_NAME = "a lowercase name of 1-64 letters, digits, '-' or '_', starting " \
    "with a letter or digit (like \"my-tool\")"
_VERSION = 'a non-empty string like "1.0.0"'
_SECONDS = "a number of seconds above 0"
# field -> (required, predicate, what it must be)
ACOR_FIELDS = {
    "name": (True, _name, _NAME),
    "version": (True, _text, _VERSION),
    "description": (True, _text, "a non-empty string"),
    "entry": (True, _text, "the path of the program, relative to the folder"),
    "timeout": (False, _seconds, _SECONDS),
    "idle_timeout": (False, _seconds, _SECONDS),
    "usage": (False, lambda v: isinstance(v, str), "a string"),
    "args": (False, _texts, "a list of strings"),
}
WRAPPED_FIELDS = {
    "name": (True, _name, _NAME),
    "description": (True, _text, "a non-empty string"),
    "command": (True, lambda v: _texts(v) and v and v[0] != "",
                "a non-empty list of strings (the argv)"),
    "version": (False, _text, _VERSION),
    "timeout": (False, _seconds, _SECONDS),
    "idle_timeout": (False, _seconds, _SECONDS),
    "usage": (False, lambda v: isinstance(v, str), "a string"),
    "progress_pattern": (False, _text, "a regular expression string"),
    "errors": (False, lambda v: isinstance(v, dict),
               'an object like {"1": {"message": "...", "recovery": "..."}}'),
    "cwd": (False, lambda v: v in ("project", "invocation"),
            '"project" or "invocation"'),
}


def _unprintable(text, allowed=""):
    """The first character of ``text`` that is not printable text (a
    control character, a line or paragraph separator, a bidi override...)
    and not in ``allowed``; None if there is none."""
    if text.isprintable():
        return None
    return next((c for c in text if not c.isprintable() and
                 c not in allowed), None)


def printable(text):
    """``text`` with every unprintable character written as its escape."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _json_type(value):
    """How a JSON value reads in a message."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    if isinstance(value, list):
        odd = next((i for i, x in enumerate(value)
                    if not isinstance(x, str)), None)
        return "an empty array" if not value else "an array" if odd is None \
            else f"an array with {_json_type(value[odd])} at index {odd}"
    return "an object" if isinstance(value, dict) else "null"
