"""Enter a sandbox: the system calls, made in the tool's process (a fork
of the launcher or of the warm server) before its program runs, so that
everything it starts inherits them.

Four layers, each for what the others cannot do (docs/security.md):

1. A user and mount namespace (and a network namespace without
   ``"network": true``) in which every mount is read-only but the box's
   write paths; inside those, what decides boxes, discovery and code that
   runs later (``.acor/``, tools dirs, ``.git``...) is bound read-only
   again, and the tool's own state folder writable. Read-only mounts
   refuse metadata changes too (chmod, chown, utime, setxattr), which
   Landlock does not govern. A second user namespace then locks those
   mounts: nothing inside can remount them writable or unmount them.
2. Landlock: what may be read (with ``"read"``) and written, and, from ABI
   6, no abstract UNIX socket and no signal outside the box; from ABI 9,
   no UNIX socket file outside the write paths.
3. Below ABI 9, a seccomp filter: no ``socket(AF_UNIX)`` at all (a filter
   cannot tell a socket file inside the box from one outside), while
   ``socketpair`` keeps working (asyncio needs it), unless the manifest
   opts in with ``"unix_sockets": true``.
4. ``no_new_privs``, which Landlock and seccomp require.

Written with :mod:`ctypes` against the kernel's stable interfaces: a
binding from the package index would add a dependency, and a compiled one
a wheel per platform, for calls whose numbers and structures the kernel
never changes.

Nothing here may import on the tool's path what it does not need: the
warm server's children call :func:`enter` before the tool's own code.
"""

from __future__ import annotations

import ctypes
import os
import stat
import struct

TYPE_CHECKING = False  # typing costs the forked child: only mypy
if TYPE_CHECKING:
    from typing import Any, Iterable

    # One seccomp instruction (opcode, jump-true label, jump-false label,
    # k), or a label: ("label", its name).
    _Step = tuple[str, str | None, str | None, int] | tuple[str, str]

# Generic system call numbers: the same on x86_64 and arm64.
SYS_OPEN_TREE = 428
SYS_MOVE_MOUNT = 429
SYS_MOUNT_SETATTR = 442
SYS_LANDLOCK_CREATE_RULESET = 444
SYS_LANDLOCK_ADD_RULE = 445
SYS_LANDLOCK_RESTRICT_SELF = 446
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1
PR_GET_DUMPABLE, PR_SET_DUMPABLE = 3, 4
PR_SET_NO_NEW_PRIVS = 38
PR_GET_SECCOMP = 21
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
OPEN_TREE_CLONE = 1
OPEN_TREE_CLOEXEC = 0o2000000
AT_SYMLINK_NOFOLLOW = 0x100
AT_EMPTY_PATH = 0x1000
AT_RECURSIVE = 0x8000
MOVE_MOUNT_F_EMPTY_PATH = 0x4
MOUNT_ATTR_RDONLY = 0x1
MS_PRIVATE = 1 << 18

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK = 1 << 8, 1 << 9, 1 << 10, 1 << 11
MAKE_SYM, REFER, TRUNCATE = 1 << 12, 1 << 13, 1 << 14
RESOLVE_UNIX = 1 << 16  # ABI 9: connect/send to a UNIX socket file
# Rights a rule on a file (not a folder) may carry.
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | RESOLVE_UNIX
READING = EXECUTE | READ_FILE | READ_DIR
WRITING = (WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_CHAR | MAKE_DIR |
           MAKE_REG | MAKE_SOCK | MAKE_FIFO | MAKE_BLOCK | MAKE_SYM |
           REFER | TRUNCATE)
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1
# The first ABI with each: scoped IPC, and control of UNIX socket files.
SCOPED_ABI, SOCKET_ABI = 6, 9


class SandboxError(OSError):
    """The sandbox could not be entered: the tool must not run."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64),
                ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64),
                ("parent_fd", ctypes.c_int32)]


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64),
                ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64),
                ("userns_fd", ctypes.c_uint64)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]


_libc: ctypes.CDLL | None = None


def libc() -> ctypes.CDLL:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
    return _libc


def _check(result: int, what: str) -> int:
    if result < 0:
        errno = ctypes.get_errno()
        raise SandboxError(errno, f"{what}: {os.strerror(errno)}")
    return result


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 when it has none (or it is
    disabled at boot)."""
    version = libc().syscall(SYS_LANDLOCK_CREATE_RULESET, None,
                             ctypes.c_size_t(0),
                             ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION))
    return max(int(version), 0)


def seccomp_filters() -> bool:
    """Whether this kernel takes seccomp filters, on an architecture whose
    system call numbers :func:`_unix_socket_filter` knows."""
    if os.uname().machine not in _ARCHES:
        return False
    return bool(libc().prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0)


def handled(abi: int, restrict_reads: bool, unix_sockets: bool = True) -> int:
    """The rights a ruleset handles on this ABI: what is not granted by a
    rule is then denied."""
    rights = WRITING | (READING if restrict_reads else 0)
    if abi < 2:
        rights &= ~REFER
    if abi < 3:
        rights &= ~TRUNCATE
    if abi >= SOCKET_ABI and not unix_sockets:
        rights |= RESOLVE_UNIX
    return rights


def enter(box: dict[str, Any]) -> None:
    """Enter ``box`` (:meth:`acor.cli.sandbox.policy.Box.to_request`:
    absolute paths). Raises :class:`SandboxError`; the caller must not run
    the tool. Must be called by a single-threaded process (a fresh fork):
    a user namespace cannot be entered by one with threads."""
    cwd = _getcwd()
    c = libc()
    # A process that is not dumpable (a server that keeps its memory from
    # the user's other processes) cannot write its own /proc/self maps:
    # dumpable for those writes only, as it was again before the tool runs
    # (an exec makes a program dumpable anyway).
    dumpable = c.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0)
    if dumpable == 0:
        _check(c.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "dumpable")
    _namespaces(CLONE_NEWUSER | CLONE_NEWNS |
                (0 if box.get("network") else CLONE_NEWNET))
    _read_only_but(box)
    # A namespace of the one above locks what is mounted there: inside it
    # no mount can be made writable again, nor unmounted to show what it
    # covers, whatever capabilities the tool holds in it.
    _namespaces(CLONE_NEWUSER | CLONE_NEWNS)
    if dumpable == 0:
        _check(c.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "dumpable")
    if cwd is not None:
        try:
            os.chdir(cwd)  # onto the mounts just made, not what they cover
        except OSError:
            pass
    _check(c.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    abi = landlock_abi()
    if abi < 1:
        raise SandboxError(38, "Landlock is not available in this kernel")
    _landlock(box, abi)
    if not box.get("unix_sockets"):
        # From ABI 9 Landlock itself governs socket files; io_uring, which
        # makes and connects sockets on its own, is refused either way
        # where a filter can be set.
        if abi < SOCKET_ABI:
            _install_filter(_unix_socket_filter(True))
        elif seccomp_filters():
            _install_filter(_unix_socket_filter(False))


def _getcwd() -> str | None:
    try:
        return os.getcwd()
    except OSError:
        return None


def _landlock(box: dict[str, Any], abi: int) -> None:
    c = libc()
    read = box.get("read")
    unix_sockets = bool(box.get("unix_sockets"))
    rights = handled(abi, read is not None, unix_sockets)
    scoped = 0
    if abi >= SCOPED_ABI:
        # Abstract sockets stay scoped with "unix_sockets": the opt-in is
        # for socket files (an ssh-agent), not the host's X11 or D-Bus.
        scoped = SCOPE_SIGNAL | SCOPE_ABSTRACT_UNIX_SOCKET
    attr = _RulesetAttr(rights, 0, scoped)
    # An older kernel takes only the fields it knows (it refuses a larger
    # structure): handled_access_net from ABI 4, scoped from ABI 6.
    size = 8 if abi < 4 else 16 if abi < SCOPED_ABI else 24
    ruleset = _check(c.syscall(SYS_LANDLOCK_CREATE_RULESET,
                               ctypes.byref(attr), ctypes.c_size_t(size),
                               ctypes.c_uint32(0)), "landlock ruleset")
    try:
        for path in read or ():
            _allow(ruleset, path, rights & READING)
        own = box.get("own")
        _allow_writes(ruleset, box.get("write") or (), box.get("fixed") or (),
                      rights)
        if own:
            _allow(ruleset, own, rights)
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


# What a folder that must take no new folder (a guarded one is missing
# there: a tools dir, .acor) may not make; and with no new file (.git).
MAKING = MAKE_DIR | MAKE_SYM | MAKE_SOCK | MAKE_FIFO | MAKE_CHAR | MAKE_BLOCK


def _allow_writes(ruleset: int, write: Iterable[str],
                  fixed: Iterable[tuple[str, bool]], rights: int) -> None:
    """Grant ``rights`` on each write path, but in the folders of
    ``fixed`` (``[folder, no_files]``, inside a write path) nothing new
    may be made but files (or nothing at all, with ``no_files``). Landlock
    adds up the rights of a path's ancestors: a write path above such a
    folder is granted piecewise, the folders on the way down with the
    lesser rights, every other folder beside them in full."""
    chains: dict[str, int] = {}  # folder -> what it may not make
    for folder, no_files in fixed:
        for path in write:
            if folder == path or folder.startswith(path.rstrip("/") + "/"):
                withheld = MAKING | (MAKE_REG if no_files else 0)
                step = folder
                while True:
                    chains[step] = chains.get(step, 0) | \
                        (withheld if step == folder else MAKING)
                    if step == path or step == "/":
                        break
                    step = os.path.dirname(step)
    for path in write:
        if path not in chains:
            _allow(ruleset, path, rights)
    for folder, withheld in chains.items():
        _allow(ruleset, folder, rights & ~withheld)
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if entry.path not in chains and \
                    entry.is_dir(follow_symlinks=False):
                _allow(ruleset, entry.path, rights)


def _namespaces(flags: int) -> None:
    """New namespaces (``flags``), with the same user and group inside,
    mapped to themselves. A network namespace has only a loopback that is
    down: no TCP or UDP reaches anything, the host's loopback included,
    nor any abstract UNIX socket of the host's."""
    uid, gid = os.geteuid(), os.getegid()
    _check(libc().unshare(flags), "unshare")
    try:
        for name, text in (("setgroups", "deny"),
                           ("uid_map", f"{uid} {uid} 1"),
                           ("gid_map", f"{gid} {gid} 1")):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
    except OSError as exc:
        raise SandboxError(exc.errno or 1,
                           f"user namespace mapping: {exc}") from None


# -- the mounts -------------------------------------------------------------

def _clone(path: str, dir_fd: int | None = None) -> int:
    """A detached copy of the mounts at ``path`` (or at ``dir_fd``): what
    it shows keeps the flags it has now."""
    c = libc()
    flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE
    if dir_fd is not None:
        return _check(c.syscall(SYS_OPEN_TREE, dir_fd, b"",
                                flags | AT_EMPTY_PATH),
                      f"open_tree {path}")
    return _check(c.syscall(SYS_OPEN_TREE, -100, os.fsencode(path),
                            flags | AT_SYMLINK_NOFOLLOW),
                  f"open_tree {path}")


def _set(fd_or_path: int | str, attr_set: int, propagation: int = 0,
         recursive: bool = True, attr_clr: int = 0) -> None:
    attr = _MountAttr(attr_set, attr_clr, propagation, 0)
    flags = AT_RECURSIVE if recursive else 0
    if isinstance(fd_or_path, int):
        where, path, flags = fd_or_path, b"", flags | AT_EMPTY_PATH
    else:
        where, path = -100, os.fsencode(fd_or_path)
    _check(libc().syscall(SYS_MOUNT_SETATTR, where, path, flags,
                          ctypes.byref(attr), ctypes.c_size_t(32)),
           f"mount_setattr {fd_or_path}")


def _attach(clone: int, path: str) -> None:
    try:
        _check(libc().syscall(SYS_MOVE_MOUNT, clone, b"", -100,
                              os.fsencode(path), MOVE_MOUNT_F_EMPTY_PATH),
               f"move_mount onto {path}")
    finally:
        os.close(clone)


def _read_only_but(box: dict[str, Any]) -> None:
    """Make every mount read-only but the write paths; then, inside them,
    what ``box["protect"]`` names read-only again, and ``box["own"]`` (the
    tool's state folder) writable."""
    writable = [p for p in box.get("write") or () if _mountable(p)]
    own: str | None = box.get("own")
    clones = [(path, _clone(path)) for path in writable]
    own_clone = None
    if own is not None:
        fd = _open_no_links(own)
        try:
            own_clone = _clone(own, fd)
        finally:
            os.close(fd)
    # Private: nothing mounted here reaches the launcher's namespace.
    _set("/", MOUNT_ATTR_RDONLY, MS_PRIVATE)
    # /proc alone stays as it was: the next user namespace is mapped
    # through it (Landlock, not the mount, keeps the tool from writing
    # there).
    _set("/proc", 0, recursive=False, attr_clr=MOUNT_ATTR_RDONLY)
    for path, clone in sorted(clones, key=lambda item: _depth(item[0])):
        _attach(clone, path)
    for path in sorted(box.get("protect") or (), key=_depth):
        if os.path.lexists(path) and not os.path.islink(path):
            clone = _clone(path)
            _set(clone, MOUNT_ATTR_RDONLY)
            _attach(clone, path)
    if own is not None and own_clone is not None:
        _attach(own_clone, own)


def _mountable(path: str) -> bool:
    """A write path that needs a mount: a device node is written on a
    read-only mount as on any other (and /dev/null must stay writable)."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)


def _depth(path: str) -> int:
    return path.rstrip("/").count("/")


def _open_no_links(path: str) -> int:
    """A descriptor on folder ``path``, refusing a symbolic link at any
    level (a repository can commit one where a tool's state folder goes)."""
    fd = os.open("/", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for name in path.strip("/").split("/"):
            if not name:
                continue
            step = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW
                           | os.O_CLOEXEC, dir_fd=fd)
            os.close(fd)
            fd = step
    except OSError as exc:
        os.close(fd)
        raise SandboxError(exc.errno or 1, f"state folder {path}: "
                           f"{exc.strerror} (a link is not followed)") \
            from None
    return fd


# -- the seccomp filter -------------------------------------------------------

# The architectures of this machine's processes (a 64-bit kernel runs
# 32-bit programs too): (AUDIT_ARCH, socket, socketpair, socketcall or None).
_AUDIT_X86_64, _AUDIT_I386 = 0xC000003E, 0x40000003
_AUDIT_AARCH64, _AUDIT_ARM = 0xC00000B7, 0x40000028
_ARCHES = {
    "x86_64": ((_AUDIT_X86_64, 41, 53, None), (_AUDIT_I386, 359, 360, 102)),
    "aarch64": ((_AUDIT_AARCH64, 198, 199, None), (_AUDIT_ARM, 281, 288, 102)),
}
_X32_BIT = 0x40000000
_IO_URING = (425, 426, 427)  # setup, enter, register: on every arch
AF_UNIX, SOCK_STREAM, SOCK_SEQPACKET = 1, 1, 5
_SOCK_FLAGS = 0o4000 | 0o2000000  # SOCK_NONBLOCK | SOCK_CLOEXEC
_SYS_SOCKET, _SYS_SOCKETPAIR = 1, 8  # socketcall's first argument
_ALLOW = 0x7FFF0000
_KILL = 0x80000000
_EACCES, _EPERM = 13, 1


def _unix_socket_filter(sockets: bool = True) -> bytes:
    """A classic BPF program for seccomp: ``socket(AF_UNIX, ...)`` fails
    with EACCES; ``socketpair`` only for stream and seqpacket sockets (a
    datagram pair could be sent, or connected, to any socket file);
    io_uring, which can make sockets itself, fails with EPERM; the x32
    numbering is checked as x86_64's, and ``socketcall`` (32-bit x86 and
    arm) cannot show its socket's family, so its socket and socketpair
    fail too. A system call of an architecture not known here kills the
    process. Without ``sockets``, io_uring alone is refused."""
    deny_socket = _ERRNO | _EACCES
    code: list[_Step] = []
    arches = _ARCHES.get(os.uname().machine)
    if arches is None:
        raise SandboxError(38, "no seccomp filter for this architecture")
    code.append(("ld", None, None, 4))  # seccomp_data.arch
    for i, (audit, *_rest) in enumerate(arches):
        code.append(("jeq", f"arch{i}", None, audit))
    code.append(("ret", None, None, _KILL))
    for i, (audit, socket_nr, pair_nr, socketcall) in enumerate(arches):
        code.append(("label", f"arch{i}"))
        code.append(("ld", None, None, 0))  # seccomp_data.nr
        if audit == _AUDIT_X86_64:
            code.append(("and", None, None, 0xFFFFFFFF & ~_X32_BIT))
        if sockets:
            code.append(("jeq", "socket", None, socket_nr))
            code.append(("jeq", "pair", None, pair_nr))
            if socketcall is not None:
                code.append(("jeq", f"socketcall{i}", None, socketcall))
        for number in _IO_URING:
            code.append(("jeq", "uring", None, number))
        code.append(("ret", None, None, _ALLOW))
        if sockets and socketcall is not None:
            code.append(("label", f"socketcall{i}"))
            code.append(("ld", None, None, 16))  # args[0], low word
            code.append(("jeq", "deny", None, _SYS_SOCKET))
            code.append(("jeq", "deny", None, _SYS_SOCKETPAIR))
            code.append(("ret", None, None, _ALLOW))
    code += [("label", "socket"), ("ld", None, None, 16),
             ("jeq", "deny", None, AF_UNIX), ("ret", None, None, _ALLOW),
             ("label", "pair"), ("ld", None, None, 16),
             ("jeq", None, "allow", AF_UNIX),
             ("ld", None, None, 24),  # args[1]: the type, and its flags
             ("and", None, None, 0xFFFFFFFF & ~_SOCK_FLAGS),
             ("jeq", "allow", None, SOCK_STREAM),
             ("jeq", "allow", None, SOCK_SEQPACKET),
             ("label", "deny"), ("ret", None, None, deny_socket),
             ("label", "uring"), ("ret", None, None, _ERRNO | _EPERM),
             ("label", "allow"), ("ret", None, None, _ALLOW)]
    return _assemble(code)


_ERRNO = 0x00050000
_OPCODES = {"ld": 0x20, "jeq": 0x15, "ret": 0x06, "and": 0x54}


def _assemble(code: list[_Step]) -> bytes:
    """``struct sock_filter`` records for ``code``, jumps resolved to
    their labels (forward only, as BPF jumps are)."""
    labels: dict[str, int] = {}
    at = 0
    for item in code:
        if len(item) == 2:
            labels[item[1]] = at
        else:
            at += 1
    out: list[bytes] = []
    at = 0
    for item in code:
        if len(item) == 2:
            continue
        op, true, false, k = item
        jt = 0 if true is None else labels[true] - at - 1
        jf = 0 if false is None else labels[false] - at - 1
        if not (0 <= jt < 256 and 0 <= jf < 256):
            raise SandboxError(22, "seccomp filter: a jump out of range")
        out.append(struct.pack("=HBBI", _OPCODES[op], jt, jf, k))
        at += 1
    return b"".join(out)


def _install_filter(program: bytes) -> None:
    fprog = _SockFprog(len(program) // 8, program)
    _check(libc().prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER,
                        ctypes.byref(fprog), 0, 0), "seccomp filter")
