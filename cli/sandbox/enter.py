"""Enter a sandbox: the system calls, made in the tool's process (a fork
of the launcher or of the warm server) before its program runs, so that
everything it starts inherits them.

Written with :mod:`ctypes` against the kernel's stable interfaces: three
Landlock system calls, ``prctl`` and ``unshare``. A binding from the
package index would add a dependency, and a compiled one a wheel per
platform, for five calls whose numbers and structures the kernel never
changes (docs/security.md).

Nothing here may import on the tool's path what it does not need: the
warm server's children call :func:`enter` before the tool's own code.
"""

from __future__ import annotations

import ctypes
import os

# Generic system call numbers: the same on x86_64 and arm64.
SYS_LANDLOCK_CREATE_RULESET = 444
SYS_LANDLOCK_ADD_RULE = 445
SYS_LANDLOCK_RESTRICT_SELF = 446
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK = 1 << 8, 1 << 9, 1 << 10, 1 << 11
MAKE_SYM, REFER, TRUNCATE = 1 << 12, 1 << 13, 1 << 14
READING = EXECUTE | READ_FILE | READ_DIR
WRITING = (WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_CHAR | MAKE_DIR |
           MAKE_REG | MAKE_SOCK | MAKE_FIFO | MAKE_BLOCK | MAKE_SYM |
           REFER | TRUNCATE)
# Rights a rule on a file (not a folder) may carry.
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE


class SandboxError(OSError):
    """The sandbox could not be entered: the tool must not run."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64),
                ("parent_fd", ctypes.c_int32)]


_libc = None


def libc():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def _check(result: int, what: str) -> int:
    if result < 0:
        errno = ctypes.get_errno()
        raise SandboxError(errno, f"{what}: {os.strerror(errno)}")
    return result


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 when it has none (or it is
    disabled at boot)."""
    c = libc()
    c.syscall.restype = ctypes.c_long
    version = c.syscall(SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0),
                        ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION))
    return max(int(version), 0)


def handled(abi: int, restrict_reads: bool) -> int:
    """The rights a ruleset handles on this ABI: what is not granted by a
    rule is then denied."""
    rights = WRITING | (READING if restrict_reads else 0)
    if abi < 2:
        rights &= ~REFER
    if abi < 3:
        rights &= ~TRUNCATE
    return rights


def enter(box: dict) -> None:
    """Enter ``box`` ({"write": [...], "read": [...] or None,
    "network": bool}, absolute paths): the network first (a namespace
    needs the rights Landlock then takes away), then the file system.
    Raises :class:`SandboxError`; the caller must not run the tool."""
    if not box.get("network"):
        _no_network()
    c = libc()
    _check(c.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    abi = landlock_abi()
    if abi < 1:
        raise SandboxError(38, "Landlock is not available in this kernel")
    read = box.get("read")
    rights = handled(abi, read is not None)
    attr = _RulesetAttr(rights)
    c.syscall.restype = ctypes.c_long
    ruleset = _check(c.syscall(SYS_LANDLOCK_CREATE_RULESET,
                               ctypes.byref(attr),
                               ctypes.c_size_t(ctypes.sizeof(attr)),
                               ctypes.c_uint32(0)), "landlock ruleset")
    try:
        for path in read or ():
            _allow(ruleset, path, rights & READING)
        for path in box.get("write") or ():
            _allow(ruleset, path, rights)
        _check(c.syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset,
                         ctypes.c_uint32(0)), "landlock restrict_self")
    finally:
        os.close(ruleset)


def _allow(ruleset: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # gone since it was resolved: nothing to grant
    try:
        if not os.path.isdir(path):
            rights &= FILE_RIGHTS
        if not rights:
            return
        rule = _PathBeneath(rights, fd)
        _check(libc().syscall(SYS_LANDLOCK_ADD_RULE, ruleset,
                              LANDLOCK_RULE_PATH_BENEATH,
                              ctypes.byref(rule), ctypes.c_uint32(0)),
               f"landlock rule for {path}")
    finally:
        os.close(fd)


def _no_network() -> None:
    """A user and network namespace of its own: only a loopback that is
    down, so no TCP or UDP reaches anything, the host's loopback
    included. The same user and group inside, mapped to themselves."""
    uid, gid = os.geteuid(), os.getegid()
    _check(libc().unshare(CLONE_NEWUSER | CLONE_NEWNET), "unshare")
    try:
        for name, text in (("setgroups", "deny"),
                           ("uid_map", f"{uid} {uid} 1"),
                           ("gid_map", f"{gid} {gid} 1")):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
    except OSError as exc:
        raise SandboxError(exc.errno or 1,
                           f"user namespace mapping: {exc}") from None
