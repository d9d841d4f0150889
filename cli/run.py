"""Spawn a tool and relay its run to the agent, ending it well whatever
happens: crash, hang, flood, Ctrl-C.

The loop is single-threaded: one selector watches the tool's stdout, its
stderr and a pidfd that becomes readable when the tool exits. Each wake-up
reads what is there, turns it into events (:mod:`cli.relay` or
:mod:`cli.wrap`) and hands them to the sink (:mod:`cli.render`). Deadlines
(timeout, idle timeout, kill grace, drain grace, held progress) set how long
the selector may sleep, so nothing waits on a poll interval.
"""

import os
import selectors
import signal
import subprocess
import sys
import time

from acor import exitcodes, framing, grammar
from acor.events import Error, Status

from acor.decode import LineReader, StreamDecoder
from .render import Coalescer, make_sink


def _env_seconds(name, default):
    """Seconds from the environment; a value that is not a finite number
    of 0 or more is ignored (the environment is not acor's to trust)."""
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        return default
    return value if 0 <= value < float("inf") else default


KILL_GRACE = _env_seconds("ACOR_KILL_GRACE", 2.0)
DRAIN_GRACE = 0.5   # after the tool exits, how long a kept-open pipe may linger
GATHER_BELOW = 16384  # a read smaller than this suggests more is coming
GATHER_PAUSE = 0.0005
STDERR_TAIL = 4096  # bytes of stderr kept for the synthesized Error
TAIL_LINES = 20

FINAL_CODES = {"complete": exitcodes.OK, "failed": exitcodes.FAILED,
               "cancelled": exitcodes.CANCELLED,
               "input_needed": exitcodes.INPUT_NEEDED}


class AcorProtocol:
    """A tool that speaks ACOR through the library: framed sections."""

    def __init__(self, token):
        self.token = token
        self.decoder = StreamDecoder(token)

    def env(self):
        return {framing.ENV_VAR: self.token}

    def start(self):
        return []

    def feed(self, block):
        return self.decoder.feed(block)

    def tick(self):
        return []

    def close(self):
        return self.decoder.close()

    def ending(self, returncode, stderr_tail):
        """Events for a tool that exited without a final status."""
        return crash_events(returncode, stderr_tail), exitcodes.FAILED


def crash_events(returncode, stderr_tail):
    if returncode is not None and returncode < 0:
        name = _signal_name(-returncode)
        error = Error(f"The tool was killed by {name}", "E_TOOL_KILLED",
                      _details(f"signal: {name}", stderr_tail),
                      "The tool died without finishing (out of memory, a "
                      "crash in native code, or killed by another process). "
                      "Run it again; if it keeps dying, check the stderr "
                      "above and the machine's memory.")
    elif returncode:
        error = Error(f"The tool exited with code {returncode} before "
                      f"finishing", "E_TOOL_CRASHED",
                      _details(f"exit code: {returncode}", stderr_tail),
                      "Read the stderr above for the cause, fix the input or "
                      "the tool, then run it again.")
    else:
        error = Error("The tool exited without a final status",
                      "E_NO_FINAL_STATUS",
                      _details("exit code: 0", stderr_tail),
                      "Its output may be incomplete: check it before relying "
                      "on it. Tool authors: use `with AcorTool() as tool:` "
                      "or call tool.stop().")
    return [error, Status("failed")]


def _signal_name(number):
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _details(first, stderr_tail):
    if not stderr_tail:
        return first
    return f"{first}\nstderr (last lines):\n{stderr_tail}"


class Run:
    """One run of one tool. ``run()`` returns acor's exit code. ``sink`` is
    a :class:`~cli.render.Coalescer` (interval 0 passes everything on)."""

    def __init__(self, argv, protocol, sink, *, name, cwd=None, timeout=120.0,
                 idle_timeout=None, env=None, reap_orphans=False):
        self.argv = argv
        # Only when acor is the whole process: it then adopts and ends
        # every orphan of the tool (see _adopt_orphans).
        self.reap_orphans = reap_orphans
        self.protocol = protocol
        self.sink = sink
        self.name = name
        self.cwd = cwd
        self.timeout = timeout
        self.idle_timeout = idle_timeout
        self.extra_env = env or {}
        self.final = None        # the tool's own ending, once relayed
        self.stopped = None      # "timeout", "idle" or "cancelled": ours
        self.timed_out = False   # our timeout error ended the transcript
        self.kill_at = None
        self._tail = bytearray()
        self._diverted = False

    # --- spawn ----------------------------------------------------------

    def _spawn(self):
        env = os.environ.copy()
        env.update(self.extra_env)
        env.update(self.protocol.env())
        env["PYTHONUNBUFFERED"] = "1"
        env["PYTHONIOENCODING"] = "utf-8"
        return subprocess.Popen(
            self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, cwd=self.cwd, env=env,
            start_new_session=True)  # its own group: signals reach all of it

    def run(self):
        if self.reap_orphans:
            self.reap_orphans = _adopt_orphans()
        try:
            self.proc = self._spawn()
        except OSError as exc:
            self.sink.emit(Error(
                f"Cannot start tool '{self.name}': {exc.strerror or exc}",
                "E_TOOL_NOT_RUNNABLE", f"command: {self.argv[0]}",
                "Check the manifest's entry or command (it must exist and be "
                "executable), then run `acor show " + self.name + "`."))
            self.sink.emit(Status("failed"))
            self.sink.close()
            return exitcodes.FAILED
        previous = self._install_signals()
        try:
            self._loop()
        finally:
            self._restore_signals(previous)
            self._reap()
        return self._finish()

    # --- signals --------------------------------------------------------

    def _install_signals(self):
        previous = {}
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            previous[sig] = signal.signal(sig, self._on_signal)
        return previous

    def _restore_signals(self, previous):
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    def _on_signal(self, signum, frame):
        if self.stopped == "cancelled":
            self._kill_group(signal.SIGKILL)  # asked twice: no more grace
            return
        if self.stopped is None:
            self.stopped = "cancelled"
        # Forward to the whole group; the tool may end itself as Cancelled.
        self._kill_group(signum)
        self.kill_at = time.monotonic() + KILL_GRACE

    def _kill_group(self, sig):
        try:
            os.killpg(self.proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    # --- the loop -------------------------------------------------------

    def _loop(self):
        proc = self.proc
        sel = selectors.DefaultSelector()
        _widen_pipe(proc.stdout.fileno())
        for stream, role in ((proc.stdout, "out"), (proc.stderr, "err")):
            os.set_blocking(stream.fileno(), False)
            sel.register(stream.fileno(), selectors.EVENT_READ, role)
        pidfd = _pidfd(proc.pid)
        if pidfd is not None:
            sel.register(pidfd, selectors.EVENT_READ, "exit")
        reader = LineReader()
        started = time.monotonic()
        self.last_activity = started
        exited_at = None
        self._dispatch(self.protocol.start())
        streams = 2
        # Until the tool exits, not just until its pipes close: a tool may
        # close stdout and stderr early and go on working (timeouts apply).
        while streams or exited_at is None:
            now = time.monotonic()
            if exited_at is None and pidfd is None and \
                    proc.poll() is not None:
                exited_at = now
            deadline = self._next_deadline(started, exited_at)
            if deadline is not None and deadline <= now:
                if exited_at is not None and now >= exited_at + DRAIN_GRACE:
                    break  # a daemon kept the pipe open: stop reading
                self._on_deadline(now, started)
                continue
            wait = None if deadline is None else deadline - now
            if pidfd is None and exited_at is None:
                wait = 0.05 if wait is None else min(wait, 0.05)
            for key, _ in sel.select(wait):
                if key.data == "exit":
                    sel.unregister(key.fd)
                    os.close(key.fd)
                    pidfd = -1  # registered no more, but exit is known
                    exited_at = time.monotonic()
                    continue
                data = _read(key.fd)
                if data is None:
                    continue  # woken without data: nothing to do
                if not data:
                    sel.unregister(key.fd)
                    streams -= 1
                elif key.data == "out":
                    self.last_activity = time.monotonic()
                    for block in reader.feed(data):
                        self._dispatch(self.protocol.feed(block))
                    if len(data) < GATHER_BELOW:
                        # A trickle of small writes (one per section): let
                        # the tool fill the pipe a little instead of waking
                        # per section. Costs at most GATHER_PAUSE of latency.
                        time.sleep(GATHER_PAUSE)
                else:
                    self._stderr(data)
            self._dispatch(self.protocol.tick())
            self.sink.tick()
        for block in reader.close():
            self._dispatch(self.protocol.feed(block))
        self._dispatch(self.protocol.close())
        if pidfd not in (None, -1):
            sel.unregister(pidfd)
            os.close(pidfd)
        sel.close()

    def _next_deadline(self, started, exited_at):
        deadlines = []
        if self.stopped is None:
            deadlines.append(started + self.timeout)
            if self.idle_timeout:
                deadlines.append(self.last_activity + self.idle_timeout)
        if self.kill_at is not None:
            deadlines.append(self.kill_at)
        if exited_at is not None:
            deadlines.append(exited_at + DRAIN_GRACE)
        due = self.sink.due()
        if due is not None:
            deadlines.append(time.monotonic() + due)
        return min(deadlines) if deadlines else None

    def _on_deadline(self, now, started):
        if self.kill_at is not None and now >= self.kill_at:
            self._kill_group(signal.SIGKILL)
            self.kill_at = None
            return
        if self.stopped is None and now >= started + self.timeout:
            self._stop("timeout", Error(
                f"Tool '{self.name}' timed out after {_secs(self.timeout)}",
                "E_TIMEOUT", f"timeout: {_secs(self.timeout)}",
                f"Run it on less input, or allow more time: `acor --timeout "
                f"{_secs(self.timeout * 2, unit=False)} {self.name} ...` "
                f"(or `timeout` in its manifest or .acor/config.yaml)."))
        elif (self.stopped is None and self.idle_timeout and
              now >= self.last_activity + self.idle_timeout):
            self._stop("idle", Error(
                f"Tool '{self.name}' was silent for "
                f"{_secs(self.idle_timeout)} and was stopped",
                "E_IDLE_TIMEOUT", f"idle timeout: {_secs(self.idle_timeout)}",
                "If the tool was still working, its author should call "
                "tool.heartbeat() during long silent steps; or raise "
                f"`idle_timeout` (`acor --idle-timeout SECONDS "
                f"{self.name} ...`)."))
        self.sink.tick()

    def _stop(self, why, error):
        """Our own ending: report it now, then stop the tool's group."""
        self.stopped = why
        if self.final is None:
            self.sink.emit(error)
            self.sink.emit(Status("failed"))
            self.final = "failed"
            self.timed_out = True
        else:
            # The transcript has ended and keeps its ending (and exit code);
            # only the process that would not exit is stopped.
            sys.stderr.write(f"acor: {self.name} did not exit after its "
                             f"final status: stopped ({error.code})\n")
            sys.stderr.flush()
        self._kill_group(signal.SIGTERM)
        self.kill_at = time.monotonic() + KILL_GRACE

    # --- events ---------------------------------------------------------

    def _dispatch(self, events):
        for event in events:
            if event.type == "heartbeat":
                self.last_activity = time.monotonic()
            elif self.final is not None:
                self._divert(event)
            else:
                if event.type == "status" and event.is_final:
                    self.final = event.state
                elif event.type == "input_needed":
                    self.final = "input_needed"
                self.sink.emit(event)

    def _divert(self, event):
        """Output after the ending goes to stderr: kept, but not part of a
        transcript that has already ended."""
        if event.type == "text" and not event.text:
            return
        err = sys.stderr
        if not self._diverted:
            self._diverted = True
            err.write(f"acor: {self.name} wrote after its final status:\n")
        err.write(grammar.render(event))
        err.flush()

    def _stderr(self, data):
        try:
            sys.stderr.buffer.write(data)
            sys.stderr.buffer.flush()
        except (AttributeError, ValueError, OSError):
            pass
        self._tail += data
        del self._tail[:-STDERR_TAIL]

    def stderr_tail(self):
        text = self._tail.decode("utf-8", "replace").rstrip("\n")
        return "\n".join(text.split("\n")[-TAIL_LINES:])

    # --- ending ---------------------------------------------------------

    def _reap(self):
        proc = self.proc
        try:
            proc.wait(timeout=KILL_GRACE if self.kill_at else 0.5)
        except subprocess.TimeoutExpired:
            self._kill_group(signal.SIGKILL)
            proc.wait()
        # Whatever the tool left in its group (a daemon, a grandchild) ends
        # with it: a run leaves no process behind.
        self._kill_group(signal.SIGKILL)
        if self.reap_orphans:
            _end_orphans()  # and whatever left the group with setsid()
        for stream in (proc.stdout, proc.stderr):
            stream.close()

    def _finish(self):
        if self.timed_out:
            code = exitcodes.TIMEOUT
        elif self.final is not None:
            code = FINAL_CODES.get(self.final, exitcodes.FAILED)
        elif self.stopped == "cancelled":
            self.sink.emit(Status("cancelled"))
            code = exitcodes.CANCELLED
        else:
            events, code = self.protocol.ending(self.proc.returncode,
                                                self.stderr_tail())
            for event in events:
                self.sink.emit(event)
        self.sink.close()
        return code


def _adopt_orphans():
    """Make this process the reaper of its orphaned descendants (Linux's
    PR_SET_CHILD_SUBREAPER). A process that leaves the tool's group with
    setsid() (a daemon) is out of reach of killpg; once its parent exits it
    becomes our child instead of init's, and _end_orphans ends it."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes  # ~3 ms: the price of leaving no process behind
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (ImportError, OSError, AttributeError):
        return False


def _end_orphans(rounds=100):
    """SIGKILL and reap every child we have left. With the subreaper set
    and the tool reaped, these are the tool's escaped descendants; each one
    killed hands its own children to us, hence the rounds."""
    for _ in range(rounds):
        pids = _children()
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


def _children():
    pids = set()
    try:
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/children") as f:
                pids.update(int(pid) for pid in f.read().split())
    except FileNotFoundError:  # a kernel without the children file
        pids = _children_by_scan()
    except (OSError, ValueError):
        pass  # no /proc: nothing we can find
    return pids


def _children_by_scan():
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


def _pidfd(pid):
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None  # no pidfd here: the loop polls the child instead


PIPE_SIZE = 1 << 20


def _widen_pipe(fd):
    """A 1 MiB pipe instead of 64 KiB: a flood crosses in 16 times fewer
    wake-ups of both processes. Linux only; elsewhere (or when ``fd`` is
    not a pipe) nothing changes."""
    try:
        import fcntl
        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_SIZE)
    except (ImportError, OSError):
        pass


def _read(fd):
    try:
        return os.read(fd, PIPE_SIZE)
    except BlockingIOError:
        return None
    except OSError:
        return b""


def _secs(value, unit=True):
    text = f"{value:g}"
    return text + " s" if unit else text


def run_tool(spec, args, *, fmt, timeout, idle_timeout, progress_interval,
             cwd=None, env=None, out=None, reap_orphans=False):
    """Run a discovered tool (a :class:`cli.discover.ToolSpec`).
    ``reap_orphans``: this process is acor itself, with no other children
    (see :func:`_adopt_orphans`)."""
    if spec.kind == "wrapped":
        from .wrap import WrappedProtocol
        protocol = WrappedProtocol(spec)
    else:
        protocol = AcorProtocol(framing.new_token())
    # The rich view draws every progress on its live bar: nothing to hold.
    sink = Coalescer(make_sink(fmt, spec.name, out),
                     0 if fmt == "rich" else progress_interval)
    if fmt != "rich" and out is None:
        _widen_pipe(1)  # our own stdout, when the agent reads a pipe
    # "{python}" in a manifest's command means this launcher's interpreter,
    # so wrapped Python programs run in the same environment as acor.
    argv = [sys.executable if a == "{python}" else a for a in spec.argv]
    run = Run(argv + list(args), protocol, sink, name=spec.name,
              cwd=cwd, timeout=timeout, idle_timeout=idle_timeout, env=env,
              reap_orphans=reap_orphans)
    return run.run()
