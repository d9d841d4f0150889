"""Shared fixtures: a scratch project with tools, and `acor` run as a user
runs it (a real subprocess, real pipes, real signals)."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def base_env(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACOR_")}
    env.pop("PYTHONPATH", None)  # tests run the installed acor, as users do
    env["ACOR_CACHE_DIR"] = str(tmp_path / "acor-cache")
    # Only the test's own tools: none from the venv's packages or the
    # developer's ~/.config/acor/tools (tests of those sources opt back in).
    env["ACOR_NO_PACKAGE_TOOLS"] = "1"
    env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg-config")
    env["NO_COLOR"] = "1"
    return env


class Project:
    """A directory with a tools/ folder, and a way to run acor in it."""

    def __init__(self, root, env):
        self.root = root
        self.env = env
        (root / "tools").mkdir(parents=True, exist_ok=True)

    def add_tool(self, name, code, **manifest):
        folder = self.root / "tools" / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{name}.py").write_text(textwrap.dedent(code))
        data = {"name": name, "version": "1.0.0",
                "description": f"test tool {name}", "entry": f"{name}.py"}
        data.update(manifest)
        (folder / "manifest.json").write_text(json.dumps(data))
        return folder

    def add_wrapped(self, name, command, **manifest):
        data = {"name": name, "description": f"wrapped {name}",
                "command": command}
        data.update(manifest)
        path = self.root / "tools" / f"{name}.json"
        path.write_text(json.dumps(data))
        return path

    def argv(self, *args):
        return [sys.executable, "-m", "acor", *args]

    def run(self, *args, timeout=60, **kwargs):
        return subprocess.run(self.argv(*args), cwd=self.root, env=self.env,
                              capture_output=True, text=True,
                              timeout=timeout, **kwargs)

    def popen(self, *args, **kwargs):
        return subprocess.Popen(self.argv(*args), cwd=self.root,
                                env=self.env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, **kwargs)


@pytest.fixture
def isolated_discovery(tmp_path, monkeypatch):
    """In-process discovery with its own cache and no inherited config."""
    monkeypatch.setenv("ACOR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("ACOR_NO_PACKAGE_TOOLS", "1")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.delenv("ACOR_CONFIG", raising=False)
    monkeypatch.delenv("ACOR_NO_CACHE", raising=False)


@pytest.fixture
def project(tmp_path):
    return Project(tmp_path / "proj", base_env(tmp_path))


def headings(markdown):
    """Top-level headings as CommonMark (markdown-it-py) sees them."""
    from markdown_it import MarkdownIt
    tokens = MarkdownIt("commonmark").parse(markdown)
    return [tokens[i + 1].content for i, t in enumerate(tokens)
            if t.type == "heading_open" and t.level == 0]


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0): read its state.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except OSError:
        return False
