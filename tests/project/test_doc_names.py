"""Every dotted name the docs and docstrings cite exists.

A docstring that sends a reader to ``cli.mcp_app`` after that module was
renamed is worse than none: the reader looks for code that is gone. This
test reads every docstring of acor and acor.cli and every Markdown file of
the docs, takes each dotted name that starts with ``acor`` or ``cli``
(``cli.`` is the launcher as installed, ``acor.cli.``), and checks it names a
module of this checkout, or a module and then a class, function or value
defined in it (read with ``ast``, nothing imported).
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

from conftest import REPO
SOURCES = {"acor": REPO / "acor", "acor.cli": REPO / "cli"}
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

# A Sphinx role (:mod:`x.y`) or a code span (`x.y`) holding a dotted name
# that starts with acor or cli; a leading ~ or . is Sphinx's shorthand.
ROLE = re.compile(r":(?:mod|func|class|meth|data|attr|exc):`~?(\.?[\w.]+)`")
SPAN = re.compile(r"`((?:acor|cli)\.[\w.]+)(?:\(\))?`")
# Names that are not modules: the entry-point group packages ship tools in.
NOT_MODULES = {"acor.tools"}
# Files named like modules: acor.sh and acor.mjs (the helpers for bash and
# Node), acor.lock (pinned definitions), a tool's cli.py.
FILE_SUFFIXES = {"sh", "mjs", "py", "lock", "json", "toml", "yaml", "yml",
                 "md", "txt", "cfg", "ini"}


def module_files() -> dict[str, Path]:
    found = {}
    for package, folder in SOURCES.items():
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join((package, *parts))] = path
    return found


MODULES = module_files()


@cache
def defined_names(path: Path) -> dict[str, set[str]]:
    """Top-level names of a module, each with the names defined in it when
    it is a class (methods, attributes)."""
    names: dict[str, set[str]] = {}
    for node in ast.parse(path.read_text()).body:
        for name in _bound(node):
            names.setdefault(name, set())
        if isinstance(node, ast.ClassDef):
            names[node.name] = {n for child in node.body for n in _bound(child)}
    return names


def _bound(node: ast.AST) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return [t.id for t in targets if isinstance(t, ast.Name)]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in node.names]
    if isinstance(node, ast.If):  # TYPE_CHECKING and version switches
        return [n for child in node.body + node.orelse for n in _bound(child)]
    if isinstance(node, ast.Try):
        return [n for child in node.body for n in _bound(child)]
    return []


def resolves(name: str) -> bool:
    if name in NOT_MODULES:
        return True
    if name.startswith("cli."):
        name = "acor." + name
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        if module in MODULES:
            rest = parts[cut:]
            if not rest:
                return True
            names = defined_names(MODULES[module])
            here = rest[0] in names and (
                len(rest) == 1 or (len(rest) == 2 and rest[1] in names[rest[0]]))
            return here or _reexported(module, rest)
    return False


def _reexported(package: str, rest: list[str]) -> bool:
    """A package's ``__all__`` name (``acor.AcorTool``) defined in one of
    its modules, which the package loads on first use."""
    init = MODULES[package]
    if init.stem != "__init__" or f'"{rest[0]}"' not in init.read_text():
        return False
    return any(resolves(".".join([module, *rest])) for module in MODULES
               if module.rsplit(".", 1)[0] == package and module != package)


def cited(text: str, package: str) -> set[str]:
    names = set()
    for match in ROLE.finditer(text):
        name = match.group(1)
        if name.startswith("."):  # relative to the docstring's package
            name = package + name
        if name.split(".")[0] in ("acor", "cli") and "." in name:
            names.add(name)
    names.update(match.group(1) for match in SPAN.finditer(text))
    return {n.rstrip(".") for n in names
            if n.rstrip(".").rsplit(".", 1)[-1] not in FILE_SUFFIXES}


def docstrings(path: Path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                             ast.AsyncFunctionDef)):
            text = ast.get_docstring(node, clean=False)
            if text:
                yield text


def citations():
    for module, path in sorted(MODULES.items()):
        package = module if path.stem == "__init__" else module.rsplit(".", 1)[0]
        for text in docstrings(path):
            for name in cited(text, package):
                yield path.relative_to(REPO), name
    for doc in DOCS:
        for name in cited(doc.read_text(), "acor"):
            yield doc.relative_to(REPO), name


def test_every_dotted_name_in_a_docstring_or_doc_exists():
    missing = sorted({f"{where}: {name}" for where, name in citations()
                      if not resolves(name)})
    assert not missing, "names that exist nowhere:\n" + "\n".join(missing)


def test_the_check_finds_a_name_that_is_gone():
    # The check itself must be able to fail.
    assert resolves("acor.cli.run.launch.run")
    assert resolves("cli.run.launch")
    assert not resolves("cli.mcp_app")
    assert not resolves("acor.cli.run.launch.no_such_function")
    assert cited(":mod:`.launch` and `cli.manifest`", "acor.cli.run") == {
        "acor.cli.run.launch", "cli.manifest"}


TEST_PATH = re.compile(r"\btests/[\w/]+\.py\b")


def test_every_test_file_the_docs_or_code_name_exists():
    # Tests move with the code they hold; a doc that points at the old
    # place sends a reader nowhere.
    texts = [*DOCS, *MODULES.values(), REPO / "Makefile"]
    missing = sorted({f"{path.relative_to(REPO)}: {name}"
                      for path in texts
                      for name in TEST_PATH.findall(path.read_text())
                      if not (REPO / name).is_file()})
    assert not missing, "test files that exist nowhere:\n" + "\n".join(missing)
