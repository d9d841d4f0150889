"""The discovery cache: one small JSON file per project, so a warm
``acor <tool>`` parses no YAML and no manifest.

An agent pays for ``acor`` startup on every call, so the cold path (import
yaml, parse the config, read every manifest, compile regexes) runs only when
something it depends on changed. The file, under ``$ACOR_CACHE_DIR``, else
``$XDG_CACHE_HOME/acor``, else ``~/.cache/acor``, is
``registry-<sha256(root, config path, python)[:16]>.json``::

    {"format": 1,
     "key": [root, config_path_or_null, sys.executable],
     "fingerprint": [[path, light, signature_or_null], ...],
     "payload": {...the Registry as plain data...}}

A warm load re-stats every fingerprinted path and compares: the config file,
each tools dir (a directory's mtime moves when entries are added, removed or
renamed), each manifest and tool folder (full signature: mode, inode, size,
mtime), and each program a manifest points at (light signature: mode and
inode only, so editing a tool's code does not force a rescan, but ``chmod``
or replacing it does). A path recorded as missing (null) must still be
missing. Any difference means rescan.

Writes take a lock (filelock, imported only here) and go through a temp file
in the same directory plus ``os.replace``, so readers never see a torn file
and need no lock. Every failure (unwritable directory, corrupt or foreign
file, lock held) means "no cache", never an error: the cache only ever
makes ``acor`` faster, not less reliable.
"""

import json
import os
import stat
import sys
import time

FORMAT = 1
MAX_BYTES = 8 << 20
# Racy-timestamp guard (as git does for its index): a file changed twice
# within one filesystem timestamp tick, with the same size, would look
# unchanged. So a snapshot holding an mtime this close to the moment of the
# scan is not trusted enough to save; the next run rescans and saves. 2 s
# covers the coarsest common clocks (FAT); the cost is one more cold run
# right after an edit.
RACY_NS = 2_000_000_000

try:  # The bare C module imports in microseconds; hashlib loads OpenSSL.
    from _sha256 import sha256 as _sha256
except ImportError:  # pragma: no cover - other interpreters / versions
    from hashlib import sha256 as _sha256


class Record:
    """A plain record whose ``__slots__`` are its fields.

    Subclasses only declare ``__slots__``; construction is by keyword
    (missing fields are None), and ``to_dict``/``from_dict`` round-trip it
    through the cache file. ``from_dict`` is strict (every field must be
    present), so a cache written by another version is rejected, not
    half-read.
    """

    __slots__ = ()

    def __init__(self, **fields):
        for name in self.__slots__:
            setattr(self, name, fields.pop(name, None))
        if fields:
            raise TypeError(f"{type(self).__name__} has no field(s) "
                            f"{', '.join(sorted(fields))}")

    def to_dict(self):
        return {name: getattr(self, name) for name in self.__slots__}

    @classmethod
    def from_dict(cls, data):
        missing = [name for name in cls.__slots__ if name not in data]
        if missing:
            raise ValueError(f"{cls.__name__} needs {', '.join(missing)}")
        return cls(**data)

    def __eq__(self, other):
        return type(other) is type(self) and \
            other.to_dict() == self.to_dict()

    def __repr__(self):
        fields = ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items())
        return f"{type(self).__name__}({fields})"


def cache_dir():
    """The directory holding cache files (not created here)."""
    explicit = os.environ.get("ACOR_CACHE_DIR")
    if explicit:
        return os.path.abspath(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    # The XDG spec says a relative value is invalid and must be ignored.
    base = xdg if xdg and os.path.isabs(xdg) else \
        os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "acor")


def cache_path(root, config_path):
    """The cache file for this project, config file and interpreter (argv
    of Python tools embeds ``sys.executable``, so each venv gets its own)."""
    key = "\0".join((root, config_path or "", sys.executable))
    digest = _sha256(key.encode("utf-8", "surrogateescape")).hexdigest()
    return os.path.join(cache_dir(), f"registry-{digest[:16]}.json")


def signature(path, light=False):
    """What a fingerprint remembers about ``path``; None if it is missing."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):  # ValueError: a NUL byte in the path
        return None
    return _sig(st, light)


def _sig(st, light):
    if light:
        return [st.st_mode, st.st_ino]
    return [st.st_mode, st.st_ino, st.st_size, st.st_mtime_ns]


class Fingerprint:
    """The paths a scan depended on, stat'ed *before* they are read.

    Stat-then-read means a change racing with the scan shows up as a
    mismatch on the next run rather than being baked into the cache.
    """

    __slots__ = ("entries", "started_ns", "racy")

    def __init__(self):
        self.entries = []
        self.started_ns = time.time_ns()
        self.racy = False

    def stat(self, path, light=False):
        """``os.stat(path)`` (None if missing), recorded."""
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            st = None
        self.add(path, st, light)
        return st

    def add(self, path, st, light=False):
        """Record a stat result the caller already has (None: missing)."""
        if st is not None and not light and \
                abs(st.st_mtime_ns - self.started_ns) < RACY_NS:
            self.racy = True
        self.entries.append([path, light, None if st is None
                             else _sig(st, light)])


def read(root, config_path):
    """The payload saved for this project if nothing it depends on changed,
    else None. Never raises: a bad cache is just a miss."""
    path = cache_path(root, config_path)
    try:
        # O_NONBLOCK: a FIFO planted at this path must not hang acor.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with open(fd, "rb") as f:
            st = os.fstat(fd)
            # The payload holds argv that acor will execute: trust only a
            # file this user wrote, in case the cache dir is shared.
            if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_BYTES or \
                    (hasattr(os, "getuid") and st.st_uid != os.getuid()):
                return None
            data = json.loads(f.read(MAX_BYTES))
        if data["format"] != FORMAT or \
                data["key"] != [root, config_path, sys.executable]:
            return None
        for entry_path, light, sig in data["fingerprint"]:
            if signature(entry_path, light) != sig:
                return None
        return data["payload"]
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return None


def write(root, config_path, fingerprint, payload):
    """Save ``payload`` with ``fingerprint`` (a :class:`Fingerprint`).

    Best effort: returns True if the file was written, False if it was not
    (racy timestamps, unwritable directory, another writer holding the
    lock); never raises for those.
    """
    if fingerprint.racy:
        return False
    path = cache_path(root, config_path)
    try:
        text = json.dumps({"format": FORMAT,
                           "key": [root, config_path, sys.executable],
                           "fingerprint": fingerprint.entries,
                           "payload": payload}, separators=(",", ":"))
    except (TypeError, ValueError):  # a value JSON cannot hold: no cache
        return False
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        try:
            from filelock import FileLock
        except ImportError:  # pragma: no cover - a declared dependency
            return _replace(path, text)
        # timeout=0: if another acor is writing, it is writing the same
        # scan, so there is nothing to wait for.
        with FileLock(path + ".lock", timeout=0):
            return _replace(path, text)
    except OSError:  # includes filelock.Timeout
        return False


def _replace(path, text):
    """Write to a temp file beside ``path``, then rename it over ``path``:
    atomic on POSIX, so a reader sees the old file or the new, never half."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return False
    return True
