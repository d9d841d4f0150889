"""Function tools found in a tools dir: a ``.py`` file whose functions are
marked ``@tool`` (:mod:`acor.functions`), read from the source, never run.

Each marked function becomes the :class:`ToolSpec` a manifest saying the
same would give: its name (``@tool(name=...)`` overrides), its docstring's
first paragraph as the description (the ``Args:`` section describes the
parameters), an ``args`` schema from the signature, and the ``@tool(...)``
keywords as the manifest's other fields, checked by the same rules
(:mod:`acor.cli.discovery.manifest`). The launcher then runs it as
``python -u acor/functions/entry.py FILE FUNCTION PLAN``, PLAN being what
:mod:`acor.functions.entry` needs to call it (the parameters' conversions),
so that the tool's module is imported only when the tool runs.

The signature is read with :mod:`ast`: annotations ``int``, ``float``,
``str``, ``bool``, ``Literal[...]``, an ``enum.Enum`` class of the same
file, ``list[...]`` of those, ``X | None`` and ``Optional[X]``, each maybe
``Annotated[..., Arg(...)]`` (or ``Human()``, ``Secret()``); defaults and
``@tool`` keywords must be literals. Anything else would need the code to
run: the function is refused (``acor doctor`` lists it) with the reason and
the fix. Required parameters are positions, in order; the others flags
(``--no-x`` for a boolean whose default is true, a list's flag repeated).
"""

from __future__ import annotations

import ast
import json
import os
import sys
from typing import Any

from acor import functions as markers
from acor.cli.discovery.manifest import (DEFAULT_VERSION, ManifestError,
                                         _check_fields, _check_strings,
                                         _public, _usage)
from acor.cli.discovery.docstrings import docstring_parts
from acor.cli.discovery.fields import ACOR_FIELDS
from acor.cli.discovery.spec import ToolSpec

MAX_SOURCE_BYTES = 1 << 20
ENTRY = os.path.join(os.path.dirname(markers.__file__), "entry.py")
_SCALARS = {"int": "integer", "float": "number", "str": "string",
            "bool": "boolean"}
_PY_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string"}
_MARKERS = ("tool", "Arg", "Human", "Secret", "AcorTool")


class Refused(Exception):
    """This function cannot be a tool as written: why, and the fix."""

    def __init__(self, reason: str, fix: str) -> None:
        super().__init__(reason)
        self.reason, self.fix = reason, fix


def manifest_of(spec: Any) -> dict[str, Any]:
    """The manifest a function tool stands for: what ``acor check``
    validates against the published schema and whose examples it runs."""
    fields = {"name": spec.name, "version": spec.version,
              "description": spec.description,
              "entry": os.path.basename(spec.manifest_path),
              "args": spec.args_schema, "timeout": spec.timeout,
              "idle_timeout": spec.idle_timeout,
              "max_output": spec.max_output, "stdin": spec.stdin or None,
              "examples": spec.examples, "annotations": spec.annotations,
              "sandbox": spec.sandbox, "warm": spec.warm, "task": spec.task}
    if spec.cwd_mode != "invocation":
        fields["cwd"] = spec.cwd_mode
    return {key: value for key, value in fields.items() if value is not None}


def marked(raw: bytes) -> bool:
    """Whether source ``raw`` may hold a ``@tool`` function: the cheap test
    before it is parsed (a tools dir may hold any other Python file)."""
    return b"@tool" in raw or b"@acor.tool" in raw


def function_specs(path: str, raw: bytes, folder: str, origin: str
                   ) -> tuple[list[ToolSpec], list[ManifestError]]:
    """The tools of source file ``path`` (its bytes ``raw``, in tools dir
    ``folder``), and a :class:`ManifestError` for each marked function that
    is refused (or one for the file, when it cannot be read as Python)."""
    stem = os.path.splitext(os.path.basename(path))[0]
    if len(raw) > MAX_SOURCE_BYTES:
        return [], [ManifestError(f"the file is over the "
                                  f"{MAX_SOURCE_BYTES >> 20} MiB limit for "
                                  "a tool's source", "Move code out of it "
                                  "into modules it imports.", stem)]
    try:
        tree = ast.parse(raw, path)
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None)
        return [], [ManifestError(
            f"it is not valid Python{f' (line {line})' if line else ''}: "
            f"{getattr(exc, 'msg', exc)}", "Fix the syntax; `python3 -m "
            f"py_compile {path}` shows where.", stem)]
    module = _Module(tree)
    specs, errors = [], []
    for node in module.tools:
        name = node.name
        try:
            specs.append(_spec(module, node, path, folder, origin))
        except Refused as exc:
            errors.append(ManifestError(
                f"function {name}() cannot be a tool: {exc.reason}", exc.fix,
                name))
        except ManifestError as exc:
            exc.reason = f"function {name}(): {exc.reason}"
            exc.name = exc.name or name
            errors.append(exc)
    return specs, errors


class _Module:
    """What a module's top level says, as far as tools need: the names
    bound to acor's markers and to typing's forms, its enum classes, its
    TypedDicts and dataclasses, and its ``@tool`` functions."""

    def __init__(self, tree: ast.Module) -> None:
        self.names: dict[str, str] = {}  # local name -> what it is
        self.modules: dict[str, str] = {}  # local name -> module
        self.enums: dict[str, dict[str, Any]] = {}  # class -> members
        self.records: dict[str, tuple[dict[str, ast.expr], set[str]]] = {}
        self.tools: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
        for node in tree.body:
            if isinstance(node, ast.ImportFrom):
                self._import_from(node)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    self.modules[alias.asname or alias.name] = alias.name
            elif isinstance(node, ast.ClassDef):
                self._class(node)
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                    and any(self.is_tool(d) for d in node.decorator_list):
                self.tools.append(node)

    def _import_from(self, node: ast.ImportFrom) -> None:
        for alias in node.names:
            local = alias.asname or alias.name
            if node.module in ("acor", "acor.functions") and \
                    alias.name in _MARKERS:
                self.names[local] = alias.name
            elif node.module in ("typing", "typing_extensions", "enum",
                                 "dataclasses"):
                self.names[local] = f"{node.module}.{alias.name}"

    def _class(self, node: ast.ClassDef) -> None:
        bases = {self.qualified(b) for b in node.bases}
        if bases & {"enum.Enum", "enum.StrEnum", "enum.IntEnum"}:
            self.enums[node.name] = {
                target.id: ast.literal_eval(s.value) for s in node.body
                if isinstance(s, ast.Assign) and _is_literal(s.value)
                for target in s.targets if isinstance(target, ast.Name)}
        elif bases & {"typing.TypedDict", "typing_extensions.TypedDict"} \
                or any(self.qualified(d.func if isinstance(d, ast.Call)
                                      else d) == "dataclasses.dataclass"
                       for d in node.decorator_list):
            self.records[node.name] = _fields(node)

    def qualified(self, node: ast.expr) -> str:
        """What name ``node`` stands for: ``typing.Literal``, ``int``,
        ``acor:Arg``... ("" when it is no name)."""
        if isinstance(node, ast.Name):
            known = self.names.get(node.id)
            if known in _MARKERS:
                return f"acor:{known}"
            return known or node.id
        if isinstance(node, ast.Attribute) and \
                isinstance(node.value, ast.Name):
            module = self.modules.get(node.value.id, node.value.id)
            if module == "acor" and node.attr in _MARKERS:
                return f"acor:{node.attr}"
            return f"{module}.{node.attr}"
        return ""

    def is_tool(self, decorator: ast.expr) -> bool:
        target = decorator.func if isinstance(decorator, ast.Call) \
            else decorator
        return self.qualified(target) == "acor:tool"


def _fields(node: ast.ClassDef) -> tuple[dict[str, ast.expr], set[str]]:
    """A TypedDict's or dataclass's annotated fields, and those with a
    default (not required)."""
    fields: dict[str, ast.expr] = {}
    defaulted: set[str] = set()
    for statement in node.body:
        if isinstance(statement, ast.AnnAssign) and \
                isinstance(statement.target, ast.Name):
            fields[statement.target.id] = statement.annotation
            if statement.value is not None:
                defaulted.add(statement.target.id)
    return fields, defaulted


def _is_literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError,
            RecursionError):
        return False
    return True


def _literal(node: ast.expr, what: str) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError,
            RecursionError):
        raise Refused(f"{what} is not a literal ({_source(node)}), and acor "
                      "reads it without running the code",
                      f"Write {what} as a literal value (a number, a "
                      "string, a list or dict of them).") from None


def _source(node: ast.expr) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 60 else text[:57] + "..."


def _spec(module: _Module, node: ast.FunctionDef | ast.AsyncFunctionDef,
          path: str, folder: str, origin: str) -> ToolSpec:
    options = _options(module, node)
    description, arg_help = docstring_parts(ast.get_docstring(node))
    schema, plan = _Signature(module, node, arg_help).build()
    data: dict[str, Any] = {"name": node.name, "entry": ENTRY,
                            "description": description, **options}
    # Even with no property: then acor parses the command line (--help,
    # or an argument the function does not take) before the tool runs.
    data["args"] = schema
    if not data.get("description"):
        raise Refused("it has no docstring to describe it",
                      f'Start {node.name}() with a docstring: """What it '
                      'does, in one sentence."""')
    _check_strings(data)
    values, warnings = _check_fields(data, ACOR_FIELDS, path)
    name = values["name"]
    version = values.get("version", DEFAULT_VERSION)
    plan_text = json.dumps({"name": name, "version": version,
                            "description": values["description"],
                            "args": values["args"], "params": plan},
                           separators=(",", ":"))
    return ToolSpec(
        name=name, version=version, description=values["description"],
        kind="acor", path=folder, manifest_path=path,
        argv=[sys.executable, "-u", ENTRY, os.path.realpath(path),
              node.name, plan_text],
        timeout=values.get("timeout"),
        idle_timeout=values.get("idle_timeout"), usage=_usage(values),
        max_output=values.get("max_output"), errors={},
        cwd_mode=values.get("cwd", "invocation"), warnings=warnings,
        args_schema=values.get("args"), args_public=_public(values),
        stdin=values.get("stdin", False), examples=values.get("examples"),
        annotations=values.get("annotations"), origin=origin,
        warm=values.get("warm", True), sandbox=values.get("sandbox"),
        task=values.get("task"),
        # A person's question ends a call with no structured content, which
        # the SDK's client refuses from a tool that declares an outputSchema.
        output_schema=None if any("human" in p for p in plan)
        else _output_schema(module, node.returns))


def _options(module: _Module, node: ast.FunctionDef | ast.AsyncFunctionDef
             ) -> dict[str, Any]:
    """The ``@tool(...)`` keywords, as manifest fields."""
    options: dict[str, Any] = {}
    for decorator in node.decorator_list:
        if not (isinstance(decorator, ast.Call) and module.is_tool(decorator)):
            continue
        if decorator.args:
            raise Refused("@tool() takes keywords only", "Write @tool(name="
                          '"...", version="...") or a bare @tool.')
        for keyword in decorator.keywords:
            if keyword.arg not in markers.TOOL_OPTIONS:
                raise Refused(f"@tool() has no keyword "
                              f"{keyword.arg or '**'!r}",
                              "Use only "
                              f"{', '.join(markers.TOOL_OPTIONS)}.")
            options[keyword.arg] = _literal(keyword.value,
                                            f"@tool({keyword.arg}=...)")
    return options


class _Signature:
    """A function's parameters as an args schema and a plan for
    :mod:`acor.functions.entry`."""

    def __init__(self, module: _Module,
                 node: ast.FunctionDef | ast.AsyncFunctionDef,
                 arg_help: dict[str, str]) -> None:
        self.module, self.node, self.arg_help = module, node, arg_help
        self.properties: dict[str, Any] = {}
        self.required: list[str] = []
        self.plan: list[dict[str, Any]] = []
        self.position = 0

    def build(self) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        args = self.node.args
        if args.vararg or args.kwarg or args.posonlyargs:
            raise Refused("it takes *args, **kwargs or positional-only "
                          "parameters, which no schema can name",
                          "Give each argument a named parameter of its own.")
        plain = args.args
        defaults: list[ast.expr | None] = \
            [None] * (len(plain) - len(args.defaults)) + list(args.defaults)
        for param, default in zip(plain + args.kwonlyargs,
                                  defaults + list(args.kw_defaults),
                                  strict=True):
            self._parameter(param, default)
        schema: dict[str, Any] = {"type": "object",
                                  "properties": self.properties,
                                  "additionalProperties": False}
        if self.required:
            schema["required"] = self.required
        return schema, self.plan

    def _parameter(self, param: ast.arg, default: ast.expr | None) -> None:
        name = param.arg
        if param.annotation is None:
            raise Refused(f"parameter {name!r} has no type annotation",
                          f"Annotate it, e.g. `{name}: str`.")
        kind = _Type(self.module, name).read(param.annotation)
        if kind.inject:
            self.plan.append({"param": name, "inject": True})
            return
        value = None if default is None else \
            self._default(default, name)
        prop = kind.schema(self.arg_help.get(name))
        entry: dict[str, Any] = {"param": name, "prop": name}
        if kind.human is not None:
            self._human(name, prop, kind, value, default, entry)
        elif default is None and not kind.optional:
            self._required(name, prop, kind)
        else:
            self._flag(name, prop, kind, value, entry)
        if kind.enum_class:
            entry["enum"] = kind.enum_class
        if kind.pattern is not None:
            entry["pattern"] = kind.pattern
        self.plan.append(entry)

    def _default(self, node: ast.expr, name: str) -> Any:
        """A default's value; an enum member of this file as its value."""
        if isinstance(node, ast.Attribute) and \
                isinstance(node.value, ast.Name):
            members = self.module.enums.get(node.value.id, {})
            if node.attr in members:
                return members[node.attr]
        return _literal(node, f"the default of {name!r}")

    def _human(self, name: str, prop: dict[str, Any], kind: _Type,
               value: Any, default: ast.expr | None,
               entry: dict[str, Any]) -> None:
        assert kind.human is not None
        if kind.array:
            raise Refused(f"the human-only parameter {name!r} is a list",
                          "Ask a person for one value: a str, int, float "
                          "or bool.")
        marks: dict[str, Any] = {"human": True}
        if kind.human.get("secret"):
            if prop["type"] != "string":
                raise Refused(f"the secret {name!r} is not a str",
                              f"Annotate it `{name}: Annotated[str, "
                              "Secret()]`.")
            marks["secret"] = True
        if kind.human.get("level", "standard") != "standard":
            marks["level"] = kind.human["level"]
        entry["human"] = prop["type"]
        # Asked for when no person gave it, but with "= None": then the
        # function gets None and decides (another default is for Python
        # callers: acor asks the person).
        if default is None or value is not None:
            entry["ask"] = {k: v for k, v in prop.items()
                            if k in ("type", "description", "enum",
                                     "minimum", "maximum")}
        prop["x-acor"] = marks
        self.properties[name] = prop

    def _required(self, name: str, prop: dict[str, Any], kind: _Type) -> None:
        if prop["type"] == "boolean":
            raise Refused(f"the bool {name!r} has no default, and a "
                          "boolean is a flag, given or not",
                          f"Give it a default: `{name}: bool = False`.")
        prop["x-acor"] = {"position": self.position}
        self.position += 1
        self.properties[name] = prop
        self.required.append(name)

    def _flag(self, name: str, prop: dict[str, Any], kind: _Type,
              value: Any, entry: dict[str, Any]) -> None:
        flag = "--" + name.replace("_", "-")
        prop["x-acor"] = {"flag": flag}
        if kind.array:
            prop["x-acor"]["repeat"] = True
            entry["unset_if_empty"] = True  # argparse's [] for "not given"
        if kind.metavar:
            prop["x-acor"]["metavar"] = kind.metavar
        if kind.hidden:
            prop["x-acor"]["hidden"] = True
        if prop["type"] == "boolean" and value is True:
            negated = "no_" + name
            prop["x-acor"]["flag"] = "--no-" + name.replace("_", "-")
            prop["description"] = "turn off: " + prop.get(
                "description", name.replace("_", " "))
            entry.update(prop=negated, negate=True)
            self.properties[negated] = prop
            return
        if value is not None and value is not False:
            prop["default"] = value
        self.properties[name] = prop


class _Type:
    """One parameter's annotation, read."""

    def __init__(self, module: _Module, name: str) -> None:
        self.module, self.name = module, name
        self.inject = self.optional = self.array = self.hidden = False
        self.json_type = ""
        self.enum: list[Any] | None = None
        self.enum_class: str | None = None
        self.human: dict[str, Any] | None = None
        self.arg: dict[str, Any] = {}
        self.pattern: str | None = None
        self.metavar: str | None = None

    def read(self, node: ast.expr) -> _Type:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:  # a string annotation (or `from __future__ import ...`)
                node = ast.parse(node.value, mode="eval").body
            except SyntaxError:
                self._refuse(node)
        self._outer(node)
        return self

    def _refuse(self, node: ast.expr) -> None:
        raise Refused(f"the type of {self.name!r}, {_source(node)}, is not "
                      "one acor reads without running code",
                      "Use int, float, str, bool, Literal[...], an Enum "
                      "class of this file, list[...] of those or X | None, "
                      "maybe in Annotated[..., Arg(...)].")

    def _outer(self, node: ast.expr) -> None:
        if self.module.qualified(node) == "acor:AcorTool":
            self.inject = True
            return
        if isinstance(node, ast.Subscript) and self.module.qualified(
                node.value) in ("typing.Annotated",
                                "typing_extensions.Annotated"):
            elements = node.slice.elts if isinstance(node.slice, ast.Tuple) \
                else [node.slice]
            for extra in elements[1:]:
                self._marker(extra)
            node = elements[0]
        node = self._unwrap_optional(node)
        if isinstance(node, ast.Subscript) and self.module.qualified(
                node.value) in ("list", "typing.List"):
            self.array = True
            node = node.slice
        self._scalar(node)

    def _unwrap_optional(self, node: ast.expr) -> ast.expr:
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            sides = [node.left, node.right]
            rest = [s for s in sides if not (isinstance(s, ast.Constant)
                                             and s.value is None)]
            if len(rest) == 1:
                self.optional = True
                return rest[0]
        if isinstance(node, ast.Subscript) and self.module.qualified(
                node.value) == "typing.Optional":
            self.optional = True
            return node.slice
        return node

    def _scalar(self, node: ast.expr) -> None:
        name = self.module.qualified(node)
        if name in _SCALARS:
            self.json_type = _SCALARS[name]
        elif isinstance(node, ast.Name) and node.id in self.module.enums:
            self._choices(list(self.module.enums[node.id].values()), node)
            self.enum_class = node.id
        elif isinstance(node, ast.Subscript) and self.module.qualified(
                node.value) in ("typing.Literal",
                                "typing_extensions.Literal"):
            elements = node.slice.elts if isinstance(node.slice, ast.Tuple) \
                else [node.slice]
            self._choices([_literal(e, f"a choice of {self.name!r}")
                           for e in elements], node)
        else:
            self._refuse(node)
        if self.array and self.json_type == "boolean":
            raise Refused(f"{self.name!r} is a list of bool", "Use a list "
                          "of str, int or float, or one bool flag.")

    def _choices(self, values: list[Any], node: ast.expr) -> None:
        kinds = {_PY_TYPES.get(type(v)) for v in values}
        if not values or len(kinds) != 1 or None in kinds or \
                "boolean" in kinds:
            raise Refused(f"the choices of {self.name!r} ({_source(node)}) "
                          "are not all strings or all integers",
                          "Give choices of one type: all str or all int.")
        self.json_type = kinds.pop() or "string"
        self.enum = values

    def _marker(self, node: ast.expr) -> None:
        if not isinstance(node, ast.Call):
            return  # other Annotated metadata: not acor's
        what = self.module.qualified(node.func)
        if what not in ("acor:Arg", "acor:Human", "acor:Secret"):
            return
        given = {k.arg: _literal(k.value, f"{what[5:]}({k.arg}=...)")
                 for k in node.keywords if k.arg}
        if what == "acor:Arg":
            if node.args:
                given["description"] = _literal(node.args[0],
                                                "Arg()'s description")
            self.arg = given
            self.pattern = given.get("pattern")
            self.metavar = given.get("metavar")
            self.hidden = bool(given.get("hidden"))
        else:
            level = node.args and _literal(node.args[0], "the level")
            self.human = {"secret": what == "acor:Secret",
                          "level": given.get("level", level or "standard")}

    def schema(self, help_text: str | None) -> dict[str, Any]:
        """The property (without ``x-acor``)."""
        item: dict[str, Any] = {"type": self.json_type}
        if self.enum is not None:
            item["enum"] = self.enum
        for bound in ("minimum", "maximum"):
            if self.arg.get(bound) is not None:
                item[bound] = self.arg[bound]
        prop = {"type": "array", "items": item} if self.array else item
        description = self.arg.get("description") or help_text
        if description:
            prop["description"] = description
        return prop


def _output_schema(module: _Module, node: ast.expr | None
                   ) -> dict[str, Any] | None:
    """The MCP ``outputSchema`` the return annotation says, when it says
    an object: a TypedDict or dataclass of this file, or ``dict``."""
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return None
    target = node.value if isinstance(node, ast.Subscript) else node
    if module.qualified(target) in ("dict", "typing.Dict"):
        return {"type": "object"}
    if isinstance(node, ast.Name) and node.id in module.records:
        fields, defaulted = module.records[node.id]
        properties = {name: _value_schema(module, annotation)
                      for name, annotation in fields.items()}
        schema: dict[str, Any] = {"type": "object",
                                  "properties": properties}
        required = [n for n in fields if n not in defaulted]
        if required:
            schema["required"] = required
        return schema
    return None


def _value_schema(module: _Module, node: ast.expr) -> dict[str, Any]:
    """A field's schema, as far as its annotation says ({} when not)."""
    try:
        kind = _Type(module, "").read(node)
    except Refused:
        target = node.value if isinstance(node, ast.Subscript) else node
        simple = {"dict": "object", "typing.Dict": "object",
                  "list": "array", "typing.List": "array"}
        found = simple.get(module.qualified(target))
        return {"type": found} if found else {}
    schema = kind.schema(None)
    if kind.optional:
        return {"anyOf": [schema, {"type": "null"}]}
    return schema
