"""The boxed child that reads a click command's parameters.

A click command's parameters exist only once its module is imported, so
this is the one place discovery runs a project's code:
:mod:`acor.cli.discovery.clicktools` starts this module in a fresh
interpreter (``python -P -c ...  TARGET FOLDER``), which enters a box
before it imports anything of the project's: no file may be written
(``/dev/null`` aside), no network reached, no UNIX socket connected
(:mod:`acor.cli.sandbox.enter`). It then imports ``TARGET``
(``package.module:attribute``, looked up in ``FOLDER`` first, then the
environment) and writes one JSON object on its first standard output: the
command tree and its parameters as plain data, or why it could not
(``{"error": KIND, "message": ...}``). What the module prints goes to
standard error, which the launcher discards.

It ends with ``os._exit``: the module's ``atexit`` handlers do not run.
"""

from __future__ import annotations

import enum
import importlib
import importlib.util
import json
import os
import sys
from typing import Any

import click

from acor.cli.discovery.clicktools import NO_WRITES
from acor.cli.sandbox.enter import SandboxError, enter

_SCALARS = (str, int, float, bool)


class Refused(Exception):
    """The target is not a click command acor can read: ``kind`` says
    which step failed."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def main() -> None:
    """Enter the box, read ``sys.argv[1]`` from ``sys.argv[2]``, say
    what was found on the original standard output, end."""
    out = os.dup(1)
    os.dup2(2, 1)  # what the module prints must not reach the reply
    try:
        enter(NO_WRITES)
        reply = describe_target(sys.argv[1], sys.argv[2])
    except SandboxError as exc:
        reply = {"error": "sandbox", "message": str(exc)}
    except Refused as exc:
        reply = {"error": exc.kind, "message": exc.message}
    with open(out, "w", encoding="utf-8") as f:
        # One line: the launcher reads up to its end, not to the end of
        # the pipe, which a process the module started may hold open.
        f.write(json.dumps(reply) + "\n")
    os._exit(0)


def describe_target(target: str, folder: str) -> dict[str, Any]:
    """The command at ``target``, with the files it was read from."""
    module_name, _, attribute = target.partition(":")
    sys.path.insert(0, folder)
    origin = _origin(module_name)
    try:
        module = importlib.import_module(module_name)
    except SystemExit as exc:
        raise Refused("import", f"importing {module_name} ended the "
                      f"process (exit {exc.code!r}): it runs a command when "
                      "imported") from None
    except BaseException as exc:  # any failure of the project's code
        raise Refused("import", f"importing {module_name} failed: "
                      f"{type(exc).__name__}: {exc}") from None
    value: Any = module
    for part in attribute.split("."):
        value = getattr(value, part, None)
    if not isinstance(value, click.Command):
        what = "missing" if value is None else type(value).__name__
        raise Refused("not_click", f"{target} is {what}, not a click "
                      "command or group")
    files = _files(folder, origin)
    return {"command": _command(value, click.Context(value)),
            "files": files, "from_folder": bool(origin) and
            _inside(os.path.realpath(folder), origin)}


def _origin(module_name: str) -> str:
    """The file ``module_name`` is loaded from ('' when unknown)."""
    try:
        spec = importlib.util.find_spec(module_name)
    except BaseException:  # a parent package failing: import reports it
        return ""
    origin = getattr(spec, "origin", None) if spec is not None else None
    return os.path.realpath(origin) if isinstance(origin, str) and \
        os.path.isfile(origin) else ""


def _inside(folder: str, path: str) -> bool:
    return os.path.commonpath([folder, path]) == folder


def _files(folder: str, origin: str) -> list[str]:
    """The module's own file and every file imported from ``folder``:
    what the reading depends on."""
    real = os.path.realpath(folder)
    found = {origin} if origin else set()
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str) and os.path.isfile(path):
            path = os.path.realpath(path)
            if _inside(real, path):
                found.add(path)
    return sorted(found)


def _command(command: click.Command, ctx: click.Context) -> dict[str, Any]:
    described: dict[str, Any] = {
        "name": command.name or "", "help": command.help or "",
        "short_help": command.short_help or "",
        "hidden": bool(command.hidden),
        "params": [_param(p, ctx) for p in command.params]}
    if isinstance(command, click.Group):
        subs: dict[str, Any] = {}
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None:
                subs[name] = _command(sub, click.Context(sub, parent=ctx,
                                                         info_name=name))
        described["commands"] = subs
    return described


def _param(param: click.Parameter, ctx: click.Context) -> dict[str, Any]:
    option = isinstance(param, click.Option)
    return {
        "name": param.name or "",
        "kind": "option" if option else "argument",
        "opts": list(param.opts), "secondary": list(param.secondary_opts),
        "required": bool(param.required), "multiple": bool(param.multiple),
        "nargs": param.nargs, "type": _type(param.type),
        "help": (getattr(param, "help", None) or "") if option else "",
        "hidden": bool(getattr(param, "hidden", False)),
        "is_flag": bool(getattr(param, "is_flag", False)),
        "count": bool(getattr(param, "count", False)),
        "flag_value": _plain(getattr(param, "flag_value", None)),
        "default": _plain(param.get_default(ctx, call=False)),
        "prompt": bool(getattr(param, "prompt", None)),
    }


def _type(kind: click.ParamType[Any]) -> dict[str, Any]:
    if isinstance(kind, click.Choice):
        return {"kind": "choice", "choices": [
            c.name if isinstance(c, enum.Enum) else str(c)
            for c in kind.choices]}
    if isinstance(kind, (click.IntRange, click.FloatRange)):
        return {"kind": "int" if isinstance(kind, click.IntRange)
                else "float", "min": _plain(kind.min),
                "max": _plain(kind.max), "min_open": bool(kind.min_open),
                "max_open": bool(kind.max_open), "clamp": bool(kind.clamp)}
    for cls, name in ((click.types.IntParamType, "int"),
                      (click.types.FloatParamType, "float"),
                      (click.types.BoolParamType, "bool"),
                      (click.Tuple, "tuple")):
        if isinstance(kind, cls):
            return {"kind": name}
    return {"kind": "string", "name": str(getattr(kind, "name", ""))}


def _plain(value: object) -> Any:
    """``value`` as JSON (a scalar, or a list of scalars), else None: a
    default that is a callable, a sentinel or an object says nothing an
    agent can use."""
    if type(value).__module__.partition(".")[0] == "click":
        return None  # click's own "no default" sentinel
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, os.PathLike):
        return os.fspath(value) if isinstance(os.fspath(value), str) \
            else None
    if isinstance(value, (list, tuple)) and all(
            isinstance(v, _SCALARS) for v in value):
        return list(value)
    return None
