"""The discovery cache: one small file per project, so a warm
``acor <tool>`` parses no YAML and no manifest.

An agent pays for ``acor`` startup on every call, so the cold path (import
yaml, parse the config, read every manifest, compile regexes) runs only when
something it depends on changed. The file, under ``$ACOR_CACHE_DIR``, else
``$XDG_CACHE_HOME/acor``, else ``~/.cache/acor``, is
``registry-<sha256(root, config path, python)[:16]>.marshal``::

    {"format": 7,
     "key": [root, config_path_or_null, sys.executable, user_tools_dir,
             packages_searched, ACOR_TRUSTED, SUDO_UID (as root)],
     "fingerprint": [[path, light, signature_or_null], ...],
     "payload": {...the Registry, as Registry.to_cache() gives it...}}

written with :mod:`marshal`, Python's own format for the data it trusts
(its ``.pyc`` files): it is built in, so reading it imports nothing, where
``json`` costs every call some 2 ms to import. The data is trusted as far
as the directory is (see below): whoever can write there could as well
plant a command for acor to run. A file marshal cannot read (another
Python's format, a torn disk block) is a miss like any other.

A warm load re-stats every fingerprinted path and compares: the config file,
each tools dir (a directory's mtime moves when entries are added, removed or
renamed), each manifest (full signature: mode, inode, size, mtime, owner),
and each program a manifest points at (light signature: mode, inode and
owner only, so editing a tool's code does not force a rescan, but
``chmod``, ``chown`` or replacing it does), and the user's trust file.
A path recorded as missing (null) must still be missing. Any difference
means rescan. :func:`unchanged` is that check; a long-lived process
(``acor mcp``) also applies it to the registry it keeps parsed in memory
(:class:`acor.cli.discovery.registry.Kept`), with the same key and
fingerprint, so a call there reads no cache file at all.

Writes take a lock (``flock`` on ``<file>.lock``) and go through a new temp file
in the same directory plus ``os.replace``, so readers never see a torn file
and need no lock. Every failure (unwritable directory, corrupt or foreign
file, lock held) means "no cache", never an error: the cache only ever
makes ``acor`` faster, not less reliable.

The cache dir may sit somewhere others can write (``ACOR_CACHE_DIR=/tmp/x``,
a shared home), and the payload holds argv that acor executes. So a cache
dir that is a symbolic link, is not owned by this user, or is writable by
group or others is not used at all (:func:`cache_dir_problem` says why, for
``acor doctor``). Everything in it goes through :class:`acor._safefs.Folder`:
opened relative to the directory's own descriptor, never following a
symbolic link and never blocking (a FIFO or device planted at a cache path
is refused by ``fstat``, not read); temp files are created with ``O_EXCL``,
so nothing already there is written through.
"""

from __future__ import annotations

import marshal
import os
import stat
import sys
import time

from acor._safefs import Folder, Unsafe

from acor.cli.discovery.sources import packages_searched, user_tools_dir
from acor.cli.textsafe import quote

TYPE_CHECKING = False  # typing costs every run ~3 ms: only mypy
if TYPE_CHECKING:
    from typing import Any, TypeVar

    _R = TypeVar("_R", bound="Record")

FORMAT = 8  # 4: package and user tools dirs; specs with origin, args, usage;
# overrides of package tools. 5: marshal, tool folders not fingerprinted.
# 6: specs say whether a tool may start warm. 7: signatures hold the owner;
# the key, what the user trusts (acor.cli.discovery.trust). 8: specs and the
# config carry the sandbox
MAX_BYTES = 8 << 20
# Racy-timestamp guard (as git does for its index): a file changed twice
# within one filesystem timestamp tick, with the same size, would look
# unchanged. So a snapshot holding an mtime this close to the moment of the
# scan is not trusted enough to save; the next run rescans and saves. 2 s
# covers the coarsest common clocks (FAT); the cost is one more cold run
# right after an edit.
RACY_NS = 2_000_000_000

# sha256 from the bare C module, which imports in microseconds (hashlib
# loads OpenSSL): _sha2 from Python 3.12 on, _sha256 before. typeshed has
# no stub for either private module: hence the ignores.
try:
    from _sha2 import sha256 as _sha256  # type: ignore[import-not-found]
except ImportError:
    try:
        from _sha256 import sha256 as _sha256  # type: ignore[import-not-found]
    except ImportError:  # pragma: no cover - other interpreters
        from hashlib import sha256 as _sha256


class Record:
    """A plain record whose ``FIELDS`` are its attributes.

    Subclasses only declare ``FIELDS``; construction is by keyword
    (missing fields are None), and ``to_dict``/``from_dict`` round-trip it
    through the cache file. ``from_dict`` is strict (exactly the fields),
    so a cache written by another version is rejected, not half-read. The
    attributes live in the instance's ``__dict__``, so that ``from_dict``
    takes the cache's dict as it is: a warm ``acor list`` builds a
    thousand records.
    """

    FIELDS: tuple[str, ...] = ()
    _FIELD_SET: frozenset[str] = frozenset()

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls._FIELD_SET = frozenset(cls.FIELDS)

    def __init__(self, **fields: object) -> None:
        values = self.__dict__
        for name in self.FIELDS:
            values[name] = fields.pop(name, None)
        if fields:
            raise TypeError(f"{type(self).__name__} has no field(s) "
                            f"{', '.join(sorted(fields))}")

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.FIELDS}

    @classmethod
    def from_dict(cls: type[_R], data: object) -> _R:
        if not isinstance(data, dict) or data.keys() != cls._FIELD_SET:
            keys = set(data) if isinstance(data, dict) else set()
            raise ValueError(
                f"{cls.__name__} needs exactly {', '.join(cls.FIELDS)}; "
                f"missing {sorted(cls._FIELD_SET - keys)}, extra "
                f"{sorted(map(str, keys - cls._FIELD_SET))}")
        record = cls.__new__(cls)
        record.__dict__.update(data)
        return record

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Record) and type(other) is type(self) \
            and other.to_dict() == self.to_dict()

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items())
        return f"{type(self).__name__}({fields})"


def cache_dir() -> str:
    """The directory holding cache files (not created here)."""
    explicit = os.environ.get("ACOR_CACHE_DIR")
    if explicit:
        return os.path.abspath(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    # The XDG spec says a relative value is invalid and must be ignored.
    base = xdg if xdg and os.path.isabs(xdg) else \
        os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "acor")


def cache_path(root: str, config_path: str | None) -> str:
    """The cache file for this project, config file and interpreter (argv
    of Python tools embeds ``sys.executable``, so each venv gets its own)."""
    return os.path.join(cache_dir(), _cache_name(root, config_path))


def key(root: str, config_path: str | None) -> list[object]:
    """What a cache entry is for: the project, its config, the interpreter
    and where else tools are looked for (the user's tools dir, and whether
    packages' tools are, see :mod:`acor.cli.discovery.sources`)."""
    # Who is trusted decides what a scan keeps (acor.cli.discovery.trust).
    trusted = [os.environ.get("ACOR_TRUSTED", ""),
               os.environ.get("SUDO_UID", "") if _uid() == 0 else ""]
    return [root, config_path, sys.executable, user_tools_dir(),
            packages_searched(), *trusted]


def _cache_name(root: str, config_path: str | None) -> str:
    text = "\0".join(str(part) for part in key(root, config_path))
    digest = _sha256(text.encode("utf-8", "surrogateescape")).hexdigest()
    return f"registry-{digest[:16]}.marshal"


def _uid() -> int | None:
    return os.geteuid() if hasattr(os, "geteuid") else None


def _dir_problem(st: os.stat_result) -> str | None:
    """Why a directory with stat ``st`` cannot hold this user's cache."""
    uid = _uid()
    if uid is not None and st.st_uid != uid:
        return (f"it is owned by another user (uid {st.st_uid}, you are "
                f"uid {uid}), who could plant a cache that runs their "
                "commands")
    if os.name == "posix" and st.st_mode & 0o022:
        who = " and ".join(w for bit, w in ((0o020, "group"),
                                            (0o002, "others"))
                           if st.st_mode & bit)
        return (f"it is writable by {who} (mode "
                f"{stat.S_IMODE(st.st_mode):04o}), who could plant a cache "
                "that runs their commands")
    return None


def _open_dir(directory: str, create: bool = False
              ) -> tuple[Folder | None, str | None]:
    """``(Folder, None)`` for a cache dir only this user can write, else
    ``(None, reason)``; ``(None, None)`` if it does not exist and
    ``create`` is false (created, mode 0700, if true)."""
    try:
        folder = Folder.open(directory, 0o700 if create else None)
    except Unsafe as exc:
        return None, exc.reason
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        verb = "created" if create else "opened"
        return None, (f"it cannot be {verb}: "
                      f"{getattr(exc, 'strerror', None) or exc}")
    if folder is None:
        return None, None if not os.path.lexists(directory) else \
            "it is not a directory"
    try:
        problem = _dir_problem(folder.stat())
    except OSError as exc:
        problem = f"it cannot be read: {exc.strerror}"
    if problem:
        folder.close()
        return None, problem
    return folder, None


def cache_dir_problem(directory: str | None = None) -> str | None:
    """Why acor does not use its cache dir (a sentence naming the
    directory, what is wrong and the fix), or None when it is usable or
    does not exist yet (acor creates it, mode 0700). For ``acor doctor``:
    the launcher itself just runs without a cache."""
    directory = cache_dir() if directory is None else directory
    folder, problem = _open_dir(directory)
    if folder is not None:
        folder.close()
    if problem is None:
        return None
    return (f"the cache dir {quote(directory)} is not used: {problem}. Run "
            "`chmod 700` on it if it is yours, or set ACOR_CACHE_DIR to a "
            "directory only you can write.")


def signature(path: str, light: bool = False) -> list[int] | None:
    """What a fingerprint remembers about ``path``; None if it is missing."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):  # ValueError: a NUL byte in the path
        return None
    return _sig(st, light)


def _sig(st: os.stat_result, light: bool) -> list[int]:
    # The owner too: `chown` moves neither mtime nor mode, and decides
    # whether acor takes tools from the file (acor.cli.discovery.trust).
    if light:
        return [st.st_mode, st.st_ino, st.st_uid]
    return [st.st_mode, st.st_ino, st.st_size, st.st_mtime_ns, st.st_uid]


class Fingerprint:
    """The paths a scan depended on, stat'ed *before* they are read.

    Stat-then-read means a change racing with the scan shows up as a
    mismatch on the next run rather than being baked into the cache.
    """

    __slots__ = ("entries", "started_ns", "racy")

    def __init__(self) -> None:
        self.entries: list[list[object]] = []
        self.started_ns = time.time_ns()
        self.racy = False

    def stat(self, path: str, light: bool = False) -> os.stat_result | None:
        """``os.stat(path)`` (None if missing), recorded."""
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            st = None
        self.add(path, st, light)
        return st

    def add(self, path: str, st: os.stat_result | None,
            light: bool = False) -> None:
        """Record a stat result the caller already has (None: missing)."""
        if st is not None and not light and \
                abs(st.st_mtime_ns - self.started_ns) < RACY_NS:
            self.racy = True
        self.entries.append([path, light, None if st is None
                             else _sig(st, light)])


def unchanged(entries: list[list[Any]]) -> bool:
    """Whether every path a fingerprint recorded (its ``entries``) still
    has the signature it had: the one test of a scan's validity, for the
    file and for a registry a long-lived process keeps (see
    :class:`acor.cli.discovery.registry.Kept`)."""
    for entry_path, light, sig in entries:
        if signature(entry_path, light) != sig:
            return False
    return True


def read(root: str, config_path: str | None) -> Any:
    """The payload saved for this project if nothing it depends on changed,
    else None. Never raises: a bad cache is just a miss."""
    found = read_entry(root, config_path)
    return None if found is None else found[0]


def read_entry(root: str, config_path: str | None
               ) -> tuple[Any, list[list[Any]]] | None:
    """:func:`read`'s payload with the fingerprint it was checked
    against, or None."""
    folder, _ = _open_dir(cache_dir())
    if folder is None:
        return None
    try:
        with folder:
            # A regular file this user wrote, or nothing: the payload holds
            # argv that acor will execute.
            raw = folder.read(_cache_name(root, config_path), MAX_BYTES,
                              owner=_uid())
        if raw is None:
            return None
        data = marshal.loads(raw)
        if data["format"] != FORMAT or \
                data["key"] != key(root, config_path):
            return None
        entries = data["fingerprint"]
        if not unchanged(entries):
            return None
        return data["payload"], entries
    except (Unsafe, OSError, ValueError, EOFError, KeyError, TypeError,
            RecursionError):
        return None


def write(root: str, config_path: str | None, fingerprint: Fingerprint,
          payload: object) -> bool:
    """Save ``payload`` with ``fingerprint`` (a :class:`Fingerprint`).

    Best effort: returns True if the file was written, False if it was not
    (racy timestamps, unusable directory, another writer holding the
    lock); never raises for those.
    """
    if fingerprint.racy:
        return False
    try:
        blob = marshal.dumps({"format": FORMAT,
                              "key": key(root, config_path),
                              "fingerprint": fingerprint.entries,
                              "payload": payload})
    except ValueError:  # a value marshal cannot hold: no cache
        return False
    if len(blob) > MAX_BYTES:  # read() would refuse it
        return False
    folder, _ = _open_dir(cache_dir(), create=True)
    if folder is None:
        return False
    name = _cache_name(root, config_path)
    try:
        # timeout=0: if another acor is writing, it is writing the same
        # scan, so there is nothing to wait for.
        with folder, folder.lock(name + ".lock", timeout=0):
            # A fresh temp name, created O_EXCL: whatever is planted at any
            # name acor might use is never written through.
            folder.write(name, blob, temp=f"{name}.{os.getpid()}."
                         f"{os.urandom(4).hex()}.tmp")
        return True
    except (Unsafe, OSError):  # TimeoutError is an OSError
        return False
