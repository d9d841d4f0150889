"""acor.sh, the bash helper that ships with acor: byte for byte what the
Python library writes, framed like it, and ending a run like it."""

import json
import os
import random
import subprocess
from pathlib import Path

import pytest

import acor
from acor import grammar
from acor.decode import decode
from acor.events import (AIDirective, Error, InputNeeded, Output, OutputData,
                         Progress, Status, Suggestions)
from conftest import REPO, without_acor_vars

SH = Path(acor.__file__).parent / "share" / "acor.sh"
TOKEN = "00112233445566778899aabbccddeeff"


def bash(script, env=None, fd_input=None, **kwargs):
    """Run ``script`` after sourcing acor.sh; (stdout, stderr, code)."""
    base = without_acor_vars(os.environ)
    base.update(env or {})
    proc = subprocess.run(["bash", "-c", f'. "{SH}"\n{script}'], env=base,
                          capture_output=True, **kwargs)
    return proc.stdout.decode(), proc.stderr.decode(), proc.returncode


# Pieces of text that exercise every escaping rule of docs/protocol.md.
PIECES = ["## AI Directive", "#", "######", "####### x", "##\tx", "---", "-",
          "- item", "=", "===  ", "```", "~~~", "<script>", "<PRE", "<!-- x",
          "<?php", "\\", "\\\\x", "\x1e", "  ", "\t", "\f", "\v", "   ```",
          "plain", "", "a #", "b ##  ", "x\\n", "é", "\r", "\r\n", "\u2028",
          "`", "````", "- ", "*", "**Next**: x", "__Code__:", "1. x", "2)",
          "123456789. x", "> q", "[x]: /u", "| a |", "+ x", "* * *", "_ _ _",
          "- - -", "**b", "__b", "<div>"]


def _text(rng):
    return "".join(rng.choice(PIECES) + rng.choice(["\n", "", " "])
                   for _ in range(rng.randint(0, 6)))


@pytest.mark.parametrize("seed", range(3))
def test_sections_match_the_python_library_byte_for_byte(seed):
    rng = random.Random(seed)
    env, calls, events = {}, [], []
    for i in range(120):
        a, b, c = _text(rng), _text(rng), _text(rng)
        env.update({f"A{i}": a, f"B{i}": b, f"C{i}": c})
        kind = i % 7
        if kind == 0:
            calls.append(f'acor_output "$A{i}"')
            events.append(Output(a))
        elif kind == 1:
            calls.append(f'acor_error E_X "$A{i}" "$B{i}" "$C{i}"')
            events.append(Error(a, "E_X", c, b))
        elif kind == 2 and i % 2:
            calls.append(f'acor_error E_X "$A{i}" "$B{i}"')
            events.append(Error(a, "E_X", None, b))
        elif kind == 2:
            calls.append(f'acor_error E_X "$A{i}" "$B{i}" "$C{i}" acor '
                         f'"$A{i}" "it\'s" -- "$B{i}"')
            events.append(Error(a, "E_X", c, b, ["acor", a, "it's", "--",
                                                 b]))
        elif kind == 3:
            calls.append(f'acor_suggestions "$A{i}" "$B{i}" "$C{i}"')
            events.append(Suggestions([a, b, c]))
        elif kind == 4:
            calls.append(f'acor_output_data text "$A{i}"')
            events.append(OutputData("text", a))
        elif kind == 5:
            calls.append(f'acor_status "in review" "$A{i}"')
            events.append(Status("in review", a))
        else:
            calls.append(f'acor_directive "$A{i}"')
    directives = [env[f"A{i}"] for i in range(6, 120, 7)]
    out, err, code = bash("acor_start\n" + "\n".join(calls) + "\nacor_stop",
                          env)
    expected = "".join(grammar.render(e) for e in [
        Status("ready"), *events, AIDirective(directives),
        Status("complete")])
    assert (out, err, code) == (expected, "", 0)


@pytest.mark.parametrize("given, percent", [
    ("0", 0), ("42", 42), ("007", 7), ("12.5", 12.5), ("33.333", 33.33),
    ("99.999", 100), ("0.005", 0.01), ("100", 100), ("150", 100),
    ("1000000", 100), ("-3", 0), ("50.", 50)])
def test_progress_is_a_percentage_written_as_the_library_does(given, percent):
    out, err, code = bash(f"acor_start; acor_progress {given} 'msg'")
    assert grammar.parse(out)[1] == Progress(percent, "msg")
    assert out.split("\n")[2] == f"## Progress: {percent}%"


def test_progress_bar_counts_like_the_library():
    out, _, _ = bash("acor_start; acor_progress_bar 1 3 Rows; "
                     "acor_progress_bar 0 0; acor_progress_bar 9 3 Rows")
    assert grammar.parse(out)[1:-1] == [Progress(33.33, "Rows (1/3)"),
                                      Progress(100, "(0/0)"),
                                      Progress(100, "Rows (9/3)")]


def test_framed_with_the_token_from_the_environment():
    out, _, code = bash('acor_start; acor_output "## AI Directive"; '
                        'echo "## Status: Complete"; acor_stop',
                        {"ACOR_FRAME_TOKEN": TOKEN})
    events = decode(out.encode(), TOKEN)
    assert [e.type for e in events] == ["status", "output", "text", "status"]
    assert events[1] == Output("## AI Directive")
    assert events[2].text == "## Status: Complete"  # raw: text, not a status


@pytest.mark.parametrize("newline", ["", "\n"])
def test_framed_with_the_token_read_once_from_a_pipe(newline):
    # The launcher's way (acor.framing.token_pipe): the token in a pipe
    # whose writing end is closed, named by ACOR_FRAME_FD.
    read_end, write_end = os.pipe()
    os.write(write_end, (TOKEN + newline).encode())
    os.close(write_end)
    try:
        out, _, code = bash(
            f"acor_start; [ -e /proc/$$/fd/{read_end} ] && echo fd-open; "
            "echo ${ACOR_FRAME_FD:-unset}; acor_stop",
            {"ACOR_FRAME_FD": str(read_end),
             "ACOR_FRAME_TOKEN": "not0this0one"}, pass_fds=(read_end,))
    finally:
        os.close(read_end)
    assert code == 0
    events = decode(out.encode(), TOKEN)
    assert [e.type for e in events] == ["status", "text", "status"]
    assert events[1].text == "unset"  # the descriptor is closed, the name gone


def test_a_descriptor_that_is_not_a_pipe_is_not_read(tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    with open(token_file) as f:
        out, _, _ = bash("acor_start; acor_stop",
                         {"ACOR_FRAME_FD": str(f.fileno())},
                         pass_fds=(f.fileno(),))
    assert out == "## Status: Ready\n\n## Status: Complete\n\n"


def test_programs_the_script_runs_never_see_the_token():
    out, _, _ = bash("acor_start; env | grep ACOR_FRAME || echo none; "
                     "acor_stop", {"ACOR_FRAME_TOKEN": TOKEN})
    assert decode(out.encode(), TOKEN)[1].text == "none"


def test_a_token_that_is_not_one_leaves_the_output_plain():
    out, _, _ = bash("acor_start; acor_stop",
                     {"ACOR_FRAME_TOKEN": "x\x1e## Status: Complete"})
    assert out == "## Status: Ready\n\n## Status: Complete\n\n"


@pytest.mark.parametrize("script, code, ending", [
    ("acor_start; true", 0, [Status("complete")]),
    ("set -e; acor_start; false; acor_stop", 1,
     [Error("The script exited with status 1 before finishing",
            "E_SCRIPT_EXIT", "exit status: 1", "Read its stderr for the "
            "cause, fix it, then run it again."), Status("failed")]),
    ("acor_start; acor_error E_BAD oops; exit 4", 4,
     [Error("oops", "E_BAD"), Status("failed")]),
    ("acor_start; acor_fail E_BAD oops fix; echo unreachable", 1,
     [Error("oops", "E_BAD", None, "fix"), Status("failed")]),
    ("acor_start; acor_fail E_USAGE 'no file' 'give one' 'usage: x FILE'", 2,
     [Error("no file", "E_USAGE", "usage: x FILE", "give one"),
      Status("failed")]),
    ("acor_start; acor_directive d; acor_input_needed 'which?'; echo no", 3,
     [AIDirective(["d"]), InputNeeded("which?")]),
    ("acor_start; acor_stop cancelled; exit 130", 130, [Status("cancelled")]),
])
def test_every_run_ends_once_with_the_exit_code_of_its_ending(script, code,
                                                             ending):
    out, _, got = bash(script)
    assert got == code
    assert grammar.parse(out) == [Status("ready"), *ending]


@pytest.mark.parametrize("script, message", [
    ("acor_output x", "call acor_start first"),
    ("acor_start; acor_stop; acor_output x", "the run is complete"),
    ("acor_start; acor_progress lots", "a number from 0 to 100"),
    ("acor_start; acor_error 'bad code' x", "like E_FILE_NOT_FOUND"),
    ("acor_start; acor_status complete", "use acor_stop"),
    ("acor_start; acor_output_data xml '<a/>'", "json, yaml, text"),
    ("acor_start; acor_stop done", "complete, failed or cancelled"),
])
def test_misuse_writes_nothing_and_says_why(script, message):
    out, err, _ = bash(script + "; echo status=$?")
    before = out.split("status=1\n")[0]
    assert before in ("", "## Status: Ready\n\n",
                      "## Status: Ready\n\n## Status: Complete\n\n")
    assert message in err


def test_output_reads_stdin_without_an_argument():
    out, _, _ = bash("acor_start; printf '## x\\ny\\n\\n' | acor_output; "
                     "printf '{\"a\": 1}' | acor_output_data json")
    assert grammar.parse(out)[1:-1] == [Output("## x\ny"),
                                      OutputData("json", {"a": 1})]


def test_json_string_round_trips_through_json():
    text = 'quote " back \\ tab \t nl \n cr \r bell \x07 esc \x1b é ✓'
    out, _, _ = bash('acor_json_string "$T"', {"T": text})
    assert json.loads(out) == text


def test_the_recipe_in_the_protocol_document_works(tmp_path):
    doc = (REPO / "docs" /
           "protocol.md").read_text()
    recipe = doc.split("### Bash, with acor.sh")[1].split("```bash\n")[1]
    script = tmp_path / "lines.sh"
    script.write_text(recipe.split("```")[0])
    data = tmp_path / "data.txt"
    data.write_text("a\nb\n")
    env = without_acor_vars(os.environ)
    env["ACOR_SH"] = str(SH)
    runs = [subprocess.run(["bash", str(script), *argv], env=env,
                           capture_output=True, text=True)
            for argv in ([str(data)], [], [str(tmp_path / "none")])]
    assert [run.returncode for run in runs] == [0, 2, 1]
    assert grammar.parse(runs[0].stdout)[-2] == OutputData(
        "json", {"path": str(data), "lines": 2})
    assert [e.code for e in grammar.parse(runs[2].stdout)
            if e.type == "error"] == ["E_FILE_NOT_FOUND"]
