"""The package as pip builds it: one top-level import package, and the
command, `python -m acor` and the bundled wrappers working from anywhere."""

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import REPO


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet",
         "--wheel-dir", str(out), str(REPO)],
        capture_output=True, text=True, timeout=300,
        cwd=tmp_path_factory.mktemp("build-cwd"))
    assert build.returncode == 0, build.stderr
    # No warning from the build backend (the license field, package data).
    assert "Warning" not in build.stderr and "warning" not in build.stderr, \
        build.stderr
    (path,) = out.glob("acor_cli-*.whl")
    return path


def test_the_wheel_has_one_top_level_package(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names
            if not name.split("/")[0].endswith((".dist-info", ".data"))}
    assert tops == {"acor"}
    for shipped in ("acor/cli/main.py", "acor/manifests/pytest.json",
                    "acor/schemas/events.schema.json",
                    "acor/schemas/manifest.schema.json", "acor/py.typed",
                    "acor/share/acor.sh"):
        assert shipped in names


def test_the_installed_wheel_runs_from_any_directory(wheel, tmp_path):
    target = tmp_path / "site"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--quiet",
         "--target", str(target), str(wheel)],
        capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stderr
    assert not (target / "cli").exists()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ACOR_", "PYTHON"))}
    env.update(PYTHONPATH=str(target), ACOR_CACHE_DIR=str(tmp_path / "c"),
               XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    script = target / "bin" / "acor"

    def run(*argv):
        return subprocess.run(list(argv), cwd=elsewhere, env=env,
                              capture_output=True, text=True, timeout=120)

    for argv in ([sys.executable, str(script), "--help"],
                 [sys.executable, "-m", "acor", "--help"]):
        result = run(*argv)
        assert result.returncode == 0, result.stderr
        assert "acor: run command-line tools" in result.stdout
        assert "pytest" in result.stdout  # the bundled wrapper, listed
    result = run(sys.executable, "-m", "acor", "pytest", "--version")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "pytest " in result.stdout and "## Status: Complete" in \
        result.stdout
    imported = run(sys.executable, "-c",
                   "import acor.cli, acor; print(acor.cli.__file__)")
    assert imported.stdout.startswith(str(target))


def test_the_distribution_is_acor_cli_and_the_import_package_acor():
    # "acor" on the package index is an unrelated project: acor installs
    # as acor-cli, and everything that names the distribution agrees.
    import tomllib
    from importlib import metadata

    import acor
    from acor.cli.package_data import DISTRIBUTION, MCP_INSTALL
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION == "acor-cli"
    # Not on the package index yet: the MCP extra is installed as this acor
    # was (make install: from the checkout's folder).
    assert MCP_INSTALL in (f"pip install '{REPO}[mcp]'",
                           f"pip install -e '{REPO}[mcp]'")
    assert metadata.version(DISTRIBUTION) == acor.__version__
    # This environment's acor package comes from acor-cli alone (no stale
    # install under the old name shares its files).
    assert metadata.packages_distributions()["acor"] == [DISTRIBUTION]
    scripts = {ep.name: ep.value for ep in
               metadata.distribution(DISTRIBUTION).entry_points
               if ep.group == "console_scripts"}
    assert scripts == {"acor": "acor.cli.entry:main"}


def test_every_install_line_in_the_docs_names_the_distribution():
    # A line that installs acor by a name that is not acor-cli installs
    # someone else's package.
    import re
    pattern = re.compile(r"pip install (?:-U |--upgrade |-q |--find-links "
                         r"\S+ )*'?(acor[\w.-]*)(\[[^\]]*\])?'?(?![\w/.-])")
    found = []
    for doc in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        for name, _ in pattern.findall(doc.read_text()):
            found.append((doc.name, name))
    assert found, "the README gives an install line"
    assert {name for _, name in found} == {"acor-cli"}, found


def test_an_editable_install_works_outside_the_checkout(tmp_path):
    """`pip install -e .` (what `make dev` makes): the command, the bundled
    pytest wrapper, `acor check` (its schema) and `acor.manifests` work
    from any directory, as from a regular install."""
    import sysconfig
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip",
                    str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = Path(subprocess.run(
        [str(python), "-c", "import sysconfig; "
         "print(sysconfig.get_paths()['purelib'])"], capture_output=True,
        text=True, check=True).stdout.strip())
    # Its dependencies are this environment's, acor's own regular install
    # left out (it would be found first).
    deps = tmp_path / "deps"
    deps.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if entry.name != "acor" and not entry.name.startswith(
                ("acor_cli", "__editable__")) and entry.suffix != ".pth":
            (deps / entry.name).symlink_to(entry)
    (site / "deps.pth").write_text(f"{deps}\n")
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install",
         "--no-deps", "--quiet", "-e", str(REPO)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert install.returncode == 0, install.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ACOR_", "PYTHON"))}
    env.update(ACOR_CACHE_DIR=str(tmp_path / "c"),
               XDG_CONFIG_HOME=str(tmp_path / "xdg"))

    def run(*argv):
        return subprocess.run([str(python), *argv], cwd=elsewhere, env=env,
                              capture_output=True, text=True, timeout=120)
    imported = run("-c", "import acor, acor.cli, acor.manifests; "
                   "print(acor.cli.__file__)")
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.strip() == str(REPO / "cli" / "__init__.py")
    listed = run("-m", "acor", "list")
    assert listed.returncode == 0 and "pytest" in listed.stdout, \
        listed.stdout + listed.stderr
    wrapped = run("-m", "acor", "pytest", "--version")
    assert "## Status: Complete" in wrapped.stdout, wrapped.stdout
    checked = run("-m", "acor", "check", str(REPO / "tools" / "hello"))
    assert checked.returncode == 0, checked.stdout + checked.stderr
