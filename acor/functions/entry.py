"""Run one function tool: ``python -u acor/functions/entry.py FILE
FUNCTION PLAN``.

The launcher runs this script for a tool that discovery found as a
``@tool`` function (:mod:`acor.cli.discovery.functions`): FILE is the
tool's source, FUNCTION its name in it, PLAN a JSON object discovery wrote
from the signature, so that nothing here reads annotations again::

    {"name": "stats", "version": "1.0.0", "description": "...",
     "args": {...the tool's args schema...},
     "params": [{"param": "n", "prop": "n"},
                {"param": "acor", "inject": true},
                {"param": "color", "prop": "no_color", "negate": true},
                {"param": "mode", "prop": "mode", "enum": "Mode"},
                {"param": "tags", "prop": "tags", "unset_if_empty": true},
                {"param": "ok", "prop": "ok", "human": "boolean",
                 "ask": {"type": "boolean", "description": "..."}}]}

(``ask``: a human-only parameter without a default, asked for when no
person gave it.)

The command line is parsed with the plan's ``args`` schema, as a class
tool's ``parse_args()`` does (a usage error is ``E_USAGE``, ``--help`` the
help), with what a person gave on its own channel (:mod:`acor.human`).
The module is imported inside the run, so an import error ends it Failed
with an Error and a code, as an exception of the function does; the
return value is the Output (a string) or the Output Data (anything else; a
dataclass as its fields; None writes nothing).
"""

import os
import sys

if __name__ == "__main__":
    # Python put this file's folder first on the path: the tool's module
    # imports its neighbours, as a class tool's entry does.
    sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[1]))

from acor import AcorTool  # noqa: E402 (after the path is the tool's)

TYPE_CHECKING = False  # typing costs every run: only mypy reads it
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any



def main(argv: "list[str]") -> None:
    """Run the function ``argv[1]`` of file ``argv[0]`` by plan
    ``argv[2]``, with the command line ``argv[3:]``."""
    import json  # the plan is JSON (and Output Data will be)
    path, function_name, plan = argv[0], argv[1], json.loads(argv[2])
    with AcorTool(plan["name"], plan["version"]) as acor:
        # What --help prints under the usage: the docstring's paragraph.
        acor._manifest = {"description": plan["description"]}
        # A usage error or --help ends the run here, before any import.
        values = vars(acor.parse_args(argv[3:], schema=plan["args"]))
        _check_patterns(plan, values, acor)
        module = _load(path)
        function = getattr(module, function_name)
        keywords = _call_arguments(plan, values, module, acor)
        result = function(**keywords)
        if hasattr(result, "__await__"):  # an async def
            import asyncio
            result = asyncio.run(_awaited(result))
        _write(acor, result)


async def _awaited(awaitable: "Any") -> "Any":
    return await awaitable


def _load(path: str) -> "ModuleType":
    """The tool's module, imported now (its bytecode cached as any
    module's), under a name of its own: a file named ``json.py`` must not
    replace the standard ``json``."""
    import types
    from importlib.machinery import SourceFileLoader
    stem = os.path.splitext(os.path.basename(path))[0]
    name = "acor_tool_" + "".join(c if c.isalnum() else "_" for c in stem)
    loader = SourceFileLoader(name, path)
    module = types.ModuleType(name)
    module.__file__, module.__loader__ = path, loader
    sys.modules[name] = module  # dataclasses and pickling look it up
    loader.exec_module(module)
    return module


def _call_arguments(plan: "dict[str, Any]", values: "dict[str, Any]",
                    module: "ModuleType", acor: AcorTool) -> "dict[str, Any]":
    """The function's arguments: the injected tool, each value made the
    parameter's type, what a person gave; a parameter nobody gave keeps
    its default. A human-only argument without a default that no person
    gave is asked for (the run ends Input Needed)."""
    keywords: "dict[str, Any]" = {}
    asked: "dict[str, Any]" = {}
    for entry in plan["params"]:
        param = entry["param"]
        if entry.get("inject"):
            keywords[param] = acor
            continue
        value = values.get(entry["prop"])
        if value is None and "ask" in entry:
            asked[entry["prop"]] = entry["ask"]
        elif value == [] and entry.get("unset_if_empty"):
            continue  # no flag given: the parameter's default
        elif value is not None:
            keywords[param] = _typed(entry, value, module)
    if asked:
        what = "; ".join(f"{name} ({field['description']})"
                         if field.get("description") else name
                         for name, field in asked.items())
        acor.input_needed(f"{plan['name']} needs a person's answer: {what}",
                          fields=asked, audience="human")
    return keywords


def _check_patterns(plan: "dict[str, Any]", values: "dict[str, Any]",
                    acor: AcorTool) -> None:
    """A usage error for a value its ``Arg(pattern=...)`` does not match
    in full, before the tool's module is imported."""
    for entry in plan["params"]:
        pattern, value = entry.get("pattern"), values.get(entry.get("prop"))
        if pattern is None or value is None:
            continue
        import re
        for item in value if isinstance(value, list) else [value]:
            if re.fullmatch(pattern, item) is None:
                acor.fail("E_USAGE", f"argument {entry['prop']}: {item!r} "
                          f"does not match the pattern {pattern!r}",
                          recovery="Give a value that matches it in full.",
                          next=acor.command("--help"))


def _typed(entry: "dict[str, Any]", value: "Any",
           module: "ModuleType") -> "Any":
    """``value`` (JSON) as the parameter takes it."""
    if entry.get("negate"):
        return not value
    if "enum" in entry:
        kind = getattr(module, entry["enum"])
        return [kind(v) for v in value] if isinstance(value, list) \
            else kind(value)
    return value


def _write(acor: AcorTool, result: "Any") -> None:
    """The return value as the run's Output or Output Data."""
    if result is None:
        return
    if isinstance(result, str):
        acor.output(result)
        return
    if hasattr(type(result), "__dataclass_fields__"):
        import dataclasses
        result = dataclasses.asdict(result)
    acor.output(_plain(result))


def _plain(value: "Any") -> "Any":
    """``value`` with every enum member as its value (JSON has none)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(type(value), "__members__") and hasattr(value, "_value_"):
        return value._value_  # an enum member (IntEnum and StrEnum too)
    return value


if __name__ == "__main__":
    main(sys.argv[1:])
