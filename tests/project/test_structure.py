"""The shape of the code: one concern per module, small modules, no import
cycles, and a library that never needs the launcher."""

import ast
import subprocess
import sys
from pathlib import Path

from conftest import REPO

PACKAGES = {"acor": REPO / "acor", "acor.cli": REPO / "cli"}


def modules():
    for package, folder in PACKAGES.items():
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            yield ".".join((package, *parts)), path


def imports_of(name, path, known=None):
    """The acor modules ``name`` imports, at any depth of its code (module
    level, a TYPE_CHECKING block, a function). ``from package import
    module`` counts as importing the module; ``from package import name``
    and ``import package`` as importing the package's __init__;
    ``importlib.import_module("acor...")`` counts too."""
    package = name if path.stem == "__init__" else name.rsplit(".", 1)[0]
    tree = ast.parse(path.read_text())
    nodes = list(ast.walk(tree))
    known = dict(modules()) if known is None else known
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


def test_no_import_cycle_of_any_kind_package_edges_included():
    # Every import counts: at module level, in a TYPE_CHECKING block, in a
    # function. A module that imports a package (``from . import
    # __version__``, ``import acor``) depends on the package's __init__,
    # which imports what its own imports name: a loop through an __init__
    # is a cycle like any other (a type checker follows it, and a lazy
    # import only moves where it bites).
    graph = {name: imports_of(name, path) for name, path in modules()}
    cycles = _cycles(graph)
    assert cycles == [], "\n".join(" ".join(c) for c in cycles)


def test_the_cycle_finder_finds_a_cycle_through_a_function_level_import():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == \
        [["a", "b", "c"]]


def test_a_package_edge_and_a_type_checking_import_close_a_cycle(tmp_path):
    # The shapes that once hid a loop: a package's __init__ importing a
    # module for type checkers only, and that module importing the package
    # inside a function.
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text(
        "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from .a import A\n")
    (package / "a.py").write_text("def version():\n"
                                  "    from . import __version__\n"
                                  "    return __version__\n")
    (package / "b.py").write_text("import pkg\n")
    found = {"pkg": package / "__init__.py", "pkg.a": package / "a.py",
             "pkg.b": package / "b.py"}
    graph = {name: imports_of(name, path, known=found)
             for name, path in found.items()}
    assert graph == {"pkg": {"pkg.a"}, "pkg.a": {"pkg"}, "pkg.b": {"pkg"}}
    assert _cycles(graph) == [["pkg", "pkg.a"]]


# The launcher's layers, from the bottom: a module imports only from its own
# subpackage and from layers below its own. Data flows one way: the front
# ends (the terminal, MCP, the commands) build a run request and hand it
# to run, which discovery feeds and whose events go to the sink a front
# end chose (output); the runner imports no front end, nothing below
# imports a command. Sizes, durations and approvals are leaves every layer
# may use.
LAYERS = (
    ("leaf", ("acor.cli.errors", "acor.cli.textsafe", "acor.cli.durations",
              "acor.cli.sizes", "acor.cli.signals", "acor.cli.exiting",
              "acor.cli.package_data",
              "acor.cli.arguments", "acor.cli.handlers",
              "acor.cli.approval", "acor.cli.command_names")),
    ("output", ("acor.cli.output",)),
    ("sandbox", ("acor.cli.sandbox",)),
    ("discovery", ("acor.cli.discovery",)),
    ("run", ("acor.cli.run",)),
    ("tasks", ("acor.cli.tasks",)),
    ("terminal", ("acor.cli.terminal",)),
    ("mcp", ("acor.cli.mcp",)),
    # The wires MCP is served on, above the handlers they serve.
    ("mcp transports", ("acor.cli.mcp.transports",)),
    ("commands", ("acor.cli.commands",)),
    ("entry", ("acor.cli.main", "acor.cli.entry", "acor.cli.pytest_plugin",
               "acor.cli")),
)


def layer_of(name):
    """The rank of the layer whose prefix names ``name`` most closely
    (``acor.cli.mcp.transports`` before ``acor.cli.mcp``)."""
    found = [(len(p), rank) for rank, (_, prefixes) in enumerate(LAYERS)
             for p in prefixes if name == p or name.startswith(p + ".")]
    if not found:
        raise AssertionError(f"{name} is in no layer: add it to LAYERS")
    return max(found)[1]


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


FRONT_ENDS = ("acor.cli.terminal", "acor.cli.mcp", "acor.cli.commands")


def test_the_front_ends_stand_beside_each_other_above_the_runner():
    """The terminal, MCP and the commands each build a run request and
    hand it to the runner: none imports another's modules (a command may
    start a front end: `acor mcp` serves, `acor call` runs at the
    terminal), and nothing below them imports any."""
    starts = {"acor.cli.commands": {"acor.cli.terminal", "acor.cli.mcp"}}
    wrong = []
    for name, path in modules():
        if not name.startswith("acor.cli."):
            continue
        mine = next((f for f in FRONT_ENDS if name.startswith(f + ".")
                     or name == f), None)
        for dep in imports_of(name, path):
            theirs = next((f for f in FRONT_ENDS if dep.startswith(f + ".")
                           or dep == f), None)
            if theirs is None or theirs == mine:
                continue
            if mine is None and layer_of(name) < layer_of(theirs) or \
                    mine is not None and theirs not in starts.get(mine, ()):
                wrong.append(f"{name} -> {dep}")
    assert wrong == []


def test_tests_live_in_the_folder_of_what_they_hold():
    # One folder per package (library, launcher/<package>), plus the threat
    # classes docs/security.md cites (security) and the project's own
    # shape (project); only helpers the folders share sit at the top.
    tests = REPO / "tests"
    assert sorted(p.name for p in tests.glob("test_*.py")) == []
    folders = {p.parent.relative_to(tests).parts[0]
               for p in tests.rglob("test_*.py")
               if "conformance" not in p.parts}
    assert folders <= {"library", "launcher", "security", "project"}
