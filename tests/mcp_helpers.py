"""Test doubles for the MCP server: a scripted ``run`` and a registry of
duck-typed tool specs, so the MCP mapping is tested in process without
spawning tools. End-to-end tests use the real runner and real tools."""

import atexit
import shutil
import tempfile
import threading
import time

from acor.args import public_schema
from acor.cli.discovery.config import Config
from acor.cli.discovery.manifest import ToolSpec
from acor.cli.run.result import RunResult
from acor.events import Error, InputNeeded, Output, OutputData


def FakeResult(events, exit_code=0, state="complete", *, tool="t",
               argv=(), session=None, next=None, error_code=None):
    """A RunResult as the runner builds one."""
    events = list(events)
    data = [e for e in events if isinstance(e, OutputData)]
    return RunResult(exit_code=exit_code, state=state, error_code=error_code,
                     events=events, data=data[-1].data if data else None,
                     errors=[e for e in events if isinstance(e, Error)],
                     stderr="", duration=0.25, tool=tool, version="1.0.0",
                     argv=list(argv), session=session, next=next)


class FakeRun:
    """The runner's ``run`` of a request: each tool's behaviour is a function
    ``(argv, emit, cancel) -> FakeResult``; ``emit`` passes events to the
    run's sink and returns them. Every call is recorded."""

    def __init__(self, **behaviours):
        self.behaviours = behaviours
        self.calls = []
        self.cancels = []
        self.human = []  # what each run got on its human channel

    def __call__(self, request, *, sink=None, cancel=None):
        tool, argv = request.spec, request.argv
        self.calls.append((tool.name, list(argv), request.timeout))
        self.human.append(request.human)
        self.cancels.append(cancel)

        def emit(*events):
            for event in events:
                sink.emit(event)
            return list(events)
        return self.behaviours[tool.name](list(argv), emit, cancel)


def spec(name, description="a test tool", args=None, annotations=None,
         usage=None):
    return ToolSpec(name=name, description=description, args_schema=args,
                    args_public=public_schema(args) if args else None,
                    annotations=annotations, usage=usage, version="1.0.0",
                    kind="acor", cwd_mode="invocation")


FAKE_STATE_DIR = tempfile.mkdtemp(prefix="acor-fake-state-")
atexit.register(shutil.rmtree, FAKE_STATE_DIR, ignore_errors=True)


class FakeRegistry:
    def __init__(self, *specs, skipped=()):
        self.tools = {s.name: s for s in specs}
        self.skipped = list(skipped)
        # Links to files the results name are kept in a state dir of the
        # test session's own, never under the root.
        self.config = Config(root="/", state_dir=FAKE_STATE_DIR)

    def get(self, name):
        return self.tools.get(name)

    def skipped_named(self, name):
        return next((s for s in self.skipped if s.name == name), None)


GREET_ARGS = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "who",
                 "x-acor": {"position": 0}},
        "times": {"type": "integer", "minimum": 1,
                  "x-acor": {"flag": "--times"}},
        "loud": {"type": "boolean", "x-acor": {"flag": "--loud"}},
    },
    "required": ["name"],
    "additionalProperties": False,
}


def asks_for(field, prop, audience="agent", flag=None):
    """A tool that ends with Input Needed for ``field`` until its flag is
    given, then completes echoing its argv."""
    flag = flag or f"--{field}"

    def behaviour(argv, emit, cancel):
        if flag not in argv:
            return FakeResult(emit(InputNeeded(f"Which {field}?",
                                               {field: prop}, audience)),
                              3, "input_needed", session="s-1")
        return FakeResult(emit(Output("done " + " ".join(argv))))
    return behaviour


def blocks_until_cancelled(started: threading.Event):
    """A tool that runs until cancelled, as the runner ends one."""
    def behaviour(argv, emit, cancel):
        started.set()
        deadline = time.monotonic() + 10
        while not cancel.is_set() and time.monotonic() < deadline:
            time.sleep(0.005)
        return FakeResult([], 130, "cancelled")
    return behaviour


def acor_mcp_stdio(project, *args):
    """The SDK's parameters for a real ``acor mcp ARGS`` over stdio in
    ``project`` (the installed command, with the project's environment)."""
    from mcp import StdioServerParameters

    from conftest import ACOR_SCRIPT
    return StdioServerParameters(
        command=ACOR_SCRIPT, args=["mcp", *args], cwd=str(project.root),
        env={k: v for k, v in project.env.items()
             if k.startswith("ACOR_") or k in ("PATH", "HOME", "NO_COLOR",
                                                "XDG_CONFIG_HOME")})
