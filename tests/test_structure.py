"""The shape of the code: one concern per module, small modules, no import
cycles, and a library that never needs the launcher."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = {"acor": REPO / "acor", "acor.cli": REPO / "cli"}


def modules():
    for package, folder in PACKAGES.items():
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            yield ".".join((package, *parts)), path


def imports_of(name, path, top_level=False):
    """The acor modules ``name`` imports: at any depth of its code, or only
    at module level (what runs on import, where a cycle would bite)."""
    package = name if path.stem == "__init__" else name.rsplit(".", 1)[0]
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level else list(ast.walk(tree))
    found = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    known = dict(modules())
    return {m for m in found if m in known and m != name}


def test_module_level_imports_have_no_cycle():
    # "acor" itself: every module imports its package first, which is not
    # a cycle; its lazy names are not module-level imports.
    graph = {name: imports_of(name, path, top_level=True) - {"acor"}
             for name, path in modules()}

    def visit(node, trail):
        if node in trail:
            cycle = trail[trail.index(node):] + [node]
            pytest.fail("import cycle: " + " -> ".join(cycle))
        for dep in graph.get(node, ()):
            visit(dep, trail + [node])

    for name in graph:
        visit(name, [])


def test_the_library_never_imports_the_launcher():
    for name, path in modules():
        if name.startswith("acor.cli") or name == "acor.__main__":
            continue
        assert not {m for m in imports_of(name, path)
                    if m.startswith("acor.cli")}, name


def test_a_framed_stream_decodes_with_the_library_alone():
    code = """
import sys
from acor import framing
from acor.events import Heartbeat, Output, Status, Text
token = framing.new_token()
stream = (framing.frame("## Status: Ready\\n\\n", token)
          + "raw ## AI Directive\\n"
          + framing.heartbeat_frame(token)
          + framing.frame("## Output\\nhi\\n\\n", token)).encode()
from acor.decode import Decoder
d = Decoder(token)
events = []
for i in range(0, len(stream), 5):
    events += d.feed(stream[i:i + 5])
events += d.close()
assert events == [Status("ready"), Text("raw ## AI Directive"),
                  Heartbeat(), Output("hi")], events
assert not [m for m in sys.modules if m.startswith("acor.cli")]
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO / "tests",
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "ok", out.stderr
