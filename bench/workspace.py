"""Where the bench runs: the installed acor, a clean environment, and
throw-away projects holding the tools it launches."""

import json
import os
import shutil
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH_TOOLS = os.path.join(REPO, "bench", "tools")
HELLO = os.path.join(REPO, "tools", "hello", "hello.py")
PY = sys.executable
ACOR = os.path.join(os.path.dirname(PY), "acor")


class NotInstalled(Exception):
    """The bench would measure something other than what users get."""


def clean_env(cache):
    """The environment a user's shell gives a tool: no PYTHON* settings
    (this machine sets PYTHONUNBUFFERED and PYTHONDONTWRITEBYTECODE, and a
    checkout on PYTHONPATH would shadow the installed package), no ACOR_*
    but the bench's own discovery cache."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ACOR_", "PYTHON"))}
    env["ACOR_CACHE_DIR"] = cache
    env["ACOR_NO_PACKAGE_TOOLS"] = "1"  # the bench's tools, and no others
    return env


_WHERE = """\
import json, acor, acor.cli
from importlib import metadata
url = json.loads(metadata.distribution("acor-cli").read_text("direct_url.json")
                 or "{}")
print(json.dumps({"file": acor.__file__, "version": acor.__version__,
                  "editable": url.get("dir_info", {}).get("editable", False)}))
"""


def installed_acor(env, cwd):
    """Check that the venv's Python, run as the bench runs tools, imports
    the regular (non-editable) install and not this checkout; returns a
    line saying where acor comes from."""
    if not os.path.exists(ACOR):
        raise NotInstalled(f"no acor command beside {PY}: run `make install`")
    proc = subprocess.run([PY, "-c", _WHERE], env=env, cwd=cwd,
                          capture_output=True, text=True, check=False)
    if proc.returncode:
        raise NotInstalled(f"acor does not import from {PY}: "
                           f"{proc.stderr.strip().splitlines()[-1:]}")
    where = json.loads(proc.stdout)
    here = sys.modules["acor"].__file__  # what the bench itself parses with
    for path in (where["file"], here):
        if path.startswith(os.path.join(REPO, "acor") + os.sep) or \
                "site-packages" not in path:
            raise NotInstalled(f"acor is imported from {path}, not from the "
                               "installed package")
    if where["editable"]:
        raise NotInstalled("acor is an editable install; users get a "
                           "regular one: run `make install`")
    site = os.path.dirname(os.path.dirname(where["file"]))
    return f"acor {where['version']}, regular install in {site}"


def make_project(root, tools=(), copies=0):
    """A project whose tools dir holds the named bench tools (``hello`` is
    the repository's) and ``copies`` generated copies of hello, for
    discovery."""
    tools_dir = os.path.join(root, "tools")
    os.makedirs(tools_dir, exist_ok=True)
    for name in tools:
        source = HELLO if name == "hello" else \
            os.path.join(BENCH_TOOLS, name + ".py")
        _add_tool(tools_dir, name, source)
    for i in range(copies):
        _add_tool(tools_dir, f"tool-{i:04d}", HELLO)
    # The discovery cache is not written for files modified in the last
    # seconds (a timestamp guard); age them so the warm path is measured.
    old = time.time() - 60
    for folder, dirs, files in os.walk(root):
        for entry in dirs + files:
            os.utime(os.path.join(folder, entry), (old, old))
        os.utime(folder, (old, old))
    return root


def _add_tool(tools_dir, name, source):
    folder = os.path.join(tools_dir, name)
    os.makedirs(folder, exist_ok=True)
    shutil.copy(source, folder)
    manifest = {"name": name, "version": "1.0.0",
                "entry": os.path.basename(source),
                "description": f"benchmark tool {name}"}
    if source == HELLO:  # hello parses its arguments with its schema
        with open(os.path.join(os.path.dirname(HELLO), "manifest.json")) as f:
            manifest["args"] = json.load(f)["args"]
    with open(os.path.join(folder, "manifest.json"), "w") as f:
        json.dump(manifest, f)
