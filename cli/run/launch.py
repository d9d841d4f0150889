"""One runner: run a tool by name or spec and get its result.

The ``acor`` command, ``acor call``, ``acor check``, the MCP server and the
pytest plugin all run tools through :func:`run`::

    result = run("hello", ["Ada"])
    result.exit_code, result.state, result.data

The pipeline is visible here: discover (the registry) -> spawn
(:mod:`cli.run.process`, with a :mod:`cli.run.protocols` protocol) -> decode
and relay (:mod:`cli.run.relay`) -> the caller's sink (a format of
:mod:`cli.output.formats`, or a plain ``on_event`` callback). The run
policy lives in this module alone: which timeout, which directory, which
environment, what to do next.

:func:`run` never installs signal handlers (unless asked: only the ``acor``
command is the whole process), never prints and never exits, so it can be
called from any thread of another program, several at once.
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
from acor.cli.run import process
from acor.cli.run.own_secrets import without_secrets
from acor.cli.errors import LauncherError, config_error, invalid_manifest, \
    unknown_tool
from acor.cli.run.result import Collector, RunResult
from acor.cli.signals import Cancel

TYPE_CHECKING = False  # typing costs every run ~3 ms: only mypy
if TYPE_CHECKING:
    from typing import Callable, Optional, Sequence

    from acor.cli.run.protocols import AcorProtocol, WrappedProtocol
    from acor.cli.run.relay import Sink
    from acor.cli.run.warm import WarmStarter

    EventCallback = Callable[[Event], None]

__all__ = ["Cancel", "RunResult", "run"]

# The bash helper of this acor, for tools written in bash (`. "$ACOR_SH"`).
ACOR_SH = os.path.join(os.path.dirname(os.path.abspath(exitcodes.__file__)),
                       "share", "acor.sh")
# Its JavaScript twin, for tools written for Node (`import(ACOR_MJS)`).
ACOR_MJS = os.path.join(os.path.dirname(ACOR_SH), "acor.mjs")


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


def run(tool, argv: Sequence[str] = (), *, registry=None,
        config_path: Optional[str] = None, cwd: Optional[str] = None,
        timeout: Optional[float] = None,
        idle_timeout: Optional[float] = None,
        on_event: Optional[EventCallback] = None,
        sink: Optional[Sink] = None, cancel: Optional[Cancel] = None,
        inherit_stdin: bool = False, env: Optional[dict] = None,
        handle_signals: bool = False, reap_orphans: bool = False,
        keep_events: bool = True,
        command: Optional[Sequence[str]] = None,
        warm: Optional[WarmStarter] = None,
        human: Optional[dict] = None, person: bool = False,
        sandbox: Optional[str] = None) -> RunResult:
    """Run ``tool`` (a name, discovered as ``acor list`` does, or a
    :class:`cli.manifest.ToolSpec`) with ``argv`` and return its result.

    Every event goes to ``sink`` (an object with ``emit``, ``due`` and
    ``tick``) or to ``on_event``, in order, from the calling thread.
    ``cancel.set()`` from another thread stops the run. ``command`` is the
    acor argv to build ``next`` commands from (default ``["acor"]``).
    ``handle_signals`` (SIGINT, SIGTERM, SIGHUP cancel the run) and
    ``reap_orphans`` (adopt and end escaped daemons) are for the ``acor``
    command only: both act on the whole process. ``warm`` (a
    :class:`acor.cli.run.warm.WarmStarter`) forks an eligible Python tool
    from its server instead of starting an interpreter. ``human`` holds
    what a person answered for the tool's human-only arguments: passed on
    a pipe of its own (:mod:`acor.human`), never on the command line.
    ``person``: the caller will ask a person for what the tool needs (the
    rich view at a terminal, the MCP server); otherwise a question only a
    person may answer tells the agent to hand the command to a person.
    ``sandbox``: "default" (a box for a tool that declares none), "off"
    (none at all), "check" (write only a temp dir, no network, whatever
    the manifest says: `acor check`), or None: the config's, else as the
    manifest declares (:mod:`acor.cli.sandbox`).
    """
    started = time.monotonic()
    name = tool if isinstance(tool, str) else tool.name
    collector = Collector(sink or _CallbackSink(on_event), name, list(argv),
                          keep_events)
    command = list(command) if command is not None else ["acor"]
    try:
        spec, registry = _resolve(tool, registry, config_path, cwd, argv,
                                  command)
    except LauncherError as exc:
        return _failed(collector, exc.to_event(), exc.exit_code, started)
    collector.version = spec.version
    config = registry.config if registry is not None else None
    policy = _Policy(spec, config, command, list(argv), timeout, idle_timeout)
    policy.collector = collector
    collector.policy, collector.person = policy, person
    own_cancel = cancel is None
    cancel = Cancel() if cancel is None else cancel
    previous = _install_signals(cancel) if handle_signals else None
    try:
        return _run_spec(spec, policy, collector, cancel, cwd, env,
                         inherit_stdin, reap_orphans, started, warm, human,
                         sandbox)
    finally:
        if previous is not None:
            _restore_signals(previous)
        if own_cancel:
            cancel.close()


def _resolve(tool, registry, config_path, cwd, argv, command):
    if not isinstance(tool, str):
        return tool, registry
    from acor.cli.discovery.config import ConfigError
    from acor.cli.discovery.registry import load_registry
    if registry is None:
        try:
            registry = load_registry(cwd=cwd, config_path=config_path)
        except ConfigError as exc:
            raise config_error(exc) from None
    spec = registry.get(tool)
    if spec is not None:
        return spec, registry
    skipped = registry.skipped_named(tool)
    if skipped is not None:
        raise invalid_manifest(tool, skipped)
    raise unknown_tool(tool, registry, list(argv), command)


def _run_spec(spec, policy, collector, cancel, cwd, env, inherit_stdin,
              reap_orphans, started, warm=None, human=None,
              sandbox=None) -> RunResult:
    args_json = None
    if reads_args_json(spec):  # checked before anything starts
        from acor.args import HelpRequested
        try:
            args_json = argv_json(spec, policy.args, policy.command)
        except LauncherError as exc:
            return _failed(collector, exc.to_event(), exc.exit_code, started)
        except HelpRequested as asked:
            collector.emit(Output(asked.text.rstrip("\n")))
            collector.emit(Status("complete"))
            return collector.finish(exitcodes.OK, "complete",
                                    time.monotonic() - started, policy)
    protocol: AcorProtocol | WrappedProtocol
    if spec.kind == "wrapped":
        from acor.cli.run.protocols import WrappedProtocol
        protocol = WrappedProtocol(spec)
    else:
        from acor.cli.run.protocols import AcorProtocol
        # A budgeted sink summarises a large Output Data: it need not be
        # decoded (see cli.output.budget).
        protocol = AcorProtocol(getattr(collector.sink, "max_data", None))
    if cancel.is_set():  # cancelled before the tool could start
        collector.emit(Status("cancelled"))
        return collector.finish(exitcodes.CANCELLED, "cancelled",
                                time.monotonic() - started, policy)
    alone = reap_orphans  # acor is the whole process, this run its only one
    if reap_orphans:  # its orphans are its own
        reap_orphans = process.adopt_orphans()
    # "{python}" in a manifest's command means this launcher's interpreter,
    # so wrapped Python programs run in the same environment as acor.
    # "{project_python}" is the project's own interpreter (its virtualenv),
    # for programs that must run in it: the project's test suite.
    argv = [sys.executable if word == "{python}" else
            project_python(policy.cwd(cwd), policy.config)
            if word == "{project_python}" else word
            for word in spec.argv] + policy.args
    run_env = policy.environment(env, protocol.env())
    # What this run makes for the tool (its sandbox's temp dir, the file
    # holding its arguments) is removed however the run ends.
    with ExitStack() as made:
        box = None
        declared = _declared_box(spec, policy.config, sandbox)
        if declared is not None:
            from acor.cli.discovery.cache import cache_dir
            from acor.cli.sandbox import kernel
            lacks = kernel.missing(declared, kernel.offers(cache_dir()))
            if lacks:
                protocol.spawned()
                return _failed(collector, _sandbox_unavailable(spec, policy,
                                                               lacks),
                               exitcodes.FAILED, started)
            box = _make_box(declared, spec, policy, cwd, run_env)
            made.callback(_remove_tmpdir, run_env)
            collector.sandbox_note = lambda: _sandbox_note(spec, declared)
        if args_json is not None:
            try:
                args_file = _pass_args(args_json, run_env)
                made.callback(_remove_args_file, args_file)
            except OSError as exc:  # no room for the file: nothing started
                protocol.spawned()
                return _failed(collector, Error(
                    f"Cannot pass tool '{spec.name}' its arguments: "
                    f"{exc.strerror or exc}", "E_TOOL_NOT_RUNNABLE",
                    f"{ARGS_FILE_VAR} in: {run_env.get('TMPDIR') or '/tmp'}",
                    "Free space in the temp dir (or set TMPDIR to one with "
                    "room), then run it again.", policy.same_command()),
                    exitcodes.FAILED, started)
        pass_fds = protocol.pass_fds()
        human_fd = None
        if human:
            from acor import human as channel
            human_fd = channel.pipe(human)
            run_env[channel.FD_VAR] = str(human_fd)
            pass_fds = (*pass_fds, human_fd)
        try:
            proc = _spawn(warm, spec, argv, cwd=policy.cwd(cwd), env=run_env,
                          pass_fds=pass_fds,
                          inherit_stdin=inherit_stdin and bool(spec.stdin),
                          alone=alone,
                          sandbox=None if box is None else box.to_request())
        except OSError as exc:
            protocol.spawned()
            return _failed(collector, Error(
                f"Cannot start tool '{spec.name}': {exc.strerror or exc}",
                "E_TOOL_NOT_RUNNABLE", f"command: {argv[0]}",
                "Check the manifest's entry or command: it must exist and be "
                "executable.", ["acor", "show", spec.name]), exitcodes.FAILED,
                started)
        finally:
            if human_fd is not None:  # the tool holds its copy, or never ran
                os.close(human_fd)
        protocol.spawned()
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


VENV_DIRS = (".venv", "venv")


def project_python(cwd: Optional[str], config) -> str:
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


def _spawn(warm, spec, argv, **how):
    """The tool's process: forked warm when it may be, else executed by
    the fork server (a long-lived caller's supervisor of every tool), else
    started on its own."""
    alone = how.pop("alone", False)
    if warm is not None and warm.serving():
        from acor.cli.run.warm import WarmStartUnavailable
        python = spec.warm and warm.eligible(argv, how["env"])
        try:
            return warm.spawn(argv, program=not python, **how)
        except WarmStartUnavailable:
            pass  # the server is gone: this run starts on its own
    return process.ToolProcess(argv, alone=alone, **how)


# The box `acor check` runs examples in: code from a repository that may
# not be trusted writes only a temp dir and reaches no network.
CHECK_BOX = {"write": [], "network": False}


def _declared_box(spec, config, mode: Optional[str]) -> Optional[dict]:
    """The sandbox this run gets, as declared (None: none)."""
    mode = mode or (config.sandbox if config is not None else None)
    if mode == "off":
        return None
    if mode == "check":
        read = (spec.sandbox or {}).get("read")
        return dict(CHECK_BOX, **({"read": read} if read is not None
                                  else {}))
    if spec.sandbox is not None:
        return spec.sandbox
    if mode == "default":
        from acor.cli.sandbox.policy import DEFAULT
        return DEFAULT
    return None


def _make_box(declared, spec, policy, cwd, run_env):
    """The resolved box, with the run's private TMPDIR made and named."""
    from acor.cli.sandbox.policy import (guarded, own_folder,
                                         private_tmpdir, resolve)
    tmpdir = private_tmpdir(spec.name)
    for name in ("TMPDIR", "TMP", "TEMP"):
        run_env[name] = tmpdir
    config = policy.config
    here = os.path.abspath(cwd or os.getcwd())
    root = config.root if config is not None else \
        os.path.abspath(policy.cwd(cwd) or here)
    tool_dir = spec.path if spec.kind == "acor" else None
    own = own_folder(config.state_dir, spec.name, root) \
        if config is not None and spec.kind == "acor" else None
    from acor.cli.discovery.cache import cache_dir
    from acor.cli.discovery.sources import user_tools_dir
    from acor.cli.discovery.trust import trust_file
    users = [cache_dir(), os.path.dirname(trust_file()), user_tools_dir()]
    return resolve(declared, root, tool_dir, tmpdir,
                   guarded(root, config, here, users), own)


def _sandbox_note(spec, declared: dict) -> str:
    """The recovery added to an error that looks like a denial."""
    import json
    where = f"the \"sandbox\" field of {spec.manifest_path}" \
        if spec.sandbox is not None else \
        "the default box (--sandbox or `sandbox: default` in the config)"
    return (f"This tool runs in a sandbox ({json.dumps(declared)}): it may "
            "write only there and in its temp dir, and reach a network only "
            "with \"network\": true. If the denial is one the tool should "
            f"not get, widen {where} (\"write\", \"read\", \"network\").")


def _pass_args(args_json: str, run_env: dict) -> Optional[str]:
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


def _remove_tmpdir(run_env) -> None:
    from acor.cli.sandbox.policy import remove_tree
    remove_tree(run_env["TMPDIR"])


def _sandbox_unavailable(spec, policy, lacks: list[str]) -> Error:
    """Fail closed: a declared sandbox this kernel cannot enforce. The
    override is shown for a person to choose, never as the next command:
    an agent that follows `next` must not leave the box on its own."""
    import shlex

    from acor.cli.sandbox.kernel import SOCKETS
    unboxed = shlex.join(["acor", "--no-sandbox", spec.name, *policy.args])
    sockets = (" A tool that needs UNIX sockets may instead declare "
               "\"unix_sockets\": true in its box (then it may connect to "
               "any socket file it can reach).") if SOCKETS in lacks else ""
    return Error(
        f"Tool '{spec.name}' declares a sandbox this kernel cannot enforce",
        "E_SANDBOX_UNAVAILABLE", "missing: " + "; ".join(lacks),
        "The tool was not run. Run it on a kernel that offers these (`acor "
        "doctor` says what this one does). Only if a person trusts the tool "
        "with all their rights, they may run it without the sandbox: "
        f"`{unboxed}`, or put `sandbox: \"off\"` in .acor/config.yaml. An "
        "agent should ask its user, not do this itself." + sockets,
        ["acor", "doctor"])


def _failed(collector, error: Error, exit_code: int, started) -> RunResult:
    collector.emit(error)
    collector.emit(Status("failed"))
    return collector.finish(exit_code, "failed", time.monotonic() - started,
                            None)


class _Policy:
    """Which timeout, directory and environment a run gets, and what to
    run next after each of acor's own endings."""

    def __init__(self, spec, config, command, args, timeout, idle_timeout):
        self.spec = spec
        self.config = config
        self.command = command
        self.args = args
        self.timeout = (timeout or spec.timeout or
                        (config.timeout if config else None) or 120.0)
        self.idle_timeout = (idle_timeout or spec.idle_timeout or
                             (config.idle_timeout if config else None))
        self.collector = None  # the run's Collector: its progress, session
        self.started = time.monotonic()

    def cwd(self, cwd: Optional[str]) -> Optional[str]:
        if self.spec.cwd_mode == "project" and self.config is not None:
            return self.config.root
        return cwd

    def environment(self, extra: Optional[dict], protocol_env: dict) -> dict:
        # acor's own secrets (the server's token and key) are never a
        # tool's, whoever put them in acor's environment or the caller's.
        env = without_secrets(os.environ)
        env["ACOR_SH"] = ACOR_SH
        env["ACOR_MJS"] = ACOR_MJS
        env.update(without_secrets(extra or {}))
        # Only this launcher names a human channel, and only for answers a
        # person gave in this run (see _run_spec): never one inherited.
        env.pop("ACOR_HUMAN_FD", None)
        # A tool's arguments are this run's (see _pass_args), never ones
        # inherited from a tool that runs acor.
        env.pop(ARGS_VAR, None)
        env.pop(ARGS_FILE_VAR, None)
        if self.config is not None and self.spec.kind == "acor":
            # Only for tools that keep sessions through acor: a wrapped
            # program (the project's test suite) keeps its own environment.
            env["ACOR_STATE_DIR"] = self.config.state_dir
        env["ACOR_TOOL"] = self.spec.name
        env.update(protocol_env)
        env["PYTHONUNBUFFERED"] = "1"
        env["PYTHONIOENCODING"] = "utf-8"
        return env

    def same_command(self, **options: str) -> list[str]:
        """The acor command of this run, with ``options`` (e.g. timeout)
        set to new values: the exact command to run next."""
        argv = [self.command[0]]
        rest = self.command[1:]
        skip = {"--" + key.replace("_", "-") for key in options}
        i = 0
        while i < len(rest):
            word = rest[i]
            flag = word.split("=", 1)[0]
            if flag in skip:
                i += 1 if "=" in word else 2
                continue
            argv.append(word)
            i += 1
        for key, value in options.items():
            argv += ["--" + key.replace("_", "-"), value]
        return argv + [self.spec.name] + self.args

    def person_command(self) -> list[str]:
        """The command a person runs at a terminal to be asked: this
        run's, without the options that would keep acor from asking."""
        argv, words, i = [self.command[0]], self.command[1:], 0
        while i < len(words):
            word = words[i]
            if word == "--no-input":
                i += 1
            elif word == "--format":
                i += 2
            elif word.startswith("--format="):
                i += 1
            else:
                argv.append(word)
                i += 1
        return argv + [self.spec.name] + self.args

    def stop_error(self, kind: str, seconds: float) -> Error:
        name = self.spec.name
        if kind == "timeout":
            needed, how = self._estimate(seconds)
            return Error(
                f"Tool '{name}' timed out after {_seconds(seconds)} s",
                "E_TIMEOUT", f"timeout: {_seconds(seconds)} s" + how,
                "Run it on less input, or allow more time (the command "
                f"below allows {_seconds(needed)} s; `timeout` in the "
                "manifest or .acor/config.yaml sets it for good)."
                + self._session_advice(),
                self.same_command(timeout=_seconds(needed)))
        return Error(
            f"Tool '{name}' was silent for {_seconds(seconds)} s and was "
            "stopped", "E_IDLE_TIMEOUT",
            f"idle timeout: {_seconds(seconds)} s",
            "If the tool was still working, its author should call "
            "tool.heartbeat() during long silent steps; or allow longer "
            "silences (the command below doubles the idle timeout).",
            self.same_command(idle_timeout=_seconds(seconds * 2)))


    def _estimate(self, seconds: float) -> tuple[float, str]:
        """The time to allow next: from the progress rate when the tool
        reported progress (the time it would need at that rate, and a
        quarter more), else double; and a phrase saying why."""
        from acor.cli.durations import MAX_SECONDS
        progress = getattr(self.collector, "progress", None)
        doubled = min(MAX_SECONDS, seconds * 2)
        if not progress or not 1 <= progress[0] < 100:
            return doubled, ""
        percent, at = progress
        elapsed = max(0.001, at - self.started)
        total = elapsed * 100 / percent
        needed = min(MAX_SECONDS, max(seconds * 1.25, total * 1.25))
        needed = float(int(needed) + 1) if needed >= 10 else \
            round(needed + 0.05, 1)
        return needed, (f"\nprogress: {percent:g}% after {elapsed:.1f} s, "
                        f"so about {total:.1f} s in all at that rate")

    def _session_advice(self) -> str:
        session = getattr(self.collector, "session", None)
        if session:
            return (f" It saved checkpoints in session {session}: the "
                    "command below continues from the last one.")
        schema = getattr(self.spec, "args_schema", None) or {}
        properties = schema.get("properties", {}) \
            if isinstance(schema, dict) else {}
        flag = ((properties.get("session") or {}).get("x-acor") or {}) \
            .get("flag")
        if flag:
            return (f" This tool can resume a stopped run: pass {flag} "
                    "with a name of your choosing, and run the same "
                    "command again if it is stopped.")
        return ""


def _seconds(value: float) -> str:
    return f"{value:g}"


def _install_signals(cancel: Cancel) -> dict:
    def on_signal(signum, frame):
        cancel.set(signum)
    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        previous[sig] = signal.signal(sig, on_signal)
    return previous


def _restore_signals(previous: dict) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)
