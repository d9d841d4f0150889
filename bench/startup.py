"""What every call pays before any work: the tool's import of the library,
the launcher in front of a tool, and tool discovery."""

import json
import os
import shutil

from harness import alternate, bound_result, ratio_result, run_once, scale
from workspace import ACOR, PY, make_project

_RELAY = """\
import subprocess, sys
tool = subprocess.Popen([sys.executable, "tools/hello/hello.py"],
                        stdout=subprocess.PIPE)
for chunk in iter(lambda: tool.stdout.read1(65536), b""):
    sys.stdout.buffer.write(chunk)
    sys.stdout.buffer.flush()
sys.exit(tool.wait())
"""


def tool_import(env, cwd):
    """What every tool pays: the import it starts with, against a bare
    interpreter. ``cwd`` is outside the checkout: ``-c`` puts the working
    directory first on sys.path, where the checkout's acor/ would shadow
    the installed package."""
    a, b = alternate(
        lambda: run_once([PY, "-c", "from acor import AcorTool"], env, cwd),
        lambda: run_once([PY, "-c", "pass"], env, cwd), scale(60, 8))
    return ratio_result("tool import",
                        "`from acor import AcorTool` / `python -c pass`",
                        a, b, 1.3)


def launcher(env, project):
    """``acor hello`` against the least a launcher must do: start the same
    tool as a subprocess and copy its stdout through a pipe."""
    rounds = scale(40, 6)
    run_once([ACOR, "hello"], env, project)  # warm the discovery cache
    a, b = alternate(lambda: run_once([ACOR, "hello"], env, project),
                     lambda: run_once([PY, "-c", _RELAY], env, project),
                     rounds)
    direct = sorted(run_once([PY, "tools/hello/hello.py"], env, project)
                    for _ in range(scale(10, 2)))
    result = ratio_result("launcher overhead",
                          "`acor hello` / a subprocess relay of hello", a, b,
                          1.10)
    result.detail += f"; hello alone {direct[len(direct) // 2] * 1000:.1f} ms"
    return result


def sandboxed(env, project):
    """``acor --sandbox hello`` (the default box: Landlock and a network
    namespace, entered between fork and exec) against ``acor hello``."""
    rounds = scale(40, 6)
    for argv in ([ACOR, "hello"], [ACOR, "--sandbox", "hello"]):
        run_once(argv, env, project)  # warm the caches (kernel probe too)
    a, b = alternate(
        lambda: run_once([ACOR, "--sandbox", "hello"], env, project),
        lambda: run_once([ACOR, "hello"], env, project), rounds)
    result = ratio_result("sandbox", "`acor --sandbox hello` / `acor hello`",
                          a, b, 1.15)
    added = (sorted(a)[len(a) // 2] - sorted(b)[len(b) // 2]) * 1000
    result.detail += f"; the box adds {added:.1f} ms a run"
    return result


def socket_filter(env, work):
    """A boxed run with the socket filter (seccomp: no ``socket(AF_UNIX)``,
    needed below Landlock ABI 9) against the same box without it
    (``"unix_sockets": true``): what the new protection adds to a run.
    Both boxes have the read-only mounts that refuse metadata changes:
    those are the box's own mounts, not a layer a manifest can drop."""
    root = make_project(os.path.join(work, "filtered"),
                        tools=("hello",))
    for name, box in (("filtered", {}), ("unfiltered",
                                         {"unix_sockets": True})):
        folder = os.path.join(root, "tools", name)
        shutil.copytree(os.path.join(root, "tools", "hello"), folder)
        path = os.path.join(folder, "manifest.json")
        with open(path) as f:
            manifest = json.load(f)
        manifest.update(name=name, sandbox=box)
        with open(path, "w") as f:
            json.dump(manifest, f)
    for name in ("filtered", "unfiltered"):
        run_once([ACOR, name], env, root)  # the caches, the kernel probe
    a, b = alternate(lambda: run_once([ACOR, "filtered"], env, root),
                     lambda: run_once([ACOR, "unfiltered"], env, root),
                     scale(40, 6))
    result = ratio_result("sandbox, socket filter", "a box with the "
                          "socket filter / the same box without it", a, b,
                          1.1)
    added = (sorted(a)[len(a) // 2] - sorted(b)[len(b) // 2]) * 1000
    result.detail += f"; the filter adds {added:.1f} ms a run"
    return result


def discovery(env, big, small):
    rounds = scale(20, 4)
    for root in (big, small):
        run_once([ACOR, "list", "--json"], env, root)  # warm the cache
    a, b = alternate(lambda: run_once([ACOR, "list", "--json"], env, big),
                     lambda: run_once([ACOR, "list", "--json"], env, small),
                     rounds)
    warm = ratio_result("discovery, warm",
                        "`acor list --json`, 1,000 tools / 1 tool", a, b, 1.5)
    cold_env = dict(env, ACOR_NO_CACHE="1")
    cold = [run_once([ACOR, "list", "--json"], cold_env, big)
            for _ in range(scale(5, 1))]
    return [warm, bound_result("discovery, cold",
                               "`acor list --json`, 1,000 tools, no cache",
                               cold, 1.0, "s", higher_is_better=False)]
