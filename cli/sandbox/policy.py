"""What a tool may touch: a manifest's ``sandbox`` field made absolute.

``{"write": [paths], "read": [paths], "network": false}``: paths relative
to the project root (absolute paths and ``~`` allowed). The tool may create
and change files only under ``write`` and its private ``TMPDIR``; with
``read`` it may read only those, ``write`` and what it needs to run (its
folder, the interpreter and its libraries, system libraries and
certificates, a few devices, ``/proc/self``); without ``read``, reads are
not restricted. ``network`` is false unless declared true: no TCP or UDP at
all, loopback included. A box grants only what it lists.

No box grants write on what decides boxes, discovery or code that runs
later (:func:`guarded`): the project's ``.acor/`` (its config and every
tool's state), every tools dir, the config file, ``.git`` (unless the box
names it), ``acor.lock`` (where there is one), the user's acor config
(trust file, tools) and
cache, acor's own interpreter and package. Where one of these is missing
inside a write path, the folder that would hold it takes no new folder
(and, where ``.git`` is missing, no new file either).
The tool's own state folder (made here, no link followed) is its alone.
``"unix_sockets": true`` lets the tool connect to UNIX sockets outside its
box (an ssh-agent, a test suite's server); without it, it cannot.
"""

from __future__ import annotations

import os
import sys

import acor

TYPE_CHECKING = False  # typing costs every sandboxed run: only mypy
if TYPE_CHECKING:
    from typing import Any, Callable, Protocol, Sequence

    class Config(Protocol):
        """What the guarded paths need of a config: the part of
        acor.cli.discovery.config.Config (a layer above) read here."""

        @property
        def path(self) -> str | None: ...
        @property
        def tools_dirs(self) -> Sequence[str]: ...
        @property
        def state_dir(self) -> str: ...

# The default box of `acor --sandbox` and `sandbox: default`: write the
# project and temp, no network.
DEFAULT = {"write": ["."], "network": False}
# Read by nearly every program: its libraries, locale, certificates, names.
SYSTEM_READ = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/opt",
               "/etc/ssl", "/etc/pki", "/etc/ca-certificates",
               "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
               "/etc/localtime", "/etc/passwd", "/etc/group",
               "/etc/nsswitch.conf", "/etc/hosts", "/etc/resolv.conf",
               "/etc/alternatives", "/etc/mime.types", "/etc/os-release",
               "/dev/null", "/dev/zero", "/dev/urandom", "/dev/random",
               "/dev/tty", "/proc/self", "/proc/cpuinfo", "/proc/meminfo",
               "/sys/devices/system/cpu")
# Written by programs that write nothing: `> /dev/null`, a terminal.
SYSTEM_WRITE = ("/dev/null", "/dev/tty")


FIELDS = ("write", "read", "network", "unix_sockets")
# Names at a project's root that decide what runs there later.
GUARDED_NAMES = (".acor", ".git", "acor.lock")


class Box:
    """A resolved sandbox: absolute paths, ready for :mod:`.enter`."""

    __slots__ = ("write", "read", "network", "unix_sockets", "protect",
                 "fixed", "own", "declared")

    def __init__(self, write: list[str], read: list[str] | None,
                 network: bool, declared: dict[str, Any],
                 unix_sockets: bool = False,
                 protect: list[str] | None = None,
                 fixed: list[tuple[str, bool]] | None = None,
                 own: str | None = None) -> None:
        self.write = write
        self.read = read
        self.network = network
        self.unix_sockets = unix_sockets
        self.protect = protect or []  # read-only inside the write paths
        self.fixed = fixed or []      # [folder, no files either]: no new
                                      # folder made there
        self.own = own                # the tool's state folder
        self.declared = declared  # as the manifest (or the default) said

    def to_request(self) -> dict[str, Any]:
        """The plain dict a fork server's child applies."""
        return {"write": self.write, "read": self.read,
                "network": self.network, "unix_sockets": self.unix_sockets,
                "protect": self.protect, "fixed": self.fixed,
                "own": self.own}


def problems(value: object) -> list[str]:
    """What is wrong with a manifest's ``sandbox`` value ([] when fine)."""
    if not isinstance(value, dict):
        return ['"sandbox" must be an object like {"write": ["out"], '
                '"network": false}']
    found = [f'"sandbox" has no field {key!r} (write, read, network, '
             'unix_sockets)' for key in value if key not in FIELDS]
    for key in ("write", "read"):
        paths = value.get(key)
        if paths is None and key == "read":
            continue
        if paths is None:
            continue
        if not isinstance(paths, list) or not all(
                isinstance(p, str) and p and "\0" not in p for p in paths):
            found.append(f'"sandbox.{key}" must be a list of paths')
    for key in ("network", "unix_sockets"):
        if key in value and not isinstance(value[key], bool):
            found.append(f'"sandbox.{key}" must be true or false')
    return found


def _absolute(path: str, root: str) -> str:
    path = os.path.expanduser(path)
    return os.path.normpath(os.path.join(root, path))


def resolve(declared: dict[str, Any], root: str, tool_dir: str | None,
            tmpdir: str, guarded_paths: list[str] | None = None,
            own: str | None = None) -> Box:
    """The box ``declared`` (a checked manifest value) for a run in
    project ``root``, with its private ``tmpdir``; ``guarded_paths`` (from
    :func:`guarded`) stay read-only, ``own`` (from :func:`own_folder`)
    writable."""
    declared_write = [_absolute(p, root) for p in declared.get("write") or []]
    for path in declared_write:
        # A declared folder the tool will fill may not exist yet; a rule
        # needs it to (a write entry is a folder, or an existing file).
        if not os.path.lexists(path):
            os.makedirs(path, exist_ok=True)
    # Compared and mounted as the kernel finds them: links resolved (a
    # project under a linked folder is still guarded).
    write = list(dict.fromkeys(os.path.realpath(p) for p in _existing(
        [*declared_write, tmpdir, *SYSTEM_WRITE])))
    read: list[str] | None = None
    if declared.get("read") is not None:
        read = [_absolute(p, root) for p in declared["read"]]
        read += _runtime_paths(tool_dir)
    guarded_real = [os.path.realpath(p) for p in guarded_paths or ()]
    git = os.path.realpath(os.path.join(root, ".git"))
    if any(_within(os.path.realpath(path), git) for path in declared_write):
        # Declared: a tool that commits (and so may write hooks) says so.
        guarded_real = [p for p in guarded_real if p != git]
    protect, fixed = _carve(list(dict.fromkeys(guarded_real)), write)
    return Box(write, None if read is None else _existing(read),
               bool(declared.get("network", False)), declared,
               unix_sockets=bool(declared.get("unix_sockets", False)),
               protect=protect, fixed=fixed, own=own)


def guarded(root: str, config: Config | None, cwd: str,
            users: list[str]) -> list[str]:
    """What no box may write, for a run in ``root`` from ``cwd``: what
    decides boxes (configs, on the whole walk from ``cwd`` up), discovery
    (tools dirs; ``users``: the user's own acor folders, the trust file and
    the cache) and code that runs later (``.git``, acor's own interpreter
    and package)."""
    paths = [os.path.join(root, name) for name in GUARDED_NAMES]
    # The interpreter's environment holds acor's dependencies; acor itself
    # may live elsewhere (a source checkout on the path).
    paths += [*users, sys.prefix, sys.exec_prefix,
              os.path.dirname(os.path.abspath(acor.__file__))]
    if config is not None:
        paths += [config.state_dir, *config.tools_dirs]
        if config.path:
            paths.append(config.path)
    folder = os.path.abspath(cwd)
    while True:  # where the config walk looks: .acor/config.yaml
        paths.append(os.path.join(folder, ".acor"))
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    # A guarded path that is a link guards what it leads to as well.
    paths += [os.path.realpath(p) for p in paths if os.path.islink(p)]
    return list(dict.fromkeys(os.path.normpath(p) for p in paths))


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _carve(guarded_paths: list[str], write: list[str]
           ) -> tuple[list[str], list[tuple[str, bool]]]:
    """(the guarded paths inside a write path, to bind read-only; the
    folders inside a write path where a guarded path is missing, to take
    no new entries)."""
    folders = [w for w in write if os.path.isdir(w)]
    protect: list[str] = []
    fixed: list[tuple[str, bool]] = []
    for path in guarded_paths:
        if not any(_within(path, w) for w in folders):
            continue
        if os.path.lexists(path):
            protect.append(path)
            continue
        if os.path.basename(path) == "acor.lock":
            continue  # a file nothing reads until it exists
        parent = os.path.dirname(path)
        while not os.path.lexists(parent) and parent != "/":
            parent = os.path.dirname(parent)
        if any(_within(parent, w) for w in folders) and \
                os.path.isdir(parent) and not os.path.islink(parent):
            # A .git file ("gitdir: out/x") would make git run hooks of
            # the tool's choosing; a folder of any other guarded name does
            # it for acor.
            fixed.append((parent, path == os.path.join(parent, ".git")))
    kept: dict[str, bool] = {}
    for folder, no_files in fixed:
        kept[folder] = kept.get(folder, False) or no_files
    return list(dict.fromkeys(protect)), list(kept.items())


def own_folder(state_dir: str, tool: str, root: str) -> str | None:
    """The tool's state folder, made if missing, no link followed inside
    the project ``root`` (a repository can commit ``.acor/state/TOOL`` as
    a link to anywhere), nor below a ``state_dir`` outside it; None where
    it cannot be made that way (its sessions then fail as they would
    anyway). Returned with every link resolved."""
    state_dir = os.path.abspath(state_dir)
    if _within(state_dir, os.path.abspath(root)):
        start = os.path.realpath(root)
        names = os.path.relpath(state_dir, root).split(os.sep) + [tool]
    else:  # where the user's config puts it: as it says
        try:
            os.makedirs(state_dir, exist_ok=True)
        except OSError:
            return None
        start = os.path.realpath(state_dir)
        names = [tool]
    path = os.path.normpath(os.path.join(start, *names))
    try:
        fd = os.open(start, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        for name in names:
            if name in ("", "."):
                continue
            try:
                os.mkdir(name, 0o777, dir_fd=fd)
            except FileExistsError:
                pass
            step = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW
                           | os.O_CLOEXEC, dir_fd=fd)
            os.close(fd)
            fd = step
    except OSError:
        return None
    finally:
        os.close(fd)
    return path


def _runtime_paths(tool_dir: str | None) -> list[str]:
    """What a program needs to read to run at all: its folder, this
    interpreter and its libraries (acor's own included), the system's."""
    paths = [sys.prefix, sys.base_prefix, sys.exec_prefix,
             os.path.dirname(os.path.realpath(sys.executable)),
             os.path.dirname(os.path.dirname(os.path.abspath(
                 acor.__file__))), *SYSTEM_READ]
    paths += [p for p in sys.path if p and os.path.isdir(p)]
    if tool_dir is not None:
        paths.append(tool_dir)
    return paths


def _existing(paths: list[str]) -> list[str]:
    """``paths`` that exist, each once, in order (a rule needs an open
    descriptor: a missing path cannot be granted, nor be created)."""
    seen: set[str] = set()
    kept: list[str] = []
    for path in paths:
        if path not in seen and os.path.exists(path):
            seen.add(path)
            kept.append(path)
    return kept


def private_tmpdir(name: str) -> str:
    """A new folder only this user can enter, for one run's TMPDIR (as
    :func:`tempfile.mkdtemp` makes one, without importing it: this is on
    the path of every sandboxed run)."""
    base = os.environ.get("TMPDIR") or "/tmp"
    for _ in range(100):
        path = os.path.join(base, f"acor-{name}-{os.urandom(6).hex()}")
        try:
            os.mkdir(path, 0o700)
            return path
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temp folder name under {base}")


def remove_tree(path: str) -> None:
    """Remove ``path`` and everything in it, never following a link out
    of it; what cannot be removed is left."""
    try:
        for top, dirs, files in os.walk(path, topdown=False):
            for name in files:
                _quietly(os.unlink, os.path.join(top, name))
            for name in dirs:
                full = os.path.join(top, name)
                _quietly(os.unlink if os.path.islink(full) else os.rmdir,
                         full)
        _quietly(os.rmdir, path)
    except OSError:
        pass


def _quietly(remove: Callable[[str], None], path: str) -> None:
    try:
        remove(path)
    except OSError:
        pass
