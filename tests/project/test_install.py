"""The README's install lines, run as copied, on a fresh environment
(issue 32.10): acor-cli is not on the package index, so the first install
a new user meets is the wheel `make dist` builds.

Offline and in about 20 s: the wheel is built from a copy of the checkout
with the build backend already in the test venv (--no-build-isolation, as
`make dist` builds it with isolation), and installed into a new virtualenv
whose dependencies are the test venv's own, linked in (so pip finds them
satisfied: --no-index is the only word added to the README's lines). acor
itself is not linked: the new venv has only what the wheel installed. Nor
is pytest: acor does not install it.
"""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from conftest import REPO, base_env

SITE = Path(sysconfig.get_paths()["purelib"])
# What the new venv must not see of the test venv's: acor (the wheel
# brings it) and pytest (acor does not install it).
NOT_LINKED = re.compile(r"(acor|acor_cli|_?pytest|py)(\b|-|_|\.|$)",
                        re.IGNORECASE)


def readme_block(heading):
    """The first fenced block after ``heading`` in the README."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    after = text[text.index(heading):]
    return re.search(r"```\w*\n(.*?)```", after, re.DOTALL).group(1)


def pip_lines(block):
    """Each ``pip install ...`` line of ``block`` as argv, comment cut."""
    return [shlex.split(line, comments=True) for line in block.splitlines()
            if line.strip().startswith("pip install")]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """dist/ holding the wheel built from a copy of this checkout."""
    root = tmp_path_factory.mktemp("install")
    source = root / "source"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    for name in ("acor", "cli", "manifests"):
        shutil.copytree(REPO / name, source / name, ignore=ignore)
    dist = root / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet",
                    "--no-deps", "--no-index", "--no-build-isolation",
                    "--wheel-dir", str(dist), str(source)], check=True,
                   capture_output=True, timeout=300)
    return root


def fresh_venv(root, name):
    """A new virtualenv that sees the test venv's dependencies (linked
    into a folder of its own, named by a .pth file) but not acor."""
    home = root / name
    subprocess.run([sys.executable, "-m", "venv", "--without-pip",
                    str(home)], check=True, timeout=120)
    deps = root / f"{name}-deps"
    deps.mkdir()
    for entry in SITE.iterdir():
        if entry.suffix == ".pth" or NOT_LINKED.match(entry.name):
            continue
        (deps / entry.name).symlink_to(entry)
    python = home / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print("
                           "sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True
                          ).stdout.strip()
    Path(site, "test-deps.pth").write_text(str(deps) + "\n")
    return home


def run_pip(home, argv, cwd):
    """A README line ``pip install ...`` for the venv ``home``, offline."""
    assert argv[:2] == ["pip", "install"]
    pip = [sys.executable, "-m", "pip", "--python", str(home / "bin" /
                                                         "python")]
    done = subprocess.run([*pip, "install", "--no-index", *argv[2:]],
                          cwd=cwd, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def test_32_10_the_readmes_install_lines_work_as_copied(built, tmp_path):
    lines = pip_lines(readme_block("### Installing"))
    assert len(lines) == 2
    wheels = os.listdir(built / "dist")
    # The README names the wheel make dist builds (its version included).
    assert [line[2].split("[")[0] for line in lines] == \
        [f"dist/{wheels[0]}"] * 2
    home = fresh_venv(tmp_path, "venv")
    for line in lines:
        run_pip(home, line, cwd=built)
    acor = str(home / "bin" / "acor")
    env = base_env(tmp_path)
    version = subprocess.run([acor, "--version"], capture_output=True,
                             text=True, env=env, timeout=60)
    assert version.returncode == 0 and "0.2.0" in version.stdout

    # The quick start of a tool, in a project of its own.
    project = tmp_path / "project"
    project.mkdir()

    def run(*args):
        return subprocess.run([acor, *args], cwd=project, env=env,
                              capture_output=True, text=True, timeout=120)
    made = run("new", "wc")
    assert made.returncode == 0, made.stdout + made.stderr
    # 32.11: no bare `pytest`: acor did not install it.
    python = str(home / "bin" / "python")
    assert "its test needs pytest, which acor does not install: " + \
        shlex.join([python, "-m", "pip", "install", "pytest"]) in made.stdout
    checked = run("check", "wc")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    counted = run("--format", "json", "wc", "tools/wc/sample.txt")
    assert counted.returncode == 0, counted.stdout + counted.stderr

    # What acor tells an agent to install is this wheel, not acor-cli.
    skills = run("export", "skill", "wc", "--dir", "skills")
    assert skills.returncode == 0, skills.stdout + skills.stderr
    skill = (project / "skills" / "wc" / "SKILL.md").read_text()
    assert f"run as {acor} (installed from the file " in skill
    assert "pip install acor-cli" not in skill


def test_32_10_the_compose_files_install_line_works(built, tmp_path):
    """compose.yaml's `pip install --find-links /project/dist
    'acor-cli[mcp,tasks-postgres]'`, with the project's dist/ where /project/dist is,
    then `acor mcp` answers a client."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    compose = text[text.index("# compose.yaml"):].split("```")[0]
    command = re.search(r'sh -c "(pip install [^&]*?) &&', compose).group(1)
    argv = [word.replace("/project/dist", str(built / "dist"))
            for word in shlex.split(command)]
    home = fresh_venv(tmp_path, "venv")
    run_pip(home, [w for w in argv if w != "-q"], cwd=tmp_path)
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"protocolVersion": "2025-06-18",
                             "capabilities": {},
                             "clientInfo": {"name": "t", "version": "1"}}}
    server = subprocess.run(
        [str(home / "bin" / "acor"), "mcp"], cwd=tmp_path,
        env=base_env(tmp_path), input=json.dumps(initialize) + "\n",
        capture_output=True, text=True, timeout=120)
    assert server.returncode == 0, server.stderr
    answer = json.loads(server.stdout.splitlines()[0])
    assert answer["result"]["serverInfo"]["name"] == "acor"
