"""Ctrl-C while a real ``acor`` process is still starting (issue 31.12).

From the first statement of :mod:`cli.entry` on, a SIGINT is acor's: it
ends the run Cancelled (exit 130), never with a KeyboardInterrupt
traceback. Before that statement the interpreter is starting (its
streams, ``site``, the console script's own import line) under Python's
default handler, which acor cannot replace: these tests therefore start
acor as a careful parent would, with SIGINT, SIGTERM and SIGHUP blocked,
so that a signal sent during the interpreter's start-up waits until acor
unblocks it (docs/security.md, "Signals at start-up"). Every try is
asserted, whatever the machine's load: a late signal only lands later in
acor's life, where it is acor's too.
"""

import signal
import subprocess

import pytest

from conftest import ACOR_SCRIPT

HANDLED = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
# Sleeps stepping through acor's start-up (about 60 ms here, longer on a
# loaded machine, where the same sleeps land earlier in it).
DELAYS = [step * 0.002 for step in range(30)]


def start_blocked(project, *args):
    """``acor ARGS`` started with the handled signals blocked, as a parent
    that may signal it at once should start it."""
    signal.pthread_sigmask(signal.SIG_BLOCK, HANDLED)
    try:
        return subprocess.Popen([ACOR_SCRIPT, *args], cwd=project.root,
                                env=project.env, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE,
                                preexec_fn=_default_dispositions)
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, HANDLED)


def _default_dispositions():
    """In the child: the handled signals at their defaults, whatever this
    test process inherited (a signal ignored here would stay ignored in
    acor, as `nohup` means; that is the next test's)."""
    for signum in HANDLED:
        signal.signal(signum, signal.SIG_DFL)


def _signal_state(pid):
    try:
        with open(f"/proc/{pid}/status") as status:
            return [line.strip() for line in status
                    if line.startswith(("Sig", "Shd", "State"))]
    except OSError:
        return []


def interrupt_at(project, delay, *args):
    import time
    proc = start_blocked(project, *args)
    time.sleep(delay)  # where in start-up: any point is a valid try
    proc.send_signal(signal.SIGINT)
    # stdin stays open until acor has ended: `acor parse -` would
    # otherwise end on its own at end of input.
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"acor did not end {delay} s into its start: "
                             f"{_signal_state(proc.pid)}") from None
    finally:
        if proc.poll() is None:
            proc.kill()
        out, err = proc.communicate()
    return proc.returncode, out.decode(errors="replace"), \
        err.decode(errors="replace")


@pytest.mark.parametrize("command", [["parse", "-"], ["nap"]],
                         ids=["built-in command", "tool run"])
def test_31_12_ctrl_c_at_any_point_of_start_up_ends_cancelled_without_a_traceback(
        project, command):
    project.add_wrapped("nap", ["sleep", "60"])
    for delay in DELAYS:
        code, out, err = interrupt_at(project, delay, *command)
        assert "Traceback" not in err, (delay, err)
        assert "KeyboardInterrupt" not in err, (delay, err)
        assert code == 130, (delay, code, out, err)


def test_31_12_a_signal_ignored_when_acor_starts_stays_ignored(project):
    """`nohup acor ...`: a SIGHUP the parent ignores is not acor's to
    act on; the command goes on and ends as it would have."""
    proc = subprocess.Popen(
        [ACOR_SCRIPT, "parse", "-"], cwd=project.root, env=project.env,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    proc.send_signal(signal.SIGHUP)
    out, err = proc.communicate(b"## Status: Complete\n", timeout=60)
    assert proc.returncode == 0, err
    assert b'"complete"' in out


DROPPED_BY_PYTHON = r"""
import os, signal, sys, weakref
from acor.cli.signals import interrupt_as_python_does
interrupt_as_python_does()

class Lock: pass
def callback(ref):  # as importlib's module locks have
    os.kill(os.getpid(), signal.SIGINT)  # the handler runs in here
    for _ in range(100): pass

lock = Lock()
ref = weakref.ref(lock, callback)
try:
    del lock
    sys.stdin.read()  # stdin stays open: only the interrupt ends this
except KeyboardInterrupt:
    print("interrupted")
"""


def test_31_12_a_ctrl_c_python_drops_in_a_weakref_callback_is_raised_again(
        tmp_path):
    """A KeyboardInterrupt raised in a weakref callback is printed and
    dropped by Python; a built-in command waiting on stdin then waited
    for ever (CI: `acor parse -` hung 38 ms into its start, with the
    Ctrl-C lost in importlib's module-lock callback). Raised again, it
    ends the wait."""
    import sys
    # cwd: not the checkout, whose acor/ has no cli/ in it
    proc = subprocess.Popen([sys.executable, "-c", DROPPED_BY_PYTHON],
                            cwd=tmp_path, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        proc.wait(timeout=60)  # stdin stays open
    except subprocess.TimeoutExpired:
        raise AssertionError("the dropped Ctrl-C was not raised again") \
            from None
    finally:
        if proc.poll() is None:
            proc.kill()
        out, err = proc.communicate()
    assert out == b"interrupted\n", err
    assert b"Exception ignored" not in err


# A Ctrl-C that lands while a class with a descriptor is being made (an
# import's cached_property: CI hit it in ipaddress): Python 3.11 wraps the
# KeyboardInterrupt in a RuntimeError ("Error calling __set_name__"), 3.12
# and later raise it as is. Made to land there every time.
WRAPPED_BY_PYTHON = """
import builtins, sys
real_import = builtins.__import__
def landing(name, *args, **kwargs):
    if name == "acor.cli.commands.app":
        class Descriptor:
            def __set_name__(self, owner, name):
                raise KeyboardInterrupt
        class Owner:
            attribute = Descriptor()
    return real_import(name, *args, **kwargs)
builtins.__import__ = landing
from acor.cli.entry import main
sys.exit(main(["doctor"]))
"""


def test_31_12_a_ctrl_c_python_wraps_in_another_error_ends_cancelled(
        tmp_path):
    import sys
    done = subprocess.run([sys.executable, "-c", WRAPPED_BY_PYTHON],
                          cwd=tmp_path, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr
