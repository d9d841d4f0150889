"""The spill: the whole output of a run, kept on disk once it was cut.

The output budget (:mod:`cli.output.budget`) shows the agent part of a
run; everything the run wrote is rendered as ACOR Markdown into a
:class:`Spill`: in memory while the run fits, then, from the first cut on,
in a file under the state dir (``.output/``, one per run, private to the
user), from byte 0. A large Output Data value gets a file of its own
(:meth:`Spill.data_file`), the tool's stderr one beside the output's.
Files older than :data:`MAX_AGE` are pruned; ``acor sessions
--clear-output`` removes them all (:func:`clear_outputs`). Only files
named as acor names them (:data:`SPILL_NAME`) are ever removed.
"""

from __future__ import annotations

import errno
import os
import re
import shlex
import stat
import time

from acor._safefs import Folder, Unsafe, open_below, private

TYPE_CHECKING = False  # typing costs every run ~3 ms: only mypy
if TYPE_CHECKING:
    from hashlib import _Hash
    from typing import Optional

MEMORY_HOLD = 1 << 20      # spill bytes kept in memory before a file
OUTPUT_DIR = ".output"     # under the state dir; no tool can be named so
MAX_AGE = 7 * 24 * 3600    # spill files older than this are removed


def output_dir(state_dir: str) -> str:
    return os.path.join(state_dir, OUTPUT_DIR)


# The names acor gives what it keeps of a run: STAMP-TOOL-PID-HEX.md, its
# large Output Data values (.dataN.json) and its stderr (.stderr). Nothing
# else in the output folder is ever pruned or cleared.
SPILL_NAME = re.compile(r"(?P<stamp>\d{8}-\d{6})-"
                        r"(?P<tool>[A-Za-z0-9][A-Za-z0-9._-]{0,127})"
                        r"-\d{1,10}-[0-9a-f]{8}"
                        r"\.(?:md|data\d{1,9}\.json|stderr)")



def open_output(directory: str, create: bool = True) -> Optional[Folder]:
    """The output folder (an :class:`acor._safefs.Folder`), or None when
    it is missing and not ``create``: no link followed from the project
    root down (from the parent of the state dir's ``.acor``, or of the
    state dir itself when it is elsewhere), owned by this user, private.
    Raises :class:`acor._safefs.Unsafe` (a link, a file, another owner)
    or OSError."""
    parts = os.path.abspath(directory).split(os.sep)
    below = os.path.dirname(os.path.dirname(os.path.abspath(directory)))
    if ".acor" in parts[:-1]:
        at = len(parts) - 1 - parts[::-1].index(".acor")
        below = os.sep.join(parts[:at]) or os.sep
    folder: Optional[Folder] = open_below(directory, below,
                                          0o700 if create else None)
    if folder is None:
        return None
    try:
        private(folder)
        return folder
    except BaseException:
        folder.close()
        raise


def disk_full_text(where: str) -> str:
    """What to say when the disk holding ``where`` is full."""
    return (f"the disk is full: no space left on the filesystem holding "
            f"{where}; free space there (`acor sessions --clear-output` "
            f"removes the saved whole outputs of past runs; `df -h "
            f"{shlex.quote(where)}` shows what is left), then run the tool "
            f"again")


def _os_error(exc: OSError, where: str) -> str:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return disk_full_text(where)
    if exc.errno == errno.EFBIG:
        return (f"cannot write {where}: the file is over the size this "
                f"process may write (ulimit -f)")
    return f"cannot write {where}: {exc.strerror or exc}"


class Spill:
    """The whole output of a run as ACOR Markdown (or, ``suffix``
    ``.stderr``, the tool's stderr as it wrote it): bytes in memory until
    :meth:`keep` (or :data:`MEMORY_HOLD`), then a private file in the
    output folder. A file that cannot be written whole keeps what was
    written (``complete`` False, ``error`` saying why); one with nothing
    written is removed: no file is named that holds nothing. A spill
    ``beside`` another is named as that one is, with its own suffix (the
    stderr's ``.stderr`` beside the output's ``.md``)."""

    def __init__(self, directory: str, tool: str, suffix: str = ".md",
                 beside: Optional[Spill] = None) -> None:
        self.directory = os.path.abspath(directory)
        self.tool = tool
        self.suffix = suffix
        self.beside = beside
        self.stem: Optional[str] = None
        self.path: Optional[str] = None
        self.size = 0            # bytes of output, written or not
        self.written = 0         # bytes in the file
        self.kept = False
        self.finished = False
        self.error: Optional[str] = None
        self._buf: Optional[bytearray] = bytearray()
        self._fd: Optional[int] = None
        self._folder: Optional[Folder] = None
        self._hash: Optional[_Hash] = None   # of the bytes in the file
        self._data_files = 0

    def write(self, data: bytes) -> None:
        self.size += len(data)
        if self._buf is not None:
            self._buf += data
            if len(self._buf) > MEMORY_HOLD:
                self._open()
            return
        if self._fd is not None:
            self._write(data)

    def keep(self) -> Optional[str]:
        """From now on the output is kept on disk; its path (None when the
        file cannot be written: ``error`` says why)."""
        self.kept = True
        if not self.finished and self._fd is None and self.error is None:
            self._open()
        return self.path

    def _folder_fd(self) -> Folder:
        if self._folder is None:
            folder = open_output(self.directory)
            assert folder is not None  # created when missing
            _prune(folder)
            self._folder = folder
        return self._folder

    def _open(self) -> None:
        buffered, self._buf = self._buf, None
        try:
            self._fd, self.path = self._create(self.suffix)
        except OSError as exc:
            self.error = _os_error(exc, self.directory)
            return
        except Unsafe as exc:  # a link, another owner
            self.error = f"acor does not write there: {exc.reason}"
            return
        self._hash = _sha256()
        self._write(bytes(buffered or b""))

    def _name(self, suffix: str) -> str:
        if self.beside is not None:
            return self.beside._name(suffix)
        if self.stem is None:
            stamp = time.strftime("%Y%m%d-%H%M%S")
            self.stem = f"{stamp}-{self.tool}-{os.getpid()}-" \
                f"{os.urandom(4).hex()}"
        return self.stem + suffix

    def _create(self, suffix: str) -> tuple[int, str]:
        folder = self._folder_fd()
        name = self._name(suffix)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | \
            getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(name, flags, 0o600, dir_fd=folder.fd)
        return fd, os.path.join(self.directory, name)

    def _write(self, data: bytes) -> None:
        if self._fd is None:
            return
        try:
            view = memoryview(data)
            while view:
                done = os.write(self._fd, view)
                if self._hash is not None:
                    self._hash.update(view[:done])
                self.written += done
                view = view[done:]
        except OSError as exc:  # a full disk must not stop the run
            self.error = _os_error(exc, self.directory)
            self._close()
            if not self.written:
                self._remove()

    def _remove(self) -> None:
        if self.path is not None and self._folder is not None:
            try:
                os.unlink(os.path.basename(self.path),
                          dir_fd=self._folder.fd)
            except OSError:
                pass
        self.path = None

    def _close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    @property
    def complete(self) -> bool:
        return self.error is None and self.written == self.size

    def finish(self) -> Optional[tuple[str, int, str]]:
        """Close the file: (path, bytes in it, their sha256) when kept and
        anything was written, else None (and a file opened for a large
        run that was never cut is removed)."""
        self._close()
        self._buf = None
        self.finished = True
        if not self.kept:
            self._remove()
        outcome = None
        if self.kept and self.path is not None and self.written and \
                self._hash is not None:
            outcome = (self.path, self.written, self._hash.hexdigest())
        elif self.path is not None:
            self._remove()
        if self._folder is not None:
            self._folder.close()
            self._folder = None
        return outcome

    def data_file(self, data: bytes | memoryview
                  ) -> tuple[Optional[str], str, Optional[str]]:
        """A value written whole to a file of its own: (path or None, its
        sha256, why it could not be written or None). A file that could
        not be written whole is removed."""
        hashed = _sha256()
        hashed.update(data)
        digest = hashed.hexdigest()
        try:
            fd, path = self._create(f".data{self._data_files}.json")
        except OSError as exc:
            return None, digest, _os_error(exc, self.directory)
        except Unsafe as exc:
            return None, digest, f"acor does not write there: {exc.reason}"
        self._data_files += 1
        error = None
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        except OSError as exc:
            error = _os_error(exc, self.directory)
        finally:
            os.close(fd)
        if error is not None:
            try:
                os.unlink(os.path.basename(path),
                          dir_fd=self._folder_fd().fd)
            except OSError:
                pass
            return None, digest, error
        return path, digest, None



def spill_tool(name: str) -> Optional[str]:
    """The tool whose run wrote the file ``name``, None when ``name`` is
    not one acor gives (``STAMP-TOOL-PID-HEX.md``, ``.dataN.json``,
    ``.stderr``)."""
    match = SPILL_NAME.fullmatch(name)
    return match.group("tool") if match else None


def _sha256() -> _Hash:
    # Imported once a run writes a file, not before the spawn: `acor TOOL`
    # is the hot path, and hashlib loads OpenSSL.
    import hashlib
    return hashlib.sha256()


def _ours(folder: Folder, name: str) -> bool:
    """``name`` is a regular file of this user's, named as acor names
    them: the only files the clean-up and ``--clear-output`` remove."""
    if spill_tool(name) is None:
        return False
    try:
        st = os.stat(name, dir_fd=folder.fd, follow_symlinks=False)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and (
        not hasattr(os, "getuid") or st.st_uid == os.getuid())


def _prune(folder: Folder) -> None:
    """Remove this user's spill files older than :data:`MAX_AGE`."""
    cutoff = time.time() - MAX_AGE
    try:
        names = folder.listdir()
    except OSError:
        return
    for name in names:
        if not _ours(folder, name):
            continue
        try:
            if os.stat(name, dir_fd=folder.fd,
                       follow_symlinks=False).st_mtime < cutoff:
                os.unlink(name, dir_fd=folder.fd)
        except OSError:
            pass


def clear_outputs(state_dir: str, tool: Optional[str] = None) -> int:
    """Remove every spill file, or ``tool``'s only (``acor sessions
    --clear-output [--tool NAME]``); how many. Only files acor made, named
    as it names them, in a folder opened as :func:`open_output` does;
    raises :class:`acor._safefs.Unsafe` for a folder that is not one."""
    folder = open_output(output_dir(state_dir), create=False)
    if folder is None:
        return 0
    removed = 0
    with folder:
        for name in folder.listdir():
            if _ours(folder, name) and (tool is None or
                                        spill_tool(name) == tool):
                try:
                    os.unlink(name, dir_fd=folder.fd)
                    removed += 1
                except OSError:
                    pass
    return removed
