"""Function tools (issue 35) against the same tool written as a class with
a manifest: a run, cold discovery of 100 of them, and the import a
function tool starts with."""

import json
import os
import re
import time

from harness import alternate, bound_result, ratio_result, run_once, scale
from workspace import ACOR, PY, REPO

# The same tool twice: typed arguments n/dist/seed, progress per item,
# JSON out.
FUNCTION = '''\
import random
from typing import Annotated, Literal

from acor import AcorTool, Arg, tool


@tool(name="{name}")
def {function}(n: Annotated[int, Arg("how many numbers", minimum=1)],
         dist: Literal["uniform", "gauss"] = "uniform",
         seed: int | None = None, *, acor: AcorTool) -> dict:
    """Summarise n random numbers."""
    rng = random.Random(seed)
    draw = rng.random if dist == "uniform" else lambda: rng.gauss(0, 1)
    xs = []
    for i in range(n):
        xs.append(draw())
        acor.progress_bar(i + 1, n, "sampling")
    return {{"n": n, "dist": dist, "mean": sum(xs) / n}}
'''

CLASS = '''\
import random

from acor import AcorTool

with AcorTool() as tool:
    args = tool.parse_args()
    rng = random.Random(args.seed)
    draw = rng.random if args.dist == "uniform" else lambda: rng.gauss(0, 1)
    xs = []
    for i in range(args.n):
        xs.append(draw())
        tool.progress_bar(i + 1, args.n, "sampling")
    tool.output({"n": args.n, "dist": args.dist, "mean": sum(xs) / args.n})
'''

ARGS = {
    "type": "object", "additionalProperties": False, "required": ["n"],
    "properties": {
        "n": {"type": "integer", "minimum": 1,
              "description": "how many numbers", "x-acor": {"position": 0}},
        "dist": {"type": "string", "enum": ["uniform", "gauss"],
                 "default": "uniform", "x-acor": {"flag": "--dist"}},
        "seed": {"type": "integer", "x-acor": {"flag": "--seed"}}}}


def _function_tool(tools_dir, name):
    with open(os.path.join(tools_dir, name.replace("-", "_") + ".py"),
              "w") as f:
        f.write(FUNCTION.format(name=name, function=name.replace("-", "_")))


def _class_tool(tools_dir, name):
    folder = os.path.join(tools_dir, name)
    os.makedirs(folder)
    with open(os.path.join(folder, "cli.py"), "w") as f:
        f.write(CLASS)
    with open(os.path.join(folder, "manifest.json"), "w") as f:
        json.dump({"name": name, "version": "1.0.0", "entry": "cli.py",
                   "description": "Summarise n random numbers.",
                   "args": ARGS}, f)


def _project(root, make, names):
    tools = os.path.join(root, "tools")
    os.makedirs(tools)
    for name in names:
        make(tools, name)
    old = time.time() - 60  # old enough for the cache to be written
    for folder, dirs, files in os.walk(root):
        for entry in dirs + files:
            os.utime(os.path.join(folder, entry), (old, old))
    return root


def _run(env, work):
    """``acor fstats 2000`` against ``acor cstats 2000``: the same work,
    one a function, the other a class with a manifest."""
    root = _project(os.path.join(work, "fn-run"), lambda d, n: (
        _function_tool(d, n) if n == "fstats" else _class_tool(d, n)),
        ["fstats", "cstats"])
    argv = ["2000", "--seed", "1"]
    for name in ("fstats", "cstats"):
        run_once([ACOR, name, *argv], env, root)  # warm the cache
    a, b = alternate(lambda: run_once([ACOR, "fstats", *argv], env, root),
                     lambda: run_once([ACOR, "cstats", *argv], env, root),
                     scale(40, 6))
    return ratio_result("function tool run",
                        "`acor fstats 2000`, a function / the same tool as "
                        "a class + manifest", a, b, 1.05)


def _discovery(env, work):
    """``acor list --json`` without the cache: 100 function files against
    100 tool folders of the same tool."""
    names = [f"stats-{i:03d}" for i in range(scale(100, 10))]
    functions = _project(os.path.join(work, "fn-100"), _function_tool, names)
    classes = _project(os.path.join(work, "cls-100"), _class_tool, names)
    cold = dict(env, ACOR_NO_CACHE="1")
    a, b = alternate(
        lambda: run_once([ACOR, "list", "--json"], cold, functions),
        lambda: run_once([ACOR, "list", "--json"], cold, classes),
        scale(20, 4))
    return ratio_result("function tool discovery (cold)",
                        "`acor list --json`, no cache: 100 function tools / "
                        "100 manifests", a, b, 1.5)


def _import(env, work):
    """What a function tool's file starts with, against a bare
    interpreter (``cwd`` outside the checkout, as tool import's)."""
    a, b = alternate(
        lambda: run_once([PY, "-c", "from acor import tool"], env, work),
        lambda: run_once([PY, "-c", "pass"], env, work), scale(60, 8))
    return ratio_result("function tool import",
                        "`from acor import tool` / `python -c pass`", a, b,
                        1.3)


def _lines(env, work):
    """The new user's tool as a function, as docs/authoring.md writes it
    (and tests/launcher/discovery/test_function_tools.py runs it): its non-blank lines."""
    with open(os.path.join(REPO, "docs", "authoring.md")) as f:
        blocks = dict(re.findall(r"<!-- tool: (\w+) -->\n```\w+\n(.*?)```",
                                 f.read(), re.S))

    def counted(name):
        return sum(1 for line in blocks[name].splitlines() if line.strip())
    return bound_result(
        "function tool lines", "the new user's tool as a function, "
        "non-blank lines (docs/authoring.md)", [counted("function")], 15,
        "lines", higher_is_better=False,
        detail=f"as a class + manifest {counted('class')} + "
               f"{counted('manifest')}; FastMCP 19, click + rich 16")


#: (row name, target, unit, measurement(env, work)) for bench/run.py.
ROWS = [("function tool lines", 15, "lines", _lines),
        ("function tool run", 1.05, "x", _run),
        ("function tool discovery (cold)", 1.5, "x", _discovery),
        ("function tool import", 1.3, "x", _import)]
