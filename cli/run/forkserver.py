"""The warm start's server: a process that has acor's library imported and
forks a tool from it, so that a call skips the interpreter's start-up and
the library's imports (see :mod:`acor.cli.run.warm` for the client side).

It is started as ``python -u -P -c BOOT`` with its control socket on a file
descriptor named in ``ACOR_FORKSERVER_FD``, and stays single-threaded: a
process with one thread can fork safely and enter new namespaces. Each
request on the control socket carries the call's socket and file
descriptors, and a marshalled description (argv, the environment as what
it changes of the server's, directory, sandbox). The server forks the tool,
which makes a session of its own, takes the call's standard streams,
descriptors, environment and directory, applies the sandbox, and returns
to the top of this interpreter, which runs the tool's entry as
``__main__`` and ends as a script ends (:func:`exit`). A request marked
``exec`` (a tool that is not a Python entry, or one that must start in a
fresh interpreter) is a program the forked process executes instead: it
is supervised the same way, so that no path of a long-lived caller leaves
a daemon behind.

On the call's socket the server says ``pid N``, then ``exit STATUS``; the
client answers ``reap`` once it has read the tool's pipes, and the server
ends what the tool left behind and says ``done``. A tool that left nothing
behind is reported ``exit STATUS done``, and there is no reap to ask for.
What it leaves behind: the tool's group, and daemons that escaped it with
``setsid``. Those reach the
server because the tool is the child-subreaper of its own tree (its orphans
stay its children while it runs, as on the cold path they stay under the
``acor`` command) and the server is the subreaper of the tools: when a tool
exits, its orphans become the server's children, ended at the next reap.

While no tool runs, the server forks a spare: a process already in a
session of its own that waits for the next Python call, so that a call
does not wait for a fork (the fork is done between calls, not beside a
running tool, which on a machine of few cores it would slow).

Nothing of a tool is imported here: only the library, once, before the
heap is frozen for the collector (``gc.freeze``), so that a fork copies as
little as it can.
"""

from __future__ import annotations

# Imported once, before the heap is frozen, and shared by every fork: not
# in the functions a tool's process runs, where each fork would pay again.
# Not threading: a module imported here that registers an after-fork hook
# runs it in every fork (threading's cost each tool's process 120 page
# faults and 0.35 ms of CPU); a tool that uses threads imports it itself.
import builtins
import errno
import fcntl
import gc
import marshal
import os
import select
import signal
import socket
import sys
import traceback
import types
from importlib.machinery import SourceFileLoader

from acor import framing

from acor.cli.run.process import children, end_orphans, kill_group
from acor.cli.run.tool_end import exit

__all__ = ["BOOT", "FD_VAR", "exit", "serve"]  # exit: BOOT's, from here

TYPE_CHECKING = False  # the server imports nothing it need not: only mypy
if TYPE_CHECKING:
    from typing import Any, Iterable, Optional, Union

    Code = Union[types.CodeType, SyntaxError]  # the tool reports an error
    Globals = tuple[Optional[Code], dict[str, Any]]  # what __main__ runs
    Forked = tuple[dict[str, Any], list[int], list[int], Optional[Code],
                   Optional[int]]  # _become_tool's arguments

FD_VAR = "ACOR_FORKSERVER_FD"
MAX_REQUEST = 1 << 22     # argv and environment of one call: 4 MiB at most
MAX_FDS = 16              # stdio, the call's socket, a few passed fds
# The modules a run of a typical tool imports lazily (measured on a run of
# tools/hello): imported once here so that no call pays for them again
# (what this module's own functions use after a fork it imports above).
PRELOAD = ("acor.acortool", "acor.progress", "acor.resumable", "acor.args",
           "acor.argparsing", "acor.checks", "acor.grammar", "acor.layout",
           "acor.escaping", "acor.events", "acor.quick", "acor.sessions",
           "argparse", "json", "re", "linecache")
BOOT = ("from acor.cli.run.forkserver import serve as _serve, exit as _exit\n"
        "_code, _globals = _serve()\n"
        "del _serve\n"
        "try:\n"
        "    exec(_code, _globals)\n"
        "except BaseException as _exc:\n"
        "    _exit(_exc)\n"
        "_exit(None)\n")
_PR_SET_CHILD_SUBREAPER = 36
# (path, mtime_ns, size) -> code: one compile each
_compiled: dict[tuple[str, int, int], Any] = {}


class _Call:
    """A tool the server forked: its call's socket, and its pidfd until
    it has exited."""

    def __init__(self, pid: int, sock: socket.socket,
                 exit_fd: int | None = None) -> None:
        self.pid = pid
        self.sock = sock
        self.exit_fd: int | None = exit_fd if exit_fd is not None else \
            os.pidfd_open(pid)

    def close(self) -> None:
        self.sock.close()
        if self.exit_fd is not None:
            os.close(self.exit_fd)


def serve() -> Globals:
    """Serve requests until the client goes away; in a tool process,
    return its code and globals to run at the top of the interpreter."""
    # Ends when the launcher does: its end of the socket closes with it.
    control = socket.socket(fileno=int(os.environ.pop(FD_VAR)))
    os.set_inheritable(control.fileno(), False)
    for name in PRELOAD:
        try:
            __import__(name)
        except ImportError:
            pass
    libc = _libc()
    if libc is not None:
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    gc.collect()
    gc.freeze()
    running: dict[int, _Call] = {}   # by pidfd: tools not yet exited
    ended: dict[int, _Call] = {}     # by socket fd: waiting for "reap"
    while True:
        # Forked while no tool runs: on a machine of few cores a fork
        # beside a running tool slows the tool more than it saves.
        if not _spare and not running:
            try:
                forked = _fork_spare(control, ended)
            except OSError:  # no process to spare now: calls fork
                forked = None
            if forked is not None:  # in the spare, given its call
                return _leave_server(control, running, ended, forked)
        watched = [control.fileno(), *running, *ended]
        try:
            ready, _, _ = select.select(watched, [], [])
        except InterruptedError:
            continue
        for fd in ready:
            if fd == control.fileno():
                forked = _accept(control, running)
                if forked is not None:  # in the forked tool's process
                    return _leave_server(control, running, ended, forked)
            elif fd in running:
                call = running.pop(fd)
                _report_exit(call, running, ended)
            elif fd in ended:
                _reap(ended.pop(fd), running)


def _leave_server(control: socket.socket, running: dict[int, _Call],
                  ended: dict[int, _Call], forked: Forked) -> Globals:
    """In a tool's process: drop what is the server's, become the tool."""
    # Closed before the tool's descriptors are placed: a socket object
    # closes its number when it is freed.
    control.close()
    for call in (*running.values(), *ended.values()):
        call.close()
    return _become_tool(*forked)


class _Spare:
    """A process forked ahead of the next call, already in a session of
    its own, waiting on ``sock`` for its request: a call then costs no
    fork, which is done meanwhile for the call after."""

    def __init__(self, pid: int, sock: socket.socket) -> None:
        self.pid = pid
        self.sock = sock
        self.exit_fd = os.pidfd_open(pid)

    def end(self) -> None:
        """Kill and reap it: it was never given a call, or could not be."""
        self.sock.close()  # it reads the end, and leaves
        kill_group(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        os.close(self.exit_fd)


_spare: list[_Spare] = []  # the one spare, when there is one


def _fork_spare(control: socket.socket, ended: dict[int, _Call]
                ) -> Optional[Forked]:
    """Fork the spare; in the spare, once its request has come, return
    what its tool needs (:func:`_become_tool`'s arguments)."""
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pid = os.fork()
    if pid == 0:
        mine.close()
        control.close()  # nothing of the server's is held while it waits
        for call in ended.values():
            call.close()
        _detach()
        try:
            message, fds, _, _ = socket.recv_fds(theirs, MAX_REQUEST,
                                                 MAX_FDS)
        except OSError:
            os._exit(0)
        if not message:  # the server is gone, or ends
            os._exit(0)
        theirs.close()
        request = marshal.loads(message)
        targets = [0, 1, 2, *request["pass_fds"]]
        # The call's socket is the server's: fds[0] here is a placeholder.
        return request, [-1, *fds], targets, _code_of(request["argv"][0]), \
            None
    theirs.close()
    _spare.append(_Spare(pid, mine))
    return None


def _hand_to_spare(message: bytes, fds: list[int]) -> _Spare | None:
    """Give a Python call to the spare: the spare now, or None when there
    is none (or it died: a call is then forked as before)."""
    if not _spare:
        return None
    spare = _spare.pop()
    try:
        socket.send_fds(spare.sock, [message], fds)
    except OSError:
        spare.end()
        return None
    spare.sock.close()
    return spare


def _end_spare() -> None:
    while _spare:
        _spare.pop().end()


def _accept(control: socket.socket, running: dict[int, _Call]
            ) -> Optional[Forked]:
    """Fork the tool of the next request; in the tool's process, return
    its code and globals."""
    try:
        message, fds, _, _ = socket.recv_fds(control, MAX_REQUEST, MAX_FDS)
    except InterruptedError:
        return None
    except OSError:
        message, fds = b"", []
    if not message:
        _end_all(running)
        os._exit(0)  # the client closed its end: it is gone
    try:
        request = marshal.loads(message)
        targets = [0, 1, 2, *request["pass_fds"]]
        entry = request["argv"][0]
    except (EOFError, ValueError, TypeError, KeyError, IndexError):
        request = None
    if request is None or len(fds) != 1 + len(targets):
        _close(fds)
        return None
    program = bool(request.get("exec"))
    spare = None if program else _hand_to_spare(message, fds[1:])
    if spare is not None:
        sock = socket.socket(fileno=fds[0])
        _close(fds[1:])
        _code_of(entry)  # compiled here too: the next spare inherits it
        _started(spare.pid, sock, running, spare.exit_fd)
        return None
    code = None if program else _code_of(entry)
    # A program's process says on this pipe why it could not exec; an
    # exec that succeeds closes it (close-on-exec) with nothing said.
    report_r, report_w = os.pipe() if program else (None, None)
    pid = os.fork()
    if pid == 0:
        if report_r is not None:
            os.close(report_r)
        _detach()
        return request, fds, targets, code, report_w
    sock = socket.socket(fileno=fds[0])
    _close(fds[1:])
    if report_r is not None and report_w is not None:
        os.close(report_w)
        failure = _read_to_end(report_r)
        if failure:  # it never ran: say why, as a spawn that fails would
            os.waitpid(pid, 0)
            try:
                sock.sendall(b"error " + failure + b"\n")
            except OSError:
                pass
            sock.close()
            return None
    _started(pid, sock, running)
    return None


def _started(pid: int, sock: socket.socket, running: dict[int, _Call],
             exit_fd: int | None = None) -> None:
    """Say the tool's pid on its call's socket, and watch for its exit."""
    try:
        call = _Call(pid, sock, exit_fd)
        sock.sendall(b"pid %d\n" % pid)
    except OSError:
        kill_group(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        sock.close()
        return
    assert call.exit_fd is not None  # its pidfd, until it has exited
    running[call.exit_fd] = call


def _report_exit(call: _Call, running: dict[int, _Call],
                 ended: dict[int, _Call]) -> None:
    """Say how the tool exited. When it left nothing behind (its group is
    empty and no orphan came to the server) there is nothing to reap: say
    ``done`` with it, and the client need not ask (the common case: one
    round trip less per call)."""
    _, status = os.waitpid(call.pid, 0)
    if call.exit_fd is not None:
        os.close(call.exit_fd)
        call.exit_fd = None
    code = os.waitstatus_to_exitcode(status)
    clean = not _group_alive(call.pid) and \
        not children() - _not_orphans(running)  # no escaped daemon
    try:
        call.sock.sendall(b"exit %d%s\n" % (code, b" done" if clean else b""))
    except OSError:  # the client is gone: end what is left now
        _reap(call, running)
        return
    if clean:
        call.sock.close()
    else:
        ended[call.sock.fileno()] = call


def _group_alive(pid: int) -> bool:
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: a member is there (a setuid program)
        return True
    return True


def _not_orphans(running: dict[int, _Call]) -> set[int]:
    """The server's children that are its own: running tools, the spare
    (the others are daemons that escaped tools which have exited)."""
    return {call.pid for call in running.values()} | \
        {spare.pid for spare in _spare}


def _reap(call: _Call, running: dict[int, _Call]) -> None:
    """The client has read the tool's pipes (or is gone): end its group
    and every orphan the server has adopted, then say so."""
    kill_group(call.pid, signal.SIGKILL)
    _end_orphans(running)
    try:
        call.sock.sendall(b"done\n")
    except OSError:
        pass
    call.sock.close()


def _end_orphans(running: dict[int, _Call]) -> None:
    """SIGKILL and reap the server's children that are not running tools:
    daemons that escaped tools which have exited."""
    end_orphans(running=lambda: _not_orphans(running))


def _end_all(running: dict[int, _Call]) -> None:
    _end_spare()
    for call in running.values():
        kill_group(call.pid, signal.SIGKILL)
    _end_orphans({})


def _detach() -> None:
    """In a tool's process, first: a session (and group) of its own, and
    its orphans its own while it runs."""
    os.setsid()
    libc = _libc()
    if libc is not None:
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _read_to_end(fd: int) -> bytes:
    data = b""
    while True:
        try:
            chunk = os.read(fd, 512)
        except InterruptedError:
            continue
        if not chunk:
            os.close(fd)
            return data[:512]
        data += chunk


def _become_tool(request: dict[str, Any], fds: list[int],
                 targets: list[int], code: Optional[Code],
                 report: int | None) -> Globals:
    """In the tool's process: its session, streams, descriptors,
    environment and directory; then a program is executed in it (with
    ``report`` to say why it could not be), or the code of a Python entry
    is returned, to run as ``__main__`` at the top of the interpreter."""
    if report is not None:
        _exec_program(request, fds, targets, report)
    _place(fds[1:], targets)
    os.chdir(request["cwd"])
    _set_environment(request["env"], request["unset"])
    if request.get("sandbox") is not None:
        # Only a boxed call: the box needs ctypes, which may be missing.
        from acor.cli.sandbox.enter import SandboxError, enter
        try:
            enter(request["sandbox"])
        except SandboxError as exc:
            sys.stderr.write(f"acor: cannot enter the sandbox: {exc}\n")
            sys.stderr.flush()
            os._exit(126)
    argv = request["argv"]
    entry = argv[0]
    sys.argv = list(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(entry)))
    framing._inherited = framing.take_token()  # this run's, not ours
    if code is None:
        # What the interpreter prints for a script it cannot open.
        try:
            open(entry, "rb").close()
            problem = "cannot be read"
        except OSError as exc:
            problem = f"[Errno {exc.errno}] {exc.strerror}"
        sys.stderr.write(f"{sys.executable}: can't open file {entry!r}: "
                         f"{problem}\n")
        sys.stderr.flush()
        os._exit(2)
    if isinstance(code, SyntaxError):
        # What the interpreter prints for a script that does not compile.
        sys.stderr.write("".join(traceback.format_exception_only(code)))
        sys.stderr.flush()
        os._exit(1)
    main = types.ModuleType("__main__")
    main.__file__ = entry
    # A script's module has the next two; typeshed's ModuleType does not.
    main.__builtins__ = builtins  # type: ignore[attr-defined]
    main.__loader__ = SourceFileLoader("__main__", entry)
    main.__cached__ = None  # type: ignore[attr-defined]
    sys.modules["__main__"] = main
    return code, main.__dict__


def _exec_program(request: dict[str, Any], fds: list[int], targets: list[int],
                  report: int) -> None:
    """Replace this process with the request's program; never returns.
    What a spawn would raise is written on ``report`` instead: an errno,
    or ``sandbox`` when the box could not be entered."""
    # Above every target, so that placing the descriptors cannot take it.
    lifted = fcntl.fcntl(report, fcntl.F_DUPFD_CLOEXEC, max(targets) + 1)
    os.close(report)
    try:
        _place(fds[1:], targets, keep=lifted)
        # Ignored signals stay ignored across exec: give the program the
        # defaults a fresh process has (the interpreter ignores these).
        for name in ("SIGPIPE", "SIGXFSZ"):
            sig = getattr(signal, name, None)
            if sig is not None:
                signal.signal(sig, signal.SIG_DFL)
        os.chdir(request["cwd"])
        _set_environment(request["env"], request["unset"])
        if request.get("sandbox") is not None:
            from acor.cli.sandbox.enter import enter  # as in _become_tool
            enter(request["sandbox"])
        argv = request["argv"]
        os.execvpe(argv[0], argv, os.environ)
    except BaseException as exc:
        from acor.cli.sandbox.enter import SandboxError  # as above
        said = (b"sandbox" if isinstance(exc, SandboxError) else
                b"%d" % exc.errno if isinstance(exc, OSError) and exc.errno
                else b"%d" % errno.ENOEXEC)
        try:
            os.write(lifted, said)
        finally:
            os._exit(127)


def _set_environment(changed: dict[str, str], unset: list[str]) -> None:
    """Make ``os.environ`` (and the C environment) the call's: this
    process has the server's, which is what the client started it with
    (:class:`acor.cli.run.warm.WarmStarter`), and the request says what
    the call's changes of it: ``changed`` set, ``unset`` removed."""
    environ = os.environ
    for key in unset:
        environ.pop(key, None)
    for key, value in changed.items():
        environ[key] = value


def _place(fds: list[int], targets: list[int],
           keep: int | None = None) -> None:
    """Put each received descriptor on its target number (0, 1, 2, then
    the passed ones) and close every other descriptor but ``keep``: first
    lift them all above every target, so that no dup2 overwrites one
    still to place."""
    low = max(targets) + 1
    lifted = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, low) for fd in fds]
    for fd, target in zip(lifted, targets, strict=True):
        os.dup2(fd, target)  # inheritable: the tool's programs get them
    start = 3
    for target in sorted({*targets, *(() if keep is None else (keep,))}):
        if target >= start:
            os.closerange(start, target)
            start = target + 1
    os.closerange(start, 1 << 16)


def _code_of(entry: str) -> Optional[Code]:
    """The entry's code object, compiled once per version of the file (a
    SyntaxError is returned, for the tool's process to report); None when
    it cannot be read, for the tool's process to fail as Python would."""
    # Read through a file object only when it is compiled: its buffer is
    # memory that the server and the spare would copy from each other.
    try:
        fd = os.open(entry, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        key = (entry, info.st_mtime_ns, info.st_size)
        code = _compiled.get(key)
        if code is None:
            with open(fd, "rb", closefd=False) as f:
                source = f.read()
            try:
                code = compile(source, entry, "exec", dont_inherit=True)
            except SyntaxError as exc:
                return exc
            if len(_compiled) > 256:
                _compiled.clear()
            _compiled[key] = code
    except OSError:  # a directory, say: read fails as open would have
        return None
    finally:
        os.close(fd)
    return code


def _close(fds: Iterable[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


_loaded_libc: list[Any] = []


def _libc() -> Any:
    """libc through ctypes, loaded once (in the server, before any fork)."""
    if not _loaded_libc:
        try:
            import ctypes  # not at the top: built without libffi, none
            _loaded_libc.append(ctypes.CDLL(None, use_errno=True))
        except (ImportError, OSError):
            _loaded_libc.append(None)
    return _loaded_libc[0]
