"""Shared fixtures: a scratch project with tools, and two ways to run acor
in it: in this process (``project.acor``: the logic, fast) and as a user
runs it (``project.run``/``popen``: a real subprocess, real pipes, real
signals, kept for what only a separate process shows)."""

import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# The console script pip installed next to this interpreter.
ACOR_SCRIPT = str(Path(sys.executable).with_name("acor"))
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


# The runtime dependencies whose versions each run reports: a failure on a
# fresh install is then read against the versions it ran with.
REPORTED_VERSIONS = ("click", "PyYAML", "rich", "filelock", "orjson",
                     "jsonschema", "mcp")


def dependency_versions():
    from importlib.metadata import PackageNotFoundError, version

    def of(name):
        try:
            return version(name)
        except PackageNotFoundError:
            return "absent"
    import yaml
    libyaml = "libyaml" if hasattr(yaml, "CSafeLoader") else "no libyaml"
    return ("dependencies: " + ", ".join(
        f"{name} {of(name)}" for name in REPORTED_VERSIONS)
        + f" ({libyaml})")


def pytest_report_header(config):
    return dependency_versions()


def pytest_terminal_summary(terminalreporter):
    # Also at the end, where -q (this project's default) still prints.
    terminalreporter.write_line(dependency_versions())


# Set for this suite and every process it starts: a DeprecationWarning in
# acor's own code is an error there (acor/__init__.py reads it).
STRICT = "ACOR_STRICT_WARNINGS"
os.environ[STRICT] = "1"


def without_acor_vars(environ):
    """``environ`` without acor's variables, but for the strict-warnings
    switch this suite runs with."""
    return {k: v for k, v in environ.items()
            if not k.startswith("ACOR_") or k == STRICT}


def base_env(tmp_path):
    env = without_acor_vars(os.environ)
    env.pop("PYTHONPATH", None)  # tests run the installed acor, as users do
    env["ACOR_CACHE_DIR"] = str(tmp_path / "acor-cache")
    # Only the test's own tools: none from the venv's packages or the
    # developer's ~/.config/acor/tools (tests of those sources opt back in).
    env["ACOR_NO_PACKAGE_TOOLS"] = "1"
    env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg-config")
    env["NO_COLOR"] = "1"
    return env


class Completed:
    """What a run of acor gave, as subprocess.run reports it."""

    def __init__(self, returncode, stdout, stderr):
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr


class Project:
    """A directory with a tools/ folder, and ways to run acor in it."""

    def __init__(self, root, env):
        self.root = root
        self.env = env
        (root / "tools").mkdir(parents=True, exist_ok=True)

    def add_tool(self, name, code, **manifest):
        folder = self.root / "tools" / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{name}.py").write_text(textwrap.dedent(code))
        data = {"name": name, "version": "1.0.0",
                "description": f"test tool {name}", "entry": f"{name}.py"}
        data.update(manifest)
        (folder / "manifest.json").write_text(json.dumps(data))
        return folder

    def add_wrapped(self, name, command, **manifest):
        data = {"name": name, "description": f"wrapped {name}",
                "command": command}
        data.update(manifest)
        path = self.root / "tools" / f"{name}.json"
        path.write_text(json.dumps(data))
        return path

    def acor(self, *args, input=None, env=None, on_line=None, timeout=60,
             early_signals=()):
        """``acor ARGS`` run in this process, as a subprocess would run it
        (see :func:`run_in_process`); ``env`` replaces the project's."""
        return run_in_process(list(args), cwd=self.root,
                              env=self.env if env is None else env,
                              input=input, on_line=on_line, timeout=timeout,
                              early_signals=early_signals)

    def argv(self, *args):
        return [sys.executable, "-m", "acor", *args]

    def run(self, *args, timeout=60, **kwargs):
        return subprocess.run(self.argv(*args), cwd=self.root, env=self.env,
                              capture_output=True, text=True,
                              timeout=timeout, **kwargs)

    def popen(self, *args, **kwargs):
        return subprocess.Popen(self.argv(*args), cwd=self.root,
                                env=self.env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, **kwargs)


def run_in_process(argv, *, cwd, env, input=None, on_line=None, timeout=60,
                   early_signals=()):
    """``acor.cli.main.main(argv)`` with what a process of its own would
    have: ``cwd`` as the directory, exactly ``env`` as the environment (and
    ACOR_KILL_GRACE read from it, as acor reads it at start-up), fds 0, 1
    and 2 of its own (stdin ``input`` or /dev/null; stdout a pipe, so that
    output is seen as it comes: ``on_line(text)`` is called from a reader
    thread for each line), ``early_signals`` as the signals the console
    script caught before main() (cli.entry), and this process's signal
    handlers put back afterwards. Two things are left out: the subreaper,
    which would make this test process the reaper of every orphan (its
    tests run acor as a subprocess), and an exit by signal. An exception
    inside acor propagates (a real acor would print a traceback).

    Past ``timeout`` seconds the run is interrupted as Ctrl-C would, and
    TimeoutError is raised, as subprocess.run(timeout=...) raises."""
    from acor.cli import main as acor_main
    from acor.cli.run import process
    from acor.cli.signals import EarlySignals
    early = EarlySignals()
    for signum in early_signals:
        early(signum, None)
    with _handlers_restored():
        stdin = tempfile.TemporaryFile()
        stdin.write(input.encode() if isinstance(input, str) else
                    input or b"")
        stdin.seek(0)
        stderr = tempfile.TemporaryFile()
        reader = _LineReader(on_line)
        saved_env, saved_cwd = dict(os.environ), os.getcwd()
        saved_grace, saved_adopt = process.KILL_GRACE, process.adopt_orphans
        saved_fds = [os.dup(fd) for fd in (0, 1, 2)]
        saved_std = sys.stdin, sys.stdout, sys.stderr
        watchdog = _Watchdog(timeout)
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        try:
            os.environ.clear()
            os.environ.update(env)
            os.chdir(cwd)
            process.KILL_GRACE = process.env_seconds("ACOR_KILL_GRACE",
                                                     saved_grace)
            process.adopt_orphans = lambda: False
            os.dup2(stdin.fileno(), 0)
            os.dup2(reader.write_fd, 1)
            os.dup2(stderr.fileno(), 2)
            reader.close_write()
            sys.stdin = _text(0, "r")
            sys.stdout, sys.stderr = _text(1, "w"), _text(2, "w")
            watchdog.start()
            try:
                code = acor_main.main(argv, early=early)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            finally:
                watchdog.cancel()
                for stream in (sys.stdin, sys.stdout, sys.stderr):
                    try:
                        stream.close()  # flushed; the fds stay open
                    except (OSError, ValueError):
                        pass
        finally:
            sys.stdin, sys.stdout, sys.stderr = saved_std
            for fd, saved in zip((0, 1, 2), saved_fds, strict=True):
                os.dup2(saved, fd)
                os.close(saved)
            process.KILL_GRACE, process.adopt_orphans = saved_grace, \
                saved_adopt
            os.chdir(saved_cwd)
            os.environ.clear()
            os.environ.update(saved_env)
            stdin.close()
            out = reader.join()
        stderr.seek(0)
        err = stderr.read()
        stderr.close()
    if watchdog.fired:
        raise TimeoutError(f"acor {argv} ran over {timeout} s:\n"
                           f"{out.decode(errors='replace')}")
    return Completed(code, out.decode(), err.decode())


class _handlers_restored:
    def __enter__(self):
        self.saved = {sig: signal.getsignal(sig) for sig in SIGNALS}

    def __exit__(self, *exc):
        for sig, handler in self.saved.items():
            signal.signal(sig, handler)


def _text(fd, mode):
    """A text stream on ``fd`` like the one Python gives a process whose
    standard stream is a pipe or a file."""
    raw = io.FileIO(fd, mode, closefd=False)
    buffered = io.BufferedReader(raw) if mode == "r" else \
        io.BufferedWriter(raw)
    return io.TextIOWrapper(buffered, encoding="utf-8")


class _LineReader:
    """Reads a pipe to its end in a thread: all of it, and each line to
    ``on_line`` as it arrives. An exception in ``on_line`` is raised again
    by :meth:`join`, once the pipe is drained."""

    def __init__(self, on_line):
        self.read_fd, self.write_fd = os.pipe()
        self.on_line = on_line
        self.data = bytearray()
        self.error = None
        self.thread = threading.Thread(target=self._pump, daemon=True)
        self.thread.start()

    def _pump(self):
        pending = b""
        while chunk := os.read(self.read_fd, 1 << 16):
            self.data += chunk
            if self.on_line is None or self.error is not None:
                continue
            *lines, pending = (pending + chunk).split(b"\n")
            try:
                for line in lines:
                    self.on_line(line.decode() + "\n")
            except BaseException as exc:  # noqa: B036 (re-raised by join)
                self.error = exc

    def close_write(self):
        os.close(self.write_fd)

    def join(self):
        self.thread.join()
        os.close(self.read_fd)
        if self.error is not None:
            raise self.error
        return bytes(self.data)


class _Watchdog:
    """Ctrl-C for a run that would hang the test: SIGINT, then a second
    one (no grace) a second later."""

    def __init__(self, timeout):
        self.fired = False
        self.timers = [threading.Timer(timeout + extra, self._interrupt)
                       for extra in (0, 1)] if timeout else []

    def _interrupt(self):
        self.fired = True
        os.kill(os.getpid(), signal.SIGINT)

    def start(self):
        for timer in self.timers:
            timer.start()

    def cancel(self):
        for timer in self.timers:
            timer.cancel()


@pytest.fixture
def isolated_discovery(tmp_path, monkeypatch):
    """In-process discovery with its own cache and no inherited config."""
    monkeypatch.setenv("ACOR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("ACOR_NO_PACKAGE_TOOLS", "1")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.delenv("ACOR_CONFIG", raising=False)
    monkeypatch.delenv("ACOR_NO_CACHE", raising=False)


@pytest.fixture
def project(tmp_path):
    return Project(tmp_path / "proj", base_env(tmp_path))


def headings(markdown):
    """Top-level headings as CommonMark (markdown-it-py) sees them."""
    from markdown_it import MarkdownIt
    tokens = MarkdownIt("commonmark").parse(markdown)
    return [tokens[i + 1].content for i, t in enumerate(tokens)
            if t.type == "heading_open" and t.level == 0]


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0): read its state.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except OSError:
        return False


def children(pid, running):
    """The live pids whose parent is ``pid`` and whose command line holds
    ``running`` (Linux /proc)."""
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
        except (OSError, IndexError, ValueError):
            continue
        if int(stat[1]) == pid and stat[0] != "Z" and \
                running.encode() in cmdline:
            found.append(int(entry))
    return found


def strings(value):
    """Every string of a JSON value, keys too."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)
    elif isinstance(value, str):
        yield value


def vm_hwm(pid):
    """The peak resident memory of a live process, in bytes."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM"):
                return int(line.split()[1]) * 1024
    return 0
