"""The files that hold whole outputs (issue 31, point 7; issue 32, point 8).

A repository can commit ``.acor/state/.output`` (or ``.acor/state``, or
``.acor``) as a symbolic link, and a tool can make one while it runs: acor
followed it, wrote whole outputs into the linked folder, and its 7-day
clean-up and ``acor sessions --clear`` deleted the user's files there (a
``.bashrc``). The output folder is now opened without following a link
from the project root down, owned by the user and private, and only
regular files of the user's named as acor names them are ever pruned or
cleared.

A full disk: the stream says the disk is full, where, and what to free;
it names no file that was not written, and leaves no empty file. The
disk is a real small filesystem (a tmpfs mounted in a user and mount
namespace of the test's own), and acor a real process inside it.

Everything runs the real ``acor`` and looks at real files.
"""

import json
import os
import shutil
import subprocess
import sys
import time

import pytest


FLOOD = """
import sys
from acor import AcorTool
with AcorTool() as tool:
    sys.stdout.write(("z" * 99 + "\\n") * 30_000)
    sys.stdout.flush()
    tool.output({"done": True})
"""
# A tool that makes the output folder a link while it runs, before acor
# opens it (at the first cut).
LINKER = """
import os
import sys
from acor import AcorTool
with AcorTool() as tool:
    state = os.environ["ACOR_STATE_DIR"]
    os.makedirs(state, exist_ok=True)
    os.symlink(sys.argv[1], os.path.join(state, ".output"))
    sys.stdout.write(("z" * 99 + "\\n") * 30_000)
    sys.stdout.flush()
    tool.output({"done": True})
"""
WEEK_AGO = time.time() - 8 * 24 * 3600
# The user's files in a folder the output folder is linked to: each must
# survive the clean-up of old files and --clear-output. Some are named as
# acor names its files: in a folder acor did not make, that changes nothing.
USERS_FILES = {".bashrc": b"export PATH\n", "notes.md": b"mine\n",
               "20200101-000000-flood-1-deadbeef.md": b"not acor's\n"}


def plant(folder):
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in USERS_FILES.items():
        path = folder / name
        path.write_bytes(data)
        os.utime(path, (WEEK_AGO, WEEK_AGO))


def assert_untouched(folder):
    for name, data in USERS_FILES.items():
        assert (folder / name).read_bytes() == data, name
    extra = {p.name for p in folder.iterdir()} - set(USERS_FILES)
    assert not {n for n in extra if n.endswith((".md", ".stderr", ".json"))
                and "-flood-" in n}, extra


def state(project):
    return project.root / ".acor" / "state"


@pytest.mark.parametrize("linked", [".acor/state/.output", ".acor/state",
                                    ".acor"])
def test_a_linked_output_folder_is_never_followed(project, tmp_path, linked):
    """A link committed at any level from the project root down: no whole
    output lands in the linked folder, and neither the clean-up nor
    --clear-output deletes anything there."""
    project.add_tool("flood", FLOOD)
    elsewhere = tmp_path / "home"
    target = elsewhere / ".output" if linked != ".acor/state/.output" \
        else elsewhere
    plant(target)
    if linked == ".acor":
        (elsewhere / "state").mkdir()
    link = project.root / linked
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(elsewhere)
    run = project.run("--max-output", "4k", "flood")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "symbolic link" in run.stdout
    assert "the whole output could not be saved" in run.stdout
    assert '"done": true' in run.stdout
    assert_untouched(target)
    cleared = project.run("sessions", "--clear-output")
    assert cleared.returncode == 1, cleared.stdout
    assert "E_UNSAFE_OUTPUT_DIR" in cleared.stdout
    assert "Nothing was deleted" in cleared.stdout
    assert_untouched(target)


def test_a_link_a_tool_makes_while_it_runs_is_not_followed(project,
                                                           tmp_path):
    project.add_tool("linker", LINKER)
    elsewhere = tmp_path / "home"
    plant(elsewhere)
    run = project.run("--max-output", "4k", "linker", str(elsewhere))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "symbolic link" in run.stdout
    assert_untouched(elsewhere)
    project.run("sessions", "--clear-output")
    assert_untouched(elsewhere)


def test_only_files_acor_made_are_pruned_or_cleared(project, tmp_path):
    """In the real output folder, the clean-up removes only old regular
    files named as acor names them; --clear-output the same, whatever
    their age. A link named like one of acor's is removed, never what it
    points to."""
    project.add_tool("flood", FLOOD)
    output = state(project) / ".output"
    plant(output)
    old = output / "20200101-000000-flood-4242-0123abcd.md"
    old.write_bytes(b"an old whole output\n")
    os.utime(old, (WEEK_AGO, WEEK_AGO))
    outside = tmp_path / "precious"
    outside.write_bytes(b"keep me\n")
    link = output / "20200101-000000-flood-4243-0123abce.md"
    link.symlink_to(outside)
    (output / "20200101-000000-flood-4244-0123abcf.md.d").mkdir()
    run = project.run("--max-output", "4k", "flood")
    assert run.returncode == 0, run.stdout
    assert not old.exists()  # pruned: old, and acor's
    for name, data in USERS_FILES.items():
        if name.startswith("2020"):
            continue  # named as acor's: may go with the clean-up
        assert (output / name).read_bytes() == data
    assert link.is_symlink() and outside.read_bytes() == b"keep me\n"
    (spilled,) = [p for p in output.iterdir() if p.name.endswith(".md")
                  and "-flood-" in p.name and p.is_file()
                  and not p.is_symlink() and p.stat().st_mtime > WEEK_AGO]
    cleared = project.run("sessions", "--clear-output", "--json")
    assert cleared.returncode == 0, cleared.stdout
    assert not spilled.exists()
    assert (output / ".bashrc").read_bytes() == USERS_FILES[".bashrc"]
    assert (output / "notes.md").exists()
    assert outside.read_bytes() == b"keep me\n"
    assert (output / "20200101-000000-flood-4244-0123abcf.md.d").is_dir()


def test_the_output_folder_is_made_private(project):
    project.add_tool("flood", FLOOD)
    output = state(project) / ".output"
    output.mkdir(parents=True)
    output.chmod(0o755)
    run = project.run("--max-output", "4k", "flood")
    assert run.returncode == 0, run.stdout
    assert output.stat().st_mode & 0o777 == 0o700
    (spilled,) = output.iterdir()
    assert spilled.stat().st_mode & 0o777 == 0o600


# --- a full disk --------------------------------------------------------

WRITER = """
import sys
from acor import AcorTool
with AcorTool() as tool:
    with open(sys.argv[1], "wb") as f:
        f.write(b"x" * 1_000_000)
    tool.output("written")
"""


def in_small_disk(project, tmp_path, script, size="64k"):
    """Run ``script`` (sh) in a user and mount namespace with a ``size``
    tmpfs mounted at DISK, the state dir on it: a real full disk, no root
    needed. Skipped where the kernel allows no such namespace."""
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare (util-linux)")
    disk = tmp_path / "disk"
    disk.mkdir()
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("no unprivileged user and mount namespaces here")
    config = project.root / ".acor" / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f"state_dir: {disk}/state\nmax_output: 4k\n")
    acor = f"{sys.executable} -m acor"
    # What is on the disk is read inside: the tmpfs goes with the
    # namespace. Each file: its size, its sha256, its path.
    listing = (f"find {disk}/state -type f | while read -r f; do "
               "echo \"$(stat -c %s \"$f\") $(sha256sum < \"$f\" | "
               "cut -d' ' -f1) $f\"; done")
    body = (f"mount -t tmpfs -o size={size} tmpfs {disk} && "
            f"mkdir {disk}/state && " + script.format(acor=acor, disk=disk)
            + f"; echo; echo FILES; {listing}")
    done = subprocess.run(["unshare", "-rm", "sh", "-c", body],
                          cwd=project.root, env=project.env,
                          capture_output=True, text=True, timeout=120)
    out, _, files = done.stdout.rpartition("\nFILES\n")
    listed = [line.split(" ", 2) for line in files.splitlines()]
    return out, done.stderr, {path: (int(size), digest)
                              for size, digest, path in listed}


def json_lines(out):
    return [json.loads(line) for line in out.splitlines()
            if line.startswith('{"')]


def test_a_full_state_dir_names_no_unwritten_file_and_leaves_none(
        project, tmp_path):
    project.add_tool("flood", FLOOD)
    out, err, files = in_small_disk(
        project, tmp_path,
        "head -c 65536 /dev/zero > {disk}/fill 2>/dev/null; "
        "{acor} flood; {acor} --format json flood")
    assert "Traceback" not in out + err
    assert "the disk is full" in out
    assert "no space left on the filesystem holding" in out
    assert "acor sessions --clear-output" in out  # what to free
    assert "the whole output is in" not in out
    assert "could not be saved" in out
    # The final data reached the agent in both formats (JSON lines are
    # compact: no space after the colon).
    assert out.count('"done": true') + out.count('"done":true') == 2
    assert files == {}  # no empty file, no partial one
    lines = json_lines(out)
    result = lines[-1]
    assert result["type"] == "result" and result["truncated"] is True
    assert result.get("output_file") is None  # v2 leaves nulls out
    assert not [e for e in lines if e["type"] == "output_files"]


def test_a_state_dir_that_fills_up_keeps_what_was_written_and_says_so(
        project, tmp_path):
    project.add_tool("flood", FLOOD)
    out, err, files = in_small_disk(
        project, tmp_path,
        "head -c 40000 /dev/zero > {disk}/fill; {acor} --format json flood")
    assert "Traceback" not in out + err
    lines = json_lines(out)
    (entry,) = [f for e in lines if e["type"] == "output_files"
                for f in e["files"]]
    assert entry["description"].startswith("Only the first ")
    assert "the disk is full" in entry["description"]
    # The file named holds what it says: its size and digest, checked on
    # the disk itself.
    assert files == {entry["path"]: (entry["bytes"], entry["sha256"])}
    assert 0 < entry["bytes"] < 3_000_000
    assert lines[-1]["output_file"] == entry["path"]
    assert lines[-2]["type"] == "status"


@pytest.mark.parametrize("kind", ["library", "program"])
def test_a_tool_that_fills_the_disk_is_told_so(project, tmp_path, kind):
    """Issue 32, point 8: a tool's ENOSPC got generic crash advice."""
    if kind == "library":
        project.add_tool("writer", WRITER)
    else:
        project.add_wrapped("writer", [
            sys.executable, "-c",
            "import sys; open(sys.argv[1], 'wb').write(b'x' * 10**6)"])
    out, err, _ = in_small_disk(project, tmp_path,
                                "{acor} writer {disk}/big")
    assert "E_DISK_FULL" in out, out
    assert "The disk is full" in out
    assert "Free space there" in out
    assert "report this to the tool's author" not in out
