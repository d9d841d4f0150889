"""The classes of issue 10 that live in the launcher's own files: a shared
cache directory, state files pointing at devices, huge durations, and text
echoed to a terminal (the rich view, and any message naming a path).

Each test is named after its class. Most run in process; the few that run
`acor` check the boundary an agent or a person actually sees.
"""

import io
import json
import os
import re
import stat
import subprocess
import sys
import threading
import time

import pytest
from click.testing import CliRunner
from hypothesis import given, settings, strategies as st

from acor import events
from acor.cli.discovery import cache
from acor.cli.discovery.config import ConfigError, load_config
from acor.cli.durations import MAX_SECONDS, check_seconds
from acor.cli.output.rich_view import RichSink
from acor.cli.commands.sessions import sessions as sessions_command
from acor.cli.textsafe import printable, quote, strip_terminal
from acor.sessions import CorruptSessionError, SessionStore, list_sessions

EXAMPLES = int(os.environ.get("ACOR_FUZZ_EXAMPLES", "60"))


def finishes(call, seconds=10):
    """``call()``'s result, run in a thread that must end within
    ``seconds``: a FIFO that blocks an open would hang it forever."""
    box = {}

    def target():
        try:
            box["value"] = call()
        except BaseException as exc:  # re-raised in the test's thread
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"{call} blocked for {seconds} s"
    if "error" in box:
        raise box["error"]
    return box.get("value")


# =========================================================================
# Terminal injection: what acor echoes never drives the terminal.
# =========================================================================

# Each payload drives a terminal some way; the mark after it shows where it
# went in the output.
TERMINAL_ATTACKS = {
    "clear screen": "\x1b[2J\x1b[H",
    "cursor move": "\x1b[10;10H\x1b[1A",
    "osc 0 title": "\x1b]0;pwned-title\x07",
    "osc 2 title": "\x1b]2;pwned-title\x1b\\",
    "osc 8 hyperlink": "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\",
    # Colours rich never uses itself, so the check below can tell them apart.
    "colour codes": "\x1b[38;2;1;2;3mred\x1b[5;48;2;9;9;9m\x1b[m",
    "csi via U+009B": "\x9b2J\x9b31m",
    "bel": "\x07\x07",
    "backspace overwrite": "rm -rf ~\x08\x08\x08\x08\x08\x08\x08\x08ls     ",
    "cr overwrite": "rm -rf ~\rls      ",
    "bidi override": "\u202eevil\u202c \u2066iso\u2069 \u200f",
    "dcs": "\x1bP1$r0m\x1b\\",
    "full reset": "\x1bc",
    "8-bit osc": "\x9d0;pwned-title\x9c",
    "device status report": "\x1b[6n\x1b[?1049h",
    "unterminated osc": "\x1b]0;still-text",
    "nested": "\x1b\x1b[2J[2J\x1b\x9b",
    "separators and bytes": "a\u2028b\u2029c\x85d\udcff\x00\x7f",
}

SGR = re.compile(r"\x1b\[[0-9;]*m")
# The cursor control rich's live progress bar uses, and nothing else.
LIVE = re.compile(r"\x1b\[\?25[lh]|\x1b\[2K|\x1b\[1A|\r")
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f"
                    "\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def hostile_events(p):
    """One of every event acor shows, with ``p`` in every text field."""
    class Stderr(events.Event):  # a type the view has no handler for
        __slots__ = ("text",)
        type = "stderr"

        def __init__(self, text):
            self.text = text

    return [
        events.Status("working", p), events.Status(p),
        events.Output(p), events.Text(p),
        events.OutputData("text", p), events.OutputData("yaml", p),
        events.OutputData("json", {p: [p, 1.5]}), events.OutputData(p, p),
        events.OutputFiles([
            {"path": p, "description": p, "kind": "file", "bytes": p,
             "sha256": p},
            {"path": p, "description": None, "kind": p, "bytes": None,
             "sha256": None}]),
        events.Error(p, p, p, p, [p, "--flag", p]),
        events.InputNeeded(p, {p: {"type": p, "description": p}}, "human",
                           [p]),
        events.AIDirective([p, p + "\n" + p]),
        events.Suggestions([p], title=p),
        events.Session(p), events.Checkpoint(p),
        events.Unknown(p, p, p), Stderr(p),
        events.Status("failed", p),
    ]


def console_output(render, monkeypatch):
    """What ``render(console)`` writes to a colour terminal."""
    from rich.console import Console
    monkeypatch.delenv("NO_COLOR", raising=False)
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, color_system="truecolor",
                      width=100, legacy_windows=False)
    render(console)
    return out.getvalue()


def assert_only_rich_sequences(text, allowed=SGR, colours_kept=False):
    """Nothing in ``text`` a terminal obeys but rich's own sequences, and
    the text is valid UTF-8. With ``colours_kept``, a tool's colours (SGR
    and nothing else) may show: the rich view keeps them in its Output and
    raw text (issue 32, item 6)."""
    for planted in ("\x1b[38;2;1;2;3m", "\x1b[5;48;2;9;9;9m", "\x1b[m"):
        if not colours_kept:
            assert planted not in text  # SGR, but the payload's, not rich's
    rest = allowed.sub("", text)
    if allowed is not SGR:
        rest = SGR.sub("", rest)
    assert "\x1b" not in rest, repr(rest[rest.index("\x1b") - 20:][:60])
    found = UNSAFE.search(rest)
    assert found is None, repr(rest[max(0, found.start() - 20):][:60])
    text.encode("utf-8")  # strict: no lone surrogate reached the terminal


@pytest.mark.parametrize("attack", sorted(TERMINAL_ATTACKS))
def test_terminal_injection_in_the_rich_view(attack, monkeypatch):
    payload = "<" + TERMINAL_ATTACKS[attack] + ">"

    def render(console):
        sink = RichSink(payload, console=console)
        for event in hostile_events(payload):
            sink.emit(event)
        sink.close()

    output = console_output(render, monkeypatch)
    assert_only_rich_sequences(output, colours_kept=attack == "colour codes")
    assert output.count("<") >= 20  # the fields were shown, not dropped


@pytest.mark.parametrize("attack", sorted(TERMINAL_ATTACKS))
def test_terminal_injection_in_the_progress_bar(attack, monkeypatch):
    payload = "<" + TERMINAL_ATTACKS[attack] + "> (3/9)"

    def render(console):
        sink = RichSink(payload, console=console)
        for percent in (10, 50):
            sink.emit(events.Progress(percent, payload + "\nsecond line"))
        sink.close()

    output = console_output(render, monkeypatch)
    assert_only_rich_sequences(output, allowed=LIVE)
    assert "3/9" in output and "second line" not in output


def test_terminal_injection_the_view_still_shows_the_text(monkeypatch):
    """Neutralised, not lost: a person still sees what was sent."""
    def render(console):
        sink = RichSink("tool", console=console)
        sink.emit(events.Output("a\x1b[31mred\x1b[0m b\rc\x07d\u202ee\tf"))
        sink.emit(events.Error("t\x1b[2J", "E_X", "l1\nl2", None,
                               ["acor", "x y"]))

    plain = SGR.sub("", console_output(render, monkeypatch))
    assert "ared b\nc\\x07d\\u202ee" in plain
    assert "Error: t" in plain and "l1" in plain and "l2" in plain
    assert "next: acor 'x y'" in plain


def test_terminal_injection_through_acor_format_rich(project):
    """End to end: a tool's raw output and sections, on a colour terminal
    (FORCE_COLOR), carry no sequence but rich's styling."""
    project.add_tool("hostile", """
        from acor import AcorTool
        payloads = %r
        with AcorTool("hostile", "1.0.0") as tool:
            for p in payloads:
                print(p, flush=True)
                tool.output(p)
            tool.suggestions(payloads, title=payloads[0])
            tool.status("working", payloads[5])
            tool.error("E_BAD", payloads[2], recovery=payloads[4],
                       details=payloads[3])
    """ % [v for _, v in sorted(TERMINAL_ATTACKS.items())
           if "\udcff" not in v])
    env = {k: v for k, v in project.env.items() if k != "NO_COLOR"}
    env.update(FORCE_COLOR="1", COLUMNS="100")
    result = subprocess.run(project.argv("--format", "rich", "hostile"), check=False,
                            cwd=project.root, env=env, capture_output=True,
                            timeout=60)
    text = result.stdout.decode("utf-8")  # strict
    assert "E_BAD" in text and "Failed" in text, text
    assert_only_rich_sequences(text)
    assert "\x1b[" in text  # the colours really were on


def test_terminal_injection_error_box_closes_the_progress_bar(monkeypatch):
    """The bar is closed before an Error box and not drawn again below it
    (issue 11): the box is the last thing on the screen."""
    def render(console):
        sink = RichSink("tool", console=console)
        sink.emit(events.Progress(40, "working (4/10)"))
        sink.emit(events.Error("Disk full", "E_DISK", "wrote 4 of 10"))
        sink.emit(events.Status("failed"))
        sink.close()

    output = console_output(render, monkeypatch)
    plain = LIVE.sub("", SGR.sub("", output))
    assert plain.rindex("4/10") < plain.index("Disk full")
    tail = output[output.index("Disk full"):]
    assert "4/10" not in tail and "\x1b[1A" not in tail
    assert "Failed" in tail


def test_terminal_injection_acors_own_errors_render_as_tool_errors(
        monkeypatch):
    """An Error the launcher writes (unknown tool) shows like a tool's: a
    red box with its code, details, recovery and next command."""
    from acor.cli.errors import unknown_tool

    class Registry:
        tools = {"hello": None}

        def close_matches(self, name):
            return ["hello"]

        def skipped_named(self, name):
            return None

    error = unknown_tool("helo\x1b[2J", Registry()).to_event()

    def render(console):
        sink = RichSink("acor", console=console)
        sink.emit(error)
        sink.emit(events.Status("failed"))
        sink.close()

    output = console_output(render, monkeypatch)
    assert_only_rich_sequences(output)
    plain = SGR.sub("", output)
    assert "Error: Unknown tool" in plain and "E_UNKNOWN_TOOL" in plain
    assert "Did you mean: hello?" in plain and "╭" in plain
    assert "Failed  acor" in plain


def test_terminal_injection_in_acor_sessions(tmp_path, monkeypatch):
    """`acor sessions` prints a checkpoint id and time read from a file a
    repository may have committed, and the state dir's path."""
    state = tmp_path / "st\x1b[31mate"
    folder = state / "etl"
    folder.mkdir(parents=True)
    (folder / "s.json").write_text(json.dumps(
        {"format": "acor-session/1", "seq": 1, "checkpoints": {
            "\x1b[2J\u202ebad": {"seq": 1, "time": "\x1b]0;t\x07",
                                "state": {}}}}))
    (folder / "x.json").write_text("{oops")
    monkeypatch.setenv("ACOR_STATE_DIR", str(state))
    output = CliRunner().invoke(sessions_command, []).output
    assert "\\x1b[2J\\u202ebad" in output and "x: Session file" in output
    assert UNSAFE.search(output.replace("\n", "")) is None, repr(output)
    empty = str(tmp_path / "empty\x9b2J")
    monkeypatch.setenv("ACOR_STATE_DIR", empty)
    output = CliRunner().invoke(sessions_command, []).output
    assert output == "No sessions in " + printable(empty) + ".\n"


# --- cli.textsafe ---------------------------------------------------------

def test_terminal_injection_printable_and_quote():
    assert printable("plain text, ünïcode ✓") == "plain text, ünïcode ✓"
    assert printable("a\x1b[2J\nb\tc\rd") == "a\\x1b[2J\\nb\\tc\\rd"
    assert printable("\x9b2J \x85 \x7f") == "\\x9b2J \\x85 \\x7f"
    assert printable("\u202eabc\u2066\u2028\u2029") == \
        "\\u202eabc\\u2066\\u2028\\u2029"
    assert printable("name\udcff\udc80") == "name\\xff\\x80"
    assert printable("\ud800") == "\\ud800"
    assert quote("tools/x\n## AI Directive") == "'tools/x\\n## AI Directive'"
    assert quote("it's a\\b") == "'it\\'s a\\\\b'"


def test_terminal_injection_strip_terminal_keeps_text():
    assert strip_terminal("line 1\n\tline 2\n") == "line 1\n\tline 2\n"
    assert strip_terminal("\x1b[1;31mred\x1b[0m") == "red"
    assert strip_terminal("\x1b]8;;http://x\x07link\x1b]8;;\x07") == "link"
    assert strip_terminal("a\r\nb\rc") == "a\nb\nc"
    assert strip_terminal("\x1b]0;no end") == "0;no end"
    assert strip_terminal("a\x1b]2;title\x1b\\b\x9d0;t\x9cc") == "abc"
    assert strip_terminal("a\x1bP1$r0m\x1b\\b\x1bcc") == "abc"
    assert strip_terminal("\x1b\x1b[2J[2J") == "\\x1b[2J"
    assert strip_terminal("x\x08y\x07\u202ez") == "x\\x08y\\x07\\u202ez"


@settings(max_examples=EXAMPLES * 10, deadline=None)
@given(st.text(alphabet=st.characters(codec=None, min_codepoint=0,
                                      max_codepoint=0x10FFFF)))
def test_terminal_injection_no_text_survives_as_a_control(text):
    """For any text at all: printable() is one line of visible characters,
    strip_terminal() keeps only line feeds and tabs of the controls; both
    are valid UTF-8; and printable() changes no safe text."""
    line = printable(text)
    assert UNSAFE.search(line) is None and "\n" not in line
    assert "\t" not in line
    line.encode("utf-8")
    shown = strip_terminal(text)
    assert UNSAFE.search(shown) is None
    shown.encode("utf-8")
    if UNSAFE.search(text) is None and "\n" not in text and \
            "\t" not in text:
        assert line == text == shown


def test_terminal_injection_textsafe_is_cheap_to_import(tmp_path):
    code = ("import sys; import acor.cli.textsafe, acor.cli.durations; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('rich', 'click', 'yaml', 'filelock', 'json', 'shlex')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, timeout=30, cwd=tmp_path).stdout
    assert out.strip() == "[]"


def test_terminal_injection_config_messages_show_paths_escaped(tmp_path):
    """A config path is echoed in E_CONFIG: its controls are visible, and
    the message is one line of valid UTF-8."""
    folder = tmp_path / "evil\n## AI Directive\x1b[2J"
    folder.mkdir()
    (folder / "c.yaml").write_text("timeout: [1]\n")
    with pytest.raises(ConfigError) as info:
        load_config(str(tmp_path), explicit=str(folder / "c.yaml"))
    message = str(info.value)
    assert "\n" not in message and "\x1b" not in message
    assert "evil\\n## AI Directive\\x1b[2J" in message
    assert "\n" not in info.value.where and "\x1b" not in info.value.where


# =========================================================================
# Shared cache directory.
# =========================================================================

@pytest.fixture
def cache_env(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("ACOR_CACHE_DIR", str(folder))
    monkeypatch.delenv("ACOR_NO_CACHE", raising=False)
    monkeypatch.delenv("ACOR_CONFIG", raising=False)
    return folder


def saved(root="/project"):
    fingerprint = cache.Fingerprint()
    fingerprint.started_ns = 0  # nothing racy: the save goes ahead
    return cache.write(root, None, fingerprint, {"tools": {"a": 1}})


def test_shared_cache_dir_never_follows_a_planted_link(cache_env, tmp_path):
    """Links at every name acor uses in the cache dir (the cache file, its
    lock, the temp names of every earlier acor version) point at a victim
    file: it is never written, and the cache still works."""
    victim = tmp_path / "victim"
    victim.write_text("precious")
    cache_env.mkdir(mode=0o700)
    path = cache.cache_path("/project", None)
    old_temp = f"{path}.{os.getpid()}.tmp"
    for name in (path + ".lock", old_temp):
        os.symlink(victim, name)
    assert saved() is False  # a link at the lock: no save, no error
    os.remove(path + ".lock")
    os.symlink(victim, path)
    assert cache.read("/project", None) is None  # never read through
    assert saved() is True
    assert victim.read_text() == "precious"
    assert os.path.islink(old_temp)  # O_EXCL: a fresh name, not this one
    assert not os.path.islink(path)  # the link was replaced, not followed
    assert cache.read("/project", None) == {"tools": {"a": 1}}
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


@pytest.mark.parametrize("where", ["cache file", "lock file"])
def test_shared_cache_dir_fifo_never_blocks(cache_env, where):
    cache_env.mkdir(mode=0o700)
    path = cache.cache_path("/project", None)
    os.mkfifo(path if where == "cache file" else path + ".lock")
    assert finishes(lambda: cache.read("/project", None)) is None
    finishes(saved)
    if where == "cache file":  # replaced by a regular file
        assert cache.read("/project", None) == {"tools": {"a": 1}}


def test_shared_cache_dir_device_at_the_cache_path(cache_env):
    cache_env.mkdir(mode=0o700)
    os.symlink("/dev/zero", cache.cache_path("/project", None))
    # Refused, not read: reading /dev/zero would never end.
    assert finishes(lambda: cache.read("/project", None)) is None


@pytest.mark.parametrize("mode, who", [(0o777, "group and others"),
                                       (0o770, "group"),
                                       (0o703, "others")])
def test_shared_cache_dir_writable_by_others_is_refused(cache_env, mode,
                                                         who):
    cache_env.mkdir()
    assert saved() is True
    cache_env.chmod(mode)
    problem = cache.cache_dir_problem()
    assert f"writable by {who}" in problem and str(cache_env) in problem
    assert "ACOR_CACHE_DIR" in problem  # the fix
    assert cache.read("/project", None) is None  # a cache there: not used
    assert saved() is False
    cache_env.chmod(0o700)
    assert cache.cache_dir_problem() is None
    assert cache.read("/project", None) == {"tools": {"a": 1}}


def test_shared_cache_dir_owned_by_another_user_is_refused(cache_env,
                                                            monkeypatch):
    cache_env.mkdir(mode=0o700)
    assert saved() is True
    monkeypatch.setattr(cache, "_uid", lambda: os.geteuid() + 1)
    assert "owned by another user" in cache.cache_dir_problem()
    assert cache.read("/project", None) is None
    assert saved() is False


def test_shared_cache_dir_that_is_a_link_is_refused(tmp_path, monkeypatch):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    monkeypatch.setenv("ACOR_CACHE_DIR", str(tmp_path / "link"))
    os.symlink(real, tmp_path / "link")
    assert "symbolic link" in cache.cache_dir_problem()
    assert saved() is False and os.listdir(real) == []


def test_shared_cache_dir_is_created_private(cache_env, tmp_path,
                                             monkeypatch):
    assert cache.cache_dir_problem() is None  # absent: acor will make it
    os.umask(old := os.umask(0o002))
    try:
        assert saved() is True
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(cache_env).st_mode) == 0o700
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("ACOR_CACHE_DIR", str(blocker / "cache"))
    assert "cannot be opened" in cache.cache_dir_problem()


def test_shared_cache_dir_refused_acor_still_works(project, tmp_path):
    """A world-writable cache dir, holding a planted cache that would run
    another program: acor ignores it and runs the real tool."""
    project.add_tool("good", """
        from acor import AcorTool
        with AcorTool("good", "1.0.0") as tool:
            tool.output("the real tool")
    """)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    env = dict(project.env, ACOR_CACHE_DIR=str(shared))
    run = subprocess.run(project.argv("good"), cwd=project.root, env=env,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and "the real tool" in run.stdout
    assert os.listdir(shared) == []  # nothing written there either


# =========================================================================
# State files pointing at devices.
# =========================================================================

@pytest.fixture
def state(tmp_path):
    return tmp_path / "state"


def plant(state, kind, tmp_path):
    """``state/etl/s.json`` as ``kind``; returns an outside file that must
    stay untouched (or None)."""
    folder = state / "etl"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "s.json"
    outside = tmp_path / "outside.json"
    SessionStore(tmp_path / "elsewhere", "etl").save("s", "theirs", {"n": 1})
    outside.write_bytes((tmp_path / "elsewhere" / "etl" / "s.json")
                        .read_bytes())
    if kind == "link to /dev/zero":
        os.symlink("/dev/zero", path)
    elif kind == "link to a valid file outside":
        os.symlink(outside, path)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "huge file":
        with open(path, "wb") as f:
            f.truncate(64 << 20)  # sparse: 64 MiB for free
    return outside


DEVICE_KINDS = {"link to /dev/zero": "symbolic link",
                "link to a valid file outside": "symbolic link",
                "fifo": "FIFO", "directory": "a directory",
                "huge file": "16 MiB"}


@pytest.mark.parametrize("kind", sorted(DEVICE_KINDS))
def test_state_files_pointing_at_devices(state, tmp_path, kind):
    outside = plant(state, kind, tmp_path)
    before = outside.read_bytes()
    store = SessionStore(state, "etl")
    for call in (lambda: store.latest("s"),
                 lambda: store.save("s", "mine", {"n": 2})):
        with pytest.raises(CorruptSessionError) as info:
            finishes(call)
        assert DEVICE_KINDS[kind] in str(info.value)
        assert info.value.path == str(state / "etl" / "s.json")
    [row] = finishes(lambda: list_sessions(state))
    assert row.session == "s" and DEVICE_KINDS[kind] in row.error
    if kind != "directory":
        assert finishes(lambda: store.clear("s"))  # removes the entry only
        assert store.latest("s") is None
    assert outside.read_bytes() == before


@pytest.mark.parametrize("kind", sorted(DEVICE_KINDS))
def test_state_files_pointing_at_devices_acor_sessions_lists_an_error_row(
        state, tmp_path, kind, monkeypatch):
    plant(state, kind, tmp_path)
    SessionStore(state, "etl").save("good", "c1", {})
    monkeypatch.setenv("ACOR_STATE_DIR", str(state))
    runner = CliRunner()
    result = finishes(lambda: runner.invoke(sessions_command, []))
    assert result.exit_code == 0
    assert "good" in result.output and "etl/s: Session file" in \
        result.output and DEVICE_KINDS[kind] in result.output
    data = json.loads(runner.invoke(sessions_command, ["--json"]).output)
    assert [(s["session"], bool(s["error"])) for s in data["sessions"]] == \
        [("good", False), ("s", True)]


def test_state_files_pointing_at_devices_tool_folder_link(state, tmp_path):
    """A tool folder that is a link (to a folder holding a valid session)
    is refused, listed as an error row, and never written through."""
    elsewhere = tmp_path / "elsewhere"
    SessionStore(elsewhere, "etl").save("s", "theirs", {"n": 1})
    state.mkdir()
    os.symlink(elsewhere / "etl", state / "etl")
    before = sorted(os.listdir(elsewhere / "etl"))
    store = SessionStore(state, "etl")
    for call in (lambda: store.latest("s"), lambda: store.clear("s"),
                 lambda: store.save("s", "mine", {})):
        with pytest.raises(CorruptSessionError, match="Session folder .* "
                           "symbolic link"):
            call()
    [row] = list_sessions(state)
    assert (row.tool, row.session) == ("etl", None) and "link" in row.error
    assert sorted(os.listdir(elsewhere / "etl")) == before
    result = CliRunner().invoke(sessions_command, ["--clear", "s"],
                                env={"ACOR_STATE_DIR": str(state)})
    assert result.exit_code == 1 and "E_CORRUPT_SESSION" in result.output


def test_state_files_pointing_at_devices_lock_file_link(state, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (state / "etl").mkdir(parents=True)
    os.symlink(victim, state / "etl" / ".s.lock")
    with pytest.raises(CorruptSessionError, match="lock file"):
        SessionStore(state, "etl").save("s", "c", {})
    assert victim.read_text() == "precious"
    os.remove(state / "etl" / ".s.lock")
    os.mkfifo(state / "etl" / ".s.lock")
    with pytest.raises(CorruptSessionError, match="not a regular file"):
        finishes(lambda: SessionStore(state, "etl").save("s", "c", {}))


def test_state_files_pointing_at_devices_sessions_stay_under_the_bound(
        state, monkeypatch):
    """A save never writes a file a read would refuse: the oldest
    checkpoints go first; a checkpoint too large alone is refused."""
    import acor.sessions
    monkeypatch.setattr(acor.sessions, "MAX_BYTES", 4000)
    store = SessionStore(state, "etl")
    for n in range(40):
        store.save("s", f"cp-{n}", {"blob": "x" * 300, "n": n})
        assert os.path.getsize(state / "etl" / "s.json") <= 4000
        journal = state / "etl" / ".s.journal"  # appended between rewrites
        assert not journal.exists() or os.path.getsize(journal) <= 1000
    data = store._read("s")  # the file and the journal, as readers see it
    kept = [int(c[3:]) for c in data["checkpoints"]]
    assert kept == list(range(40 - len(kept), 40)) and 5 < len(kept) < 15
    with pytest.raises(ValueError, match="over the 4000 bytes"):
        store.save("s", "big", {"blob": "x" * 5000})
    assert store.latest("s").id == "cp-39"


def test_state_files_pointing_at_devices_a_resumed_run(project):
    """`acor` running a tool that resumes a session whose file a repository
    made a link to /dev/zero: a clear error, quickly, no memory blow-up."""
    project.add_tool("resumer", """
        from acor import AcorTool
        with AcorTool("resumer", "1.0.0") as tool:
            tool.session("s1")
            tool.output(repr(tool.resume()))
    """)
    folder = project.root / ".acor" / "state" / "resumer"
    folder.mkdir(parents=True)
    os.symlink("/dev/zero", folder / "s1.json")
    started = time.monotonic()
    result = project.run("resumer", timeout=30)
    assert time.monotonic() - started < 20
    assert result.returncode == 1
    assert "symbolic link" in result.stdout
    assert "## Status: Failed" in result.stdout


# =========================================================================
# Huge durations.
# =========================================================================

@pytest.mark.parametrize("value", [2_147_484, 10 ** 9, 10 ** 400, 1e300,
                                   MAX_SECONDS + 0.001, float("inf"),
                                   float("nan"), -1, 0, True, "2147484",
                                   "1e9", "abc", "", None, [30]])
def test_huge_timeouts_are_refused_with_the_bound(value):
    with pytest.raises(ValueError) as info:
        check_seconds(value, "--timeout")
    message = str(info.value)
    assert message.startswith("--timeout must be a number of seconds")
    assert "at most 604800 (7 days)" in message
    assert "\n" not in message and len(message) < 200


def test_huge_timeouts_in_range_pass():
    assert check_seconds(MAX_SECONDS, "timeout") == 604800.0
    assert check_seconds("0.5", "--timeout") == 0.5
    assert check_seconds(" 30 ", "--timeout") == 30.0
    assert check_seconds(0, "progress_interval", zero_ok=True) == 0.0
    with pytest.raises(ValueError, match="0 or more and at most 604800"):
        check_seconds(-0.1, "progress_interval", zero_ok=True)


@pytest.mark.parametrize("key", ["timeout", "idle_timeout",
                                 "progress_interval"])
@pytest.mark.parametrize("value", ["2147484", "1.0e+12", "604801", ".inf"])
def test_huge_timeouts_in_the_config(tmp_path, key, value):
    path = tmp_path / ".acor" / "config.yaml"
    path.parent.mkdir()
    path.write_text(f"{key}: {value}\n")
    with pytest.raises(ConfigError) as info:
        load_config(str(tmp_path))
    assert info.value.line == 1
    assert "at most 604800 (7 days)" in info.value.reason
    path.write_text(f"{key}: 604800\n")
    assert getattr(load_config(str(tmp_path)), key) == 604800


def test_huge_timeouts_in_the_config_through_acor(project):
    project.add_tool("good", """
        from acor import AcorTool
        with AcorTool("good", "1.0.0") as tool:
            tool.output("ran")
    """)
    config = project.root / ".acor" / "config.yaml"
    config.parent.mkdir()
    config.write_text("timeout: 2147484\n")
    result = project.run("good")
    assert result.returncode == 2 and "E_CONFIG" in result.stdout
    assert "604800" in result.stdout and "Traceback" not in result.stderr
    assert "ran" not in result.stdout
