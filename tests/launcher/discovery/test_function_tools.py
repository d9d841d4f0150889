"""Function tools (issue 35): a typed `@tool` function in a tools dir is a
tool, driven through the real boundary: `acor NAME ARGS`, `acor call`,
`acor list`, `show` and `doctor`, a person at a real pty, the SDK's client
against a real `acor mcp` (both protocol generations), the sandbox.
Discovery reads the source and never runs it: a file whose module-level
code leaves a mark shows it."""

import json
import subprocess
import sys
import textwrap

import pytest

from conftest import ACOR_SCRIPT
from terminal import Terminal

from acor.cli.sandbox import kernel

STATS = '''\
import enum
import random
from typing import Annotated, Literal, TypedDict

from acor import AcorTool, Arg, Human, Secret, tool


class Mode(enum.Enum):
    FAST = "fast"
    SLOW = "slow"


@tool(version="2.1.0", timeout=60)
def stats(n: Annotated[int, Arg("how many numbers", minimum=1)],
          dist: Literal["uniform", "gauss"] = "uniform",
          seed: int | None = None,
          *, acor: AcorTool) -> dict:
    """Summarise n random numbers."""
    rng = random.Random(seed)
    total = 0.0
    for i in range(n):
        total += rng.random() if dist == "uniform" else rng.gauss(0, 1)
        acor.progress_bar(i + 1, n, "sampling")
    return {"n": n, "dist": dist, "seed": seed}


@tool
def shape(word: str, color: bool = True, tags: list[str] | None = None,
          mode: Mode = Mode.FAST, times: int = 1,
          code: Annotated[str, Arg(pattern="[A-Z]{3}")] = "ABC") -> dict:
    """Echo what it was given, typed.

    Args:
        word: the word to shape
        color: colour it
        tags: labels to attach
    """
    return {"word": word * times, "color": color, "tags": tags,
            "mode": mode.value, "is_mode": isinstance(mode, Mode)}


@tool
def remove(path: str, confirm: Annotated[bool, Human()]) -> str:
    """Delete a file once a person says yes.

    Args:
        confirm: delete it for good
    """
    if not confirm:
        return f"kept {path}"
    import os
    os.remove(path)
    return f"deleted {path}"


@tool
def approve(path: str, ok: Annotated[bool, Human()] = False) -> str:
    """Approve, asked of a person even with a default for Python callers."""
    return f"approved {path}: {ok}"


@tool
def note(text: Annotated[str | None, Human()] = None) -> str:
    """Take a person's note, or none."""
    return f"note: {text}"


@tool
async def login(user: str,
                token: Annotated[str, Secret(level="high")]) -> dict:
    """Log in with a token only a person gives."""
    return {"user": user, "length": len(token)}


class Summary(TypedDict):
    word: str
    count: int
    tags: list[str]


@tool
def summary(word: str) -> Summary:
    """Count a word's letters."""
    return {"word": word, "count": len(word), "tags": []}


@tool
def explode(code: str = "E_BOOM") -> None:
    """Fail with an exception."""
    raise ValueError(f"no such thing as {code}")
'''

MARKED = '''\
import pathlib
pathlib.Path(__file__).with_name("MARK").write_text("module code ran")

from acor import tool


@tool
def marker() -> str:
    """Say hello, once discovery is done."""
    return "hello"
'''

REFUSED = '''\
from acor import tool

LIMIT = 3


@tool
def counted(n: int = LIMIT) -> int:
    """A default acor cannot read without running the code."""
    return n


@tool
def fine(n: int = 3) -> int:
    """The file's other tool still loads."""
    return n
'''


def acor(project, *args, input=None):
    return subprocess.run([ACOR_SCRIPT, *args], cwd=project.root,
                          env=project.env, capture_output=True, text=True,
                          timeout=120, input=input)


def result_line(done):
    return json.loads(done.stdout.strip().splitlines()[-1])


def data_of(done):
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    return [e["data"] for e in lines if e.get("type") == "output_data"][-1]


@pytest.fixture
def functions(project):
    (project.root / "tools" / "stats.py").write_text(STATS)
    return project


def test_required_parameters_are_positions_the_rest_flags(functions):
    done = acor(functions, "--format", "json", "stats", "5", "--seed", "7")
    assert done.returncode == 0, done.stdout + done.stderr
    assert data_of(done) == {"n": 5, "dist": "uniform", "seed": 7}
    events = [json.loads(line) for line in done.stdout.splitlines()]
    bars = [e for e in events if e.get("type") == "progress"]
    assert bars and bars[-1]["percent"] == 100
    assert result_line(done)["version"] == "2.1.0"


def test_no_flag_for_a_true_default_a_list_repeats_and_enums_arrive_typed(
        functions):
    done = acor(functions, "--format", "json", "shape", "ab", "--no-color",
                "--tags", "x", "--tags", "y", "--mode", "slow",
                "--times", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert data_of(done) == {"word": "abab", "color": False,
                             "tags": ["x", "y"], "mode": "slow",
                             "is_mode": True}
    wrong = acor(functions, "shape", "ab", "--code", "abc")
    assert wrong.returncode == 2 and "E_USAGE" in wrong.stdout
    assert "argument code: 'abc' does not match the pattern" in wrong.stdout
    plain = acor(functions, "--format", "json", "shape", "ab")
    assert data_of(plain) == {"word": "ab", "color": True, "tags": None,
                              "mode": "fast", "is_mode": True}


def test_help_and_usage_come_from_the_signature(functions):
    done = acor(functions, "shape", "--help")
    assert done.returncode == 0
    assert "usage: acor shape WORD [--no-color] [--tags TAGS]..." in \
        done.stdout
    assert "the word to shape" in done.stdout
    assert "one of: fast, slow" in done.stdout
    wrong = acor(functions, "stats", "0")
    assert wrong.returncode == 2 and "E_USAGE" in wrong.stdout
    assert "argument N: must be at least 1, not 0" in wrong.stdout


def test_acor_call_list_and_show_treat_it_as_a_manifest_tool(functions):
    done = acor(functions, "--format", "json", "call", "shape",
                json.dumps({"word": "z", "no_color": True,
                            "tags": ["a"], "mode": "slow"}))
    assert done.returncode == 0, done.stdout
    assert data_of(done)["color"] is False and data_of(done)["tags"] == [
        "a"]
    listed = acor(functions, "list")
    for name in ("stats", "shape", "remove", "login", "summary", "explode"):
        assert name in listed.stdout
    shown = json.loads(acor(functions, "show", "stats", "--json").stdout)
    props = shown["args"]["properties"]
    assert props["n"] == {"type": "integer", "minimum": 1,
                          "description": "how many numbers"}
    assert props["dist"]["enum"] == ["uniform", "gauss"]
    assert shown["args"]["required"] == ["n"]
    exported = {t["name"]: t for t in json.loads(
        acor(functions, "export", "anthropic").stdout)}
    assert exported["stats"]["input_schema"]["properties"]["n"][
        "minimum"] == 1
    assert "token" not in exported["login"]["input_schema"]["properties"]


def test_an_exception_ends_failed_with_an_error_and_a_code(functions):
    done = acor(functions, "explode")
    assert done.returncode == 1
    assert "## Error: ValueError: no such thing as E_BOOM" in done.stdout
    assert "**Code**: E_" in done.stdout
    assert done.stdout.rstrip().endswith("## Status: Failed")


def test_async_def_runs_as_a_def_does(functions, tmp_path):
    done = acor(functions, "--format", "json", "call", "login",
                json.dumps({"user": "ada"}))
    # The token only a person gives was not given: asked, nothing run.
    assert done.returncode == 3, done.stdout
    assert result_line(done)["state"] == "input_needed"
    (functions.root / "tools" / "hi.py").write_text(textwrap.dedent('''\
        import asyncio
        from acor import tool

        @tool
        async def hi(name: str) -> dict:
            """Greet, after awaiting."""
            await asyncio.sleep(0)
            return {"hi": name}
        '''))
    done = acor(functions, "--format", "json", "hi", "ada")
    assert done.returncode == 0, done.stdout + done.stderr
    assert data_of(done) == {"hi": "ada"}


def test_discovery_never_runs_the_module_the_run_does(project):
    tool = project.root / "tools" / "marker.py"
    tool.write_text(MARKED)
    mark = project.root / "tools" / "MARK"
    for command in (["list"], ["doctor"], ["show", "marker"],
                    ["marker", "--help"], ["call", "marker", "{\"x\": 1}"]):
        acor(project, *command)
        assert not mark.exists(), command
    listed = subprocess.run(
        [sys.executable, "-c", LIST_OVER_MCP], cwd=project.root,
        env=project.env, capture_output=True, text=True, timeout=120)
    assert "marker" in listed.stdout, listed.stderr
    assert not mark.exists()
    done = acor(project, "marker")
    assert done.returncode == 0 and "hello" in done.stdout
    assert mark.read_text() == "module code ran"


LIST_OVER_MCP = '''\
import anyio, sys
from mcp import Client, StdioServerParameters
async def main():
    server = StdioServerParameters(command=sys.executable,
                                   args=["-m", "acor", "mcp"])
    async with Client(server) as client:
        print([t.name for t in (await client.list_tools()).tools])
anyio.run(main)
'''


def test_a_signature_acor_cannot_read_is_refused_with_reason_and_fix(
        project):
    (project.root / "tools" / "counted.py").write_text(REFUSED)
    doctor = acor(project, "doctor")
    assert "function counted() cannot be a tool: the default of 'n' is " \
        "not a literal (LIMIT)" in doctor.stdout
    assert "Write the default of 'n' as a literal value" in doctor.stdout
    done = acor(project, "counted")
    assert done.returncode == 2 and "E_INVALID_MANIFEST" in done.stdout
    fine = acor(project, "fine")
    assert fine.returncode == 0, fine.stdout
    assert "3" in fine.stdout


def test_an_edited_signature_is_read_again(project):
    path = project.root / "tools" / "grow.py"
    path.write_text('from acor import tool\n\n@tool\ndef grow(a: int) '
                    '-> int:\n    """Grow."""\n    return a\n')
    assert "usage: acor grow A" in acor(project, "grow", "--help").stdout
    path.write_text('from acor import tool\n\n@tool\ndef grow(a: int, '
                    'b: int) -> int:\n    """Grow more."""\n'
                    '    return a + b\n')
    assert "usage: acor grow A B" in acor(project, "grow", "--help").stdout
    assert "5" in acor(project, "grow", "2", "3").stdout


def test_the_ownership_rule_holds_for_the_source_file(project):
    path = project.root / "tools" / "shared.py"
    path.write_text('from acor import tool\n\n@tool\ndef shared() -> str:\n'
                    '    """Others could rewrite this."""\n'
                    '    return "ran"\n')
    path.chmod(0o666)
    done = acor(project, "shared")
    assert done.returncode == 2 and "ran" not in done.stdout
    assert "writable by" in done.stdout and "ACOR_TRUSTED" in done.stdout


def test_a_person_answers_a_human_only_argument_at_a_terminal(functions):
    victim = functions.root / "victim"
    victim.write_text("precious")
    refused = acor(functions, "remove", "victim", "--confirm")
    assert refused.returncode == 2 and victim.exists()
    term = Terminal(functions, "remove", "victim")
    shown = term.expect("[y/n]")
    assert "remove asks a person to approve" in shown
    assert "remove needs a person's answer: confirm (delete it for good)" \
        in shown
    term.type("y")
    assert term.finish() == 0, term.text
    assert "deleted victim" in term.text and not victim.exists()


def test_sdk_client_gets_schemas_progress_and_cannot_give_a_secret(
        functions):
    """Over a real `acor mcp` with the official client, both generations."""
    script = textwrap.dedent('''\
        import anyio, json, sys
        import mcp_types as types
        from mcp import Client, StdioServerParameters

        async def main(mode):
            server = StdioServerParameters(command=sys.executable,
                                           args=["-m", "acor", "mcp"])
            seen, asked = [], []

            async def person(ctx, params):
                asked.append(params.model_dump(mode="json"))
                return types.ElicitResult(action="decline")

            async def progress(value, total, message):
                seen.append(value)
            async with Client(server, mode=mode,
                              elicitation_callback=person) as client:
                tools = {t.name: t for t in
                         (await client.list_tools()).tools}
                stats = await client.call_tool(
                    "stats", {"n": 50, "dist": "gauss", "seed": 1},
                    progress_callback=progress)
                login = await client.call_tool(
                    "login", {"user": "ada", "token": "from-the-agent"})
            print(json.dumps({
                "input": tools["stats"].input_schema,
                "output": tools["stats"].output_schema,
                "summary": tools["summary"].output_schema,
                "remove": tools["remove"].output_schema,
                "login_input": tools["login"].input_schema,
                "stats": stats.structured_content, "progress": seen,
                "login_error": login.is_error,
                "login_text": [b.text for b in login.content
                               if b.type == "text"],
                "asked": asked}))

        anyio.run(main, sys.argv[1])
        ''')
    for mode in ("legacy", "auto"):
        done = subprocess.run([sys.executable, "-c", script, mode],
                              cwd=functions.root, env=functions.env,
                              capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, done.stderr[-3000:]
        seen = json.loads(done.stdout.splitlines()[-1])
        assert seen["input"]["required"] == ["n"]
        assert seen["input"]["properties"]["seed"] == {"type": "integer"}
        assert seen["output"] == {"type": "object"}
        assert seen["summary"] == {
            "type": "object", "required": ["word", "count", "tags"],
            "properties": {"word": {"type": "string"},
                           "count": {"type": "integer"},
                           "tags": {"type": "array",
                                    "items": {"type": "string"}}}}
        assert seen["remove"] is None  # it asks a person: no schema
        assert seen["stats"] == {"n": 50, "dist": "gauss", "seed": 1}
        assert seen["progress"] and seen["progress"][-1] == 100
        # The secret is no argument a client can give, nor a form field
        # (level "high": out of band only).
        assert "token" not in seen["login_input"]["properties"]
        assert seen["login_error"] is True and seen["asked"] == []
        assert "token: only a person may give this" in \
            seen["login_text"][0]


@pytest.mark.skipif(
    kernel.offers()["landlock"] < 1 or not kernel.offers()["namespaces"],
    reason="this kernel lacks Landlock or unprivileged namespaces")
def test_a_sandboxed_function_writes_only_inside_its_box(project):
    (project.root / "tools" / "writer.py").write_text(textwrap.dedent('''\
        from acor import tool

        @tool(sandbox={"write": ["out"], "network": False})
        def writer(path: str) -> str:
            """Write a file where it is told."""
            with open(path, "w") as f:
                f.write("pwned")
            return f"wrote {path}"
        '''))
    (project.root / "out").mkdir()
    inside = acor(project, "writer", "out/ok.txt")
    assert inside.returncode == 0, inside.stdout + inside.stderr
    assert (project.root / "out" / "ok.txt").read_text() == "pwned"
    outside = acor(project, "writer", "escaped.txt")
    assert outside.returncode == 1
    assert not (project.root / "escaped.txt").exists()
    assert "sandbox" in outside.stdout


def test_acor_new_function_passes_check_and_its_own_tests(project):
    made = acor(project, "new", "my-stats", "--function")
    assert made.returncode == 0, made.stdout + made.stderr
    source = project.root / "tools" / "my_stats.py"
    lines = [line for line in source.read_text().splitlines()
             if line.strip()]
    assert "@tool(" in source.read_text()
    checked = acor(project, "check", "my-stats")
    assert checked.returncode == 0, checked.stdout
    assert "my-stats conforms (2 example(s) run)." in checked.stdout
    tested = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-p", "no:xdist", "-p", "no:hypothesispytest",
         "tools/test_my_stats.py"], cwd=project.root, env=project.env,
        capture_output=True, text=True, timeout=180)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "3 passed" in tested.stdout
    assert lines  # the file is the whole tool: no manifest beside it
    assert not (project.root / "tools" / "my-stats").exists()
    again = acor(project, "new", "my-stats", "--function")
    assert again.returncode == 2 and "already exists" in again.stdout


def _doc_blocks():
    """The code blocks of docs/authoring.md marked ``<!-- tool: X -->``."""
    import re
    from conftest import REPO
    text = (REPO / "docs" / "authoring.md").read_text()
    return dict(re.findall(r"<!-- tool: (\w+) -->\n```\w+\n(.*?)```", text,
                           re.S))


def _counted(code):
    return sum(1 for line in code.splitlines() if line.strip())


def test_the_docs_function_tool_is_15_lines_and_answers_as_the_class(
        project):
    blocks = _doc_blocks()
    assert _counted(blocks["function"]) <= 15
    from conftest import REPO
    doc = (REPO / "docs" / "authoring.md").read_text()
    assert f"| acor function | 1 | {_counted(blocks['function'])} |" in doc
    assert (f"| acor class + manifest | 2 | {_counted(blocks['class'])} + "
            f"{_counted(blocks['manifest'])} = "
            f"{_counted(blocks['class']) + _counted(blocks['manifest'])} |"
            in doc)
    (project.root / "tools" / "stats.py").write_text(blocks["function"])
    folder = project.root / "tools" / "cstats"
    folder.mkdir()
    (folder / "cli.py").write_text(blocks["class"])
    manifest = json.loads(blocks["manifest"])
    manifest["name"] = "cstats"
    (folder / "manifest.json").write_text(json.dumps(manifest))
    answers = []
    for name in ("stats", "cstats"):
        done = acor(project, "--format", "json", name, "10000", "--dist",
                    "gauss", "--seed", "3")
        assert done.returncode == 0, done.stdout + done.stderr
        answers.append(data_of(done))
    assert answers[0] == answers[1] and answers[0]["n"] == 10000


def test_a_human_only_default_asks_but_none_lets_the_function_decide(
        functions):
    asked = acor(functions, "--format", "json", "call", "approve",
                 json.dumps({"path": "p"}))
    assert asked.returncode == 3, asked.stdout
    assert result_line(asked)["state"] == "input_needed"
    assert "approve needs a person's answer: ok" in asked.stdout
    decided = acor(functions, "note")
    assert decided.returncode == 0, decided.stdout + decided.stderr
    assert "note: None" in decided.stdout
