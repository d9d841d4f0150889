"""Whose files acor takes tools from: the ownership rule.

A config file names the tools dirs, and a manifest names the program acor
runs, so whoever can write one runs code as the user who runs ``acor``. The
config is found by walking up from the working directory, as git finds
``.git``: a ``/tmp/.acor/config.yaml`` planted by another user would
otherwise shadow the bundled ``pytest`` with their program for anyone who
works under ``/tmp``. So, as git does with ``safe.directory``, acor uses a
config file, a project or user tools dir, a tool folder, a manifest or a
program inside a tools dir only if

- it is owned by the user running acor, or by root (root can already do
  anything to that user); running as root under ``sudo``, files of the
  user who ran sudo (``SUDO_UID``) count as that user's, as git counts
  them. Root is told apart from everyone else only there: files of any
  other user are refused to root too, which is where running them would
  do the most harm;
- it is not writable by others, nor by its group unless the group is the
  user's own private group (named as the user, with no other members); a
  directory that is writable by others but sticky (``/tmp``'s ``+t``) is
  fine, because others can add entries there but not replace the user's,
  and every entry is then checked in turn.

Anything else is not used, with a message that names it and says how to
trust it explicitly: ``ACOR_TRUSTED`` (paths separated by ``:``) or the
file :func:`trust_file` (``~/.config/acor/trusted``, one path a line, ``#``
comments), each path trusting itself and everything under it, ``*`` every
path. That file is read only if it passes the same rule. Installed
packages' tools are not checked: they come with the Python that runs acor,
which is trusted as it is.

The check is a ``stat()`` of what acor reads anyway; the user and group
databases and the trust list are read only when something fails it.
"""

from __future__ import annotations

import grp
import os
import pwd
import shlex
import stat

from acor.cli.textsafe import printable

ENV = "ACOR_TRUSTED"

_HOW = ("If you trust it, add {path} to {env} (paths separated by ':'), "
        "e.g. `export {env}={path}`, or as a line of {file}; otherwise "
        "remove it, or `chown` it to yourself and `chmod go-w` it.")


def trust_file() -> str:
    """``$XDG_CONFIG_HOME/acor/trusted``, else ``~/.config/acor/trusted``
    (a relative ``XDG_CONFIG_HOME`` is ignored, as the XDG spec says)."""
    base = os.environ.get("XDG_CONFIG_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "acor", "trusted")


def how_to_trust(path: str) -> str:
    """The recovery sentence every refusal of ``path`` ends with."""
    return _HOW.format(env=ENV, file=printable(trust_file()),
                       path=printable(shlex.quote(path)))


def _trusted_uids() -> set[int]:
    uid = os.geteuid()
    uids = {uid, 0}
    sudo = os.environ.get("SUDO_UID", "")
    if uid == 0 and sudo.isascii() and sudo.isdigit():
        uids.add(int(sudo))
    return uids


def _private_group(gid: int) -> bool:
    """Whether group ``gid`` is the user's own: their primary group, named
    as they are, with no other member listed (Debian's user private
    groups, where umask 002 makes every file group-writable)."""
    if gid != os.getegid():
        return False
    try:
        user = pwd.getpwuid(os.geteuid()).pw_name
        group = grp.getgrgid(gid)
    except KeyError:
        return False
    return group.gr_name == user and set(group.gr_mem) <= {user}


def _who(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name}, uid {uid}"
    except KeyError:
        return f"uid {uid}"


def mode_problem(st: os.stat_result) -> str | None:
    """Why a file or directory with stat ``st`` is not safe to take tools
    from (owner, then write permissions), or None. The path is not looked
    at: see :func:`problem` for the explicit trust list."""
    if not hasattr(os, "geteuid"):  # pragma: no cover - not POSIX
        return None
    if st.st_uid not in _trusted_uids():
        you = os.geteuid()
        return (f"it is owned by {_who(st.st_uid)}, not by you "
                f"({_who(you)}){'' if you == 0 else ' or root'}, and "
                "whoever owns it chooses what acor runs as you")
    mode = st.st_mode
    if not mode & 0o022:
        return None
    if stat.S_ISDIR(mode) and mode & stat.S_ISVTX:
        return None  # others may add entries, each checked, not swap yours
    writers: list[str] = []
    if mode & 0o020 and not _private_group(st.st_gid):
        writers.append("its group")
    if mode & 0o002:
        writers.append("others")
    if not writers:
        return None
    return (f"it is writable by {' and '.join(writers)} (mode "
            f"{stat.S_IMODE(mode):04o}), who could change what acor runs "
            "as you")


def problem(path: str, st: os.stat_result) -> str | None:
    """:func:`mode_problem` for ``path``, unless the user trusts the path
    explicitly (:func:`trusted_paths`)."""
    why = mode_problem(st)
    if why is None or is_trusted(path):
        return None
    return why


def is_trusted(path: str) -> bool:
    """Whether ``path`` is, or is under, a path the user trusts."""
    real = os.path.realpath(path)
    for entry in trusted_paths():
        if entry == "*":
            return True
        entry_real = os.path.realpath(entry)
        if real == entry_real or os.path.commonpath(
                [entry_real, real]) == entry_real:
            return True
    return False


def trusted_paths() -> list[str]:
    """The paths the user trusts: ``ACOR_TRUSTED``'s, then the trust
    file's (if it passes the ownership rule itself). Relative paths and
    empty entries are ignored: trust must not depend on the directory acor
    runs in."""
    found = [p for p in os.environ.get(ENV, "").split(os.pathsep)
             if p == "*" or os.path.isabs(p)]
    path = trust_file()
    try:
        # O_NONBLOCK: a FIFO planted there must not hang acor.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return found
    with open(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or mode_problem(st) is not None:
            return found
        raw = f.read(64 * 1024)
    for line in raw.decode("utf-8", "replace").split("\n"):
        line = line.strip()
        if line == "*" or os.path.isabs(line):
            found.append(line)
    return found
