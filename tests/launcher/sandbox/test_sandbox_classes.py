"""The sandbox holds what docs/security.md says, one test per class of
issue 31 (hostile round 4), each through a real `acor` process and a real
boxed tool: a real UNIX socket server outside the box, a real process to
signal, a real abstract socket, a real config, tools dir and .git of a
real project, real metadata calls, and a config walk as an ordinary user
(a test run as root drops to uid 65534 for it: chmod 0 stops no root)."""

import json
import os
import socket
import stat
import subprocess
import sys
import threading
import warnings

import pytest

from conftest import ACOR_SCRIPT, run_in_process

from acor.cli.sandbox import kernel

OFFERS = kernel.offers()
pytestmark = pytest.mark.skipif(
    OFFERS["landlock"] < 1 or not OFFERS["namespaces"],
    reason=f"this kernel lacks Landlock or unprivileged namespaces: {OFFERS}")
SCOPED = OFFERS["landlock"] >= 6

PROBE = """\
import asyncio, ctypes, os, shutil, socket, sys
from acor import AcorTool


def attempt(tool, what, args):
    if what == "unix":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(args[0])
        s.sendall(b"pwned")
        s.close()
    elif what == "dgram":  # a datagram pair could be sent anywhere
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        a.sendto(b"pwned", args[0])
    elif what == "abstract":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect("\\0" + args[0])
        s.sendall(b"pwned")
    elif what == "uring":  # io_uring can make and connect sockets itself
        libc = ctypes.CDLL(None, use_errno=True)
        params = ctypes.create_string_buffer(120)
        fd = libc.syscall(425, 4, params)
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
        os.close(fd)
    elif what == "x32":  # socket(AF_UNIX) numbered as the x32 ABI does
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.syscall(0x40000000 | 41, 1, 1, 0)
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
        os.close(fd)
    elif what == "pair":
        async def main():
            a, b = socket.socketpair()
            reader, kept = await asyncio.open_connection(sock=a)
            unused, writer = await asyncio.open_connection(sock=b)
            writer.write(b"through a socketpair\\n")
            await writer.drain()
            return (await reader.readline()).decode().strip()
        args = [asyncio.run(main())]
    elif what == "signal":
        os.kill(int(args[0]), 15)
    elif what == "write":
        with open(args[0], "w") as f:
            f.write("pwned")
    elif what == "mkdir":
        os.makedirs(args[0])
    elif what == "symlink":
        os.symlink(args[1], args[0])
    elif what == "rename":
        os.rename(args[0], args[1])
    elif what == "chmod":
        os.chmod(args[0], 0)
    elif what == "chown":
        os.chown(args[0], os.getuid(), os.getgid())
    elif what == "utime":
        os.utime(args[0], (0, 0))
    elif what == "setxattr":
        os.setxattr(args[0], "user.acor", b"pwned")
    elif what == "copy2":
        shutil.copy2(args[0], args[1])
    elif what == "remount":  # clear read-only on a mount of the box
        libc = ctypes.CDLL(None, use_errno=True)
        attr = (ctypes.c_uint64 * 4)(0, 1, 0, 0)
        if libc.syscall(442, -100, args[0].encode(), 0x8000, attr, 32) < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
    elif what == "umount":
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.umount2(args[0].encode(), 2) < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
    elif what == "session":
        tool.session(args[0])
        tool.checkpoint("one", {"done": 1})
    return args


with AcorTool() as tool:
    what, args = sys.argv[1], sys.argv[2:]
    try:
        args = attempt(tool, what, args)
    except OSError as exc:
        tool.fail("E_DENIED", f"{type(exc).__name__}: {exc}")
    tool.output(f"did {what} {' '.join(args)}")
"""


def acor(project, *args, cwd=None):
    return subprocess.run([ACOR_SCRIPT, *args], cwd=cwd or project.root,
                          env=project.env, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)


def refused(done):
    return done.returncode != 0 and "did " not in done.stdout


@pytest.fixture
def box(project, tmp_path):
    """A project with probes boxed several ways, and a home outside."""
    home = tmp_path / "home"
    home.mkdir()
    project.env["HOME"] = str(home)
    project.home = home
    project.add_tool("probe", PROBE, sandbox={"write": ["out"],
                                              "network": False})
    project.add_tool("netprobe", PROBE, sandbox={"write": ["out"],
                                                 "network": True})
    project.add_tool("sockprobe", PROBE, sandbox={
        "write": ["out"], "network": True, "unix_sockets": True})
    project.add_tool("open", PROBE)  # declares nothing
    project.add_tool("gitprobe", PROBE, sandbox={"write": [".", ".git"]})
    (project.root / "data").mkdir()
    (project.root / "data" / "in.txt").write_text("data")
    return project


class UnixServer:
    """A real UNIX socket server outside every box: what reached it."""

    def __init__(self, address, kind=socket.SOCK_STREAM):
        self.sock = socket.socket(socket.AF_UNIX, kind)
        self.sock.bind(address)
        self.got = []
        self.kind = kind
        if kind == socket.SOCK_STREAM:
            self.sock.listen(4)
        self.sock.settimeout(0.2)
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while not self.stopped.is_set():
            try:
                if self.kind == socket.SOCK_STREAM:
                    conn, _ = self.sock.accept()
                    conn.settimeout(5)
                    self.got.append(conn.recv(64) or b"connected")
                    conn.close()
                else:
                    self.got.append(self.sock.recv(64))
            except OSError:
                continue

    def close(self):
        self.stopped.set()
        self.thread.join()
        self.sock.close()
        return self.got


# -- 1: UNIX sockets outside the box ----------------------------------------

def test_unix_socket_outside_the_box_is_refused(box):
    """An ssh-agent, docker.sock or tmux server under $HOME stands for
    any: with network false and with network true, socket(AF_UNIX) is
    refused (seccomp below Landlock ABI 9), and so are the neighbours that
    would reach one anyway: a datagram socketpair sent to the path, and
    io_uring."""
    path = str(box.home / "agent.sock")
    dgram_path = str(box.home / "log.sock")
    server = UnixServer(path)
    dgram = UnixServer(dgram_path, socket.SOCK_DGRAM)
    try:
        for tool in ("probe", "netprobe"):
            done = acor(box, tool, "unix", path)
            assert refused(done), done.stdout
            assert "E_DENIED" in done.stdout
            assert refused(acor(box, tool, "dgram", dgram_path))
            uring = acor(box, tool, "uring")
            assert refused(uring) and "Operation not permitted" in \
                uring.stdout, uring.stdout
            if os.uname().machine == "x86_64":
                # The filter's EACCES, not the kernel's ENOSYS where the
                # x32 ABI is off: the x32 numbering is checked too.
                x32 = acor(box, tool, "x32")
                assert refused(x32) and "Permission denied" in x32.stdout, \
                    x32.stdout
    finally:
        got = server.close() + dgram.close()
    assert got == []


def test_socketpair_and_asyncio_keep_working_in_a_box(box):
    done = acor(box, "probe", "pair")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "did pair through a socketpair" in done.stdout


def test_unix_sockets_opt_in_lets_a_tool_connect(box):
    path = str(box.home / "suite.sock")
    server = UnixServer(path)
    try:
        done = acor(box, "sockprobe", "unix", path)
    finally:
        got = server.close()
    assert done.returncode == 0, done.stdout + done.stderr
    assert got == [b"pwned"]
    # The opt-in is checked like every field of the box.
    box.add_tool("badopt", PROBE, sandbox={"write": ["out"],
                                           "unix_sockets": "yes"})
    doctor = acor(box, "doctor")
    assert "badopt" in doctor.stdout and '"unix_sockets": false' in \
        doctor.stdout


# -- 2: abstract sockets and signals ----------------------------------------

@pytest.mark.skipif(not SCOPED, reason="Landlock scoping needs ABI 6")
def test_signal_to_a_process_outside_the_box_is_refused(box):
    victim = subprocess.Popen(["sleep", "60"])
    try:
        for tool in ("netprobe", "probe"):
            done = acor(box, tool, "signal", str(victim.pid))
            assert refused(done), done.stdout
            assert "Operation not permitted" in done.stdout
        assert victim.poll() is None  # still alive
    finally:
        victim.kill()
        victim.wait()


@pytest.mark.skipif(not SCOPED, reason="Landlock scoping needs ABI 6")
def test_abstract_socket_of_the_host_is_refused_even_with_network(box):
    """Even a tool allowed the network and UNIX sockets reaches no
    abstract socket of the host's (X11, D-Bus)."""
    name = f"acor-test-abstract-{os.getpid()}"
    server = UnixServer("\0" + name)
    try:
        for tool in ("sockprobe", "netprobe"):
            assert refused(acor(box, tool, "abstract", name))
    finally:
        got = server.close()
    assert got == []


# -- 3: what decides boxes, discovery and code that runs later -------------

@pytest.fixture
def guarded(box):
    """The default box for every tool that declares none, by the config;
    a git project with a hook folder; another tool's state."""
    root = box.root
    (root / ".acor").mkdir()
    (root / ".acor" / "config.yaml").write_text("sandbox: default\n")
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".acor" / "state" / "other").mkdir(parents=True)
    (root / ".acor" / "state" / "other" / "s.json").write_text("{}")
    (root / "out").mkdir()
    return box


def test_a_boxed_run_cannot_rewrite_what_decides_boxes(guarded):
    root = guarded.root
    config = root / ".acor" / "config.yaml"
    attempts = [
        ("write", str(config)),
        ("chmod", str(root / ".acor")),
        ("rename", str(root / ".acor"), str(root / "gone")),
        ("write", str(root / "tools" / "open" / "manifest.json")),
        ("write", str(root / "tools" / "open" / "open.py")),
        ("mkdir", str(root / "tools" / "planted")),
        ("mkdir", str(root / "manifests" / "planted")),
        ("symlink", str(root / "manifests"), str(root / "out")),
        ("write", str(root / ".git" / "hooks" / "pre-commit")),
        ("write", str(root / ".acor" / "state" / "other" / "s.json")),
        ("write", str(root / ".acor" / "state" / "open" / ".." / "x")),
    ]
    for attempt in attempts:
        done = acor(guarded, "open", *attempt)
        assert refused(done), (attempt, done.stdout)
    assert config.read_text() == "sandbox: default\n"
    assert not (root / "manifests").exists()
    assert not (root / "tools" / "planted").exists()
    assert not (root / ".git" / "hooks" / "pre-commit").exists()
    assert (root / ".acor" / "state" / "other" / "s.json").read_text() == "{}"
    # What the tool may write it still writes: the project, out/, and its
    # own sessions and checkpoints.
    for attempt in (("write", "out/result.txt"), ("write", "notes.txt"),
                    ("mkdir", "out/deeper/still"), ("session", "s1")):
        done = acor(guarded, "open", *attempt)
        assert done.returncode == 0, (attempt, done.stdout + done.stderr)
    assert list((root / ".acor" / "state" / "open").iterdir())
    # The next run is boxed still.
    outside = guarded.home / "pwned"
    assert refused(acor(guarded, "open", "write", str(outside)))
    assert not outside.exists()


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_over_mcp_a_boxed_call_cannot_rewrite_the_config(guarded,
                                                               mode):
    """`acor mcp` holds threads, so its tools are boxed between fork and
    exec by subprocess: the config stays, and the next call is boxed."""
    pytest.importorskip("mcp", reason="acor mcp needs the extra: "
                                      "pip install 'acor-cli[mcp]'")
    from mcp import Client
    from mcp_helpers import acor_mcp_stdio
    config = guarded.root / ".acor" / "config.yaml"
    outside = guarded.home / "pwned"
    async with Client(acor_mcp_stdio(guarded), mode=mode) as client:
        rewrote = await client.call_tool("open", {"argv": [
            "write", str(config)]})
        assert rewrote.is_error
        chmodded = await client.call_tool("open", {"argv": [
            "chmod", str(guarded.root / ".acor")]})
        assert chmodded.is_error
        escaped = await client.call_tool("open", {"argv": [
            "write", str(outside)]})
        assert escaped.is_error
        fine = await client.call_tool("open", {"argv": [
            "session", "over-mcp"]})
        assert not fine.is_error
    assert config.read_text() == "sandbox: default\n"
    assert not outside.exists()


def test_guarded_paths_hold_through_a_linked_project_path(guarded,
                                                         tmp_path):
    """acor started from a link to the project: the box still knows the
    config it must not write."""
    link = tmp_path / "link"
    link.symlink_to(guarded.root)
    config = guarded.root / ".acor" / "config.yaml"
    done = acor(guarded, "open", "write", str(link / ".acor" / "config.yaml"),
                cwd=link)
    assert refused(done), done.stdout
    assert config.read_text() == "sandbox: default\n"
    done = acor(guarded, "open", "session", "via-link", cwd=link)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_state_folder_committed_as_a_link_is_not_granted(guarded):
    """A repository can commit .acor/state/TOOL as a link to anywhere:
    the launcher makes and grants the tool's state folder only where no
    link is followed, so the link's target is not written."""
    target = guarded.home / "elsewhere"
    target.mkdir()
    (guarded.root / ".acor" / "state" / "open").symlink_to(target)
    done = acor(guarded, "open", "session", "s1")
    assert done.returncode != 0
    assert list(target.iterdir()) == []


def test_a_boxed_tool_cannot_unlock_its_box(guarded):
    """The mounts are locked: the capabilities a tool holds in its user
    namespace neither clear read-only nor unmount what covers a path."""
    acor_dir = str(guarded.root / ".acor")
    assert refused(acor(guarded, "open", "remount", acor_dir))
    assert refused(acor(guarded, "open", "umount", acor_dir))
    assert refused(acor(guarded, "open", "write",
                        str(guarded.root / ".acor" / "config.yaml")))


def test_a_project_without_git_takes_no_new_git_file_or_folder(box):
    """Where .git (or a tools dir) is missing, the root takes no new
    entry that would become one; the folders in it stay writable."""
    (box.root / "src").mkdir()
    for attempt in (("write", ".git"), ("mkdir", ".git/hooks"),
                    ("mkdir", "manifests"), ("rename", "src", "manifests")):
        done = acor(box, "--sandbox", "open", *attempt)
        assert refused(done), (attempt, done.stdout)
    assert not (box.root / ".git").exists()
    assert not (box.root / "manifests").exists()
    done = acor(box, "--sandbox", "open", "mkdir", "src/new/deeper")
    assert done.returncode == 0, done.stdout


def test_a_tool_that_declares_git_writes_it(guarded):
    hook = guarded.root / ".git" / "hooks" / "post-commit"
    done = acor(guarded, "gitprobe", "write", str(hook))
    assert done.returncode == 0, done.stdout + done.stderr
    assert hook.read_text() == "pwned"
    # .acor stays guarded even so.
    assert refused(acor(guarded, "gitprobe", "write",
                        str(guarded.root / ".acor" / "config.yaml")))


# -- 4: metadata outside the write paths ------------------------------------

def test_metadata_outside_the_write_paths_is_refused(box):
    victim = box.root / "data" / "in.txt"
    before = os.stat(victim)
    for what in ("chmod", "chown", "utime", "setxattr"):
        done = acor(box, "probe", what, str(victim))
        assert refused(done), (what, done.stdout)
        assert "Read-only file system" in done.stdout
    after = os.stat(victim)
    assert (after.st_mode, after.st_mtime_ns) == \
        (before.st_mode, before.st_mtime_ns)
    # copy2 copies mode and times onto the copy: inside out/ it works.
    done = acor(box, "probe", "copy2", str(victim), "out/in.txt")
    assert done.returncode == 0, done.stdout + done.stderr
    copied = os.stat(box.root / "out" / "in.txt")
    assert copied.st_mtime_ns == before.st_mtime_ns


def _as_ordinary_user(project_dir, argv, env):
    """``acor ARGV`` run as an ordinary user in ``project_dir``: this user
    if it is one; as root, a child that becomes uid 65534 first (this
    interpreter may live where that user cannot read, so the child is a
    fork of this process, which has acor imported, not a new one)."""
    if os.geteuid() != 0:
        done = subprocess.run([ACOR_SCRIPT, *argv], cwd=project_dir,
                              env=env, capture_output=True, text=True,
                              timeout=60, stdin=subprocess.DEVNULL)
        return done.returncode, done.stdout
    from acor.cli.main import main
    # Imported here, not in the child: the child runs as nobody, who may
    # not read the interpreter's own library (pyenv's under a 0700 /root),
    # so a module it imports first there fails to load.
    import acor.cli.commands.app  # noqa: F401
    read, write = os.pipe()
    with warnings.catch_warnings():
        # A fork from a test runner that may hold threads (xdist's): the
        # child takes no lock they could hold; it runs acor's main, which
        # this process has imported already, and exits.
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            os.chdir(project_dir)
            os.environ.clear()
            os.environ.update(env)
            os.dup2(write, 1)
            os.dup2(write, 2)
            sys.stdout = open(1, "w", closefd=False)  # not the test's capture
            sys.stderr = open(2, "w", closefd=False)
            try:
                code = main(list(argv))
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            except BaseException:
                import traceback
                traceback.print_exc()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code or 0)
    os.close(write)
    with open(read, encoding="utf-8") as out:
        text = out.read()
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), text


def _user_project(top):
    """A project under ``top`` that an ordinary user (uid 65534 when this
    runs as root) owns, with its own cache and config folders."""
    project = os.path.join(top, "project")
    os.makedirs(os.path.join(project, ".acor"))
    os.makedirs(os.path.join(project, "tools"))
    os.makedirs(os.path.join(project, ".git"))
    cache = os.path.join(top, "cache")
    os.makedirs(cache)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
           "HOME": top, "ACOR_CACHE_DIR": cache,
           "ACOR_NO_PACKAGE_TOOLS": "1", "NO_COLOR": "1",
           "XDG_CONFIG_HOME": os.path.join(top, "xdg")}
    return project, cache, env


def _warm_up(folder):
    """Run a boxed shell tool once in this process, in a scratch project:
    a child of this process that became another user cannot import what
    that path needs if this interpreter lives where the user cannot read."""
    project, cache, env = _user_project(folder)
    with open(os.path.join(project, ".acor", "config.yaml"), "w") as f:
        f.write("sandbox: default\n")
    with open(os.path.join(project, "tools", "hide.json"), "w") as f:
        json.dump({"name": "hide", "description": "nothing",
                   "command": ["true"]}, f)
    done = run_in_process(["hide"], cwd=project, env=env)
    assert done.returncode == 0, done.stdout


def _give_away(top):
    if os.geteuid() == 0:
        for folder, dirs, files in os.walk(top):
            for name in [folder, *(os.path.join(folder, n)
                                   for n in dirs + files)]:
                os.chown(name, 65534, 65534)


def test_as_an_ordinary_user_a_boxed_tool_cannot_hide_the_config():
    """As the ordinary user the review ran as: a default-boxed shell tool
    tries `chmod 0 .acor` (which made the walk skip the config and the next
    run go unboxed) and to rewrite the config; both are refused. (The
    child that became that user is not dumpable, as a server that keeps
    its memory private is not: the box is entered all the same.)"""
    import tempfile
    top = tempfile.mkdtemp(prefix="acor-user-", dir="/tmp")
    try:
        os.chmod(top, 0o755)
        project, cache, env = _user_project(top)
        config = os.path.join(project, ".acor", "config.yaml")
        with open(config, "w") as f:
            f.write("sandbox: default\n")
        with open(os.path.join(project, "tools", "hide.json"), "w") as f:
            json.dump({"name": "hide", "description": "hides the config",
                       "command": ["sh", "-c", 'chmod 0 .acor; '
                                   'echo "sandbox: off" > .acor/config.yaml; '
                                   'echo done > out.txt']}, f)
        with open(os.path.join(cache, "sandbox"), "w") as f:
            # What the probe finds here (it would start this interpreter,
            # which the user may not be able to read).
            f.write(f"{os.uname().release} {OFFERS['landlock']} "
                    f"{int(OFFERS['namespaces'])} {int(OFFERS['seccomp'])}\n")
        _warm_up(os.path.join(top, "warm-up"))
        _give_away(top)
        code, out = _as_ordinary_user(project, ["hide"], env)
        assert "Read-only file system" in out, out
        assert stat.S_IMODE(os.stat(os.path.join(project, ".acor")).st_mode) \
            != 0
        with open(config) as f:
            assert f.read() == "sandbox: default\n"
        # The project itself was writable to it.
        with open(os.path.join(project, "out.txt")) as f:
            assert f.read() == "done\n"
    finally:
        subprocess.run(["rm", "-rf", top], check=False)


def test_unreadable_config_stops_the_walk():
    """`chmod 0 .acor` must not make acor skip the project's config for a
    parent's: the walk stops with E_CONFIG naming the path and the fix."""
    import tempfile
    top = tempfile.mkdtemp(prefix="acor-walk-", dir="/tmp")
    try:
        os.chmod(top, 0o755)
        parent = os.path.join(top, "parent")
        project = os.path.join(parent, "project")
        os.makedirs(os.path.join(parent, ".acor"))
        os.makedirs(os.path.join(project, ".acor"))
        with open(os.path.join(parent, ".acor", "config.yaml"), "w") as f:
            f.write("sandbox: off\n")
        with open(os.path.join(project, ".acor", "config.yaml"), "w") as f:
            f.write("sandbox: default\n")
        cache = os.path.join(top, "cache")
        os.makedirs(cache)
        if os.geteuid() == 0:
            for folder, dirs, files in os.walk(top):
                for name in [folder, *(os.path.join(folder, n)
                                       for n in dirs + files)]:
                    os.chown(name, 65534, 65534)
        os.chmod(os.path.join(project, ".acor"), 0)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
               "HOME": top, "ACOR_CACHE_DIR": cache,
               "ACOR_NO_PACKAGE_TOOLS": "1", "NO_COLOR": "1",
               "XDG_CONFIG_HOME": os.path.join(top, "xdg")}
        code, out = _as_ordinary_user(project, ["list"], env)
        assert code == 2, out
        assert "E_CONFIG" in out
        assert os.path.join(project, ".acor", "config.yaml") in out
        assert "cannot be read" in out and "chmod u+rwx" in out
    finally:
        os.chmod(os.path.join(top, "parent", "project", ".acor"), 0o755)
        subprocess.run(["rm", "-rf", top], check=False)


# -- 5: what the kernel offers, said; `sandbox: false` ------------------------

def _fake_kernel(project, abi, namespaces, seccomp):
    cache = project.env["ACOR_CACHE_DIR"]
    os.makedirs(cache, exist_ok=True)
    with open(os.path.join(cache, "sandbox"), "w") as f:
        f.write(f"{os.uname().release} {abi} {int(namespaces)} "
                f"{int(seccomp)}\n")


def test_doctor_names_each_protection_and_what_is_missing(box):
    doctor = acor(box, "doctor", "--json")
    found = json.loads(doctor.stdout)["sandbox"]
    names = {p["protection"]: p["in_force"] for p in found["protections"]}
    assert set(names) == {
        "files", "read-only outside write paths (metadata too)", "network",
        "UNIX socket files", "abstract UNIX sockets and signals", "seccomp"}
    assert names["files"] and names["UNIX socket files"]
    # A kernel without namespaces nor seccomp (as acor's probe would find
    # it): the box is refused, naming each missing protection.
    _fake_kernel(box, 7, False, False)
    done = acor(box, "probe", "write", "out/x")
    assert "E_SANDBOX_UNAVAILABLE" in done.stdout
    assert "mount and network namespaces" in done.stdout
    assert "control of UNIX socket connections" in done.stdout
    assert not (box.root / "out" / "x").exists()
    text = acor(box, "doctor").stdout
    assert "NO  read-only outside write paths" in text
    assert "NO  UNIX socket files" in text
    # A tool that opts in to UNIX sockets needs no socket control.
    done = acor(box, "sockprobe", "write", "out/x")
    assert "control of UNIX socket" not in done.stdout
    assert "namespaces" in done.stdout


def test_sandbox_false_in_the_config_means_off(box):
    """The recovery text says `sandbox: "off"`; a bare `off`, which YAML
    reads as false, means the same."""
    (box.root / ".acor").mkdir(exist_ok=True)
    config = box.root / ".acor" / "config.yaml"
    outside = box.home / "free.txt"
    for value in ("off", '"off"', "false"):
        config.write_text(f"sandbox: {value}\n")
        done = acor(box, "probe", "write", str(outside))
        assert done.returncode == 0, (value, done.stdout)
        assert outside.read_text() == "pwned"
        outside.unlink()
    config.write_text("sandbox: true\n")
    done = acor(box, "probe", "write", str(outside))
    assert done.returncode == 2 and "E_CONFIG" in done.stdout
    assert 'default, "off" or false' in done.stdout


def test_the_kernel_probe_runs_in_a_spawned_helper():
    """The probe neither forks this process nor depends on its threads:
    it gives the same answer from a process that holds some."""
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, daemon=True)
    thread.start()
    try:
        with warnings.catch_warnings():
            # Python 3.12 on warns of a fork in a process with threads.
            warnings.simplefilter("error", DeprecationWarning)
            assert kernel._probe() == OFFERS
    finally:
        stop.set()
        thread.join()
