"""What ``acor new NAME --function`` writes (:mod:`acor.cli.commands.new`):
the new user's tool (typed ``n``, ``dist`` and ``seed``, progress per item,
JSON out) as one ``@tool`` function with examples for ``acor check``, and
its test."""

from __future__ import annotations

_FUNCTION = '''\
"""{name}: a function tool, made by `acor new {name} --function`.

acor reads the signature below without running this file: required
parameters are positions, the others --flags; the docstring describes
the tool; `acor: AcorTool` is given to the function (progress, input_needed,
fail...) and is no argument. The return value is the Output Data.

    acor {name} 10000 --dist gauss --seed 1
"""

import random
from typing import Annotated, Literal

from acor import AcorTool, Arg, tool


@tool(version="0.1.0", sandbox={{"write": [], "network": False}},
      annotations={{"readOnlyHint": True, "openWorldHint": False}},
      examples=[{{"description": "Summarise 1,000 numbers",
                 "args": {{"n": 1000, "seed": 1}}, "exit_code": 0,
                 "events": ["progress", "output_data"]}},
                {{"description": "n below 1 is a usage error",
                 "args": ["0"], "exit_code": 2}}]{name_option})
def {function}(n: Annotated[int, Arg("how many numbers", minimum=1)],
     {indent}dist: Literal["uniform", "gauss"] = "uniform",
     {indent}seed: int | None = None, *,
     {indent}acor: AcorTool) -> dict[str, float | str]:
    """Summarise n random numbers.

    Args:
        dist: the distribution to draw from
        seed: the random seed, for a repeatable run
    """
    rng = random.Random(seed)
    draw = rng.random if dist == "uniform" else lambda: rng.gauss(0, 1)
    numbers = []
    for i in range(n):
        numbers.append(draw())
        acor.progress_bar(i + 1, n, "sampling")  # per item: rate-limited
    return {{"n": n, "dist": dist, "mean": sum(numbers) / n,
            "min": min(numbers), "max": max(numbers)}}
'''

_FUNCTION_TEST = '''\
"""Tests for {name}, run as an agent runs it: through acor (the acor_run
fixture comes with acor). It is a plain function too: call it in tests of
your own logic."""

from pathlib import Path

TOOL = Path(__file__).resolve().with_name("{file}")


def test_summarises_typed_arguments(acor_run):
    result = acor_run(TOOL, args={{"n": 500, "dist": "gauss", "seed": 1}})
    assert result.exit_code == 0, result.errors
    assert result.data["n"] == 500 and result.data["dist"] == "gauss"
    assert result.of("progress")[-1].percent == 100


def test_the_same_seed_gives_the_same_numbers(acor_run):
    first = acor_run(TOOL, "100", "--seed", "7")
    again = acor_run(TOOL, "100", "--seed", "7")
    assert first.data == again.data


def test_n_below_one_is_a_usage_error(acor_run):
    result = acor_run(TOOL, "0")
    assert result.exit_code == 2
    assert result.errors[0].code == "E_USAGE"
'''


def function_files(name: str) -> dict[str, str]:
    """A new function tool and its test, side by side in the tools dir:
    file name -> text."""
    function = name.replace("-", "_")
    file = f"{function}.py"
    return {
        file: _FUNCTION.format(
            name=name, function=function, indent=" " * len(function),
            name_option="" if function == name else f', name="{name}"'),
        f"test_{function}.py": _FUNCTION_TEST.format(name=name, file=file),
    }
