"""Find the tools: scan the tools dirs, build a :class:`Registry`.

A tools dir holds tool folders (``<folder>/manifest.json``), wrapper
manifests (``<name>.json``) and Python files of ``@tool`` functions
(:mod:`acor.cli.discovery.functions`), checked by
:mod:`acor.cli.discovery.manifest`: a bad one is skipped with a reason and
a fix (``acor doctor`` lists them) while the others keep working.
Programs must resolve, symlinks and ``..`` included, inside their tool
folder. When two manifests claim one name, the first tools dir wins
(within a dir, the first file name) and the other is reported as
shadowed.

Scanning is the cold path; :func:`load_registry` serves a warm run from
:mod:`acor.cli.discovery.cache` with a few ``stat()`` calls, and a
long-lived process (``acor mcp``) from the registry it kept
(:class:`Kept`) under the same check, without reading the file.
"""

from __future__ import annotations

import marshal
import os
import stat

from acor.cli.discovery import cache
from acor.cli.discovery.cache import Record
from acor.cli.discovery.config import (Config, ConfigError, config_root,
                                       find_config, read_config)
# loaded with the cache already: no cost at the top
from acor.cli.discovery.sources import (EntryPointProblem, entry_point_dirs,
                                        packages_searched, search_paths,
                                        user_tools_dir)
from acor.cli.discovery.spec import ToolSpec
from acor.cli.textsafe import printable

TYPE_CHECKING = False  # typing costs every run ~3 ms: only mypy
if TYPE_CHECKING:
    from typing import Any

    from acor.cli.discovery.manifest import ManifestError

    # What a tools dir's entry gives: its tools, and the refused ones.
    Loaded = tuple[list[ToolSpec], list[ManifestError]]

__all__ = ["Kept", "Registry", "Skipped", "Shadowed", "ToolSpec",
           "load_registry", "scan"]


class Skipped(Record):
    """A manifest that was not loaded: why, and the fix. ``name`` is the
    tool name it claims (or its file or folder name)."""

    FIELDS = ("path", "reason", "recovery", "name")

    path: str
    reason: str
    recovery: str
    name: str | None          # None: an entry point, which claims none


class Shadowed(Record):
    """A tool hidden by an earlier one with the same name. ``override``:
    a project or user tool that replaces a package's on purpose (not a
    problem); otherwise two manifests of one source claim the name."""

    FIELDS = ("name", "winner_path", "loser_path", "override")

    name: str
    winner_path: str
    loser_path: str
    override: bool


class Registry:
    """The configuration and what discovery found in it."""

    __slots__ = ("config", "tools", "skipped", "shadowed")

    config: Config
    tools: dict[str, ToolSpec]
    skipped: list[Skipped]
    shadowed: list[Shadowed]

    def __init__(self, config: Config,
                 tools: dict[str, ToolSpec] | None = None,
                 skipped: list[Skipped] | None = None,
                 shadowed: list[Shadowed] | None = None) -> None:
        self.config = config
        self.tools = {} if tools is None else tools  # name -> ToolSpec
        self.skipped = [] if skipped is None else skipped
        self.shadowed = [] if shadowed is None else shadowed

    def get(self, name: str) -> ToolSpec | None:
        """The tool called ``name``, or None."""
        return self.tools.get(name)

    def skipped_named(self, name: str) -> Skipped | None:
        """The skipped manifest that claims ``name``, or None."""
        return next((s for s in self.skipped if s.name == name), None)

    def close_matches(self, name: str, n: int = 3) -> list[str]:
        """Known names that look like ``name`` (for "did you mean")."""
        import difflib  # only when a name was not found
        return difflib.get_close_matches(name, list(self.tools), n=n)

    def to_dict(self) -> dict[str, Any]:
        return {"config": self.config.to_dict(),
                "tools": [spec.to_dict() for spec in self.tools.values()],
                "skipped": [s.to_dict() for s in self.skipped],
                "shadowed": [s.to_dict() for s in self.shadowed]}

    def to_cache(self) -> dict[str, Any]:
        """:meth:`to_dict` as the cache keeps it: each args schema as
        marshal bytes, which :class:`ToolSpec` reads when (and if) it is
        asked for. :meth:`from_dict` takes either form."""
        data = self.to_dict()
        for item in data["tools"]:
            if item["args_schema"] is not None:
                item["args_schema"] = marshal.dumps(item["args_schema"])
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Registry:
        tools: dict[str, ToolSpec] = {}
        for item in data["tools"]:
            spec = ToolSpec.from_dict(item)
            tools[spec.name] = spec
        return cls(Config.from_dict(data["config"]), tools,
                   [Skipped.from_dict(s) for s in data["skipped"]],
                   [Shadowed.from_dict(s) for s in data["shadowed"]])


class Kept:
    """The last registry a long-lived process (``acor mcp``) discovered,
    kept parsed with what the cache would key and fingerprint it by: a
    load that finds the same key and every fingerprinted path unchanged
    (:func:`acor.cli.discovery.cache.unchanged`) is served it as it is,
    without reading the cache file or building a thousand records again.
    The registry is shared by the loads it serves: nobody changes one
    (:func:`_pinned` works on a copy). Safe across threads: what is kept
    is one object, replaced whole."""

    __slots__ = ("_held",)

    def __init__(self) -> None:
        self._held: _Held | None = None

    def get(self, key: list[object], tool: str | None = None
            ) -> Registry | None:
        """The kept registry if it is still what a scan would find. With
        ``tool``, for a call of that tool alone: every path is checked but
        the other tools' own files (their manifests and programs), whose
        change no call of ``tool`` can see. With a thousand tools that is a
        handful of stats, not two thousand; a server checks every path again
        after each call (:mod:`acor.cli.mcp.listchanged`), and tells its
        clients what changed."""
        held = self._held
        if held is None or held.key != key or \
                not cache.unchanged(held.entries_for(tool)):
            return None
        return held.registry

    def keep(self, key: list[object], entries: list[list[Any]],
             registry: Registry) -> None:
        self._held = _Held(key, entries, registry)


class _Held:
    """What :class:`Kept` holds: the registry, its key and fingerprint,
    and which of the fingerprint's paths are one tool's own files."""

    __slots__ = ("key", "entries", "registry", "_by_tool")

    def __init__(self, key: list[object], entries: list[list[Any]],
                 registry: Registry) -> None:
        self.key = key
        self.entries = entries
        self.registry = registry
        # tool -> the entries a call of it checks; made at the first call
        self._by_tool: dict[str, list[list[Any]]] | None = None

    def entries_for(self, tool: str | None) -> list[list[Any]]:
        """Every entry (``tool`` None, or a name the registry does not
        serve), else the entries a call of ``tool`` checks."""
        if tool is None or tool not in self.registry.tools:
            return self.entries
        by_tool = self._by_tool
        if by_tool is None:  # two threads may both build it: the same
            by_tool = self._by_tool = _entries_by_tool(self.entries,
                                                       self.registry)
        return by_tool[tool]


def _entries_by_tool(entries: list[list[Any]], registry: Registry
                     ) -> dict[str, list[list[Any]]]:
    """For each served tool, the entries a call of it checks: its own files
    (its manifest, and any path of its command line: the program, a
    function's source) and every entry that is no tool's own (the config,
    the tools dirs whose listing shows a tool added or removed, the trust
    file, a skipped manifest). A file two tools share is each one's."""
    owners: dict[str, list[str]] = {}
    for name, spec in registry.tools.items():
        for path in {spec.manifest_path, *spec.argv}:
            owners.setdefault(path, []).append(name)
    shared = [entry for entry in entries if entry[0] not in owners]
    by_tool = {name: list(shared) for name in registry.tools}
    for entry in entries:
        for name in owners.get(entry[0], ()):
            by_tool[name].append(entry)
    return by_tool


def load_registry(cwd: str | None = None, config_path: str | None = None,
                  pinned: bool = True, kept: Kept | None = None,
                  for_tool: str | None = None) -> Registry:
    """The registry for ``cwd`` (default: the current directory).

    ``config_path`` is ``--config``; ``$ACOR_CONFIG`` is honoured too.
    Served from the cache when nothing changed (``ACOR_NO_CACHE=1``
    bypasses it), and from ``kept`` before that (a :class:`Kept`: a
    long-lived process's last registry, under the same test, or, with
    ``for_tool``, the test for a call of that tool: :meth:`Kept.get`). With
    ``pinned`` (all but ``acor lock``), a tool that is not what the
    project's ``acor.lock`` pins is moved to the skipped
    (:mod:`cli.discovery.lock`). Raises
    :class:`acor.cli.discovery.config.ConfigError` only.
    """
    registry = _discovered(cwd, config_path, kept, for_tool)
    return _pinned(registry) if pinned else registry


def _pinned(registry: Registry) -> Registry:
    """``registry`` with every tool that drifted from the project's lock
    moved to its skipped manifests, saying what changed (a copy: the one
    given may be kept, see :class:`Kept`)."""
    from acor.cli.discovery.lock import lock_path
    if not os.path.lexists(lock_path(registry.config.root)):
        return registry  # no lock: no hashing, nothing more imported
    from acor.cli.discovery.lock import LockProblem, RECOVERY, drift
    from acor.cli.errors import PINNED
    try:
        found = drift(registry)
    except LockProblem as exc:  # fail closed: no tool is served
        found = {name: [exc.reason] for name in registry.tools}
    if found:
        registry = Registry(registry.config, dict(registry.tools),
                            list(registry.skipped), list(registry.shadowed))
    for name, changed in found.items():
        spec = registry.tools.pop(name)
        registry.skipped.append(Skipped(
            path=printable(spec.manifest_path),
            reason=PINNED + "; ".join(changed),
            recovery=RECOVERY, name=name))
    return registry


def _discovered(cwd: str | None, config_path: str | None,
                kept: Kept | None, for_tool: str | None = None) -> Registry:
    """The registry as discovery finds it: the one ``kept``, else from the
    cache, else a scan."""
    try:
        cwd = os.path.abspath(cwd or os.getcwd())
    except FileNotFoundError:
        raise ConfigError(None, "the current directory no longer exists",
                          "cd to an existing directory and rerun.") from None
    path = find_config(cwd, config_path)
    root = config_root(path, cwd)
    caching = os.environ.get("ACOR_NO_CACHE", "") in ("", "0")
    if not caching:
        return scan(read_config(path, cwd), _config_fingerprint(path))
    key = cache.key(root, path)
    if kept is not None:
        registry = kept.get(key, for_tool)
        if registry is not None:
            return registry
    found = cache.read_entry(root, path)
    if found is not None:
        try:
            registry = Registry.from_dict(found[0])
        except (KeyError, TypeError, ValueError, AttributeError):
            pass  # written by another version: rescan
        else:
            if kept is not None:
                kept.keep(key, found[1], registry)
            return registry
    fingerprint = _config_fingerprint(path)
    registry = scan(read_config(path, cwd), fingerprint)
    cache.write(root, path, fingerprint, registry.to_cache())
    if kept is not None and not fingerprint.racy:
        kept.keep(key, fingerprint.entries, registry)
    return registry


def _config_fingerprint(path: str | None) -> cache.Fingerprint:
    """A scan's fingerprint, the config file stat'ed first (before it is
    read: see :class:`acor.cli.discovery.cache.Fingerprint`)."""
    fingerprint = cache.Fingerprint()
    if path is not None:
        fingerprint.stat(path)
    return fingerprint


def scan(config: Config, fingerprint: cache.Fingerprint | None = None
         ) -> Registry:
    """Read every tools dir of ``config``; record what was looked at in
    ``fingerprint`` (a :class:`acor.cli.discovery.cache.Fingerprint`)."""
    # the cold path's checkers
    from acor.cli.discovery.manifest import ManifestError
    from acor.cli.discovery import trust
    fp = cache.Fingerprint() if fingerprint is None else fingerprint
    fp.stat(trust.trust_file())  # trusting a path there changes the scan
    registry = Registry(config)
    for tools_dir, origin in sources(config, registry, fp):
        st = fp.stat(tools_dir)
        if st is None or not stat.S_ISDIR(st.st_mode):
            continue  # config.warnings already says so
        why = None if _packaged(origin) else trust.problem(tools_dir, st)
        if why is not None:
            registry.skipped.append(Skipped(
                path=printable(tools_dir),
                reason=f"the tools dir is not used: {why}",
                recovery=trust.how_to_trust(tools_dir)))
            continue
        try:
            names = sorted(os.listdir(tools_dir))
        except OSError as exc:
            registry.skipped.append(Skipped(
                path=printable(tools_dir),
                reason=f"cannot list it: {exc.strerror}",
                recovery=f"Check its permissions: "
                         f"`ls -ld {printable(tools_dir)}`."))
            continue
        dir_real = os.path.realpath(tools_dir)
        for name in names:
            if name.startswith("."):
                continue
            path = os.path.join(tools_dir, name)
            try:
                specs, refused = _load_all(path, name, dir_real, fp, origin)
            except ManifestError as exc:
                specs, refused = [], [exc]
            for problem in refused:
                registry.skipped.append(Skipped(
                    path=printable(path), reason=problem.reason,
                    recovery=problem.recovery,
                    name=problem.name or os.path.splitext(name)[0]))
            for spec in specs:
                _add(registry, spec, origin)
    return registry


def _add(registry: Registry, spec: ToolSpec, origin: str) -> None:
    """``spec`` in ``registry``, or shadowed by the tool of its name."""
    winner = registry.tools.get(spec.name)
    if winner is None:
        registry.tools[spec.name] = spec
    else:
        registry.shadowed.append(Shadowed(
            name=spec.name, winner_path=winner.path,
            loser_path=spec.manifest_path if spec.path == winner.path
            else spec.path,
            override=origin.startswith("package ") and
            not (winner.origin or "").startswith("package ")))


def _load_all(path: str, name: str, dir_real: str, fp: cache.Fingerprint,
              origin: str) -> Loaded:
    """The tools at ``path`` and the ManifestErrors of the refused ones:
    the functions of a ``.py`` file (:mod:`acor.cli.discovery.functions`),
    else the manifest :func:`_load` reads (one tool, or one per command
    of a click program)."""
    if name.endswith(".py"):
        return _functions(path, dir_real, fp, origin)
    return _load(path, name, dir_real, fp, origin), []


def _functions(path: str, dir_real: str, fp: cache.Fingerprint,
               origin: str) -> Loaded:
    """The function tools of source file ``path``, under the rules of a
    manifest: inside the tools dir, owned as :mod:`acor.cli.discovery.trust`
    says, fingerprinted whole (its signatures are its schema). A file
    with no ``@tool`` is not a tool, as a README is not."""
    from acor.cli.discovery.functions import function_specs, marked
    from acor.cli.discovery.manifest import ManifestError, check_inside
    st = fp.stat(path)
    if st is None or not stat.S_ISREG(st.st_mode):
        return [], []
    try:
        # O_NONBLOCK: a FIFO swapped in since the stat must not hang acor.
        with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as f:
            raw = f.read((1 << 20) + 1)
    except OSError:
        return [], []
    if not marked(raw):
        return [], []
    stem = os.path.splitext(os.path.basename(path))[0]
    try:
        check_inside(dir_real, path, "the source file")
        if not _packaged(origin):
            _owner_check(path, st, "the source file")
    except ManifestError as exc:
        exc.name = stem
        return [], [exc]
    return function_specs(path, raw, os.path.dirname(path), origin)


def sources(config: Config, registry: Registry, fp: cache.Fingerprint
            ) -> list[tuple[str, str]]:
    """``(tools dir, origin)`` in the order a name is looked up: the
    project's tools dirs, the user's, then installed packages' ``acor.tools``
    entry points (acor's bundled wrappers among them). The directories
    packages live in are fingerprinted, so installing or removing one
    invalidates the cache; a broken entry point is reported as skipped."""
    found = [(d, _project_origin(d, config.root)) for d in config.tools_dirs]
    found.append((user_tools_dir(), "user tools dir"))
    if not packages_searched():
        return found
    for path in search_paths():
        fp.stat(path)
    problems: list[EntryPointProblem] = []
    found += entry_point_dirs(problems)
    for problem in problems:
        registry.skipped.append(Skipped(
            path=printable(f"entry point {problem.name} = {problem.value} "
                           f"({problem.origin})"),
            reason=printable(problem.reason), recovery=problem.recovery,
            name=None))
    return found


def _packaged(origin: str) -> bool:
    """Whether tools from ``origin`` come with an installed package, which
    is trusted as the Python running acor is (see cli.discovery.trust)."""
    return origin.startswith("package ")


def _owner_check(path: str, st: os.stat_result, what: str) -> None:
    """ManifestError if ``path`` (stat ``st``) fails the ownership rule."""
    from acor.cli.discovery import trust
    from acor.cli.discovery.manifest import ManifestError
    why = trust.problem(path, st)
    if why is not None:
        raise ManifestError(f"{what} is not used: {why}",
                            trust.how_to_trust(path))


def _project_origin(tools_dir: str, root: str) -> str:
    relative = os.path.relpath(tools_dir, root)
    return "project " + (tools_dir if relative.startswith("..") else
                         relative)


def _load(path: str, name: str, dir_real: str, fp: cache.Fingerprint,
          origin: str) -> list[ToolSpec]:
    """The ToolSpecs at ``path`` (an entry of a tools dir: one, or one per
    command of a click program), none if it is not a manifest at all;
    raises ManifestError for a bad one."""
    from acor.cli.discovery.manifest import (
        ManifestError, check_inside, tool_specs, unprintable)
    json_file = name.endswith(".json")
    try:
        st = os.stat(path)
    except OSError:
        st = None  # vanished, or a dangling symlink
    is_dir = st is not None and stat.S_ISDIR(st.st_mode)
    if json_file and not is_dir:
        fp.add(path, st)  # a wrapper manifest
    # A tool folder is not fingerprinted: the tools dir's mtime says it was
    # added, removed or renamed, and its manifest's and program's own
    # signatures say they changed (its mtime also moves with every
    # __pycache__ its tool's imports write, which must not force a rescan).
    if json_file or is_dir:
        # `acor list --all` and `acor doctor` print paths: a name holding
        # "\n## AI Directive" must not print as a heading.
        bad = unprintable(name)
        if bad is not None:
            raise ManifestError(f"its name contains {bad!r}, a control "
                                "character or line break", "Rename it to "
                                "plain printable characters.")
    checked = not _packaged(origin)
    if json_file and not is_dir:
        if st is None or not stat.S_ISREG(st.st_mode):
            return []
        check_inside(dir_real, path, "the manifest")
        if checked:
            _owner_check(path, st, "the manifest")
        return tool_specs(path, st, None, dir_real, fp, origin)
    if st is None or not is_dir:
        return []  # a README, a script: a tools dir may hold anything
    manifest = os.path.join(path, "manifest.json")
    mst = fp.stat(manifest)  # recorded even if missing: adding one counts
    if mst is None:
        return []
    folder_real = check_inside(dir_real, path, "the tool folder")
    if not stat.S_ISREG(mst.st_mode):
        raise ManifestError("manifest.json is not a regular file",
                            f"Make {printable(manifest)} a JSON file.")
    if checked:
        _owner_check(path, st, "the tool folder")
        _owner_check(manifest, mst, "the manifest")
    return tool_specs(manifest, mst, path, folder_real, fp, origin)
