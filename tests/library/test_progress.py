"""Progress per item: held calls cost no write and no lock, at most one
section per interval, the latest progress never lost; the quick renderer
agrees with the grammar; a forked child's tool works.

Timing-dependent tests use intervals of 10-50 ms and assert bounds with
room for a loaded machine, never exact counts.
"""

import io
import os
import signal
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import acor.acortool as tool_module
import acor.quick as quick
from acor import AcorStateError, AcorTool, grammar
from acor.events import Output, Progress, Status
from acor.grammar import parse

READY, COMPLETE = Status("ready"), Status("complete")


def plain_tool(interval=None, stream=None):
    stream = stream if stream is not None else io.StringIO()
    tool = AcorTool("t", stream=stream, frame_token=None,
                    progress_interval=interval)
    return tool, stream


def progress_of(stream):
    return [e for e in parse(stream.getvalue()) if e.type == "progress"]


def wait_until(condition, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


# --- coalescing ---------------------------------------------------------------

def test_run_directly_progress_is_coalesced_and_the_latest_kept():
    tool, stream = plain_tool()  # the default: 0.1 s run directly
    tool.start()
    for i in range(10_000):
        tool.progress_bar(i + 1, 10_000, "Rows")
    assert [e.message for e in progress_of(stream)] == ["Rows (1/10000)"]
    tool.output("done").stop()
    events = parse(stream.getvalue())
    assert events == [READY, Progress(0.01, "Rows (1/10000)"),
                      Progress(100, "Rows (10000/10000)"), Output("done"),
                      COMPLETE]


def test_the_latest_progress_is_written_before_the_final_status():
    tool, stream = plain_tool()
    tool.start().progress(10).progress(20).progress(30, "last").stop()
    assert parse(stream.getvalue()) == [READY, Progress(10),
                                        Progress(30, "last"), COMPLETE]


def test_interval_zero_writes_every_call():
    tool, stream = plain_tool(interval=0)
    tool.start()
    for i in range(50):
        tool.progress(i)
    assert [e.percent for e in progress_of(stream)] == list(range(50))


def test_framed_and_direct_intervals_are_the_documented_defaults():
    assert tool_module.PROGRESS_INTERVAL == 0.02
    assert tool_module.DIRECT_PROGRESS_INTERVAL == 0.1
    framed = AcorTool("t", stream=io.StringIO(), frame_token="ab" * 16)
    direct = AcorTool("t", stream=io.StringIO(), frame_token=None)
    assert (framed._interval(), direct._interval()) == (0.02, 0.1)


@pytest.mark.parametrize("interval", [-1, "0.1", float("nan")])
def test_progress_interval_must_be_seconds(interval):
    with pytest.raises(ValueError, match="progress_interval"):
        AcorTool("t", stream=io.StringIO(), progress_interval=interval)


def test_a_quiet_tools_held_progress_is_written_by_the_timer():
    tool, stream = plain_tool(interval=0.02)
    tool.start().progress(10, "first").progress(20, "held")
    assert wait_until(lambda: len(progress_of(stream)) == 2)
    assert [e.message for e in progress_of(stream)] == ["first", "held"]
    tool.stop()


def test_calls_an_interval_apart_are_each_written_at_once():
    # Read by the launcher in order with the tool's raw output: a call that
    # is not too early is never delayed behind a later print.
    tool, stream = plain_tool(interval=0.01)
    tool.start()
    for i in range(5):
        tool.progress(i * 20)
        stream.write(f"raw {i}\n")
        time.sleep(0.012)
    text = stream.getvalue()
    for i in range(5):
        assert f"## Progress: {i * 20}%\n\nraw {i}\n" in text
    tool.stop()


def test_a_call_after_a_quiet_interval_is_written_at_once():
    tool, stream = plain_tool(interval=0.02)
    tool.start().progress(10)
    time.sleep(0.03)
    tool.progress(20)  # no timer needed: the clock says it is time
    assert [e.percent for e in progress_of(stream)] == [10, 20]
    tool.stop()


def test_a_busy_loop_writes_about_one_section_per_interval():
    tool, stream = plain_tool(interval=0.02)
    tool.start()
    began = time.monotonic()
    calls = 0
    while time.monotonic() - began < 0.3:
        calls += 1
        tool.progress_bar(calls, 10 ** 9)
    elapsed = time.monotonic() - began
    tool.stop()
    written = len(progress_of(stream))
    assert calls > 1000
    # One at once, then at most one per interval (plus the last, at stop).
    assert 2 <= written <= elapsed / 0.02 + 2


def test_a_busy_tool_writes_its_progress_from_its_own_thread():
    # So a section is never written between a raw print's text and its
    # line end by another thread, as long as the tool keeps reporting.
    writers = []

    class Recorder(io.StringIO):
        def write(self, text):
            if text.startswith("## Progress"):
                writers.append(threading.get_ident())
            return super().write(text)

    tool, _ = plain_tool(interval=0.01, stream=Recorder())
    tool.start()
    began = time.monotonic()
    i = 0
    while time.monotonic() - began < 0.3:
        i += 1
        tool.progress_bar(i, 10 ** 9)
    tool.stop()
    ours = writers.count(threading.get_ident())
    assert ours > len(writers) / 2, (ours, len(writers))


def test_held_calls_take_no_lock():
    tool, stream = plain_tool(interval=60)  # the hold lasts the whole test
    tool.start().progress(1).progress(2)  # the second starts the hold
    taken, release = threading.Event(), threading.Event()

    def hold_the_lock():
        with tool._lock:
            taken.set()
            release.wait(10)

    holder = threading.Thread(target=hold_the_lock)
    holder.start()
    taken.wait(5)
    done = threading.Event()

    def report():
        for i in range(1000):
            tool.progress_bar(i, 1000)
            tool.progress(0.5)
        done.set()

    reporter = threading.Thread(target=report, daemon=True)
    reporter.start()
    finished = done.wait(5)
    release.set()
    holder.join(5)
    assert finished, "a held progress call waited for the lock"
    tool.stop()
    assert [e.percent for e in progress_of(stream)] == [1, 50]


def test_a_refused_call_before_start_leaves_nothing_held():
    tool, stream = plain_tool()
    with pytest.raises(AcorStateError):
        tool.progress_bar(1, 2)
    with pytest.raises(AcorStateError):
        tool.progress(0.5)
    tool.start().stop()
    assert parse(stream.getvalue()) == [READY, COMPLETE]


def test_progress_after_stop_is_refused_even_after_a_hold():
    tool, stream = plain_tool()
    tool.start().progress(1).progress(2)  # the second is held
    tool.stop()
    with pytest.raises(AcorStateError, match="already stopped"):
        tool.progress(3)
    with pytest.raises(AcorStateError, match="already stopped"):
        tool.progress_bar(3, 4)
    assert parse(stream.getvalue()) == [READY, Progress(1), Progress(2),
                                        COMPLETE]


def test_a_bad_call_during_a_hold_is_refused_at_once():
    tool, stream = plain_tool(interval=60)
    tool.start().progress(1)
    with pytest.raises(TypeError):
        tool.progress_bar(1.5, 2)
    with pytest.raises(ValueError, match="negative"):
        tool.progress_bar(-1, 2)
    with pytest.raises(ValueError, match="finite"):
        tool.progress(float("nan"))
    with pytest.raises(TypeError):
        tool.progress(True)
    tool.stop()
    assert [e.percent for e in progress_of(stream)] == [1]


def test_a_clamped_value_during_a_hold_is_kept():
    tool, stream = plain_tool(interval=60)
    tool.start().progress(1).progress(250, "over").stop()
    assert progress_of(stream)[-1] == Progress(100, "over")


# --- the quick renderer -----------------------------------------------------

TEXT = st.text(st.sampled_from(list(
    "aZ09 (-#=`~<>\\\x1e\x1b\t\r\n\u2028\u202e\x85é*_+.!|[]")), max_size=12)


@settings(max_examples=300, deadline=None)
@given(text=TEXT, percent=st.one_of(st.integers(0, 100),
                                    st.floats(0, 100, allow_nan=False)))
def test_quick_render_is_the_grammars_render(text, percent):
    for event in (Progress(percent, text), Output(text),
                  Status("ready", text), Status("failed", text),
                  Status("in review", text)):
        assert quick.render(event) == grammar.render(event)


@pytest.mark.parametrize("text", ["1. item", "(3/10)", "", "Step 1 of 2",
                                  "a\x1b[2J", "é", "## x", "- x", "\u202ex"])
def test_quick_render_examples(text):
    for event in (Progress(50, text), Output(text), Status("working", text)):
        assert quick.render(event) == grammar.render(event)


# --- fork safety --------------------------------------------------------------

class SlowStream:
    """Holds the tool's lock a while on every write, as a slow pipe does."""

    def __init__(self):
        self.parts = []

    def write(self, text):
        time.sleep(0.0005)
        self.parts.append(text)

    def flush(self):
        pass


# The fork beside a thread is what these tests are about: Python 3.12+ warns
# of any fork in a process with threads.
forks_beside_threads = pytest.mark.filterwarnings(
    "ignore:This process .* is multi-threaded, use of fork:"
    "DeprecationWarning")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
@forks_beside_threads
def test_children_forked_while_the_timer_writes_can_use_the_tool():
    stream = SlowStream()
    tool = AcorTool("t", stream=stream, frame_token=None,
                    progress_interval=0.001).start()
    stop = threading.Event()

    def report():  # keeps the lock busy: writes from here and the timer
        i = 0
        while not stop.is_set():
            i += 1
            tool.progress_bar(i, 10 ** 9)

    reporter = threading.Thread(target=report)
    reporter.start()
    children, hung = [], []
    try:
        for _ in range(100):
            pid = os.fork()
            if pid == 0:  # the child: use the tool, then leave at once
                code = 1
                try:
                    tool.progress(50, "child")
                    tool.output("from the child")
                    code = 0
                finally:
                    os._exit(code)
            children.append(pid)
    finally:
        stop.set()
        reporter.join(10)
    deadline = time.monotonic() + 20
    codes = {}
    while children and time.monotonic() < deadline:
        for pid in list(children):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                codes[pid] = os.waitstatus_to_exitcode(status)
                children.remove(pid)
        time.sleep(0.01)
    for pid in children:  # hung: end them, then fail
        hung.append(pid)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    assert not hung, f"{len(hung)} of 100 forked children hung"
    assert set(codes.values()) == {0}
    tool.stop()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
@forks_beside_threads
def test_a_forked_child_does_not_write_the_parents_held_progress():
    stream = io.StringIO()
    tool = AcorTool("t", stream=stream, frame_token=None,
                    progress_interval=60).start()
    tool.progress(1).progress(2, "held by the parent")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            child = io.StringIO()
            tool._stream = child
            tool.output("child")
            os.write(write, child.getvalue().encode())
        finally:
            os._exit(0)
    os.close(write)
    written = b""
    while chunk := os.read(read, 4096):
        written += chunk
    os.close(read)
    os.waitpid(pid, 0)
    assert parse(written.decode()) == [Output("child")]
    tool.stop()
    assert progress_of(stream)[-1] == Progress(2, "held by the parent")
