"""The project configuration: ``.acor/config.yaml``, found like git finds
``.git``.

Every key is optional::

    tools_dirs: [.acor/tools, tools, manifests]  # relative to the root
    timeout: 120             # seconds a tool may run (0 < s <= 604800)
    idle_timeout: null       # seconds without output before it is stopped
    format: null             # markdown | json | rich (null: by terminal)
    progress_interval: 0.1   # coalesce piped progress faster than this
    state_dir: .acor/state   # where tools keep state between runs
    max_output: 32k          # bytes relayed to the agent per run (0: all)
    sandbox: null            # default: a box for tools that declare none;
                             # "off" (or false): no sandbox at all
                             # (null: as each manifest declares)

The project root is the directory holding ``.acor/``; an explicit config
file elsewhere (``--config``, ``ACOR_CONFIG``) makes its own directory the
root. Without a config the root is the current directory.

This module imports yaml only inside :func:`read_config`, which the launcher
calls only when its cache is stale (see :mod:`cli.discovery.cache`).
"""

from __future__ import annotations

import os
import stat

from acor import exitcodes
from acor.errors import AcorError

from acor.cli.discovery.cache import Record
from acor.cli.durations import MAX_SECONDS, check_seconds
from acor.cli.sizes import DEFAULT_MAX_OUTPUT, parse_size
from acor.cli.textsafe import printable

TYPE_CHECKING = False  # typing costs every run ~3 ms: only mypy
if TYPE_CHECKING:
    from typing import Any, Callable, Iterable, NoReturn, Optional, Sequence

    # refuses a key's value: (key, what it must be, what it is, list item)
    Wrong = Callable[..., NoReturn]

CONFIG_FILE = os.path.join(".acor", "config.yaml")
MAX_CONFIG_BYTES = 1 << 20
MAX_YAML_DEPTH = 16
MAX_YAML_VALUES = 10_000
MAX_UNKNOWN_REPORTED = 10
DEFAULT_TOOLS_DIRS = (os.path.join(".acor", "tools"), "tools", "manifests")
# The launcher's one default state dir (relative to the project root); the
# library keeps its own, for a tool run without acor (acor.sessions).
DEFAULT_STATE_DIR = os.path.join(".acor", "state")
FORMATS = ("markdown", "json", "rich")
# key -> (default, an example value for messages)
KEYS = {
    "tools_dirs": (None, "[.acor/tools, tools]"),
    "timeout": (120, "120"),
    "idle_timeout": (None, "30"),
    "format": (None, "markdown"),
    "progress_interval": (0.1, "0.1"),
    "state_dir": (DEFAULT_STATE_DIR, ".acor/state"),
    "max_output": (DEFAULT_MAX_OUTPUT, "32k"),
    "sandbox": (None, "default"),
}


class ConfigError(AcorError):
    """A configuration acor cannot use.

    ``path`` is the file (None if there is none), ``line`` its 1-based line
    when known, ``reason`` what is wrong (a phrase, no final period) and
    ``recovery`` the exact next step.
    """

    code = "E_CONFIG"
    exit_code = exitcodes.USAGE

    def __init__(self, path: Optional[str], reason: str, recovery: str,
                 line: Optional[int] = None) -> None:
        super().__init__(reason, recovery)
        self.path = path
        self.line = line

    @property
    def where(self) -> str:
        """The file and line as a message shows them: one line, every
        control character in the path made visible (a path comes from
        argv, the environment or the directory tree, and may hold
        anything)."""
        where = printable(self.path) if self.path else "acor configuration"
        if self.line:
            where += f", line {self.line}"
        return where

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}. Next step: {self.recovery}"


class Config(Record):
    """The effective configuration; every path in it is absolute."""

    path: Optional[str]         # the file read (None: the defaults)
    root: str                   # the project root
    tools_dirs: list[str]
    timeout: float
    idle_timeout: Optional[float]
    format: Optional[str]
    progress_interval: float
    state_dir: str
    warnings: list[str]
    max_output: int
    sandbox: Optional[str]

    FIELDS = ("path", "root", "tools_dirs", "timeout", "idle_timeout",
             "format", "progress_interval", "state_dir", "warnings",
             "max_output", "sandbox")


def find_config(cwd: str, explicit: Optional[str] = None) -> Optional[str]:
    """The config file to use, or None for the defaults.

    ``explicit`` (``--config``), else ``$ACOR_CONFIG``, wins and must exist
    (relative to ``cwd``); otherwise ``.acor/config.yaml`` is looked for in
    ``cwd`` and each parent in turn.
    """
    explicit = explicit or os.environ.get("ACOR_CONFIG") or None
    if explicit:
        path = os.path.abspath(os.path.join(cwd, os.path.expanduser(explicit)))
        if not os.path.isfile(path):
            what = "is not a file" if os.path.exists(path) else \
                "does not exist"
            raise ConfigError(
                path, f"the config file given with --config or ACOR_CONFIG "
                f"{what}",
                f"Fix the path (relative paths start from {printable(cwd)}), "
                "or drop "
                "--config and unset ACOR_CONFIG to use the nearest "
                ".acor/config.yaml.")
        return _owned(path)
    directory = os.path.abspath(cwd)
    while True:
        candidate = os.path.join(directory, CONFIG_FILE)
        if _config_at(candidate):
            return _owned(candidate)
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def _config_at(candidate: str) -> bool:
    """Whether ``candidate`` is a config file; ConfigError when it may be
    one that cannot be read (a folder without permission, a dangling link,
    a FIFO): the walk stops there, never silently going on upward to a
    config that says something else."""
    import errno
    import shlex
    try:
        st = os.stat(candidate)
    except OSError as exc:
        if exc.errno == errno.ENOTDIR or (
                exc.errno == errno.ENOENT and not os.path.lexists(candidate)):
            return False  # no config here: look in the parent
        folder = os.path.dirname(candidate)
        raise ConfigError(
            candidate, f"it cannot be read: {exc.strerror}, so acor cannot "
            "tell whether it holds this project's settings",
            "Make it readable (`ls -ld "
            f"{printable(shlex.quote(folder))}` shows who may read it; "
            f"`chmod u+rwx {printable(shlex.quote(folder))}` fixes a folder "
            "of yours), or remove it; acor does not look past a config it "
            "cannot read.") from None
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(candidate, "it is not a regular file",
                          "Make it a YAML file, or remove it; acor does "
                          "not look past it.")
    return True


def _owned(path: str) -> str:
    """``path``, if it and its folder pass the ownership rule of
    :mod:`cli.discovery.trust`; else ConfigError naming which does not."""
    from acor.cli.discovery import trust
    for item in (path, os.path.dirname(path)):
        try:
            st = os.stat(item)
        except (OSError, ValueError):
            continue  # _parse says why it cannot be read
        why = trust.problem(item, st)
        if why is not None:
            what = "the config file" if item == path else \
                f"the config file's folder {printable(item)}"
            raise ConfigError(path, f"{what} is not used: {why}",
                              trust.how_to_trust(item))
    return path


def config_root(path: Optional[str], cwd: str) -> str:
    """The project root for config file ``path`` (None: no config)."""
    if path is None:
        return os.path.abspath(cwd)
    folder = os.path.dirname(path)
    if os.path.basename(folder) == ".acor":
        return os.path.dirname(folder)
    return folder


def load_config(cwd: Optional[str] = None,
                explicit: Optional[str] = None) -> Config:
    """Find and read the configuration for ``cwd`` (default: the current
    directory). Raises :class:`ConfigError`."""
    cwd = os.path.abspath(cwd or os.getcwd())
    return read_config(find_config(cwd, explicit), cwd)


def read_config(path: Optional[str], cwd: str) -> Config:
    """Parse and check config file ``path`` (None: defaults for ``cwd``)."""
    root = config_root(path, cwd)
    warnings: list[str] = []
    data: object
    lines: dict[str, int]
    data, lines = ({}, {}) if path is None else _parse(path, warnings)
    if data is None:  # an empty file
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(
            path, f"the top level must be a mapping of keys, not "
            f"{_described(data)}", "Write one `key: value` per "
            "line, for example `timeout: 120`.", line=1)
    warnings += _unknown_keys(data, path, lines)
    values: dict[str, Any] = {
        key: default if data.get(key) is None else data[key]
        for key, (default, _) in KEYS.items()}

    def wrong(key: str, expected: str, found: object,
              item: Optional[int] = None) -> NoReturn:
        label = repr(key) + ("" if item is None else f" item {item + 1}")
        raise ConfigError(
            path, f"{label} must be {expected}, "
            f"not {_described(found)}",
            f"Fix it in {_file(path)}: for example "
            f"`{key}: {KEYS[key][1]}`.",
            line=lines.get(key))

    _check_values(values, wrong)
    dirs = values["tools_dirs"]
    configured = dirs is not None
    return Config(
        path=path, root=root,
        tools_dirs=_tools_dirs(dirs if configured else DEFAULT_TOOLS_DIRS,
                               root, path if configured else None,
                               lines, warnings),
        timeout=values["timeout"], idle_timeout=values["idle_timeout"],
        format=values["format"], progress_interval=values["progress_interval"],
        state_dir=_absolute(values["state_dir"], root), warnings=warnings,
        max_output=values["max_output"], sandbox=values["sandbox"])


def _described(value: object) -> str:
    """How ``value`` reads in a message about the config, in YAML's words."""
    # acor.args (and the json it imports) only for a config being refused:
    # every run imports this module.
    from acor.args import describe
    return describe(value, yaml=True)


def _unknown_keys(data: dict[Any, Any], path: Optional[str],
                  lines: dict[str, int]) -> list[str]:
    """A warning for each key acor does not know (the first few, then how
    many more)."""
    unknown = [key for key in data if key not in KEYS]
    warnings = [f"{_at(path, lines, str(key))}: unknown key {key!r} "
                f"is ignored{_did_you_mean(key, KEYS)}"
                for key in unknown[:MAX_UNKNOWN_REPORTED]]
    if len(unknown) > MAX_UNKNOWN_REPORTED:
        warnings.append(f"{_file(path)}: "
                        f"{len(unknown) - MAX_UNKNOWN_REPORTED} more "
                        "unknown keys are ignored")
    return warnings


def _check_values(values: dict[str, Any], wrong: Wrong) -> None:
    """Refuse (through ``wrong``) a value of the wrong kind; a size is
    made a byte count and a bare ``off`` the string, in ``values``."""
    for key, zero_ok in (("timeout", False), ("idle_timeout", False),
                         ("progress_interval", True)):
        if values[key] is not None:
            _seconds(values[key], key, zero_ok, wrong)
    if values["format"] is not None and values["format"] not in FORMATS:
        wrong("format", "one of markdown, json, rich (or null)",
              values["format"])
    if values["max_output"] is not None:
        try:
            values["max_output"] = parse_size(values["max_output"],
                                              "max_output")
        except ValueError:
            wrong("max_output", "a size in bytes: 0 (no limit), or from 4k "
                  "to 1 TiB (32768, 32k, 1M)", values["max_output"])
    if values["sandbox"] is False:  # YAML reads a bare `off` as false
        values["sandbox"] = "off"
    if values["sandbox"] not in (None, "default", "off"):
        wrong("sandbox", 'default, "off" or false (or null)',
              values["sandbox"])
    if not _path(values["state_dir"]):
        wrong("state_dir", "a directory path", values["state_dir"])
    dirs = values["tools_dirs"]
    if dirs is not None and not isinstance(dirs, list):
        wrong("tools_dirs", "a list of directory paths", dirs)
    for i, item in enumerate(dirs or ()):
        if not _path(item):
            wrong("tools_dirs", "a directory path", item, i)


def _tools_dirs(items: Sequence[str], root: str, path: Optional[str],
                lines: dict[str, int], warnings: list[str]) -> list[str]:
    """Absolute tools dirs, first wins; duplicates dropped, missing ones
    kept (so creating one later invalidates the cache). ``path`` is the
    config file that names them (None: defaults, whose absence is normal
    and not reported)."""
    result: list[str] = []
    seen: set[str] = set()
    problems: list[str] = []
    if not items:
        problems.append("tools_dirs is empty, so no tools will be found")
    for item in items:
        folder = _absolute(item, root)
        real = os.path.realpath(folder)
        if real in seen:
            problems.append(f"tools dir {item!r} is listed twice (or is a "
                            "link to another); the first is used")
            continue
        seen.add(real)
        result.append(folder)
        if not os.path.isdir(folder):
            problems.append(f"tools dir {item!r} ({printable(folder)}) does "
                            "not exist: "
                            "create it or remove it from tools_dirs")
    if path is not None:
        where = _at(path, lines, "tools_dirs")
        warnings.extend(f"{where}: {problem}" for problem in problems)
    return result


def _parse(path: str, warnings: list[str]
           ) -> tuple[object, dict[str, int]]:
    """(data, {top-level key: line}) from YAML file ``path``."""
    try:
        # O_NONBLOCK: opening a FIFO must fail the checks below, not hang.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with open(fd, "rb") as f:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise ConfigError(path, "it is not a regular file",
                                  "Point --config at a YAML file.")
            raw = f.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        import shlex
        raise ConfigError(path, f"cannot read it: {exc.strerror}",
                          "Check that you may read it: "
                          f"`ls -l {printable(shlex.quote(path))}`.") \
            from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(path, "it is larger than 1 MiB, too large for a "
                          "config file", "Keep only acor settings in it (a "
                          "few lines: see `acor doctor`).")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(path, "it is not UTF-8 text", "Save it as UTF-8.",
                          line=raw[:exc.start].count(b"\n") + 1) from None
    import yaml
    # libyaml when present: the pure-Python parser manages ~50 KB/s.
    loader_class = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        _precheck(yaml, loader_class, text, path)
        loader = loader_class(text)
        try:
            node = loader.get_single_node()
            data = None if node is None else loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        context = f" ({exc.context})" if exc.context else ""
        line = mark.line + 1 if mark else None
        raise ConfigError(
            path, f"invalid YAML: {exc.problem}{context}",
            f"Fix the YAML{f' at line {line}' if line else ''} (check the "
            "indentation; quote values containing ': ' or ' #'), then rerun.",
            line=line) from None
    except yaml.reader.ReaderError as exc:
        raise ConfigError(path, f"it contains the control character "
                          f"U+{exc.character:04X}, which YAML does not allow",
                          "Delete it (an editor showing invisible characters "
                          "helps).", line=text.count("\n", 0, exc.position)
                          + 1) from None
    except yaml.YAMLError as exc:
        raise ConfigError(path, f"invalid YAML: {exc}",
                          "Fix the YAML, then rerun.") from None
    lines: dict[str, int] = {}
    if isinstance(node, yaml.MappingNode):
        for key, _ in node.value:
            if isinstance(key, yaml.ScalarNode):
                line = key.start_mark.line + 1
                if key.value in lines:
                    warnings.append(
                        f"{printable(path)}, line {line}: key "
                        f"{key.value!r} is repeated "
                        f"(first on line {lines[key.value]}); the last wins")
                lines[key.value] = line
    return data, lines


def _precheck(yaml: Any, loader_class: Any, text: str, path: str) -> None:
    """Refuse, from the event stream and before building anything, what
    only an attack needs: aliases (nested aliases turn 1 KB into billions
    of elements: "billion laughs"), deep nesting (PyYAML's parser is
    quadratic in it, and its composer recursive) and thousands of values.
    A config is a flat mapping holding a list or two."""
    depth = count = 0
    try:
        for event in yaml.parse(text, Loader=loader_class):
            count += 1
            line = event.start_mark.line + 1
            if isinstance(event, yaml.AliasEvent):
                raise ConfigError(
                    path, f"YAML alias *{event.anchor} is not allowed in an "
                    "acor config", "Write the value out in full; anchors and "
                    "aliases (&name, *name) are not accepted.", line=line)
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
            if depth > MAX_YAML_DEPTH:
                raise _too_deep(path, line)
            if count > MAX_YAML_VALUES:
                raise ConfigError(
                    path, f"it has more than {MAX_YAML_VALUES} YAML values, "
                    "which no acor config needs", _FLAT, line=line)
    except yaml.MarkedYAMLError as exc:
        # libyaml 0.2.5 (PyYAML 6.0.4 on) caps flow nesting itself, and its
        # scanner looks ahead past our limit before yielding an event: the
        # refusal must read the same whichever parser refuses first.
        mark = exc.problem_mark
        if mark is not None and (
                "nesting depth" in str(exc.problem)
                or _flow_depth(text[:mark.index]) > MAX_YAML_DEPTH):
            raise _too_deep(path, mark.line + 1) from None
        raise


_FLAT = ("Keep it to a flat mapping of acor settings: `acor doctor` shows "
         "them.")


def _too_deep(path: str, line: int) -> ConfigError:
    return ConfigError(path, f"it is nested more than {MAX_YAML_DEPTH} "
                       "levels deep, which no acor config needs", _FLAT,
                       line=line)


def _flow_depth(prefix: str) -> int:
    """The flow nesting open at the end of ``prefix``, counted roughly
    (brackets inside quotes count too): enough to tell a parser's own
    depth refusal from a syntax error."""
    depth = 0
    for char in prefix:
        if char in "[{":
            depth += 1
        elif char in "]}":
            depth = max(0, depth - 1)
    return depth


def _seconds(value: object, key: str, zero_ok: bool,
             wrong: Wrong) -> None:
    """Refuse (through ``wrong``) a duration that is not a number, or is
    out of range: the same bound as ``--timeout`` and manifests."""
    expected = (f"a number of seconds {'0 or more' if zero_ok else 'above 0'}"
                f" and at most {MAX_SECONDS} (7 days)")
    if isinstance(value, str) or not isinstance(value, (int, float)):
        wrong(key, expected, value)  # YAML's "30" is a string, not seconds
    try:
        check_seconds(value, key, zero_ok)
    except ValueError:
        wrong(key, expected, value)


def _path(value: object) -> bool:
    # A NUL byte fits in a YAML string ("\0") but in no filesystem path;
    # line breaks and other control characters would reach `acor doctor`'s
    # output (and every message naming a manifest in that dir) as they are.
    return isinstance(value, str) and value != "" and value.isprintable()


def _absolute(path: str, root: str) -> str:
    return os.path.normpath(os.path.join(root, os.path.expanduser(path)))


def _at(path: Optional[str], lines: dict[str, int], key: str) -> str:
    line = lines.get(key)
    return f"{_file(path)}, line {line}" if line else _file(path)


def _file(path: Optional[str]) -> str:
    """The config file as a message names it (a path may hold anything)."""
    return printable(path) if path else "acor configuration"


def _did_you_mean(key: object, known: Iterable[str]) -> str:
    import difflib  # cold path only: a config is being parsed
    match = difflib.get_close_matches(str(key), list(known), n=1)
    return f" (did you mean {match[0]!r}?)" if match else \
        f" (known keys: {', '.join(known)})"
