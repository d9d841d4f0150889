"""The warm start's server: a process that has acor's library imported and
forks a tool from it, so that a call skips the interpreter's start-up and
the library's imports (see :mod:`acor.cli.run.warm` for the client side).

It is started as ``python -u -P -c BOOT`` with its control socket on a file
descriptor named in ``ACOR_FORKSERVER_FD``, and stays single-threaded: a
process with one thread can fork safely and enter new namespaces. Each
request on the control socket carries the call's file descriptors and a
marshalled description (argv, environment, directory, sandbox). For each
one it forks a supervisor, which forks the tool:

* the supervisor is the child-subreaper of the tool's tree (a daemon that
  escapes the tool's group with ``setsid`` becomes its child, as it becomes
  the ``acor`` command's child on the cold path), reports the tool's pid and
  exit status on the call's socket, and when the client says the run is
  over (or goes away) ends whatever the tool left behind;
* the tool process makes a session of its own, takes the call's standard
  streams, descriptors, environment and directory, applies the sandbox,
  and returns to the top of this interpreter, which executes the tool's
  entry as ``__main__`` with the interpreter's own handling of exceptions,
  ``sys.exit``, threads and ``atexit``.

Nothing of a tool is imported here: only the library, once, before the
heap is frozen for the collector (``gc.freeze``), so a fork copies nothing
on write that it does not change.
"""

from __future__ import annotations

import gc
import marshal
import os
import select
import signal
import socket
import sys

FD_VAR = "ACOR_FORKSERVER_FD"
MAX_REQUEST = 1 << 22     # argv and environment of one call: 4 MiB at most
MAX_FDS = 16              # stdio, the call's socket, a few passed fds
# The modules a run of a typical tool imports lazily (measured on a run of
# tools/hello): imported once here so that no call pays for them again.
PRELOAD = ("acor.tool", "acor.progress", "acor.resumable", "acor.args",
           "acor.argparsing", "acor.checks", "acor.grammar", "acor.layout",
           "acor.escaping", "acor.events", "acor.quick", "acor.sessions",
           "argparse", "json", "re", "traceback", "linecache",
           # and what the supervisors use
           "acor.cli.run.process", "ctypes", "fcntl", "types")
BOOT = ("from acor.cli.run.forkserver import serve as _serve, exit as _exit\n"
        "_code, _globals = _serve()\n"
        "del _serve\n"
        "try:\n"
        "    exec(_code, _globals)\n"
        "except BaseException as _exc:\n"
        "    _exit(_exc)\n"
        "_exit(None)\n")
_PR_SET_CHILD_SUBREAPER = 36
_compiled: dict = {}      # (path, mtime_ns, size) -> code: one compile each


def serve():
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
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # supervisors reap none
    _prctl(0, 0)  # loads libc's handle once, for every supervisor
    gc.collect()
    gc.freeze()
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, MAX_REQUEST,
                                                 MAX_FDS)
        except InterruptedError:
            continue
        except OSError:
            os._exit(0)
        if not message:
            os._exit(0)  # the client closed its end
        try:
            request = marshal.loads(message)
        except (EOFError, ValueError, TypeError):
            _close(fds)
            continue
        code = _code_of(request["argv"][0])
        if os.fork() == 0:
            control.close()
            return _supervise(request, fds, code)  # only the tool returns
        _close(fds)


def exit(exc: BaseException | None):
    """End the tool's process as the interpreter ends a script, less the
    teardown of every module, which no one can observe and which costs a
    process holding the library several milliseconds: report an uncaught
    exception through ``sys.excepthook`` (without this module's frame),
    wait for non-daemon threads, run ``atexit`` functions, flush the
    standard streams, then leave with the script's exit status."""
    code = 0
    if isinstance(exc, SystemExit):
        code = _exit_code(exc.code)
    elif exc is not None:
        tb = exc.__traceback__
        sys.excepthook(type(exc), exc, tb.tb_next if tb is not None else tb)
        code = 1
    import threading
    threading._shutdown()  # type: ignore[attr-defined]
    import atexit
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except Exception:
            code = code or 120  # as the interpreter does
    if isinstance(exc, KeyboardInterrupt):
        # An uncaught Ctrl-C ends a script by SIGINT, for its parent to see.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code)


def _exit_code(value) -> int:
    """sys.exit(value)'s status: None 0, an int itself, anything else
    printed to stderr and 1."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    try:
        sys.stderr.write(f"{value}\n")
    except Exception:
        pass
    return 1


def _supervise(request: dict, fds: list[int], code):
    """The supervisor of one call: fork the tool, report on the call's
    socket, end what the tool left behind when told the run is over."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    call = socket.socket(fileno=fds[0])
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    pid = os.fork()
    if pid == 0:
        call.close()
        return _become_tool(request, fds, code)
    _close(fds[1:])
    call.sendall(b"pid %d\n" % pid)
    status = _wait_for(pid, call)
    if status is not None:
        call.sendall(b"exit %d\n" % os.waitstatus_to_exitcode(status))
        _wait_for_reap(call)
    _end_tree(pid)
    try:
        call.sendall(b"done\n")
    except OSError:
        pass
    os._exit(0)


def _wait_for(pid: int, call: socket.socket):
    """The tool's wait status, or None if the client went away first (the
    tool is then killed)."""
    try:
        exit_fd = os.pidfd_open(pid)
    except OSError:
        exit_fd = None
    watched = [call] + ([exit_fd] if exit_fd is not None else [])
    while True:
        ready, _, _ = select.select(watched, [], [], None
                                    if exit_fd is not None else 0.05)
        if call in ready and not _alive(call):
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
            os.waitpid(pid, 0)
            return None
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status


def _alive(call: socket.socket) -> bool:
    try:
        return call.recv(64, socket.MSG_PEEK) != b""
    except OSError:
        return False


def _wait_for_reap(call: socket.socket) -> None:
    """Until the client says the run is over (it has drained the pipes),
    or goes away."""
    try:
        call.recv(64)
    except OSError:
        pass


def _end_tree(pid: int) -> None:
    """SIGKILL the tool's group, then every descendant this subreaper has
    adopted, as the ``acor`` command ends a cold run's orphans."""
    from acor.cli.run.process import end_orphans
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    end_orphans()


def _become_tool(request: dict, fds: list[int], code):
    """In the tool's process: its session, streams, descriptors,
    environment, directory and sandbox; then its code, to run as
    ``__main__`` at the top of the interpreter."""
    os.setsid()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    targets = [0, 1, 2, *request["pass_fds"]]
    _place(fds[1:], targets)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    argv = request["argv"]
    entry = argv[0]
    sys.argv = list(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(entry)))
    from acor import framing
    framing._inherited = framing.take_token()  # this run's, not ours
    sandbox = request.get("sandbox")
    if sandbox is not None:
        from acor.cli.sandbox import apply_in_child
        apply_in_child(sandbox)
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
        import traceback
        sys.stderr.write("".join(traceback.format_exception_only(code)))
        sys.stderr.flush()
        os._exit(1)
    import types
    main = types.ModuleType("__main__")
    main.__file__ = entry
    main.__builtins__ = __builtins__
    main.__cached__ = None
    sys.modules["__main__"] = main
    return code, main.__dict__


def _place(fds: list[int], targets: list[int]) -> None:
    """Put each received descriptor on its target number (0, 1, 2, then
    the passed ones) and close every other descriptor: first lift them all
    above every target, so that no dup2 overwrites one still to place."""
    import fcntl
    low = max(targets) + 1
    lifted = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, low) for fd in fds]
    for fd, target in zip(lifted, targets):
        os.dup2(fd, target)  # inheritable: the tool's programs get them
    start = 3
    for target in sorted(set(targets)):
        if target >= start:
            os.closerange(start, target)
            start = target + 1
    os.closerange(start, 1 << 16)


def _code_of(entry: str):
    """The entry's code object, compiled once per version of the file (a
    SyntaxError is returned, for the tool's process to report); None when
    it cannot be read, for the tool's process to fail as Python would."""
    try:
        with open(entry, "rb") as f:
            info = os.fstat(f.fileno())
            key = (entry, info.st_mtime_ns, info.st_size)
            code = _compiled.get(key)
            if code is None:
                source = f.read()
                try:
                    code = compile(source, entry, "exec", dont_inherit=True)
                except SyntaxError as exc:
                    return exc
                if len(_compiled) > 256:
                    _compiled.clear()
                _compiled[key] = code
    except OSError:
        return None
    return code


def _close(fds) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


_libc = None


def _prctl(option: int, value: int) -> None:
    global _libc
    try:
        if _libc is None:
            import ctypes
            _libc = ctypes.CDLL(None, use_errno=True)
        _libc.prctl(option, value, 0, 0, 0)
    except (ImportError, OSError, AttributeError):
        pass
