"""Tools run in the sandbox their manifest declares (issue 23), enforced
by the kernel: real attempts to write home and the shared /tmp, to read a
key under ~/.ssh, and to reach TCP and UDP listeners on loopback, from a
Python tool and a shell tool, through `acor TOOL`, `acor call`, `acor mcp`,
`acor check` and `acor_run`. Skipped, saying why, only where the kernel
lacks what a test needs."""

import json
import os
import socket
import subprocess
import threading

import pytest

from conftest import ACOR_SCRIPT

from acor.cli.sandbox import kernel

OFFERS = kernel.offers()
pytestmark = pytest.mark.skipif(
    OFFERS["landlock"] < 1 or not OFFERS["namespaces"],
    reason=f"this kernel lacks Landlock or unprivileged namespaces: {OFFERS}")

PROBE = """\
import os, socket, sys
from acor import AcorTool
with AcorTool() as tool:
    what, arg = sys.argv[1], sys.argv[2]
    try:
        if what == "write":
            with open(arg, "w") as f:
                f.write("pwned")
        elif what == "read":
            with open(arg) as f:
                f.read()
        elif what == "tcp":
            socket.create_connection(("127.0.0.1", int(arg)), timeout=3).close()
        elif what == "udp":
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.sendto(b"pwned", ("127.0.0.1", int(arg)))
        elif what == "tmp":
            path = os.path.join(os.environ["TMPDIR"], "scratch")
            with open(path, "w") as f:
                f.write("ok")
            arg = path
    except OSError as exc:
        tool.fail("E_DENIED", f"{type(exc).__name__}: {exc}")
    tool.output(f"did {what} {arg}")
"""
SHELL = ["sh", "-c", 'echo pwned > "$1" && echo wrote "$1"', "sh"]


@pytest.fixture
def boxed(project, tmp_path):
    """A project whose probes declare: write out/ only, no network."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY")
    project.env["HOME"] = str(home)
    box = {"write": ["out"], "network": False}
    project.add_tool("probe", PROBE, sandbox=box)
    project.add_tool("reader", PROBE,
                     sandbox={"write": ["out"], "read": ["data"]})
    project.add_tool("open", PROBE)  # declares nothing
    project.add_wrapped("shwrite", SHELL, sandbox=box)
    (project.root / "data").mkdir()
    (project.root / "data" / "in.txt").write_text("fine")
    project.home = home
    return project


def acor(project, *args):
    return subprocess.run([ACOR_SCRIPT, *args], cwd=project.root,
                          env=project.env, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)


def listener(kind):
    """A loopback listener; returns (port, what it received)."""
    sock = socket.socket(socket.AF_INET, kind)
    sock.bind(("127.0.0.1", 0))
    got = []
    if kind == socket.SOCK_STREAM:
        sock.listen(1)
        sock.settimeout(5)

        def serve():
            try:
                conn, _ = sock.accept()
                got.append("connected")
                conn.close()
            except OSError:
                pass
    else:
        sock.settimeout(5)

        def serve():
            try:
                got.append(sock.recv(64))
            except OSError:
                pass
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return sock.getsockname()[1], got, thread, sock


def test_writes_only_where_declared_and_its_temp_dir(boxed):
    home_file = boxed.home / "pwned"
    shared = f"/tmp/acor-sandbox-test-{os.getpid()}"
    for target in (str(home_file), shared):
        done = acor(boxed, "probe", "write", target)
        assert done.returncode == 1, done.stdout
        # Outside the write paths everything is a read-only mount.
        assert "E_DENIED" in done.stdout and "Read-only file system" in \
            done.stdout
        # The recovery names the box and the manifest field to change.
        assert "This tool runs in a sandbox" in done.stdout
        assert 'the "sandbox" field of' in done.stdout
    assert not home_file.exists() and not os.path.exists(shared)
    ok = acor(boxed, "probe", "write", "out/result.txt")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert (boxed.root / "out" / "result.txt").read_text() == "pwned"
    tmp = acor(boxed, "probe", "tmp", "-")
    assert tmp.returncode == 0, tmp.stdout
    # The private temp dir is the run's own, and gone after it.
    scratch = tmp.stdout.split("did tmp ")[1].split()[0]
    assert not scratch.startswith("/tmp/scratch")
    assert not os.path.exists(scratch)


def test_a_boxed_tool_that_cannot_start_leaves_no_temp_dir(boxed,
                                                            tmp_path):
    """The run's private temp dir is made before the spawn: a program
    that cannot start fails as E_TOOL_NOT_RUNNABLE and takes it along."""
    base = tmp_path / "tmp"
    base.mkdir()
    boxed.env["TMPDIR"] = str(base)
    boxed.add_wrapped("ghost", ["/no/such/program"], sandbox={"write": []})
    done = acor(boxed, "--format", "json", "ghost")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["error_code"] == \
        "E_TOOL_NOT_RUNNABLE"
    assert list(base.iterdir()) == []
    ok = acor(boxed, "probe", "tmp", "-")  # and the one that ran: likewise
    assert ok.returncode == 0, ok.stdout
    assert list(base.iterdir()) == []


def test_a_tool_that_declares_nothing_keeps_all_rights(boxed):
    target = boxed.home / "allowed"
    done = acor(boxed, "open", "write", str(target))
    assert done.returncode == 0 and target.read_text() == "pwned"


def test_the_default_box_for_tools_that_declare_none(boxed):
    target = boxed.home / "pwned"
    done = acor(boxed, "--sandbox", "open", "write", str(target))
    assert done.returncode == 1 and not target.exists()
    # The project is writable (a git project: where .git is missing, the
    # root takes no new file, see test_sandbox_guarded).
    (boxed.root / ".git").mkdir()
    inside = acor(boxed, "--sandbox", "open", "write", "note.txt")
    assert inside.returncode == 0, inside.stdout
    (boxed.root / ".acor").mkdir(exist_ok=True)
    (boxed.root / ".acor" / "config.yaml").write_text("sandbox: default\n")
    assert acor(boxed, "open", "write", str(target)).returncode == 1
    assert not target.exists()


def test_reads_only_what_is_declared_and_needed_to_run(boxed):
    key = boxed.home / ".ssh" / "id_ed25519"
    denied = acor(boxed, "reader", "read", str(key))
    assert denied.returncode == 1 and "PermissionError" in denied.stdout
    assert acor(boxed, "reader", "read", "data/in.txt").returncode == 0
    # Without "read", reads are not restricted.
    assert acor(boxed, "probe", "read", str(key)).returncode == 0


@pytest.mark.parametrize("kind", [socket.SOCK_STREAM, socket.SOCK_DGRAM],
                         ids=["tcp", "udp"])
def test_no_network_loopback_included(boxed, kind):
    port, got, thread, sock = listener(kind)
    try:
        what = "tcp" if kind == socket.SOCK_STREAM else "udp"
        done = acor(boxed, "probe", what, str(port))
        assert done.returncode == 1, done.stdout
        assert "E_DENIED" in done.stdout
        thread.join(1)
        assert got == []
        # The same call from a tool without a sandbox gets through.
        open_run = acor(boxed, "open", what, str(port))
        assert open_run.returncode == 0, open_run.stdout
        thread.join(5)
        assert got
    finally:
        sock.close()


def test_a_shell_tool_and_what_it_starts_are_boxed(boxed):
    target = boxed.home / "pwned"
    done = acor(boxed, "shwrite", str(target))
    assert done.returncode != 0
    assert not target.exists()
    assert "Read-only file system" in done.stdout + done.stderr
    ok = acor(boxed, "shwrite", "out/x")
    assert ok.returncode == 0, ok.stdout + ok.stderr


def test_acor_call_is_boxed(boxed):
    # probe takes a free argv: acor call with an argv list.
    target = boxed.home / "pwned"
    done = acor(boxed, "call", "shwrite", json.dumps({"argv": [str(target)]}))
    assert done.returncode != 0 and not target.exists()


def test_no_sandbox_runs_it_unboxed_when_asked(boxed):
    target = boxed.home / "allowed"
    done = acor(boxed, "--no-sandbox", "probe", "write", str(target))
    assert done.returncode == 0 and target.exists()


def test_acor_check_runs_examples_in_a_box(boxed):
    folder = boxed.root / "tools" / "open"
    manifest = json.loads((folder / "manifest.json").read_text())
    target = boxed.home / "from-an-example"
    manifest["examples"] = [{"args": ["write", str(target)], "exit_code": 0}]
    (folder / "manifest.json").write_text(json.dumps(manifest))
    checked = acor(boxed, "check", "open")
    assert checked.returncode != 0
    assert not target.exists()  # an untrusted example wrote nothing
    assert "the sandbox denied it" in checked.stdout


def test_acor_run_is_boxed(boxed):
    test = boxed.root / "test_boxed.py"
    test.write_text(
        "def test_it(acor_run, tmp_path):\n"
        f"    r = acor_run('probe', 'write', {str(boxed.home / 'pwned')!r})\n"
        "    assert r.exit_code == 1, r.errors\n"
        "    assert r.errors[0].code == 'E_DENIED'\n")
    done = subprocess.run(
        [os.path.join(os.path.dirname(ACOR_SCRIPT), "pytest"), "-q",
         "-p", "no:cacheprovider", str(test)], cwd=boxed.root,
        env=boxed.env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (boxed.home / "pwned").exists()


def test_the_manifest_field_is_checked_and_shown(boxed):
    boxed.add_tool("bad", PROBE, sandbox={"write": "out", "net": False})
    doctor = acor(boxed, "doctor")
    assert "'sandbox' must be an object like" in doctor.stdout
    listed = json.loads(acor(boxed, "list", "--json").stdout)
    sandboxes = {t["name"]: t["sandbox"] for t in listed["tools"]}
    assert sandboxes["probe"] == {"write": ["out"], "network": False}
    assert sandboxes["open"] is None
    shown = acor(boxed, "show", "probe").stdout
    assert "sandbox: write out (and its temp dir); read anything; " \
           "network no" in shown
    assert "Landlock ABI" in acor(boxed, "doctor").stdout


mcp = pytest.importorskip("mcp", reason="acor mcp needs the extra: "
                                        "pip install 'acor-cli[mcp]'")


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_every_mcp_call_is_boxed(boxed, mode):
    from mcp import Client
    from mcp_helpers import acor_mcp_stdio
    server = acor_mcp_stdio(boxed)
    port, got, thread, sock = listener(socket.SOCK_STREAM)
    try:
        async with Client(server, mode=mode) as client:
            wrote = await client.call_tool("probe", {"argv": [
                "write", str(boxed.home / "pwned")]})
            assert wrote.is_error
            reached = await client.call_tool("probe", {"argv": [
                "tcp", str(port)]})
            assert reached.is_error
            fine = await client.call_tool("probe", {"argv": [
                "write", str(boxed.root / "out" / "mcp.txt")]})
            assert not fine.is_error
    finally:
        sock.close()
    assert not (boxed.home / "pwned").exists() and got == []
    assert (boxed.root / "out" / "mcp.txt").exists()


def test_a_box_the_kernel_cannot_enforce_is_not_run(boxed):
    """Fail closed: acor believes its probe, so a probe that found no
    Landlock (written where acor keeps it) stands for such a kernel."""
    cache = boxed.env["ACOR_CACHE_DIR"]
    os.makedirs(cache, exist_ok=True)
    with open(os.path.join(cache, "sandbox"), "w") as f:
        f.write(f"{os.uname().release} 0 1 1\n")
    target = boxed.root / "out" / "never.txt"
    done = acor(boxed, "probe", "write", "out/never.txt")
    assert done.returncode == 1 and not target.exists()
    assert "E_SANDBOX_UNAVAILABLE" in done.stdout
    assert "Landlock" in done.stdout
    assert "acor --no-sandbox probe write out/never.txt" in done.stdout
    assert 'sandbox: "off"' in done.stdout
    # Shown for a person, never the next command an agent would follow.
    assert "**Next**: acor doctor" in done.stdout
    # The override, as the error gives it, runs it.
    (boxed.root / "out").mkdir(exist_ok=True)
    assert acor(boxed, "--no-sandbox", "probe", "write",
                "out/never.txt").returncode == 0
    # A tool that declares nothing is not affected.
    assert acor(boxed, "open", "write", "out/free.txt").returncode == 0
    assert "Landlock missing" in acor(boxed, "doctor").stdout
