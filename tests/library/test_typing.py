"""The public API is typed precisely: mypy, run on small files that use
it, infers its real types and catches its misuse (an API typed as Any
would pass anything)."""

import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent / "typing"


def mypy(path, tmp_path):
    # From a directory outside the checkout, so that acor is the install.
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental",
         "--cache-dir", str(tmp_path / "cache"), "--python-version", "3.11",
         str(path)], cwd=tmp_path, capture_output=True, text=True,
        timeout=300)
    return proc.returncode, proc.stdout


@pytest.mark.slow
def test_the_public_api_has_its_real_types(tmp_path):
    code, out = mypy(HERE / "usage_ok.py", tmp_path)
    assert code == 0, out
    assert 'Revealed type is "acor.acortool.AcorTool"' in out, out
    assert 'Revealed type is "acor.cli.run.result.RunResult"' in out, out


@pytest.mark.slow
def test_misuse_of_the_public_api_is_caught(tmp_path):
    code, out = mypy(HERE / "usage_wrong.py", tmp_path)
    assert code == 1, out
    for wrong in ('"AcorTool" has no attribute "no_such_method"',
                  'Unsupported operand types for + ("int" and "str")',
                  '"RunResult" has no attribute "no_such_field"'):
        assert wrong in out, out
