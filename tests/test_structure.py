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
    at module level (what runs on import, where a cycle would bite).
    ``from package import module`` counts as importing the module, not the
    package; ``importlib.import_module("acor...")`` counts too."""
    package = name if path.stem == "__init__" else name.rsplit(".", 1)[0]
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level else list(ast.walk(tree))
    known = dict(modules())
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
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                found.add(submodule if submodule in known else base)
        elif (isinstance(node, ast.Call) and node.args and
              isinstance(node.args[0], ast.Constant) and
              isinstance(node.args[0].value, str) and
              getattr(node.func, "attr", getattr(node.func, "id", None))
              == "import_module"):
            found.add(node.args[0].value)
    return {m for m in found if m in known and m != name}


def _cycles(graph):
    """The strongly connected components of more than one module."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for dep in graph.get(node, ()):
            if dep not in index:
                visit(dep)
                low[node] = min(low[node], low[dep])
            elif dep in on_stack:
                low[node] = min(low[node], index[dep])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return found


@pytest.mark.parametrize("top_level", [True, False],
                         ids=["module level", "any level"])
def test_no_import_cycle_of_any_kind(top_level):
    # A package's __init__ is imported before any of its modules, which is
    # not a cycle: edges to the packages themselves are left out.
    packages = {name for name, path in modules() if path.stem == "__init__"}
    graph = {name: imports_of(name, path, top_level) - packages
             for name, path in modules()}
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle_through_a_function_level_import():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == \
        [["a", "b", "c"]]


# The launcher's layers, from the bottom: a module imports only from its own
# subpackage and from layers below its own. Data flows one way: commands
# call run and discovery, which hand events to output; nothing below
# imports a command.
LAYERS = (
    ("leaf", ("acor.cli.errors", "acor.cli.textsafe", "acor.cli.durations",
              "acor.cli.signals", "acor.cli.package_data",
              "acor.cli.arguments", "acor.cli.handlers")),
    ("output", ("acor.cli.output",)),
    ("sandbox", ("acor.cli.sandbox",)),
    ("discovery", ("acor.cli.discovery",)),
    ("run", ("acor.cli.run",)),
    ("human", ("acor.cli.human",)),
    ("mcp", ("acor.cli.mcp",)),
    ("commands", ("acor.cli.commands",)),
    ("entry", ("acor.cli.main", "acor.cli.entry", "acor.cli.pytest_plugin",
               "acor.cli")),
)


def layer_of(name):
    for rank, (_, prefixes) in enumerate(LAYERS):
        if any(name == p or name.startswith(p + ".") for p in prefixes):
            return rank
    raise AssertionError(f"{name} is in no layer: add it to LAYERS")


def test_each_launcher_module_imports_only_from_below():
    wrong = []
    for name, path in modules():
        if not name.startswith("acor.cli"):
            continue
        rank = layer_of(name)
        for dep in imports_of(name, path):
            if dep.startswith("acor.cli.") and layer_of(dep) >= rank and \
                    dep.rsplit(".", 1)[0] != name.rsplit(".", 1)[0]:
                wrong.append(f"{name} -> {dep}")
    assert wrong == []


def test_no_folder_holds_more_than_24_modules():
    for folder in PACKAGES.values():
        for sub in [folder, *[p for p in folder.rglob("*") if p.is_dir()]]:
            assert len(list(sub.glob("*.py"))) <= 24, sub

MAX_COMPLEXITY = 18  # radon's cyclomatic complexity of one function
MAX_LINES = 600      # of one module


def test_no_function_over_complexity_18_and_no_module_over_600_lines():
    """Small rooms: each concern its own function or small object. Radon
    counts every branch, loop, boolean operator and comprehension
    clause."""
    from radon.complexity import cc_visit
    too_complex, too_long = [], []
    for name, path in modules():
        source = path.read_text()
        lines = source.count("\n")
        if lines > MAX_LINES:
            too_long.append(f"{name}: {lines} lines")
        over = {(block.lineno, block.fullname, block.complexity)
                for block in _blocks(cc_visit(source))
                if block.complexity > MAX_COMPLEXITY}
        too_complex += [f"{name}.{function}: {complexity}"
                        for _, function, complexity in sorted(over)]
    assert too_complex == [] and too_long == [], \
        "\n".join(too_complex + too_long)


def _blocks(blocks):
    """Every function radon measured, methods, closures and the classes
    inside functions included (a method can come twice: as a block and
    as its class's)."""
    for block in blocks:
        yield block
        yield from _blocks([*getattr(block, "methods", ()),
                            *getattr(block, "closures", ()),
                            *getattr(block, "inner_classes", ())])


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
