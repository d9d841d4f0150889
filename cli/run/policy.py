"""What a run does at each of acor's own endings, and what environment
its tool gets: :class:`RunPolicy`, made by the runner
(:mod:`acor.cli.run.launch`) from the run's :class:`RunRequest`, and read
by the run's collector (:mod:`acor.cli.run.result`) to write the exact
command to run next. It knows the run's progress only through
:class:`RunState`, so it needs no collector (nor the collector it).
"""

from __future__ import annotations

import os
import time

from acor import exitcodes
from acor.events import Error

from acor.cli.arguments import ARGS_FILE_VAR, ARGS_VAR
from acor.cli.durations import MAX_SECONDS
from acor.cli.run.own_secrets import without_secrets

TYPE_CHECKING = False  # typing costs every run ~3 ms: only mypy
if TYPE_CHECKING:
    from typing import Mapping, Optional, Protocol

    from acor.cli.discovery.config import Config
    from acor.cli.discovery.spec import ToolSpec
    from acor.cli.run.request import RunRequest

    class RunState(Protocol):
        """What the policy reads of a run as it goes: its last progress
        (percent, monotonic time) and the session it saved."""
        progress: Optional[tuple[float, float]]
        session: Optional[str]

__all__ = ["ACOR_MJS", "ACOR_SH", "RunPolicy"]

# The bash helper of this acor, for tools written in bash (`. "$ACOR_SH"`).
ACOR_SH = os.path.join(os.path.dirname(os.path.abspath(exitcodes.__file__)),
                       "share", "acor.sh")
# Its JavaScript twin, for tools written for Node (`import(ACOR_MJS)`).
ACOR_MJS = os.path.join(os.path.dirname(ACOR_SH), "acor.mjs")


class RunPolicy:
    """Which directory and environment a run gets, and what to run next
    after each of acor's own endings."""

    def __init__(self, request: RunRequest, spec: ToolSpec) -> None:
        self.spec = spec
        self.config: Optional[Config] = request.config
        self.command = list(request.command)
        self.args = list(request.argv)
        self.timeout = request.timeout
        self.idle_timeout = request.idle_timeout
        self.run_dir = request.run_dir
        # Where the command was run from: a session's record says where
        # its resume command runs (cli.run.session_record).
        self.cwd = os.path.abspath(request.cwd or os.getcwd())
        self.state: Optional[RunState] = None  # the run's progress, session
        self.started = time.monotonic()

    def environment(self, extra: Optional[Mapping[str, str]],
                    protocol_env: Mapping[str, str]) -> dict[str, str]:
        # acor's own secrets (the server's token and key) are never a
        # tool's, whoever put them in acor's environment or the caller's.
        env = without_secrets(os.environ)
        env["ACOR_SH"] = ACOR_SH
        env["ACOR_MJS"] = ACOR_MJS
        env.update(without_secrets(extra or {}))
        # Only this launcher names a human channel, and only for answers a
        # person gave in this run (see launch._run_spec): never one
        # inherited.
        env.pop("ACOR_HUMAN_FD", None)
        # A tool's arguments are this run's (see launch._pass_args), never
        # ones inherited from a tool that runs acor.
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
        progress = self.state.progress if self.state is not None else None
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
        session = self.state.session if self.state is not None else None
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


