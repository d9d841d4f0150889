"""What a tool may touch: a manifest's ``sandbox`` field made absolute.

``{"write": [paths], "read": [paths], "network": false}``: paths relative
to the project root (absolute paths and ``~`` allowed). The tool may create
and change files only under ``write`` and its private ``TMPDIR``; with
``read`` it may read only those, ``write`` and what it needs to run (its
folder, the interpreter and its libraries, system libraries and
certificates, a few devices, ``/proc/self``); without ``read``, reads are
not restricted. ``network`` is false unless declared true: no TCP or UDP at
all, loopback included. A box grants only what it lists.
"""

from __future__ import annotations

import os
import sys

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


class Box:
    """A resolved sandbox: absolute paths, ready for :mod:`.enter`."""

    __slots__ = ("write", "read", "network", "declared")

    def __init__(self, write: list[str], read: list[str] | None,
                 network: bool, declared: dict) -> None:
        self.write = write
        self.read = read
        self.network = network
        self.declared = declared  # as the manifest (or the default) said

    def to_request(self) -> dict:
        """The plain dict a fork server's child applies."""
        return {"write": self.write, "read": self.read,
                "network": self.network}


def problems(value: object) -> list[str]:
    """What is wrong with a manifest's ``sandbox`` value ([] when fine)."""
    if not isinstance(value, dict):
        return ['"sandbox" must be an object like {"write": ["out"], '
                '"network": false}']
    found = [f'"sandbox" has no field {key!r} (write, read, network)'
             for key in value if key not in ("write", "read", "network")]
    for key in ("write", "read"):
        paths = value.get(key)
        if paths is None and key == "read":
            continue
        if paths is None:
            continue
        if not isinstance(paths, list) or not all(
                isinstance(p, str) and p and "\0" not in p for p in paths):
            found.append(f'"sandbox.{key}" must be a list of paths')
    if "network" in value and not isinstance(value["network"], bool):
        found.append('"sandbox.network" must be true or false')
    return found


def _absolute(path: str, root: str) -> str:
    path = os.path.expanduser(path)
    return os.path.normpath(os.path.join(root, path))


def resolve(declared: dict, root: str, tool_dir: str | None,
            tmpdir: str) -> Box:
    """The box ``declared`` (a checked manifest value) for a run in
    project ``root``, with its private ``tmpdir``."""
    write = [_absolute(p, root) for p in declared.get("write") or []]
    for path in write:
        # A declared folder the tool will fill may not exist yet; a rule
        # needs it to (a write entry is a folder, or an existing file).
        if not os.path.lexists(path):
            os.makedirs(path, exist_ok=True)
    write += [tmpdir, *SYSTEM_WRITE]
    read = None
    if declared.get("read") is not None:
        read = [_absolute(p, root) for p in declared["read"]]
        read += _runtime_paths(tool_dir)
    return Box(_existing(write), None if read is None else _existing(read),
               bool(declared.get("network", False)), declared)


def _runtime_paths(tool_dir: str | None) -> list[str]:
    """What a program needs to read to run at all: its folder, this
    interpreter and its libraries (acor's own included), the system's."""
    import acor
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
    kept = []
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


def _quietly(remove, path: str) -> None:
    try:
        remove(path)
    except OSError:
        pass
