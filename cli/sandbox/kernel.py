"""What this kernel offers a sandbox, probed once and cached per kernel
release.

The probe runs in a helper process started with ``posix_spawn`` (a fork
of a process with threads, such as ``acor mcp``, may deadlock, and a user
namespace can only be entered by a process with one thread): it tries the
namespaces and mounts :mod:`.enter` makes, and says what worked on its
standard output. It costs an interpreter's start; the cache makes it free.

The cache is one line, ``RELEASE LANDLOCK_ABI NAMESPACES(0|1)
SECCOMP(0|1)``: read on the path of every sandboxed run, where importing
:mod:`json` (and :mod:`re` with it) would cost more than the sandbox
itself."""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing costs every sandboxed run: only mypy
if TYPE_CHECKING:
    from typing import Any, TypedDict

    class Offers(TypedDict):
        """What :func:`offers` found."""

        landlock: int  # the Landlock ABI version, 0: none
        namespaces: bool
        seccomp: bool

_memo: Offers | None = None
# The helper's code: run by this interpreter, with this environment.
_HELPER = "from acor.cli.sandbox.kernel import _helper; _helper()"
_SELF = "/proc/self/exe"


def offers(cache_dir: str | None = None) -> Offers:
    """{"landlock": ABI version (0: none), "namespaces": bool (unprivileged
    user, mount and network namespaces, and read-only mounts in them, can
    be made), "seccomp": bool (filters, on an architecture acor knows)},
    kept in ``cache_dir`` (acor's cache folder) when given."""
    global _memo
    if _memo is not None:
        return _memo
    release = os.uname().release
    if cache_dir is None:
        _memo = _probe()
        return _memo
    path = os.path.join(cache_dir, "sandbox")
    try:
        with open(path, encoding="utf-8") as f:
            cached_release, abi, namespaces, seccomp = f.read().split()
        if cached_release == release:
            _memo = {"landlock": int(abi), "namespaces": namespaces == "1",
                     "seccomp": seccomp == "1"}
            return _memo
    except (OSError, ValueError):
        pass
    _memo = _probe()
    try:
        os.makedirs(cache_dir, exist_ok=True)
        tmp = f"{path}.{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(f"{release} {_memo['landlock']} "
                    f"{int(_memo['namespaces'])} {int(_memo['seccomp'])}\n")
        os.replace(tmp, path)
    except OSError:
        pass  # probed again next time
    return _memo


def _probe() -> Offers:
    """What the helper found; nothing, if it could not say."""
    nothing: Offers = {"landlock": 0, "namespaces": False, "seccomp": False}
    read, write = os.pipe()
    try:
        null = os.open(os.devnull, os.O_RDWR)
        try:
            # This very interpreter, by /proc/self/exe: the path a venv
            # links to may not be one this user may look up, though the
            # running program is theirs (argv[0] keeps the venv's paths).
            pid = os.posix_spawn(
                _SELF if os.path.exists(_SELF) else sys.executable,
                [sys.executable, "-P", "-c", _HELPER],
                dict(os.environ),
                file_actions=[(os.POSIX_SPAWN_DUP2, null, 0),
                              (os.POSIX_SPAWN_DUP2, write, 1),
                              (os.POSIX_SPAWN_DUP2, null, 2)])
        finally:
            os.close(null)
    except OSError:
        os.close(read)
        return nothing
    finally:
        os.close(write)
    with open(read, "rb") as out:
        said = out.read(100)
    os.waitpid(pid, 0)
    try:
        abi, namespaces, seccomp = said.split()
        return {"landlock": int(abi), "namespaces": namespaces == b"1",
                "seccomp": seccomp == b"1"}
    except ValueError:
        return nothing


def _helper() -> None:
    """In the helper process: try each protection, print what worked."""
    # Only here: enter imports ctypes (2 ms), which a sandboxed run whose
    # probe is cached never needs in this process.
    from acor.cli.sandbox import enter
    abi = enter.landlock_abi()
    seccomp = enter.seccomp_filters()
    try:
        enter._namespaces(enter.CLONE_NEWUSER | enter.CLONE_NEWNS |
                          enter.CLONE_NEWNET)
        enter._set("/", enter.MOUNT_ATTR_RDONLY, enter.MS_PRIVATE)
        enter._set("/proc", 0, recursive=False,
                   attr_clr=enter.MOUNT_ATTR_RDONLY)
        enter._namespaces(enter.CLONE_NEWUSER | enter.CLONE_NEWNS)
        namespaces = True
    except OSError:
        namespaces = False
    sys.stdout.write(f"{abi} {int(namespaces)} {int(seccomp)}\n")


LANDLOCK = "Landlock (Linux 5.13 or later, enabled with lsm=landlock)"
NAMESPACES = ("unprivileged user, mount and network namespaces "
              "(kernel.unprivileged_userns_clone, or user.max_user_"
              "namespaces above 0): everything outside the write paths "
              "is made read-only in them")
SOCKETS = ("control of UNIX socket connections: Landlock ABI 9 (Linux "
           "7.1), or seccomp filters (x86_64 or arm64)")


def missing(box: dict[str, Any], found: Offers) -> list[str]:
    """What ``box`` needs that this kernel does not offer (``found``, from
    :func:`offers`; []: nothing)."""
    lacks: list[str] = []
    if found["landlock"] < 1:
        lacks.append(LANDLOCK)
    if not found["namespaces"]:
        lacks.append(NAMESPACES)
    if not box.get("unix_sockets") and found["landlock"] < 9 and \
            not found["seccomp"]:
        lacks.append(SOCKETS)
    return lacks


def protections(found: Offers) -> list[tuple[str, bool, str]]:
    """(protection, in force on this kernel, how or what is missing), for
    ``acor doctor``."""
    abi = found["landlock"]
    ns = found["namespaces"]
    sockets = ("Landlock ABI 9" if abi >= 9 else
               "seccomp: no socket(AF_UNIX) in a box" if found["seccomp"]
               else "missing: " + SOCKETS)
    return [
        ("files", abi >= 1, f"Landlock ABI {abi}" if abi else
         "missing: " + LANDLOCK),
        ("read-only outside write paths (metadata too)", ns,
         "user and mount namespaces" if ns else "missing: " + NAMESPACES),
        ("network", ns, "a network namespace per box" if ns else
         "missing: " + NAMESPACES),
        ("UNIX socket files", abi >= 9 or found["seccomp"], sockets),
        ("abstract UNIX sockets and signals", abi >= 6,
         "Landlock scoping (ABI 6)" if abi >= 6 else
         "missing: Landlock ABI 6 (Linux 6.12): a boxed tool may signal "
         "the user's other processes; the host's abstract sockets stay out "
         "of reach only without network (a namespace of its own) or "
         "without unix_sockets (no AF_UNIX socket)"),
        ("seccomp", found["seccomp"], "filters" if found["seccomp"] else
         "missing"),
    ]
