"""The ``acor`` command, after a tool's run, and a warm-started tool end
their process without the interpreter's teardown (``cli.exiting.leave``):
what a script's end keeps must still be kept. Each case is a real
process whose output is read through a pipe."""

import os
import subprocess
import sys

from acor import exitcodes

SCRIPT = """\
import atexit, sys, threading, time
from acor.cli.exiting import leave

def late():
    time.sleep(0.3)  # still running when leave() is called
    print("thread's last line", flush=False)

atexit.register(lambda: print("atexit ran", flush=False))
threading.Thread(target=late).start()
sys.stdout.write("buffered, never flushed by hand\\n")
sys.stderr.write("an unfinished line on stderr")
leave(int(sys.argv[1]))
"""


# Block-buffered standard streams, as a pipe gives them (this machine sets
# PYTHONUNBUFFERED, which would flush every write on its own).
BUFFERED = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}


def _leave(tmp_path, code):
    return subprocess.run([sys.executable, "-c", SCRIPT, str(code)],
                          cwd=tmp_path, env=BUFFERED, capture_output=True,
                          text=True, timeout=60)


def test_leaving_keeps_output_threads_and_atexit_as_a_script_end_does(
        tmp_path):
    done = _leave(tmp_path, 0)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["buffered, never flushed by hand",
                                        "thread's last line", "atexit ran"]
    assert done.stderr == "an unfinished line on stderr"


def test_leaving_ends_with_the_code_it_is_given(tmp_path):
    done = _leave(tmp_path, 3)
    assert done.returncode == 3
    assert done.stdout.endswith("atexit ran\n")


def test_leaving_when_the_reader_is_gone_is_a_broken_pipe_not_a_traceback(
        tmp_path):
    script = ("import sys\nfrom acor.cli.exiting import leave\n"
              "sys.stdin.read()\n"  # until the reader below has gone
              "sys.stdout.write('x' * 100)\n"
              f"leave(0, broken_pipe={exitcodes.BROKEN_PIPE})\n")
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=tmp_path,
                            env=BUFFERED, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()  # `... | head -0`: gone before the flush
    proc.stdin.close()
    err = proc.stderr.read()
    proc.wait(timeout=60)
    assert proc.returncode == exitcodes.BROKEN_PIPE
    assert b"Traceback" not in err
