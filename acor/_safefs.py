"""Files in a directory that someone else may have filled.

A repository can commit anything under ``.acor/state`` (a session file that
is a link to ``/dev/zero``, a tool folder that is a link elsewhere, a FIFO),
and a cache dir may be shared. :class:`Folder` opens the directory once,
without following a link, and does everything else relative to that
descriptor:

- reads take regular files only (never a link, a FIFO, a device, a
  directory; opened ``O_NONBLOCK`` so a FIFO is refused, not waited on),
  and at most a given number of bytes;
- writes go to a new temp file (``O_CREAT | O_EXCL | O_NOFOLLOW``, so
  nothing already there is written through), renamed over the target;
- locks are an exclusive ``flock`` on a regular lock file opened the same
  way.

Whatever is refused raises :class:`Unsafe`, whose ``reason`` is a phrase
for a message ("it is a FIFO, not a regular file"). Where the platform has
no ``dir_fd`` (Windows), paths are used and links are refused by ``lstat``
first. Standard library only (``filelock`` where there is no ``fcntl``).
"""

from __future__ import annotations

import errno
import os
import stat
import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from contextlib import AbstractContextManager
    from typing import Self

    #: A held lock: leaving its ``with`` block releases it.
    Lock = AbstractContextManager[object]

# Absent flags are 0 where the platform lacks them (never on Linux/macOS).
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
NONBLOCK = getattr(os, "O_NONBLOCK", 0)
DIRECTORY = getattr(os, "O_DIRECTORY", 0)
CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FD = os.open in os.supports_dir_fd and bool(NOFOLLOW and DIRECTORY)
LINK = "it is a symbolic link, which acor does not follow there"


class Unsafe(Exception):
    """A path acor will not use as it is; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def size(count: int) -> str:
    """A byte count for a message: ``16 MiB``, ``4000 bytes``."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if count >= 1 << shift and count % (1 << shift) == 0:
            return f"{count >> shift} {unit}"
    return f"{count} bytes"


def describe(mode: int) -> str:
    """What a file that is not a regular one is, for a message."""
    for test, what in ((stat.S_ISDIR, "a directory"),
                       (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return what
    return "not a regular file"


def _is_link_error(exc: OSError, path: str) -> bool:
    # Linux and macOS say ELOOP for O_NOFOLLOW on a link, FreeBSD EMLINK;
    # with O_DIRECTORY Linux says ENOTDIR: ask lstat then.
    return exc.errno in (errno.ELOOP, errno.EMLINK) or os.path.islink(path)


class Folder:
    """A directory opened once, without following a link (see the module
    docstring). Use :meth:`open`; close it, or use it in ``with``."""

    def __init__(self, path: str, fd: int | None) -> None:
        self.path = path
        self.fd = fd  # None where the platform has no dir_fd, or closed

    @classmethod
    def open(cls, path: str, create: int | None = None) -> Self | None:
        """The folder at ``path``; None if it does not exist (``create``
        None) or is a plain file. ``create``: a mode to make it with (and
        its parents) if missing. Unsafe if it is a symbolic link (or, with
        ``create``, a plain file); OSError if it cannot be made or opened
        (a parent that is a file, no permission)."""
        if create is not None:
            try:
                os.makedirs(path, mode=create, exist_ok=True)
            except FileExistsError:  # a dangling link or a file: see below
                pass
        if not _DIR_FD:  # pragma: no cover - Windows
            if os.path.islink(path):
                raise Unsafe(LINK)
            if os.path.isdir(path):
                return cls(path, None)
            if create is not None and os.path.lexists(path):
                raise Unsafe("it is not a directory")
            return None
        try:
            fd = os.open(path, os.O_RDONLY | DIRECTORY | NOFOLLOW | CLOEXEC)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if _is_link_error(exc, path):
                raise Unsafe(LINK) from None
            if exc.errno == errno.ENOTDIR and os.path.lexists(path):
                # A plain file where the folder would be: not one we made.
                if create is not None:
                    raise Unsafe("it is not a directory") from None
                return None
            raise
        return cls(path, fd)

    def _at(self, name: str) -> str:
        return name if self.fd is not None else os.path.join(self.path, name)

    def stat(self) -> os.stat_result:
        return os.fstat(self.fd) if self.fd is not None else \
            os.stat(self.path)

    def _open(self, name: str, flags: int, mode: int = 0o777) -> int:
        if self.fd is None and os.path.islink(self._at(name)):
            raise OSError(errno.ELOOP, "is a symbolic link", self._at(name))
        return os.open(self._at(name), flags | NOFOLLOW | CLOEXEC, mode,
                       dir_fd=self.fd)

    def _open_regular(self, name: str, flags: int, mode: int = 0o777
                      ) -> tuple[int, os.stat_result]:
        """A descriptor for regular file ``name``, or Unsafe (a link, a
        FIFO, a device, ...); FileNotFoundError if it is missing."""
        try:
            fd = self._open(name, flags | NONBLOCK, mode)
        except FileNotFoundError:
            raise
        except OSError as exc:
            if _is_link_error(exc, os.path.join(self.path, name)):
                raise Unsafe(LINK) from None
            raise Unsafe(f"it cannot be opened: {exc.strerror}") from None
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise Unsafe(f"it is {describe(st.st_mode)}, not a regular file")
        return fd, st

    def read(self, name: str, limit: int,
             owner: int | None = None) -> bytes | None:
        """The bytes of regular file ``name`` (None if it is missing), or
        Unsafe if it is not a regular file, is over ``limit`` bytes, or is
        not owned by uid ``owner`` (when given)."""
        try:
            fd, st = self._open_regular(name, os.O_RDONLY)
        except FileNotFoundError:
            return None
        with open(fd, "rb") as f:
            if owner is not None and st.st_uid != owner:
                raise Unsafe(f"it is owned by uid {st.st_uid}, not {owner}")
            # st_size first: a huge file is refused without reading it.
            data = b"" if st.st_size > limit else f.read(limit + 1)
        if st.st_size > limit or len(data) > limit:
            raise Unsafe(f"it is over the {size(limit)} such a file may "
                         "hold")
        return data

    def write(self, name: str, data: bytes, temp: str,
              durable: bool = False) -> None:
        """Replace ``name`` with ``data`` atomically: a new file ``temp``
        (refused if anything is there), renamed over ``name``; with
        ``durable``, both the file and the rename are fsync'ed."""
        fd = self._open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                if durable:
                    f.flush()
                    os.fsync(f.fileno())
            os.replace(self._at(temp), self._at(name),
                       src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except BaseException:
            try:
                self.remove(temp)
            except OSError:
                pass
            raise
        if durable:
            self.sync()

    def append(self, name: str, data: bytes, durable: bool = False) -> None:
        """Add ``data`` at the end of regular file ``name`` in one write
        (FileNotFoundError if it is missing; Unsafe if it is not a regular
        file); with ``durable``, its data is synced."""
        fd, _ = self._open_regular(name, os.O_WRONLY | os.O_APPEND)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if durable:
                getattr(os, "fdatasync", os.fsync)(fd)
        finally:
            os.close(fd)

    def lock(self, name: str, timeout: float | None) -> Lock:
        """Hold an exclusive lock on ``name`` (created if missing): a
        context manager. ``timeout`` seconds to wait (0: try once; None or
        below 0: forever), then TimeoutError; Unsafe if ``name`` is not a
        regular file."""
        try:
            import fcntl  # 0.3 ms: only writers pay for it, not resumes
        except ImportError:  # pragma: no cover - Windows
            return _filelock(os.path.join(self.path, name), timeout)
        fd, _ = self._open_regular(name, os.O_RDWR | os.O_CREAT, 0o600)
        deadline = None if timeout is None or timeout < 0 else \
            time.monotonic() + timeout
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    return _Held(fd)
                except BlockingIOError:
                    pass
                if deadline is not None and time.monotonic() >= deadline:
                    raise TimeoutError(name)
                time.sleep(0.005)  # holders work for milliseconds
        except BaseException:
            os.close(fd)
            raise

    def remove(self, name: str) -> None:
        os.remove(self._at(name), dir_fd=self.fd)

    def listdir(self) -> list[str]:
        return os.listdir(self.fd if self.fd is not None else self.path)

    def sync(self) -> None:
        """Make renames and removals in the folder durable."""
        if self.fd is not None:  # Windows cannot fsync a directory
            os.fsync(self.fd)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def open_below(path: str, below: str,
               create: int | None = None) -> Folder | None:
    """The folder at ``path``, every component from ``below`` (an ancestor
    of ``path``) down opened without following a link: a repository can
    commit any of them as a link, and a tool can make one. ``create``: a
    mode to make missing components with. None if it is missing (without
    ``create``); Unsafe if a component is a link or not a directory;
    OSError if one cannot be made or opened. Where the platform has no
    ``dir_fd``, :meth:`Folder.open` (the last component only)."""
    path = os.path.abspath(path)
    base = os.path.abspath(below)
    rel = os.path.relpath(path, base)
    if rel == os.curdir or rel == os.pardir or \
            rel.startswith(os.pardir + os.sep):
        base, rel = os.path.dirname(path), os.path.basename(path)
    if not _DIR_FD:  # pragma: no cover - Windows
        return Folder.open(path, create)
    fd = os.open(base, os.O_RDONLY | DIRECTORY | CLOEXEC)
    try:
        for part in rel.split(os.sep):
            if part in ("", os.curdir):
                continue
            if create is not None:
                try:
                    os.mkdir(part, create, dir_fd=fd)
                except FileExistsError:
                    pass
            try:
                child = os.open(part, os.O_RDONLY | DIRECTORY | NOFOLLOW |
                                CLOEXEC, dir_fd=fd)
            except FileNotFoundError:
                if create is not None:
                    raise
                return None
            except OSError as exc:
                try:
                    mode = os.stat(part, dir_fd=fd,
                                   follow_symlinks=False).st_mode
                except OSError:
                    raise exc from None
                where = os.path.join(base, part)
                if stat.S_ISLNK(mode):
                    raise Unsafe(f"{where}: {LINK}") from None
                what = "a file" if stat.S_ISREG(mode) else describe(mode)
                raise Unsafe(f"{where}: it is {what}, not a directory") \
                    from None
            os.close(fd)
            fd = child
            base = os.path.join(base, part)
    except BaseException:
        os.close(fd)
        raise
    return Folder(path, fd)


def private(folder: Folder) -> Folder:
    """``folder`` owned by this user, its mode made private (0700) if it
    was not; Unsafe if another user owns it (then it may be shared)."""
    st = folder.stat()
    uid = os.getuid() if hasattr(os, "getuid") else None
    if uid is not None and st.st_uid != uid:
        raise Unsafe(f"{folder.path}: it is owned by uid {st.st_uid}, not "
                     f"{uid}")
    if stat.S_IMODE(st.st_mode) & 0o077:
        if folder.fd is not None:
            os.fchmod(folder.fd, 0o700)
        else:  # pragma: no cover - Windows
            os.chmod(folder.path, 0o700)
    return folder


class _Held:
    """A held ``flock``: leaving the ``with`` block releases it."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        os.close(self.fd)  # closing the descriptor releases the flock


def _filelock(path: str, timeout: float | None
              ) -> Lock:  # pragma: no cover - Windows
    try:
        import filelock  # not in the standard library: Windows only
    except ImportError:
        raise ImportError("locking needs filelock here: "
                          "pip install filelock") from None
    lock = filelock.FileLock(path, timeout=-1 if timeout is None else timeout)
    try:
        return lock.acquire(poll_interval=0.005)
    except filelock.Timeout:
        raise TimeoutError(path) from None
