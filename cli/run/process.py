"""The tool's process: spawned in a group of its own, ended with nothing
left behind.

Linux specifics live here and only here: process groups (every signal
reaches the whole tree), a pidfd that becomes readable when the tool exits,
1 MiB pipes, and the child-subreaper flag that lets the ``acor`` command
adopt and end the daemons a tool leaves behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

TYPE_CHECKING = False  # typing costs every run ~3 ms: only mypy
if TYPE_CHECKING:
    from typing import Mapping, Optional, Sequence


def env_seconds(name: str, default: float) -> float:
    """Seconds from the environment; a value that is not a finite number
    of 0 or more is ignored (the environment is not acor's to trust)."""
    from acor.cli.durations import check_seconds
    try:
        return check_seconds(os.environ.get(name, default), name,
                             zero_ok=True)
    except ValueError:
        return default


KILL_GRACE = env_seconds("ACOR_KILL_GRACE", 2.0)
PIPE_SIZE = 1 << 20


class ToolProcess:
    """One spawned tool: its Popen, its group, and how to end it."""

    def __init__(self, argv: Sequence[str], *, cwd: Optional[str],
                 env: Mapping[str, str], pass_fds: Sequence[int] = (),
                 inherit_stdin: bool = False) -> None:
        self.proc = subprocess.Popen(
            list(argv), stdin=None if inherit_stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
            env=dict(env), pass_fds=tuple(pass_fds),
            start_new_session=True)  # its own group: signals reach all of it
        self.pid = self.proc.pid
        widen_pipe(self.proc.stdout.fileno())

    @property
    def returncode(self) -> Optional[int]:
        return self.proc.returncode

    def poll(self) -> Optional[int]:
        return self.proc.poll()

    def kill_group(self, sig: int) -> None:
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def reap(self, grace: float, reap_orphans: bool) -> None:
        """Wait for the tool (``grace`` seconds, then SIGKILL), then end
        whatever it left in its group, and its escaped orphans if this
        process is their subreaper."""
        try:
            self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.kill_group(signal.SIGKILL)
            self.proc.wait()
        self.kill_group(signal.SIGKILL)  # a daemon or grandchild in the group
        if reap_orphans:
            end_orphans()
        for stream in (self.proc.stdout, self.proc.stderr):
            stream.close()


def adopt_orphans() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux's
    PR_SET_CHILD_SUBREAPER). A process that leaves the tool's group with
    setsid() (a daemon) is out of reach of killpg; once its parent exits it
    becomes our child instead of init's, and :func:`end_orphans` ends it.
    Only for a process that is acor and nothing else: every orphan of every
    child would become ours."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes  # ~3 ms: the price of leaving no process behind
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(36, 1, 0, 0, 0) == 0)  # CHILD_SUBREAPER
    except (ImportError, OSError, AttributeError):
        return False


def tune_allocator() -> None:
    """Keep large buffers in the heap (glibc's mallopt). A flood moves 1 MB
    sections through a few buffers each; above glibc's mmap threshold each
    one is a fresh mapping whose pages fault in on first touch, which cost
    the relay more than all its parsing (0.7 s instead of 0.35 s for 100
    MB). With the threshold at 32 MiB the same heap memory is reused.
    Elsewhere than glibc, nothing changes."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        libc = ctypes.CDLL(None)
        libc.mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD
        libc.mallopt(-1, 64 << 20)  # M_TRIM_THRESHOLD: keep it for reuse
    except (ImportError, OSError, AttributeError):
        pass


def end_orphans(rounds: int = 100) -> None:
    """SIGKILL and reap every child we have left. With the subreaper set
    and the tool reaped, these are the tool's escaped descendants; each one
    killed hands its own children to us, hence the rounds."""
    for _ in range(rounds):
        pids = children()
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for pid in pids:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass


def children() -> set[int]:
    pids: set[int] = set()
    try:
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/children") as f:
                pids.update(int(pid) for pid in f.read().split())
    except FileNotFoundError:  # a kernel without the children file
        pids = _children_by_scan()
    except (OSError, ValueError):
        pass  # no /proc: nothing we can find
    return pids


def _children_by_scan() -> set[int]:
    me, pids = str(os.getpid()), set()
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = f.read().rsplit(")", 1)[1].split()[1]
        except (OSError, IndexError):
            continue
        if ppid == me:
            pids.add(int(entry))
    return pids


def pidfd(pid: int) -> Optional[int]:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None  # no pidfd here: the loop polls the child instead


def widen_pipe(fd: int) -> None:
    """A 1 MiB pipe instead of 64 KiB: a flood crosses in 16 times fewer
    wake-ups of both processes. Linux only; elsewhere (or when ``fd`` is
    not a pipe) nothing changes."""
    try:
        import fcntl
        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_SIZE)
    except (ImportError, OSError):
        pass


def read(fd: int) -> Optional[bytes]:
    """What is there to read: bytes, b"" at the end, None if nothing yet."""
    try:
        return os.read(fd, PIPE_SIZE)
    except BlockingIOError:
        return None
    except OSError:
        return b""


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
