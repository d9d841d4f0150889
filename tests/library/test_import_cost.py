"""Importing the library is cheap: the standard library only, and nothing a
tool does not use (PEP 562 lazy names; yaml only when yaml is asked for).

Measured with ``python -X importtime`` in a fresh interpreter, minus what
the interpreter imports on its own at start-up (site, .pth files).
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO


def run_python(*args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACOR_")}
    env.pop("PYTHONPATH", None)
    proc = subprocess.run([sys.executable, *args], env=env, cwd=REPO / "tests",
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc


def imported_by(code):
    """Modules that running ``code`` imports beyond interpreter start-up."""
    def modules(source):
        stderr = run_python("-X", "importtime", "-c", source).stderr
        return {line.rsplit("|", 1)[1].strip()
                for line in stderr.splitlines()
                if line.startswith("import time:") and "|" in line} - {
                    "imported package"}
    return modules(code) - modules("pass")


def third_party(modules):
    return sorted(name for name in modules
                  if name.split(".")[0] not in sys.stdlib_module_names
                  and name.split(".")[0] != "acor")


def test_importtime_output_is_understood():
    # Guards the tests below against passing on output they cannot read.
    assert {"re", "acor.grammar"} <= imported_by("import acor.grammar")


def test_import_acor_uses_the_standard_library_only():
    modules = imported_by("import acor")
    assert "acor" in modules
    assert third_party(modules) == []


def test_import_acor_loads_nothing_but_the_package():
    assert imported_by("import acor") == {"acor"}


@pytest.mark.parametrize("code", [
    "from acor import AcorTool",
    "from acor import AcorTool, ToolState, AcorStateError, parse, render",
    "from acor import framing",
    "import acor.exitcodes, acor.events",
])
def test_public_names_use_the_standard_library_only(code):
    modules = imported_by(code)
    assert any(name.startswith("acor") for name in modules)
    assert third_party(modules) == []


# What `from acor import AcorTool` may load: the tool's own modules and
# nothing of the standard library beyond what the interpreter has loaded at
# start-up. enum, json, re, threading and typing each cost a sizeable share
# of a bare interpreter's start (issue 14: the import must stay within 1.3x
# of `python -c pass`).
TOOL_MODULES = {"acor", "acor.acortool", "acor.toolstate", "acor.progress",
                "acor.quick", "acor.checks", "acor.forks", "acor.resumable",
                "acor.events", "acor.framing", "acor.exitcodes",
                "__future__"}  # acor.events' `from __future__ import`: 0.2 ms


def test_the_tools_import_loads_only_the_tools_own_modules():
    assert imported_by("from acor import AcorTool") == TOOL_MODULES


def test_tool_state_alone_loads_only_itself():
    assert imported_by("from acor import ToolState") == {
        "acor", "acor.toolstate"}


def test_a_plain_run_loads_no_grammar_json_or_re():
    # start, per-item progress, a line of output, stop: the common run.
    modules = imported_by(
        "import io\n"
        "from acor import AcorTool\n"
        "with AcorTool('t', '1', stream=io.StringIO()) as tool:\n"
        "    for i in range(1000):\n"
        "        tool.progress_bar(i, 1000, 'Rows')\n"
        "    tool.output('done')\n")
    assert modules - {"io"} == TOOL_MODULES
    assert not {"acor.grammar", "json", "re", "enum", "threading",
                "typing"} & modules


def test_validating_arguments_does_not_load_argparse():
    # acor call and the MCP server validate and build argvs; only a tool
    # that parses its own arguments pays for argparse.
    modules = imported_by(
        "from acor import args\n"
        "schema = {'properties': {'n': {'type': 'integer', "
        "'x-acor': {'flag': '--n'}}}}\n"
        "args.validate(schema, {'n': 1}), args.to_argv(schema, {'n': 1})\n")
    assert "acor.args" in modules and "argparse" not in modules


def test_every_public_name_resolves_and_is_listed():
    proc = run_python("-c", (
        "import acor\n"
        "missing = [n for n in acor.__all__ if getattr(acor, n, None) is None]\n"
        "unlisted = set(acor.__all__) - set(dir(acor))\n"
        "print(missing, sorted(unlisted))\n"))
    assert proc.stdout == "[] []\n"


def test_public_names_are_the_objects_of_their_modules():
    import acor
    from acor.errors import AcorError, AcorStateError
    from acor.acortool import AcorTool
    from acor.toolstate import ToolState
    assert (acor.AcorTool, acor.ToolState, acor.AcorError,
            acor.AcorStateError) == (AcorTool, ToolState, AcorError,
                                     AcorStateError)
    assert acor.acortool.ToolState is ToolState


def test_yaml_is_not_imported_until_yaml_output_is_asked_for():
    proc = run_python("-c", (
        "import sys, acor\n"
        "from acor import AcorTool\n"
        "print('yaml' in sys.modules)\n"))
    assert proc.stdout == "False\n"


def test_yaml_output_imports_yaml():
    pytest.importorskip("yaml")
    proc = run_python("-c", (
        "import io, sys\n"
        "from acor import AcorTool\n"
        "tool = AcorTool('t', stream=io.StringIO(), frame_token=None)\n"
        "tool.start().output({'a': 1}, format='yaml')\n"
        "print('yaml' in sys.modules)\n"))
    assert proc.stdout == "True\n"


def test_unknown_attribute_of_acor_is_an_attribute_error():
    import acor
    with pytest.raises(AttributeError, match="no_such_name"):
        acor.no_such_name


STRICT_PROBE = ("import acor, warnings; warnings.warn_explicit("
                "'old', DeprecationWarning, 'x.py', 1, module={!r}); "
                "print('survived')")


@pytest.mark.parametrize("module, switch, survives", [
    ("acor.cli.sandbox.kernel", "1", False),
    ("acor", "1", False),
    ("acorn.thing", "1", True),   # another package named alike
    ("somewhere.else", "1", True),
    ("acor.cli.sandbox.kernel", None, True),
])
def test_strict_warnings_switch_errors_on_acors_own_modules_only(
        module, switch, survives):
    """ACOR_STRICT_WARNINGS=1, which this suite sets for every process it
    starts, turns a DeprecationWarning from acor's own code into an error
    in that process, and leaves everyone else's a warning."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACOR_")}
    env.pop("PYTHONPATH", None)
    if switch:
        env["ACOR_STRICT_WARNINGS"] = switch
    proc = subprocess.run([sys.executable, "-c", STRICT_PROBE.format(module)],
                          env=env, cwd=REPO / "tests", capture_output=True,
                          text=True, timeout=60)
    assert ("survived" in proc.stdout) is survives, proc.stderr
    if not survives:
        assert "DeprecationWarning: old" in proc.stderr
