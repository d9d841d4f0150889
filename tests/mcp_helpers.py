"""Test doubles for the MCP server: a scripted ``run`` and a registry of
duck-typed tool specs, so the MCP mapping is tested in process without
spawning tools. End-to-end tests use the real runner and real tools."""

import threading
import time
from types import SimpleNamespace

from acor.events import InputNeeded, OutputData


class FakeResult:
    """What the runner's RunResult offers (CONTRACTS.md)."""

    def __init__(self, events, exit_code=0, state="complete", *, tool="t",
                 argv=(), session=None, next=None, error_code=None):
        self.events = list(events)
        self.exit_code = exit_code
        self.state = state
        self.error_code = error_code
        self.duration = 0.25
        self.tool = tool
        self.version = "1.0.0"
        self.argv = list(argv)
        self.session = session
        self.next = next
        self.stderr = ""
        data = self.of(OutputData)
        self.data = data[-1].data if data else None

    @property
    def errors(self):
        from acor.events import Error
        return self.of(Error)

    def of(self, kind):
        return [e for e in self.events if isinstance(e, kind)]


class FakeRun:
    """The runner's ``run``: each tool's behaviour is a function
    ``(argv, emit, cancel) -> FakeResult``; ``emit`` both reports the event
    (``on_event``) and records it. Every call is recorded."""

    def __init__(self, **behaviours):
        self.behaviours = behaviours
        self.calls = []
        self.cancels = []

    def __call__(self, tool, argv, *, timeout=None, on_event=None,
                 cancel=None, registry=None, **unused):
        self.calls.append((tool.name, list(argv), timeout))
        self.cancels.append(cancel)

        def emit(*events):
            for event in events:
                on_event(event)
            return list(events)
        return self.behaviours[tool.name](list(argv), emit, cancel)


def spec(name, description="a test tool", args=None, annotations=None,
         usage=None):
    return SimpleNamespace(name=name, description=description, args=args,
                           annotations=annotations, usage=usage,
                           version="1.0.0", cwd_mode="invocation")


class FakeRegistry:
    def __init__(self, *specs, skipped=()):
        self.tools = {s.name: s for s in specs}
        self.skipped = list(skipped)
        self.config = SimpleNamespace(root="/")

    def get(self, name):
        return self.tools.get(name)


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
            emit()
            return FakeResult([InputNeeded(f"Which {field}?", {field: prop},
                                           audience)], 3, "input_needed",
                              session="s-1")
        from acor.events import Output
        return FakeResult([Output("done " + " ".join(argv))])
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
