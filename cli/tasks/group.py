"""A task's tool process group, recorded so that a server taking the task
over can end what the dead server left running.

A server killed with SIGKILL cannot stop its runs: the tool it started
lives on (in a session of its own) until its next write to the closed
pipe, and a silent tool would overlap the run the next server resumes.
So the store keeps, while a run lasts, its group as ``BOOT:PGID:START``:
the boot id (another machine sharing the store, or this one rebooted, is
never signalled) and the leader's start time in clock ticks since boot
(a pid the kernel handed out again is never taken for the tool).
"""

import os
import signal
import time

BOOT_ID = "/proc/sys/kernel/random/boot_id"
GONE_WITHIN_S = 10.0  # SIGKILL is not refused; exiting takes a moment


def boot_id() -> str:
    """This boot of this machine (empty when the kernel does not say)."""
    try:
        with open(BOOT_ID, encoding="ascii") as f:
            return f.read().strip()
    except OSError:
        return ""


def _stat(pid: int) -> tuple[int, int] | None:
    """A live process's (process group, start time), or None: gone or a
    zombie (nothing left to end)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii",
                  errors="replace") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    # After the command: state, ppid, pgrp, ... starttime is field 22.
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[2]), int(fields[19])


def mark(pid: int) -> str | None:
    """The mark of the group ``pid`` leads (a tool starts in a session of
    its own), or None when it cannot be told apart from a later one."""
    boot = boot_id()
    found = _stat(pid)
    if not boot or found is None:
        return None
    return f"{boot}:{pid}:{found[1]}"


def members(recorded: str | None) -> list[int]:
    """The live processes of the group ``recorded`` (a :func:`mark`) on
    this boot: none for another machine's or boot's, none once the group
    is gone. While a group has a member its id is never handed out again,
    so a member not older than the recorded leader is of that group."""
    try:
        boot, pgid_text, start_text = (recorded or "").rsplit(":", 2)
        pgid, start = int(pgid_text), int(start_text)
    except ValueError:
        return []
    if boot != boot_id() or pgid <= 1:
        return []
    leader = _stat(pgid)
    if leader is not None and (leader[0] != pgid or leader[1] != start):
        return []  # the pid is another process's now
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _stat(int(entry))
            if stat is not None and stat[0] == pgid and stat[1] >= start:
                found.append(int(entry))
    return found


def end(recorded: str | None) -> bool:
    """Kill the group ``recorded`` (a :func:`mark`) if it still runs here,
    and wait until it is gone (a resumed run must not overlap it);
    whether there was one to kill."""
    if not members(recorded):
        return False
    pgid = int((recorded or "").rsplit(":", 2)[1])
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return False
    deadline = time.monotonic() + GONE_WITHIN_S
    while members(recorded) and time.monotonic() < deadline:
        time.sleep(0.02)
    return True
