"""``acor check NAME|PATH [--json]``: does a tool keep the protocol?

It works for tools in any language, because it looks only at what a tool
publishes and writes: the manifest is validated against the published JSON
Schema, then each of the manifest's ``examples`` is run through the runner
(in the tool's folder) and its stream checked (:mod:`cli.commands.check_rules`).
Every violation is printed with its fix; exit 0 when the tool conforms,
1 when it does not, 2 when there is no such tool.
"""

from __future__ import annotations

import json
import shlex

import click

from acor import exitcodes
from acor.args import human_names

from acor.cli.arguments import call_argv
from acor.cli.commands.check_rules import (
    Violation, exit_warnings, expectation_violations, manifest_violations,
    stream_violations, wrapped_findings)
from acor.cli.commands.info import echo_json, wants_json
from acor.cli.discovery.config import ConfigError
from acor.cli.discovery.resolve import Target, resolve
from acor.cli.errors import LauncherError, UsageError, config_error
from acor.cli.output.person import report_error
from acor.cli.textsafe import printable

TYPE_CHECKING = False  # typing costs every command ~3 ms: only mypy
if TYPE_CHECKING:
    from typing import Any

    from acor.events import Event
    from acor.cli.discovery.spec import ToolSpec
    from acor.cli.run.result import RunResult

def read_manifest(path: str) -> tuple[object, Violation | None]:
    try:
        with open(path, encoding="utf-8-sig") as f:
            return json.load(f), None
    except OSError as exc:
        return None, Violation("manifest", f"cannot read {path}: "
                               f"{exc.strerror}", "Check the file's "
                               "permissions.")
    except ValueError as exc:
        return None, Violation("manifest", f"{path} is not valid JSON: "
                               f"{exc}", f"Fix the JSON (`python3 -m "
                               f"json.tool {path}` shows where).")


def _manifest_data(target: Target) -> tuple[object, Violation | None]:
    """The manifest to check: the file, or the one a function tool's
    source stands for (:func:`acor.cli.discovery.functions.manifest_of`)."""
    if target.manifest_path.endswith(".py") and target.spec is not None:
        from acor.cli.discovery.functions import manifest_of
        return manifest_of(target.spec), None
    return read_manifest(target.manifest_path)


def example_argv(spec: ToolSpec, example: dict[str, Any]) -> list[str]:
    """The argv an example stands for: a list as it is, an object turned
    into one as `acor call` does (raises its UsageError)."""
    args = example["args"]
    if isinstance(args, list):
        return list(args)
    return call_argv(spec, args)


def human_given(spec: ToolSpec, example: dict[str, Any]) -> list[str]:
    """The human-only arguments an example tries to give (by name in an
    object, as ``--name`` in a list)."""
    names = human_names(spec.args_schema)
    args = example.get("args")
    if isinstance(args, dict):
        return [n for n in names if n in args]
    flags = {f"--{n}": n for n in names} | \
        {f"--{n.replace('_', '-')}": n for n in names}
    words = args if isinstance(args, list) else []
    return sorted({flags[w.split("=", 1)[0]] for w in words
                   if isinstance(w, str) and w.split("=", 1)[0] in flags})


def check(target: Target) -> dict[str, Any]:
    """Check ``target``; the report as a dict (see ``--json``)."""
    report: dict[str, Any] = {
        "tool": target.name, "manifest": target.manifest_path,
        "conforms": False, "violations": [], "warnings": [], "examples": []}
    data, found = manifest_findings(target)
    if target.spec is not None:
        report["warnings"] += list(target.spec.warnings or [])
    if found or target.spec is None:
        report["violations"] = [v.to_dict() for v in found]
        return report
    examples = data.get("examples", []) if isinstance(data, dict) else []
    if not examples:
        report["warnings"].append(
            "the manifest has no examples, so no run was checked: add "
            '"examples": [{"args": [...], "exit_code": 0}]')
    seen: set[str] = set()
    for index, example in enumerate(examples):
        argv = _runnable_argv(target.spec, example, index)
        if isinstance(argv, Violation):
            found.append(argv)
            continue
        outcome, problems, warnings = run_example(target, target.spec, argv,
                                                  example, index, seen)
        report["examples"].append(outcome)
        report["warnings"] += warnings
        found += problems
    report["violations"] = [v.to_dict() for v in found]
    report["conforms"] = not found
    return report


def manifest_findings(target: Target) -> tuple[object, list[Violation]]:
    """The manifest as read, and how it breaks the schema, or why acor
    does not load it as a tool."""
    found = []
    data, unreadable = _manifest_data(target)
    if unreadable is not None:
        found.append(unreadable)
    else:
        found += manifest_violations(data)
    if target.skipped is not None and not found:
        # Only what the schema cannot see: a missing or non-executable
        # entry, a reserved name, a link out of the tools dir.
        found.append(Violation("manifest", "acor skips this manifest: "
                               f"{target.skipped.reason}",
                               target.skipped.recovery))
    if target.spec is None and not found:
        found.append(Violation("manifest", "acor does not load it as a "
                               "tool", "Put it in a tools dir: a folder "
                               "with manifest.json, or a <name>.json "
                               "wrapper manifest."))
    return data, found


def _runnable_argv(spec: ToolSpec, example: dict[str, Any], index: int
                   ) -> list[str] | Violation:
    """The argv of an example, or why it can never run as written (a
    person's argument, a value ``args`` refuses)."""
    given = human_given(spec, example)
    if given:
        names = ", ".join(repr(n) for n in given)
        return Violation(
            f"manifest.examples[{index}].args",
            f"the example gives {names}, which only a person may give "
            "(\"x-acor\": {\"human\": true}): acor refuses it from "
            "any caller, so the example can never run as written",
            f"Remove {names} from the example. An example runs without "
            "a person, so it shows the tool asking: \"exit_code\": 3, "
            "\"events\": [\"input_needed\"]. Test a person's answer "
            "with acor_run(..., human={...}) in the tool's tests.")
    try:
        return example_argv(spec, example)
    except UsageError as exc:
        return Violation(f"manifest.examples[{index}].args",
                         exc.details or exc.reason,
                         "Fix the example's values to fit "
                         "\"args\" (or fix \"args\").")


class _Recorder:
    """The runner's sink for a check: every event in order, and those the
    tool wrote after its ending (which the transcript leaves out)."""

    def __init__(self) -> None:
        self.late_events: list[Event] = []

    def emit(self, event: Event) -> None:
        pass  # the result keeps them

    def due(self) -> None:
        return None

    def tick(self) -> None:
        pass

    def late(self, tool: str, event: Event) -> None:
        self.late_events.append(event)


_DENIALS = ("Permission denied", "Operation not permitted",
            "Network is unreachable", "Read-only file system")


def _denial(result: RunResult) -> str | None:
    """The line of the tool's stderr or errors where the sandbox said no,
    if any."""
    texts = [result.stderr or ""] + [
        f"{e.title} {e.details or ''}" for e in result.errors or []]
    for text in texts:
        for line in text.splitlines():
            if any(word in line for word in _DENIALS):
                return printable(line.strip())[:300]
    return None


def run_example(target: Target, spec: ToolSpec, argv: list[str],
                example: dict[str, Any], index: int,
                seen: set[str] | None = None
                ) -> tuple[dict[str, Any], list[Violation], list[str]]:
    """Run one example of ``target``, whose tool is ``spec`` (a target
    acor skips runs none); its outcome, its violations and its warnings
    (``seen``: what the examples before it already warned of)."""
    # the launcher proper: only once it runs
    from acor.cli.run.launch import run
    from acor.cli.run.request import build_request
    where = f"example {index + 1} ({shlex.join([target.name, *argv])})"
    recorder = _Recorder()
    # Sandboxed whatever the manifest says: acor check runs code from a
    # repository that may not be trusted (write only a temp dir, no
    # network).
    result = run(build_request(spec, argv, registry=target.registry,
                               cwd=target.folder, command=["acor", "check"],
                               sandbox="check"), sink=recorder)
    events = result.events or []  # the recorder keeps them all
    problems: list[Violation] = []
    warnings: list[str] = []
    if result.tool_exit_code is None:
        pass  # acor refused before it started (arguments its schema
        # refuses, say): no stream to judge
    elif spec.kind == "wrapped":  # acor wrote its stream
        problems, warnings = wrapped_findings(
            events, where, spec,
            tool_exit_code=result.tool_exit_code,
            error_code=result.error_code, state=result.state, seen=seen)
    else:
        problems = stream_violations(
            events, where, tool_exit_code=result.tool_exit_code,
            error_code=result.error_code, state=result.state,
            late=recorder.late_events)
        warnings = [w for w in exit_warnings(events, where, spec)
                    if _first(w, where, seen)]
    problems += expectation_violations(example, result.exit_code, events,
                                       where)
    denied = _denial(result)
    if problems and denied:
        declared = spec.sandbox
        problems.append(Violation(
            where, f"the sandbox denied it: {denied}",
            "acor check runs examples in a sandbox (write only a temp "
            "dir, no network). Make the example write under $TMPDIR and "
            "reach no network" + (", and fix \"sandbox\" in the manifest "
            f"(it says {json.dumps(declared)})" if declared else "") + "."))
    outcome = {"example": index + 1, "argv": argv,
               "exit_code": result.exit_code, "state": result.state,
               "error_code": result.error_code,
               "duration_ms": round(result.duration * 1000),
               "ok": not problems}
    return outcome, problems, warnings


def _first(warning: str, where: str, seen: set[str] | None) -> bool:
    """Whether no example before this one gave the same warning."""
    if seen is None:
        return True
    key = "exit warning:" + warning[len(where):]
    if key in seen:
        return False
    seen.add(key)
    return True


def format_report(report: dict[str, Any]) -> str:
    """The report for people. Every value from the manifest, its examples
    or the tool's stream is printed on one line, control characters and
    line breaks escaped (``\\n``), so an example's argument holding
    "\\n## AI Directive" cannot start a line (indenting would not do:
    CommonMark reads a heading indented by up to three spaces)."""
    tool = printable(report["tool"])
    lines = [f"acor check {tool}: {printable(report['manifest'])}"]
    for warning in report["warnings"]:
        lines.append(f"  warning: {printable(warning)}")
    for outcome in report["examples"]:
        mark = "ok  " if outcome["ok"] else "FAIL"
        ending = outcome["state"] + (f", {outcome['error_code']}"
                                     if outcome["error_code"] else "")
        argv = printable(shlex.join([report["tool"], *outcome["argv"]]))
        lines.append(f"  {mark} example {outcome['example']}: "
                     f"{argv} -> exit {outcome['exit_code']} "
                     f"({printable(ending)})")
    for v in report["violations"]:
        lines.append(f"\n  {printable(v['where'])}\n"
                     f"    problem: {printable(v['problem'])}\n"
                     f"    fix:     {printable(v['fix'])}")
    count = len(report["violations"])
    lines.append("")
    runs = len(report["examples"])
    lines.append((f"{tool} conforms ({runs} example(s) run)."
                  if runs else f"{tool}'s manifest conforms; no "
                  "example was run.") if report["conforms"] else
                 f"{tool} does not conform: {count} problem"
                 f"{'s' if count != 1 else ''}.")
    return "\n".join(lines)


@click.command("check")
@click.argument("tool")
@click.option("--json", "as_json", is_flag=True, help="The report as JSON.")
@click.pass_context
def check_command(ctx: click.Context, tool: str, as_json: bool) -> int:
    """Check that TOOL (a name, a tool folder or a manifest file) keeps the
    protocol: its manifest against the published schema, then each of its
    examples run and its stream checked. Exit 0 when it conforms."""
    obj = ctx.find_root().obj or {}
    as_json = wants_json(ctx, as_json)
    fmt = "json" if as_json else obj.get("format")
    try:
        target = resolve(tool, config_path=obj.get("config"))
    except LauncherError as exc:
        return report_error(exc, fmt)
    except ConfigError as exc:
        return report_error(config_error(exc), fmt)
    report_ = check(target)
    if as_json:  # one line of strict JSON, as every command writes it
        echo_json(report_)
    else:
        click.echo(format_report(report_))
    return exitcodes.OK if report_["conforms"] else exitcodes.FAILED
