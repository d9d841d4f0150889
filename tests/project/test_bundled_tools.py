"""The bundled tools (tools/hello, tools/csvprofile), run as real processes.

Each test runs a tool's script with the interpreter running the tests and
reads its ACOR Markdown on stdout with the small parser below (on purpose
not acor.grammar: these tests check what an agent would actually read).
"""

import csv
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO
HELLO = REPO / "tools" / "hello" / "hello.py"
CSVPROFILE = REPO / "tools" / "csvprofile" / "csvprofile.py"
SAMPLE = REPO / "tools" / "csvprofile" / "sample" / "orders.csv"


def run(script, *args, cwd=REPO, **more_env):
    env = dict(os.environ, **more_env)
    env.pop("ACOR_FRAME_TOKEN", None)  # run directly: plain, unframed ACOR Markdown
    return subprocess.run([sys.executable, str(script), *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


def sections(stdout):
    """[(heading, body)] for every `## ` heading, body without trailing blanks."""
    parts = re.split(r"^## (.*)\n", stdout, flags=re.M)
    assert parts[0] == "", f"text before the first section: {parts[0]!r}"
    return [(h, b.rstrip("\n")) for h, b in zip(parts[1::2], parts[2::2])]


def headings(stdout):
    return [h for h, _ in sections(stdout)]


def body(stdout, heading):
    found = [b for h, b in sections(stdout) if h == heading or h.startswith(heading + ":")]
    assert len(found) == 1, f"expected one {heading!r} section in:\n{stdout}"
    return found[0]


def fenced_json(text):
    """The JSON in a ```json fenced block."""
    m = re.search(r"^(`{3,})json\n(.*?)^\1$", text, flags=re.M | re.S)
    assert m, f"no ```json block in:\n{text}"
    return json.loads(m.group(2))


def percents(stdout):
    return [float(m) for m in re.findall(r"^## Progress: ([\d.]+)%$", stdout, flags=re.M)]


def write(path, text, encoding="utf-8"):
    path.write_bytes(text.encode(encoding) if isinstance(text, str) else text)
    return path


# --- hello --------------------------------------------------------------------

def test_hello_sections_in_order():
    r = run(HELLO)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    assert headings(r.stdout) == ["Status: Ready", "Progress: 50%", "Progress: 100%",
                                  "Output", "Suggestions", "Status: Complete"]
    assert body(r.stdout, "Output") == "Hello, World!"
    assert body(r.stdout, "Suggestions").startswith("- ")


def test_hello_name_and_steps():
    # Run directly, progress within 0.1 s of the last is held: 0.2 s apart,
    # every step is written.
    r = run(HELLO, "Ada Lovelace", "--steps", "4", "--delay", "0.2")
    assert r.returncode == 0, r.stderr
    assert percents(r.stdout) == [25, 50, 75, 100]
    assert body(r.stdout, "Output") == "Hello, Ada Lovelace!"
    assert headings(r.stdout)[-1] == "Status: Complete"
    r = run(HELLO, "--steps", "1000")  # at once: the first and the last
    assert percents(r.stdout)[0] < 1 and percents(r.stdout)[-1] == 100
    assert len(percents(r.stdout)) <= 10


@pytest.mark.parametrize("args, code, last, needle", [
    (["--fail"], 1, "Status: Failed", "**Code**: E_REQUESTED_FAILURE"),
    (["--fail"], 1, "Status: Failed", "**Next**: acor hello World\n"),
    (["--ask"], 3, "Input Needed", "acor hello World"),
    (["--ask"], 3, "Input Needed", "**Next**: acor hello World\n"),
    (["--steps", "0"], 2, "Status: Failed", "**Next**: acor hello --steps 1\n"),
    (["--steps", "zero"], 2, "Status: Failed", "**Next**: acor hello --help\n"),
    (["--bogus"], 2, "Status: Failed", "**Code**: E_USAGE"),
])
def test_hello_other_endings(args, code, last, needle):
    r = run(HELLO, *args)
    assert r.returncode == code
    assert headings(r.stdout)[0] == "Status: Ready"
    assert headings(r.stdout)[-1] == last
    assert needle in r.stdout


def test_hello_help_is_output_not_failure():
    r = run(HELLO, "--help")
    assert r.returncode == 0
    assert "usage: acor hello" in body(r.stdout, "Output")


# --- csvprofile on the shipped sample ---------------------------------------------

def expected_duplicates(path, key):
    """Duplicates of `key` computed independently: {value: [physical lines]}."""
    seen = {}
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        line = reader.line_num
        for row in reader:
            seen.setdefault(row[key], []).append(line + 1)
            line = reader.line_num
    return {v: lines for v, lines in seen.items() if len(lines) > 1}


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("profile")
    r = run(CSVPROFILE, SAMPLE, "--out", out)
    assert r.returncode == 0, r.stdout + r.stderr
    return r, out


def test_sample_sections_and_progress(sample_run):
    r, _ = sample_run
    hs = headings(r.stdout)
    assert hs[:2] == ["Status: Ready", "Status: Working"]
    assert hs[-1] == "Status: Complete"
    assert "Error" not in " ".join(hs) and r.stderr == ""
    pct = percents(r.stdout)
    assert len(pct) >= 2 and pct[-1] == 100  # run directly, 0.1 s apart at most
    assert pct == sorted(set(pct)), f"progress must strictly increase: {pct}"
    # progress is about the bytes actually read: its messages count them
    last_progress = body(r.stdout, "Progress: 100%")
    assert f"{SAMPLE.stat().st_size / 1024:.1f} KB of" in last_progress
    assert "200 rows" in last_progress
    # all progress comes before the results, directives just before the end
    assert hs.index("Output Data") > max(i for i, h in enumerate(hs) if h.startswith("Progress"))
    assert hs[-3:] == ["Suggestions", "AI Directive", "Status: Complete"]


def test_sample_output_data(sample_run):
    r, out = sample_run
    data = fenced_json(body(r.stdout, "Output Data"))
    with open(SAMPLE, newline="", encoding="utf-8") as f:
        header = next(csv.reader(f))
    assert data["rows"] == 200 and data["column_count"] == len(header) == 11
    assert [c["name"] for c in data["columns"]] == header
    assert data["delimiter"] == ","
    # the id-like, nearly unique order_id is picked without asking
    assert (data["key"], data["key_chosen"]) == ("order_id", "auto")
    dups = expected_duplicates(SAMPLE, "order_id")
    assert len(dups) == 3 and data["duplicate_keys"] == 3
    assert {d["value"]: d["lines"] for d in data["duplicates"]} == dups
    cols = {c["name"]: c for c in data["columns"]}
    assert cols["unit_price"]["type"] == "float" and cols["unit_price"]["nulls"] == 3
    assert cols["customer_id"]["nulls"] == 2
    assert cols["order_date"]["type"] == "date"
    assert cols["order_date"]["min"] <= cols["order_date"]["max"]
    assert cols["status"]["distinct"] == 4
    assert cols["quantity"]["type"] == "string"  # one "two" among the numbers
    assert Path(data["profile"]) == out / "orders.profile.json"


def test_sample_profile_file_matches(sample_run):
    r, out = sample_run
    data = fenced_json(body(r.stdout, "Output Data"))
    path = out / "orders.profile.json"
    profile = json.loads(path.read_text(encoding="utf-8"))
    assert profile["rows"] == data["rows"]
    assert [c["name"] for c in profile["columns"]] == [c["name"] for c in data["columns"]]
    assert profile["key"]["duplicates"] == data["duplicates"]
    assert profile["sha256"] == hashlib.sha256(SAMPLE.read_bytes()).hexdigest()
    assert profile["bytes"] == SAMPLE.stat().st_size
    quantity = next(c for c in profile["columns"] if c["name"] == "quantity")
    assert quantity["mostly"]["type"] == "numeric"
    assert quantity["mostly"]["exceptions"] == [{"line": 122, "value": "two"}]
    status = next(c for c in profile["columns"] if c["name"] == "status")
    assert sum(n for _, n in status["top_values"]) == 200
    # Output Files announces that file with its real size and digest
    files = body(r.stdout, "Output Files")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    assert f"`{path}` [{path.stat().st_size} bytes, sha256 {digest}]" in files


def test_sample_directives_name_rows_to_review(sample_run):
    r, _ = sample_run
    directive = body(r.stdout, "AI Directive")
    for value, lines in expected_duplicates(SAMPLE, "order_id").items():
        assert f"{value} (lines {', '.join(map(str, lines))})" in directive
    assert "quantity" in directive and "line 122: 'two'" in directive
    assert "Deduplicate" in body(r.stdout, "Suggestions")


def test_sample_is_reproducible(tmp_path):
    script = REPO / "tools" / "csvprofile" / "sample" / "make_orders.py"
    (tmp_path / "make_orders.py").write_bytes(script.read_bytes())
    subprocess.run([sys.executable, "make_orders.py"], cwd=tmp_path, check=True)
    assert (tmp_path / "orders.csv").read_bytes() == SAMPLE.read_bytes()


def test_default_out_dir_is_relative_to_cwd(tmp_path):
    r = run(CSVPROFILE, SAMPLE, cwd=tmp_path)
    assert r.returncode == 0, r.stdout
    assert (tmp_path / "acor-out" / "orders.profile.json").is_file()
    assert "`acor-out/orders.profile.json`" in body(r.stdout, "Output Files")


def test_given_key_and_no_key(tmp_path):
    r = run(CSVPROFILE, SAMPLE, "--key", "customer_id", "--out", tmp_path)
    data = fenced_json(body(r.stdout, "Output Data"))
    assert (data["key"], data["key_chosen"], data["null_keys"]) == ("customer_id", "given", 2)
    assert data["duplicate_keys"] == len(expected_duplicates(SAMPLE, "customer_id")) - 1  # ""
    assert "empty customer_id" in body(r.stdout, "AI Directive")
    r = run(CSVPROFILE, SAMPLE, "--no-key", "--out", tmp_path)
    data = fenced_json(body(r.stdout, "Output Data"))
    assert r.returncode == 0 and data["key"] is None and data["duplicate_keys"] == 0


# --- csvprofile: choosing the key --------------------------------------------------

def test_ambiguous_key_asks_with_exact_command(tmp_path):
    # both id-like and (nearly: 9 of 10) unique, so neither is the obvious key
    rows = [(n, 100 + i, i) for i, n in enumerate([1, 2, 3, 4, 5, 6, 7, 8, 9, 2])]
    data = write(tmp_path / "two_ids.csv", "order_id,invoice_id,amount\n"
                 + "".join(f"{a},{b},{c}\n" for a, b, c in rows))
    out = tmp_path / "out"
    r = run(CSVPROFILE, data, "--out", out)
    assert r.returncode == 3, r.stdout
    hs = headings(r.stdout)
    assert hs[-1] == "Input Needed" and not any(h.startswith("Status: Comp") for h in hs)
    message = body(r.stdout, "Input Needed")
    assert "- order_id\n- invoice_id" in message
    # what is needed, as data, and the command that takes the answer
    fields = json.loads(re.search(r"^\*\*Fields\*\*: (.*)$", message, re.M).group(1))
    assert fields["key"]["enum"] == ["order_id", "invoice_id"]
    assert f"**Next**: acor csvprofile {data} --out {out} --key '<KEY>'\n" in message + "\n"
    assert not out.exists()  # nothing is written before the choice is made
    # the command in the message works once the column is filled in
    command = next(ln for ln in message.splitlines() if "--key" in ln)
    argv = shlex.split(command.replace("<KEY>", "order_id"))
    assert argv[:3] == ["acor", "csvprofile", str(data)]
    r = run(CSVPROFILE, *argv[2:])
    assert r.returncode == 0, r.stdout
    summary = fenced_json(body(r.stdout, "Output Data"))
    assert summary["key"] == "order_id" and summary["duplicates"] == [
        {"value": "2", "lines": [3, 11]}]
    assert (out / "two_ids.profile.json").is_file()


def test_no_id_column_asks_with_unique_candidates(tmp_path):
    data = write(tmp_path / "people.csv", "email,city\na@x.org,Paris\nb@x.org,Paris\n")
    r = run(CSVPROFILE, data, "--out", tmp_path)
    assert r.returncode == 3
    message = body(r.stdout, "Input Needed")
    assert "- email" in message and "- city" not in message
    assert "--no-key" in message


def test_column_named_id_wins(tmp_path):
    data = write(tmp_path / "t.csv", "id,user_id,x\n1,7,a\n2,8,b\n3,9,c\n")
    r = run(CSVPROFILE, data, "--out", tmp_path)
    assert r.returncode == 0, r.stdout
    assert fenced_json(body(r.stdout, "Output Data"))["key"] == "id"


def test_unknown_key_column(tmp_path):
    data = write(tmp_path / "t.csv", "order_id,x\n1,a\n")
    r = run(CSVPROFILE, data, "--key", "Order_ID", "--out", tmp_path)
    assert r.returncode == 1
    err = body(r.stdout, "Error")
    assert "**Code**: E_KEY_NOT_FOUND" in err and "--key order_id" in err
    assert headings(r.stdout)[-1] == "Status: Failed"


# --- csvprofile: failures ---------------------------------------------------

def test_missing_file(tmp_path):
    r = run(CSVPROFILE, "no/such/data.csv", "--out", tmp_path / "out", cwd=tmp_path)
    assert r.returncode == 1
    hs = headings(r.stdout)
    assert hs == ["Status: Ready", "Error: Cannot find no/such/data.csv", "Status: Failed"]
    err = body(r.stdout, "Error")
    assert "**Code**: E_FILE_NOT_FOUND" in err
    assert "**Recovery**:" in err and "acor csvprofile" in err
    assert not (tmp_path / "out").exists()


def test_missing_file_suggests_near_match(tmp_path):
    write(tmp_path / "orders.csv", "id\n1\n")
    r = run(CSVPROFILE, "order.csv", cwd=tmp_path)
    assert r.returncode == 1
    assert "If you meant orders.csv, run: acor csvprofile orders.csv" in body(r.stdout, "Error")


def test_unterminated_quote_is_a_parse_error_with_line(tmp_path):
    data = write(tmp_path / "bad.csv", 'a,b\n1,2\n3,"four\n5,6\n')
    r = run(CSVPROFILE, data, "--out", tmp_path)
    assert r.returncode == 1
    title, err = next((h, b) for h, b in sections(r.stdout) if h.startswith("Error"))
    assert "**Code**: E_CSV_PARSE" in err
    assert "line 4" in title and "line 3-4" in err  # the record starts at 3, ends at EOF
    assert headings(r.stdout)[-1] == "Status: Failed"


def test_ragged_rows_are_all_reported(tmp_path):
    data = write(tmp_path / "ragged.csv", "a,b,c\n1,2,3\n4,5\n6,7,8\n9,10,11,12\n")
    r = run(CSVPROFILE, data, "--out", tmp_path)
    assert r.returncode == 1
    err = body(r.stdout, "Error")
    assert "**Code**: E_CSV_PARSE" in err
    assert "line 3: 2 fields; line 5: 4 fields" in err


@pytest.mark.parametrize("content, code", [
    (b"", "E_CSV_EMPTY"),
    (b"\n\n", "E_CSV_EMPTY"),
    (b"id,name\n1,caf\xe9\n", "E_CSV_ENCODING"),
])
def test_other_file_errors(tmp_path, content, code):
    data = write(tmp_path / "f.csv", content)
    r = run(CSVPROFILE, data, "--out", tmp_path)
    assert r.returncode == 1
    assert f"**Code**: {code}" in body(r.stdout, "Error")


def test_usage_errors_and_help():
    r = run(CSVPROFILE)
    assert r.returncode == 2 and "**Code**: E_USAGE" in body(r.stdout, "Error")
    r = run(CSVPROFILE, SAMPLE, "--delimiter", "::")
    assert r.returncode == 2 and "**Code**: E_USAGE" in body(r.stdout, "Error")
    r = run(CSVPROFILE, "--help")
    assert r.returncode == 0 and "--key COLUMN" in body(r.stdout, "Output")
    r = run(CSVPROFILE, SAMPLE, "--key", "id", "--no-key")
    assert r.returncode == 2 and "cannot be used together" in r.stdout
    assert headings(r.stdout)[-1] == "Status: Failed"


# --- csvprofile: formats ------------------------------------------------------

def test_delimiter_is_detected_and_encoding_option(tmp_path):
    data = write(tmp_path / "semi.csv", "id;name;price\n1;Café;2,5\n2;Thé;3\n", "latin-1")
    r = run(CSVPROFILE, data, "--encoding", "latin-1", "--out", tmp_path)
    assert r.returncode == 0, r.stdout
    summary = fenced_json(body(r.stdout, "Output Data"))
    assert summary["delimiter"] == ";" and summary["column_count"] == 3
    profile = json.loads(Path(summary["profile"]).read_text(encoding="utf-8"))
    names = next(c for c in profile["columns"] if c["name"] == "name")
    assert [v for v, _ in names["top_values"]] == ["Café", "Thé"]


def test_quoted_multiline_fields_and_types(tmp_path):
    data = write(tmp_path / "t.csv", 'id,note,n,flag,when\r\n'
                 '1,"two\r\nlines",1.5,yes,2024-01-02\r\n2,"a, b",2,no,2024-02-30\r\n'
                 '3,,NA,true,2024-03-04T10:00:00\r\n')
    r = run(CSVPROFILE, data, "--out", tmp_path)
    assert r.returncode == 0, r.stdout
    cols = {c["name"]: c for c in fenced_json(body(r.stdout, "Output Data"))["columns"]}
    assert {n: c["type"] for n, c in cols.items()} == {
        "id": "int", "note": "string", "n": "float", "flag": "bool", "when": "string"}
    assert cols["n"]["nulls"] == 1 and cols["n"]["mean"] == 1.75
    assert cols["note"]["nulls"] == 1


def test_many_distinct_values_are_bounded(tmp_path):
    rows = "".join(f"{i},v{i}\n" for i in range(10_050))
    data = write(tmp_path / "wide.csv", "row_id,value\n" + rows)
    r = run(CSVPROFILE, data, "--out", tmp_path)
    assert r.returncode == 0, r.stdout
    summary = fenced_json(body(r.stdout, "Output Data"))
    cols = {c["name"]: c for c in summary["columns"]}
    assert cols["value"]["distinct"] == ">10000"
    assert summary["key"] == "row_id" and summary["duplicate_keys"] == 0  # keys stay exact
    assert len(percents(r.stdout)) >= 2 and percents(r.stdout)[-1] == 100


# --- the engine: its state is ready for checkpoints ------------------------------

def test_engine_state_survives_a_json_round_trip_mid_file():
    sys.path.insert(0, str(CSVPROFILE.parent))
    try:
        import profiler
    finally:
        sys.path.remove(str(CSVPROFILE.parent))

    def profile(resume):
        f = open(SAMPLE, "rb")
        source = profiler.Source(f, "utf-8-sig")
        records = csv.reader(source, strict=True)
        state = profiler.new_state(profiler.read_header(records, source), [0], source)
        while profiler.profile_chunk(records, source, state, 37, float("inf")):
            if resume:  # as a resumed run would: reload the state, seek, carry on
                state = json.loads(json.dumps(state))
                f.close()
                f = open(SAMPLE, "rb")
                f.seek(state["offset"])
                source = profiler.Source(f, "utf-8-sig")
                source.offset, source.line = state["offset"], state["line"]
                records = csv.reader(source, strict=True)
        f.close()
        return state

    assert profile(resume=True) == profile(resume=False)


def test_blank_and_repeated_header_names_get_their_own_column_number(tmp_path):
    data = write(tmp_path / "h.csv", ",b,,b\n1,2,3,4\n")
    r = run(CSVPROFILE, data, "--no-key", "--out", tmp_path)
    assert r.returncode == 0, r.stdout
    columns = fenced_json(body(r.stdout, "Output Data"))["columns"]
    assert [c["name"] for c in columns] == ["column_1", "b", "column_3", "b_4"]


def test_engine_resume_source_rehashes_the_prefix():
    sys.path.insert(0, str(CSVPROFILE.parent))
    try:
        import profiler
    finally:
        sys.path.remove(str(CSVPROFILE.parent))
    raw = SAMPLE.read_bytes()
    with open(SAMPLE, "rb") as f:  # one pass, resumed after every chunk
        source = profiler.Source(f, "utf-8-sig")
        records = csv.reader(source, strict=True)
        state = profiler.new_state(profiler.read_header(records, source), [0], source)
        beats, more = [], True
        while more:
            more = profiler.profile_chunk(records, source, state, 23, float("inf"))
            assert source.offset == state["offset"]  # a record boundary
            saved = source.sha256.hexdigest()
            state = json.loads(json.dumps(state))
            source, prefix = profiler.resume_source(f, "utf-8-sig", state,
                                                    on_block=lambda: beats.append(1))
            assert prefix == saved == hashlib.sha256(raw[:state["offset"]]).hexdigest()
            records = csv.reader(source, strict=True)
    assert state["rows"] == 200 and beats == []  # no heartbeat under 16 MB
    assert source.sha256.hexdigest() == hashlib.sha256(raw).hexdigest()
    with open(SAMPLE, "rb") as f, pytest.raises(ValueError, match="shorter"):
        profiler.resume_source(f, "utf-8", dict(state, offset=len(raw) + 1))


# --- csvprofile: resumable runs (end to end in test_resumable_runs.py) -----------------

def test_session_run_checkpoints_every_chunk_and_profiles_the_same(tmp_path):
    r = run(CSVPROFILE, SAMPLE, "--session", "s1", "--chunk-rows", "50",
            "--out", tmp_path / "a", ACOR_STATE_DIR=str(tmp_path / "state"))
    assert r.returncode == 0, r.stdout
    hs = headings(r.stdout)
    assert hs[:3] == ["Status: Ready", "Session: s1", "Status: Working"]
    assert "Session s1 has no checkpoint yet: starting at byte 0" in r.stdout
    ids = [h.split(": ")[1] for h in hs if h.startswith("Session Checkpoint")]
    offsets = [int(i.split("-")[1]) for i in ids]
    assert len(ids) >= 4 and offsets == sorted(set(offsets))
    assert offsets[-1] == SAMPLE.stat().st_size
    assert "<!-- acor:heartbeat -->" not in r.stdout  # a short run needs none
    # the last checkpoint is the state and the identity of the file it read
    saved = json.loads((tmp_path / "state" / "csvprofile" / "s1.json").read_text())
    last = saved["checkpoints"][ids[-1]]["state"]
    stat = SAMPLE.stat()
    assert last["file"] == {"path": os.path.realpath(SAMPLE), "size": stat.st_size,
                            "mtime_ns": stat.st_mtime_ns}
    assert last["sha256_prefix"] == hashlib.sha256(SAMPLE.read_bytes()).hexdigest()
    assert (last["delimiter"], last["engine"]["rows"]) == (",", 200)
    assert run(CSVPROFILE, SAMPLE, "--out", tmp_path / "b").returncode == 0
    assert (tmp_path / "a" / "orders.profile.json").read_text() == \
        (tmp_path / "b" / "orders.profile.json").read_text()


def test_session_state_defaults_to_acor_state_under_the_cwd(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "ACOR_STATE_DIR"}
    r = subprocess.run([sys.executable, str(CSVPROFILE), str(SAMPLE), "--session", "d",
                        "--out", "o"], cwd=tmp_path, capture_output=True, text=True,
                       env=env, timeout=60)
    assert r.returncode == 0, r.stdout
    assert (tmp_path / ".acor" / "state" / "csvprofile" / "d.json").is_file()


def test_session_option_in_help_and_hidden_test_options_not():
    r = run(CSVPROFILE, "--help")
    text = body(r.stdout, "Output")
    assert "--session ID" in text
    assert "--slow" not in text and "--chunk-rows" not in text


def test_unusable_state_dir_is_an_error_with_the_fix(tmp_path):
    not_a_dir = write(tmp_path / "file", "x")
    r = run(CSVPROFILE, SAMPLE, "--session", "s", "--out", tmp_path,
            ACOR_STATE_DIR=str(not_a_dir))
    assert r.returncode == 1
    err = body(r.stdout, "Error")
    assert "**Code**: E_STATE_READ" in err and "state_dir" in err
    assert "--session s" in err and "Traceback" not in r.stdout


# --- what an agent is told to run next (events, in process) ----------------------
# The wire form of `next` and `fields` belongs to the grammar; here the tools
# run in this process and the events they emit are read before rendering.

@pytest.fixture
def run_inprocess(monkeypatch, tmp_path):
    """run(script, *argv) -> (exit code, [events]) with the tool run here."""
    import contextlib
    import io
    import runpy

    import acor.acortool as tool_module

    def run_here(script, *argv):
        seen = []
        render = tool_module.render
        monkeypatch.setattr(tool_module, "render",
                            lambda event: seen.append(event) or render(event))
        monkeypatch.setattr(sys, "argv", [str(script), *map(str, argv)])
        monkeypatch.syspath_prepend(str(script.parent))
        monkeypatch.setenv("ACOR_STATE_DIR", str(tmp_path / "state"))
        code = 0
        with contextlib.redirect_stdout(io.StringIO()):
            try:
                runpy.run_path(str(script), run_name="__main__")
            except SystemExit as exc:
                code = exc.code
        return code, seen
    return run_here


def test_hello_says_what_to_run_next_on_every_ending(run_inprocess):
    code, events = run_inprocess(HELLO, "Ada", "--ask")
    assert code == 3
    assert events[-1].type == "input_needed"
    assert events[-1].next == ["acor", "hello", "Ada"]
    assert events[-1].fields["name"]["default"] == "Ada"
    code, events = run_inprocess(HELLO, "Ada", "--fail")
    assert code == 1
    assert [e.next for e in events if e.type == "error"] == [["acor", "hello", "Ada"]]
    code, events = run_inprocess(HELLO, "--steps", "0")
    assert code == 2
    error = next(e for e in events if e.type == "error")
    assert (error.code, error.next) == ("E_USAGE",
                                        ["acor", "hello", "--steps", "1"])
    assert error.details.startswith("usage: acor hello [NAME] [--steps N]")


def test_csvprofile_asks_for_the_key_with_fields_and_a_next_command(run_inprocess, tmp_path):
    rows = [(n, 100 + i, i) for i, n in enumerate([1, 2, 3, 4, 5, 6, 7, 8, 9, 2])]
    data = write(tmp_path / "two_ids.csv", "order_id,invoice_id,amount\n"
                 + "".join(f"{a},{b},{c}\n" for a, b, c in rows))
    code, events = run_inprocess(CSVPROFILE, data, "--out", tmp_path / "out")
    assert code == 3
    asked = events[-1]
    assert asked.type == "input_needed" and asked.audience == "agent"
    assert asked.fields["key"]["enum"] == ["order_id", "invoice_id"]
    assert asked.next == ["acor", "csvprofile", str(data), "--out", str(tmp_path / "out"),
                          "--key", "<KEY>"]


def test_csvprofile_failures_carry_the_corrected_command(run_inprocess, tmp_path):
    data = write(tmp_path / "t.csv", "order_id,x\n1,a\n")
    code, events = run_inprocess(CSVPROFILE, data, "--key", "Order_ID", "--out", tmp_path)
    assert code == 1
    error = next(e for e in events if e.type == "error")
    assert error.next == ["acor", "csvprofile", str(data), "--out", str(tmp_path),
                          "--key", "order_id"]
    code, events = run_inprocess(CSVPROFILE, data, "--session", "bad id!")
    assert code == 2
    error = next(e for e in events if e.type == "error")
    assert error.code == "E_USAGE"
    assert error.next == ["acor", "csvprofile", str(data), "--session", "orders-1"]
