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

REPO = Path(__file__).resolve().parents[1]


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
