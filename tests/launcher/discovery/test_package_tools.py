"""Tools from packages (the ``acor.tools`` entry-point group) and the
user-wide tools dir."""

import base64
import hashlib
import importlib
import json
import subprocess
import sys
import uuid
import zipfile
from pathlib import Path

import pytest

from acor.cli.discovery.sources import entry_point_dirs, search_paths, user_tools_dir

from conftest import base_env


def test_user_tools_dir_follows_xdg_config_home(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert user_tools_dir() == str(tmp_path / "acor" / "tools")


@pytest.mark.parametrize("value", [None, "", "relative/config"])
def test_user_tools_dir_defaults_to_dot_config(monkeypatch, tmp_path, value):
    # A relative XDG_CONFIG_HOME is invalid (XDG spec): the tools found
    # must not depend on the current directory.
    monkeypatch.setenv("HOME", str(tmp_path))
    if value is None:
        monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_CONFIG_HOME", value)
    assert user_tools_dir() == str(tmp_path / ".config" / "acor" / "tools")


def test_acor_registers_its_bundled_wrappers():
    dirs = dict(entry_point_dirs())
    bundled = [d for d, origin in dirs.items()
               if origin.startswith("package acor-cli ")]
    assert len(bundled) == 1
    assert (Path(bundled[0]) / "pytest.json").is_file()


def _wheel(folder, dist, package, entry_points):
    """A wheel of ``package`` (a dict of relative path -> text) with the
    given ``acor.tools`` entry points; its path."""
    version = "0.1"
    info = f"{dist}-{version}.dist-info"
    files = {f"{package}/{rel}": text for rel, text in entry_points[1].items()}
    files[f"{info}/METADATA"] = (f"Metadata-Version: 2.1\nName: {dist}\n"
                                 f"Version: {version}\n")
    files[f"{info}/WHEEL"] = ("Wheel-Version: 1.0\nGenerator: test\n"
                              "Root-Is-Purelib: true\nTag: py3-none-any\n")
    files[f"{info}/entry_points.txt"] = "[acor.tools]\n" + "".join(
        f"{name} = {value}\n" for name, value in entry_points[0].items())
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(
            text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = "\n".join(record) + "\n"
    path = folder / f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in files.items():
            info_ = zipfile.ZipInfo(name)
            # Executable bits survive pip's install from the wheel.
            info_.external_attr = (0o755 if name.endswith(".sh") else
                                   0o644) << 16
            zf.writestr(info_, text)
    return path


GREET = """\
import sys
from acor import AcorTool

with AcorTool() as tool:
    tool.output(f"Hello, {sys.argv[1]}!")
"""


@pytest.fixture(scope="module")
def tools_package(tmp_path_factory):
    """A distribution with tools, pip-installed into this venv for the
    module (a name of its own, so parallel workers do not collide)."""
    uid = uuid.uuid4().hex[:10]
    dist, package, tool = f"acor_demo_{uid}", f"acor_demo_{uid}", \
        f"greet-{uid}"
    contents = {
        # Importing the package would fail: finding its tools must not.
        "__init__.py": "raise RuntimeError('acor imported a tools package')\n",
        f"tools/{tool}/manifest.json": json.dumps({
            "name": tool, "description": "Greet from a package",
            "entry": "greet.py"}),
        f"tools/{tool}/greet.py": GREET,
    }
    eps = {"demo": f"{package}.tools", "missing": f"{package}.nowhere",
           "object": f"{package}.tools:thing"}
    wheel = _wheel(tmp_path_factory.mktemp("wheel"), dist, package,
                   (eps, contents))
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check",
           "--quiet"]
    subprocess.run(pip + ["install", "--no-deps", "--no-index", str(wheel)],
                   check=True, capture_output=True)
    importlib.invalidate_caches()
    try:
        yield {"dist": dist, "package": package, "tool": tool}
    finally:
        subprocess.run(pip + ["uninstall", "--yes", dist],
                       capture_output=True)
        importlib.invalidate_caches()


def test_an_installed_package_is_found_without_importing_it(tools_package):
    problems = []
    found = entry_point_dirs(problems)
    ours = [(d, origin) for d, origin in found
            if tools_package["package"] in d]
    assert len(ours) == 1
    folder, origin = ours[0]
    assert origin == f"package {tools_package['dist']} 0.1"
    assert (Path(folder) / tools_package["tool"] / "manifest.json").is_file()
    assert tools_package["package"] not in sys.modules
    reasons = {p.name: p.reason for p in problems
               if tools_package["package"] in p.value}
    assert set(reasons) == {"missing", "object"}
    assert "no folder" in reasons["missing"]
    assert "names an object" in reasons["object"]
    assert all(p.recovery for p in problems)


def test_search_paths_hold_the_install_location(tools_package):
    # A cache of entry_point_dirs() is valid while these are unchanged;
    # the package was installed into one of them.
    import sysconfig
    assert sysconfig.get_paths()["purelib"] in search_paths()


def packages_on(tmp_path):
    """The tests' environment, with installed packages' tools looked for."""
    env = base_env(tmp_path)
    env.pop("ACOR_NO_PACKAGE_TOOLS")
    return env


def test_a_packaged_tool_runs_from_an_unrelated_directory(tools_package,
                                                          tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "acor", tools_package["tool"], "Ada"],
        cwd=elsewhere, env=packages_on(tmp_path), capture_output=True,
        text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Hello, Ada!" in proc.stdout


def test_the_bundled_wrappers_are_found_from_any_directory(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "acor", "list", "--json"],
                          cwd=tmp_path, env=packages_on(tmp_path),
                          capture_output=True, text=True, timeout=60)
    tools = {tool["name"]: tool for tool in json.loads(proc.stdout)["tools"]}
    assert tools["pytest"]["origin"].startswith("package acor-cli ")
    # Turned off, they are not: the tests rely on that for isolation.
    proc = subprocess.run([sys.executable, "-m", "acor", "list", "--json"],
                          cwd=tmp_path, env=base_env(tmp_path),
                          capture_output=True, text=True, timeout=60)
    assert json.loads(proc.stdout)["tools"] == []


def test_a_project_tool_overriding_a_packaged_one_is_no_problem(tmp_path):
    """A project may replace a bundled wrapper on purpose: doctor shows
    it, and it is not a problem (exit 0)."""
    tools = tmp_path / "proj" / "tools"
    tools.mkdir(parents=True)
    (tools / "pytest.json").write_text(json.dumps(
        {"name": "pytest", "description": "our own", "command": ["true"]}))
    proc = subprocess.run([sys.executable, "-m", "acor", "doctor", "--json"],
                          cwd=tmp_path / "proj", env=packages_on(tmp_path),
                          capture_output=True, text=True, timeout=60)
    report = json.loads(proc.stdout)
    [override] = [s for s in report["shadowed"] if s["name"] == "pytest"]
    assert override["override"] is True
    assert override["winner"] == str(tools / "pytest.json")
    # (Another test's demo package may be installed meanwhile, with its
    # broken entry points: those are problems, the override is not.)
    assert report["problems"] == len(report["warnings"]) + \
        len(report["skipped"])
    assert proc.returncode == (1 if report["problems"] else 0)
