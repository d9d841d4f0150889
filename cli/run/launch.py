"""One runner: run a tool and get its result.

The ``acor`` command, ``acor call``, ``acor check``, the MCP server and the
pytest plugin all build a :class:`~acor.cli.run.request.RunRequest` and
run it through :func:`run`::

    result = run(build_request("hello", ["Ada"]))
    result.exit_code, result.state, result.data

The pipeline is visible here: the request (the tool found, its limits
worked out: :mod:`cli.run.request`) -> spawn (:mod:`cli.run.process`, with
a :mod:`cli.run.protocols` protocol) -> decode and relay
(:mod:`cli.run.relay`) -> the caller's sink (a format of
:mod:`cli.output.formats`, a budget, or a plain ``on_event`` callback).
What the tool's environment holds and what to run next after each of
acor's own endings is the run's policy (:mod:`cli.run.policy`).

:func:`run` never installs signal handlers (unless asked: only the ``acor``
command is the whole process), never prints and never exits, so it can be
called from any thread of another program, several at once. It knows no
front end: the terminal, MCP and the commands sit above it.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from contextlib import ExitStack

from acor import exitcodes
from acor.events import Error, Event, Output, Status

from acor.cli.arguments import ARGS_ENV_LIMIT, ARGS_FILE_VAR, ARGS_VAR, \
    argv_json, reads_args_json
from acor.cli.errors import LauncherError
from acor.cli.run import process
from acor.cli.run.box import Unenforceable, open_box
from acor.cli.run.policy import RunPolicy
from acor.cli.run.result import Collector, RunResult
from acor.cli.signals import Cancel

TYPE_CHECKING = False  # typing costs every run ~3 ms: only mypy
if TYPE_CHECKING:
    from types import FrameType
    from typing import Any, Callable, Optional, Union

    from acor.cli.discovery.config import Config
    from acor.cli.discovery.spec import ToolSpec
    from acor.cli.run.process import RunningTool
    from acor.cli.run.protocols import AcorProtocol, WrappedProtocol
    from acor.cli.run.relay import Sink
    from acor.cli.run.request import RunRequest
    from acor.cli.run.warm import WarmStarter
    from acor.cli.sandbox.policy import Box

    EventCallback = Callable[[Event], None]
    Handlers = dict[int, Union[Callable[[int, Optional[FrameType]], Any],
                               int, signal.Handlers, None]]

__all__ = ["Cancel", "RunResult", "run"]


class _CallbackSink:
    """A sink for callers that only want each event (no coalescing)."""

    def __init__(self, callback: Optional[EventCallback]) -> None:
        self.callback = callback

    def emit(self, event: Event) -> None:
        if self.callback is not None:
            self.callback(event)

    def due(self) -> Optional[float]:
        return None

    def tick(self) -> None:
        pass


def run(request: RunRequest, *, sink: Optional[Sink] = None,
        on_event: Optional[EventCallback] = None,
        cancel: Optional[Cancel] = None,
        warm: Optional[WarmStarter] = None,
        on_spawn: Optional[Callable[[int], None]] = None) -> RunResult:
    """Run what ``request`` asks for (made by
    :func:`acor.cli.run.request.build_request`) and return its result.

    Every event goes to ``sink`` (an object with ``emit``, ``due`` and
    ``tick``) or to ``on_event``, in order, from the calling thread.
    ``cancel.set()`` from another thread stops the run. ``warm`` (a
    :class:`acor.cli.run.warm.WarmStarter`) forks an eligible Python tool
    from its server instead of starting an interpreter. ``on_spawn(pid)``
    is told the tool's pid (the leader of its process group) once it runs.

    What the request says of its caller: ``handle_signals`` (SIGINT,
    SIGTERM, SIGHUP cancel the run) and ``reap_orphans`` (adopt and end
    escaped daemons) are for the ``acor`` command only: both act on the
    whole process. ``human`` holds what a person answered for the tool's
    human-only arguments: passed on a pipe of its own (:mod:`acor.human`),
    never on the command line. ``person``: the caller will ask a person
    for what the tool needs (the rich view at a terminal, the MCP server);
    otherwise a question only a person may answer tells the agent to hand
    the command to a person. ``sandbox``: "default" (a box for a tool that
    declares none), "off" (none at all), "check" (write only a temp dir,
    no network, whatever the manifest says: `acor check`), or None: the
    config's, else as the manifest declares (:mod:`acor.cli.sandbox`).
    """
    started = time.monotonic()
    collector = Collector(sink or _CallbackSink(on_event), request.tool,
                          list(request.argv), request.keep_events)
    if request.spec is None:
        refused = request.refused
        assert refused is not None  # build_request sets one or the other
        return _failed(collector, refused.to_event(), refused.exit_code,
                       started)
    spec = request.spec
    collector.version = spec.version
    policy = RunPolicy(request, spec)
    policy.state = collector
    collector.policy = policy
    collector.read_by_person = request.read_by_person
    own_cancel = cancel is None
    cancel = Cancel() if cancel is None else cancel
    previous = _install_signals(cancel) if request.handle_signals else None
    try:
        return _run_spec(request, spec, policy, collector, cancel, started,
                         warm, on_spawn)
    finally:
        if previous is not None:
            _restore_signals(previous)
        if own_cancel:
            cancel.close()


class _HelpShown(Exception):
    """The arguments asked for the tool's help: the run shows it and ends
    complete, the tool not started."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


class _NotStarted(Exception):
    """The tool could not be started: the error the run ends with."""

    def __init__(self, error: Error) -> None:
        super().__init__(error.title)
        self.error = error


def _run_spec(request: RunRequest, spec: ToolSpec, policy: RunPolicy,
              collector: Collector, cancel: Cancel, started: float,
              warm: Optional[WarmStarter],
              on_spawn: Optional[Callable[[int], None]]) -> RunResult:
    try:
        args_json = _args_json(spec, policy)
    except LauncherError as exc:
        return _failed(collector, exc.to_event(), exc.exit_code, started)
    except _HelpShown as asked:
        collector.emit(Output(asked.text))
        collector.emit(Status("complete"))
        return collector.finish(exitcodes.OK, "complete",
                                time.monotonic() - started, policy)
    protocol = _protocol(spec, collector)
    if cancel.is_set():  # cancelled before the tool could start
        collector.emit(Status("cancelled"))
        return collector.finish(exitcodes.CANCELLED, "cancelled",
                                time.monotonic() - started, policy)
    alone = request.reap_orphans  # acor is the whole process, one run
    # its orphans are its own
    reap_orphans = process.adopt_orphans() if alone else False
    argv = _tool_argv(spec, policy)
    run_env = policy.environment(request.env, protocol.env())
    # What this run makes for the tool (its sandbox's temp dir, the file
    # holding its arguments) is removed however the run ends.
    with ExitStack() as made:
        try:
            box = _box(request, spec, policy, collector, run_env, made)
            if args_json is not None:
                made.callback(_remove_args_file,
                              _args_passed(args_json, run_env, spec, policy))
            proc = _started(warm, request, spec, argv, run_env,
                            protocol.pass_fds(), alone, box)
        except _NotStarted as exc:
            protocol.spawned()
            return _failed(collector, exc.error, exitcodes.FAILED, started)
        protocol.spawned()
        if on_spawn is not None:
            on_spawn(proc.pid)
        # From here on the tool starts up (tens of ms for a Python tool) while
        # acor imports and builds what relaying needs: the relay loop, the
        # decoder and the grammar are loaded now, in that time, not before.
        from acor.cli.run.relay import Relay
        collector.started()
        if reap_orphans:
            process.tune_allocator()  # for the buffers to come
        relay = Relay(proc, protocol, collector, name=spec.name,
                      args=policy.args, timeout=policy.timeout,
                      idle_timeout=policy.idle_timeout, cancel=cancel,
                      stop_error=policy.stop_error,
                      on_stderr=collector.stderr, on_late=collector.late)
        try:
            relay.run()
        finally:
            proc.reap(process.KILL_GRACE if relay.kill_at else 0.5,
                      reap_orphans)
    ending = relay.finish()
    result = collector.finish(ending.exit_code, ending.state,
                              time.monotonic() - started, policy)
    result.tool_exit_code = proc.returncode
    return result


def _args_json(spec: ToolSpec, policy: RunPolicy) -> Optional[str]:
    """The tool's arguments as JSON, checked before anything starts, for
    a tool that reads them so (None: it reads its argv). Raises
    LauncherError (arguments its schema refuses) or _HelpShown."""
    if not reads_args_json(spec):
        return None
    from acor.args import HelpRequested  # only for a tool that reads JSON
    try:
        return argv_json(spec, policy.args, policy.command)
    except HelpRequested as asked:
        raise _HelpShown(asked.text.rstrip("\n")) from None


def _protocol(spec: ToolSpec, collector: Collector
              ) -> AcorProtocol | WrappedProtocol:
    if spec.kind == "wrapped":
        from acor.cli.run.protocols import WrappedProtocol
        # A sink that shows a tool's colours (a person's terminal) says
        # so; every other sink (an agent's, a pipe's, MCP's) gets none.
        return WrappedProtocol(spec, colour=getattr(
            collector.sink, "shows_colour", False) is True)
    from acor.cli.run.protocols import AcorProtocol
    # A budgeted sink summarises a large Output Data: it need not be
    # decoded (see cli.output.budget).
    return AcorProtocol(getattr(collector.sink, "max_data", None))


def _tool_argv(spec: ToolSpec, policy: RunPolicy) -> list[str]:
    """The command to start: "{python}" in a manifest's command means
    this launcher's interpreter, so wrapped Python programs run in the
    same environment as acor; "{project_python}" the project's own
    interpreter (its virtualenv), for programs that must run in it: the
    project's test suite."""
    return [sys.executable if word == "{python}" else
            project_python(policy.run_dir, policy.config)
            if word == "{project_python}" else word
            for word in spec.argv] + policy.args


def _box(request: RunRequest, spec: ToolSpec, policy: RunPolicy,
         collector: Collector, run_env: dict[str, str], made: ExitStack
         ) -> Optional[Box]:
    """The run's sandbox (:mod:`cli.run.box`; None: none), its note on a
    denial given to the collector. _NotStarted: the kernel cannot enforce
    the box the tool declares."""
    try:
        opened = open_box(request, spec, policy, run_env, made)
    except Unenforceable as exc:
        raise _NotStarted(exc.error) from None
    if opened is None:
        return None
    box, collector.sandbox_note = opened
    return box


def _args_passed(args_json: str, run_env: dict[str, str], spec: ToolSpec,
                 policy: RunPolicy) -> Optional[str]:
    """_pass_args, or _NotStarted: no room for the file."""
    try:
        return _pass_args(args_json, run_env)
    except OSError as exc:
        raise _NotStarted(Error(
            f"Cannot pass tool '{spec.name}' its arguments: "
            f"{exc.strerror or exc}", "E_TOOL_NOT_RUNNABLE",
            f"{ARGS_FILE_VAR} in: {run_env.get('TMPDIR') or '/tmp'}",
            "Free space in the temp dir (or set TMPDIR to one with "
            "room), then run it again.", policy.same_command())) from None


def _started(warm: Optional[WarmStarter], request: RunRequest,
             spec: ToolSpec, argv: list[str], run_env: dict[str, str],
             pass_fds: tuple[int, ...], alone: bool, box: Optional[Box]
             ) -> RunningTool:
    """The tool's process, with a person's answers on a pipe of its own;
    _NotStarted: it cannot start."""
    human_fd = None
    if request.human:
        from acor import human as channel
        human_fd = channel.pipe(dict(request.human))
        run_env[channel.FD_VAR] = str(human_fd)
        pass_fds = (*pass_fds, human_fd)
    try:
        return _spawn(warm, spec, argv, cwd=request.run_dir, env=run_env,
                      pass_fds=pass_fds,
                      inherit_stdin=request.inherit_stdin and
                      bool(spec.stdin), alone=alone,
                      sandbox=None if box is None else box.to_request())
    except OSError as exc:
        raise _NotStarted(Error(
            f"Cannot start tool '{spec.name}': {exc.strerror or exc}",
            "E_TOOL_NOT_RUNNABLE", f"command: {argv[0]}",
            "Check the manifest's entry or command: it must exist and be "
            "executable.", ["acor", "show", spec.name])) from None
    finally:
        if human_fd is not None:  # the tool holds its copy, or never ran
            os.close(human_fd)


VENV_DIRS = (".venv", "venv")


def project_python(cwd: Optional[str], config: Optional[Config]) -> str:
    """The project's interpreter: ``.venv/bin/python`` (or ``venv``) in
    the run's directory or the project root, else the active virtualenv
    (``$VIRTUAL_ENV``), else acor's own. A venv another user owns, or
    others may write to, is not used (it would run as you)."""
    roots = [os.path.abspath(cwd or os.getcwd())]
    if config is not None and config.root not in roots:
        roots.append(config.root)
    candidates = [os.path.join(root, name, "bin", "python")
                  for root in roots for name in VENV_DIRS]
    if os.environ.get("VIRTUAL_ENV"):
        candidates.append(os.path.join(os.environ["VIRTUAL_ENV"], "bin",
                                       "python"))
    for path in candidates:
        try:
            st = os.stat(os.path.dirname(os.path.dirname(path)))
        except OSError:
            continue
        if st.st_uid not in (os.getuid(), 0) or st.st_mode & 0o022:
            continue
        if os.access(path, os.X_OK):
            return path
    return sys.executable


def _spawn(warm: Optional[WarmStarter], spec: ToolSpec, argv: list[str], *,
           cwd: Optional[str], env: dict[str, str], pass_fds: tuple[int, ...],
           inherit_stdin: bool, alone: bool,
           sandbox: Optional[dict[str, Any]]) -> RunningTool:
    """The tool's process: forked warm when it may be, else executed by
    the fork server (a long-lived caller's supervisor of every tool), else
    started on its own."""
    if warm is not None and warm.serving():
        from acor.cli.run.warm import WarmStartUnavailable
        python = spec.warm and warm.eligible(argv, env)
        try:
            return warm.spawn(argv, program=not python, cwd=cwd, env=env,
                              pass_fds=pass_fds, inherit_stdin=inherit_stdin,
                              sandbox=sandbox)
        except WarmStartUnavailable:
            pass  # the server is gone: this run starts on its own
    return process.ToolProcess(argv, alone=alone, cwd=cwd, env=env,
                               pass_fds=pass_fds, inherit_stdin=inherit_stdin,
                               sandbox=sandbox)


def _pass_args(args_json: str, run_env: dict[str, str]) -> Optional[str]:
    """Give the tool its validated arguments: in ``ACOR_ARGS``, or, when
    too large for the environment, in a file only this user may read
    (in the sandbox's temp dir when there is one, which the tool can
    read) named by ``ACOR_ARGS_FILE``. Returns the file to remove."""
    encoded = args_json.encode("utf-8")
    if len(encoded) <= ARGS_ENV_LIMIT:
        run_env[ARGS_VAR] = args_json
        return None
    import tempfile
    fd, path = tempfile.mkstemp(prefix="acor-args-", suffix=".json",
                                dir=run_env.get("TMPDIR"))
    try:
        with open(fd, "wb") as f:
            f.write(encoded)
    except OSError:  # a full disk, say: no partial file is left behind
        _remove_args_file(path)
        raise
    run_env[ARGS_FILE_VAR] = path
    return path


def _remove_args_file(path: Optional[str]) -> None:
    if path is not None:
        try:
            os.unlink(path)
        except OSError:
            pass


def _failed(collector: Collector, error: Error, exit_code: int,
            started: float) -> RunResult:
    collector.emit(error)
    collector.emit(Status("failed"))
    return collector.finish(exit_code, "failed", time.monotonic() - started,
                            None)


def _install_signals(cancel: Cancel) -> Handlers:
    def on_signal(signum: int, frame: Optional[FrameType]) -> None:
        cancel.set(signum)
    previous: Handlers = {}
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        previous[sig] = signal.signal(sig, on_signal)
    return previous


def _restore_signals(previous: Handlers) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)
