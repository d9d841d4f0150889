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
import sys


TYPE_CHECKING = False  # typing costs every run ~3 ms: only mypy
if TYPE_CHECKING:
    from typing import Any, Callable, Mapping, Optional, Protocol, Sequence

    class RunningTool(Protocol):
        """A tool's process as the relay drives it: started here
        (:class:`ToolProcess`) or by a warm start's server
        (:class:`acor.cli.run.warm.WarmProcess`)."""
        pid: int
        proc: Any  # stdout, stderr and poll(), as a Popen has them

        @property
        def returncode(self) -> Optional[int]: ...

        def poll(self) -> Optional[int]: ...

        def kill_group(self, sig: int) -> None: ...

        def reap(self, grace: float, reap_orphans: bool) -> None: ...


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
    """One spawned tool: its process (``proc``: its pipes and ``poll``),
    its group, and how to end it.

    ``alone`` says this process runs nothing else at the same time (the
    ``acor`` command): the tool is then started with ``posix_spawn``,
    without importing :mod:`subprocess` (about 3 ms of every ``acor
    TOOL``). Elsewhere, and where a working directory must be set, it is a
    :class:`subprocess.Popen`."""

    def __init__(self, argv: Sequence[str], *, cwd: Optional[str],
                 env: Mapping[str, str], pass_fds: Sequence[int] = (),
                 inherit_stdin: bool = False, alone: bool = False,
                 sandbox: Optional[dict[str, Any]] = None) -> None:
        self.proc: Any
        if sandbox is not None and alone:
            # The hot path, in a process that runs nothing else: fork, enter
            # the box, exec (subprocess would cost its import).
            self.proc = _Forked(argv, env, pass_fds, inherit_stdin, cwd,
                                sandbox)
        elif alone and cwd is None and sandbox is None and \
                hasattr(os, "posix_spawn"):
            self.proc = _Spawned(argv, env, pass_fds, inherit_stdin)
        else:
            import subprocess
            enter_box = None
            if sandbox is not None:
                # The child enters the sandbox between fork and exec, so
                # that the tool's program and all it starts run inside it.
                from functools import partial

                from acor.cli.sandbox.enter import enter, libc
                load: Callable[[], object] = libc
                load()  # loaded here: a child of threads must not dlopen
                enter_box = partial(enter, sandbox)
            try:
                self.proc = subprocess.Popen(
                    list(argv),
                    stdin=None if inherit_stdin else subprocess.DEVNULL,
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                    env=dict(env), pass_fds=tuple(pass_fds),
                    start_new_session=True,  # its own group: signals reach all
                    preexec_fn=enter_box)
            except subprocess.SubprocessError:  # only enter_box raises it
                from acor.cli.sandbox.enter import SandboxError
                raise SandboxError(1, "the tool's process could not enter "
                                   "its sandbox") from None
        self.pid = self.proc.pid
        widen_pipe(self.proc.stdout.fileno())

    @property
    def returncode(self) -> Optional[int]:
        code: Optional[int] = self.proc.returncode
        return code

    def poll(self) -> Optional[int]:
        code: Optional[int] = self.proc.poll()
        return code

    def kill_group(self, sig: int) -> None:
        kill_group(self.pid, sig)

    def reap(self, grace: float, reap_orphans: bool) -> None:
        """Wait for the tool (``grace`` seconds, then SIGKILL), then end
        whatever it left in its group, and its escaped orphans if this
        process is their subreaper."""
        if not _waited(self.proc, grace):
            self.kill_group(signal.SIGKILL)
            self.proc.wait()
        self.kill_group(signal.SIGKILL)  # a daemon or grandchild in the group
        if reap_orphans:
            end_orphans()
        for stream in (self.proc.stdout, self.proc.stderr):
            stream.close()


def _waited(proc: Any, timeout: float) -> bool:
    """Whether ``proc`` exited within ``timeout`` seconds (and is reaped)."""
    if isinstance(proc, _Spawned):
        return proc.wait(timeout) is not None
    import subprocess
    try:
        proc.wait(timeout=timeout)
        return True
    except subprocess.TimeoutExpired:
        return False


class _Spawned:
    """A tool started with ``posix_spawn`` in a session of its own: what
    the launcher uses of a Popen (``pid``, ``stdout``, ``stderr``,
    ``poll``, ``wait``, ``returncode``), with the same start: stdin from
    /dev/null unless inherited, SIGPIPE and SIGXFSZ to their defaults, only
    ``pass_fds`` and the standard streams passed on. Only for a process
    that starts nothing else meanwhile: ``pass_fds`` are inheritable while
    it spawns."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str],
                 pass_fds: Sequence[int], inherit_stdin: bool) -> None:
        path = _executable(argv[0], env)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        actions: list[tuple[Any, ...]] = [(os.POSIX_SPAWN_DUP2, out_w, 1),
                         (os.POSIX_SPAWN_DUP2, err_w, 2)]
        if not inherit_stdin:
            actions.append((os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY,
                            0))
        # What subprocess's close_fds does: no descriptor acor inherited
        # itself reaches the tool.
        actions += [(os.POSIX_SPAWN_CLOSE, fd) for fd in _inheritable_fds()
                    if fd > 2 and fd not in pass_fds]
        for fd in pass_fds:
            os.set_inheritable(fd, True)
        try:
            self.pid = os.posix_spawn(
                path, list(argv), dict(env), file_actions=actions,
                setsid=True, setsigdef=(signal.SIGPIPE, signal.SIGXFSZ))
        except BaseException:
            os.close(out_r)
            os.close(err_r)
            raise
        finally:
            os.close(out_w)
            os.close(err_w)
            for fd in pass_fds:
                os.set_inheritable(fd, False)
        self.stdout = open(out_r, "rb", buffering=0)
        self.stderr = open(err_r, "rb", buffering=0)
        self.returncode: Optional[int] = None

    def poll(self) -> Optional[int]:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: Optional[float] = None) -> Optional[int]:
        """The exit code once the tool has exited; None if it is still
        running after ``timeout`` seconds."""
        if self.returncode is None and timeout is not None:
            exit_fd = pidfd(self.pid)
            if exit_fd is None:
                import time
                end = time.monotonic() + timeout
                while self.poll() is None and time.monotonic() < end:
                    time.sleep(0.005)
            else:
                import select
                try:
                    if not select.select([exit_fd], [], [], timeout)[0]:
                        return None
                finally:
                    os.close(exit_fd)
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, 0 if timeout is None
                                     else os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode


class _Forked(_Spawned):
    """A tool started as :class:`_Spawned` starts one, but by ``fork``, so
    that the child enters its sandbox (:mod:`acor.cli.sandbox.enter`)
    before it ``exec``s the tool: what the tool runs inherits the box. Why
    the child could not start comes back on a pipe closed by ``exec``.

    Why a fork is safe here: ``acor TOOL`` forks before any thread of its
    own starts; ``acor mcp`` and ``acor_run`` (threads) start tools through
    the single-threaded fork server and come here only when it could not
    start. In that case the child makes system calls through functions
    loaded before the fork (no import, no lock another thread may hold)
    and then executes the tool."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str],
                 pass_fds: Sequence[int], inherit_stdin: bool,
                 cwd: Optional[str], sandbox: dict[str, Any]) -> None:
        from acor.cli.sandbox.enter import SandboxError, enter
        path = _executable(argv[0], env)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        why_r, why_w = os.pipe()  # close-on-exec: empty when exec worked
        keep = {out_w, err_w, why_w, *pass_fds}
        inherited = [fd for fd in _inheritable_fds() if fd > 2]
        pid = os.fork()
        if pid == 0:  # the child: nothing here may return
            try:
                os.setsid()
                if cwd is not None:
                    os.chdir(cwd)
                os.dup2(out_w, 1)
                os.dup2(err_w, 2)
                if not inherit_stdin:
                    null = os.open(os.devnull, os.O_RDONLY)
                    os.dup2(null, 0)
                    os.close(null)
                for fd in inherited:
                    if fd not in keep:
                        os.close(fd)
                for fd in pass_fds:
                    os.set_inheritable(fd, True)
                for sig in (signal.SIGPIPE, signal.SIGXFSZ):
                    signal.signal(sig, signal.SIG_DFL)
                enter(sandbox)
                os.execve(path, list(argv), dict(env))
            except BaseException as exc:
                try:
                    os.write(why_w, f"{type(exc).__name__}: {exc}".encode(
                        "utf-8", "replace")[:4096])
                finally:
                    os._exit(127)
        self.pid = pid
        for fd in (out_w, err_w, why_w):
            os.close(fd)
        with open(why_r, "rb") as why:
            failure = why.read()
        self.stdout = open(out_r, "rb", buffering=0)
        self.stderr = open(err_r, "rb", buffering=0)
        self.returncode = None
        if failure:
            self.wait()
            self.stdout.close()
            self.stderr.close()
            raise SandboxError(1, failure.decode("utf-8", "replace"))


def _executable(name: str, env: Mapping[str, str]) -> str:
    """The program ``name`` names, searched on the tool's PATH as
    subprocess searches it; FileNotFoundError as subprocess raises it."""
    if os.sep in name:
        return name
    for folder in os.get_exec_path(env):
        path = os.path.join(folder, name)
        if os.access(path, os.X_OK) and not os.path.isdir(path):
            return path
    import errno
    raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), name)


def _inheritable_fds() -> list[int]:
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return []
    fds = []
    for name in names:
        try:
            if os.get_inheritable(int(name)):
                fds.append(int(name))
        except (OSError, ValueError):
            pass
    return fds


def adopt_orphans() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux's
    PR_SET_CHILD_SUBREAPER). A process that leaves the tool's group with
    setsid() (a daemon) is out of reach of killpg; once its parent exits it
    becomes our child instead of init's, and :func:`end_orphans` ends it.
    Only for a process that is acor and nothing else: every orphan of every
    child would become ours."""
    if not sys.platform.startswith("linux"):
        return False
    prctl = libc_function("prctl")
    return prctl is not None and prctl(36, 1, 0, 0, 0) == 0  # SUBREAPER


def tune_allocator() -> None:
    """Keep large buffers in the heap (glibc's mallopt). A flood moves 1 MB
    sections through a few buffers each; above glibc's mmap threshold each
    one is a fresh mapping whose pages fault in on first touch, which cost
    the relay more than all its parsing (0.7 s instead of 0.35 s for 100
    MB). With the threshold at 32 MiB the same heap memory is reused.
    Elsewhere than glibc, nothing changes."""
    if not sys.platform.startswith("linux"):
        return
    mallopt = libc_function("mallopt")
    if mallopt is not None:
        mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD
        mallopt(-1, 64 << 20)  # M_TRIM_THRESHOLD: keep it for reuse


def libc_function(name: str) -> Optional[Callable[..., int]]:
    """The C library's function ``name``, taking and returning C ints, or
    None where there is none. Built on ``_ctypes``, the C half of
    :mod:`ctypes`: ``import ctypes`` costs every ``acor TOOL`` about 3 ms
    for what is here two calls."""
    try:
        import _ctypes
    except ImportError:
        return None

    # what ctypes calls c_int (typeshed makes the base generic)
    class _Int(_ctypes._SimpleCData):  # type: ignore[type-arg, unused-ignore]
        _type_ = "i"

    class _Function(_ctypes.CFuncPtr):
        _flags_ = _ctypes.FUNCFLAG_CDECL
        _restype_ = _Int
    try:
        # dlopen(None): the program and its libraries (typeshed says str)
        handle = _ctypes.dlopen(None, 2)  # type: ignore[arg-type]
        return _Function(_ctypes.dlsym(handle, name))
    except (OSError, AttributeError):
        return None


def kill_group(pid: int, sig: int) -> None:
    """Send ``sig`` to the process group ``pid`` leads: the tool and all
    it started. A group already gone, or one whose member we may not
    signal (a setuid program), is no error."""
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def end_orphans(rounds: int = 100,
                running: Callable[[], set[int]] = set) -> None:
    """SIGKILL and reap every child we have left but the ``running()``
    ones. With the subreaper set and the tool reaped, these are the tool's
    escaped descendants; each one killed hands its own children to us,
    hence the rounds."""
    for _ in range(rounds):
        pids = children() - running()
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
            pids.update(int(pid) for pid in
                        _read_file(f"/proc/self/task/{tid}/children").split())
    except FileNotFoundError:  # a kernel without the children file
        pids = _children_by_scan()
    except (OSError, ValueError):
        pass  # no /proc: nothing we can find
    return pids


def _read_file(path: str) -> bytes:
    """A small file's bytes, without a file object: the fork server reads
    its children after every run, and a file object's buffer would be
    memory it copies from the spare it shares its pages with."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        data = b""
        while True:
            chunk = os.read(fd, 4096)
            if not chunk:
                return data
            data += chunk
    finally:
        os.close(fd)


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
