"""argparse parsers built from an args schema (see :mod:`acor.args`):
:func:`parse` (what ``tool.parse_args()`` uses) and :func:`to_argparse`.

Imported only by tools that parse their arguments: argparse and its
gettext cost more than the rest of a small tool. It uses :mod:`acor.args`,
never the other way round.
"""

from __future__ import annotations

import argparse
import math

from .args import (HelpRequested, UsageError, checked_properties, flag_names,
                   human_names, human_value, is_human, metavar, positionals,
                   usage, value_problems)

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing costs milliseconds to import
    from collections.abc import Callable, Iterable, Sequence
    from typing import Any, NoReturn, TypeVar

    from .args import Schema

    _Parser = TypeVar("_Parser", bound=argparse.ArgumentParser)


def _converter(prop: Schema) -> Callable[[str], str | float]:
    """argparse's ``type`` for one value: converts and checks the bounds."""
    kind = prop.get("type")

    def convert(text: str) -> str | float:
        value: str | float
        if kind == "integer":
            try:
                value = int(text)
            except ValueError:
                raise argparse.ArgumentTypeError(
                    f"must be an integer, not {text!r}") from None
        elif kind == "number":
            try:
                value = float(text)
            except ValueError:
                value = math.nan
            if not math.isfinite(value):
                raise argparse.ArgumentTypeError(
                    f"must be a number, not {text!r}")
        else:
            value = text
        problems = value_problems("", {k: v for k, v in prop.items()
                                        if k != "enum"}, value)
        if problems:
            raise argparse.ArgumentTypeError(problems[0][2:])
        return value
    convert.__name__ = str(kind)  # argparse names the type in messages
    return convert


class _Help(argparse.Action):
    """-h/--help that raises HelpRequested (at once, so that missing
    required arguments do not hide the help)."""

    def __init__(self, option_strings: Sequence[str], dest: str,
                 **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0,
                         default=argparse.SUPPRESS, help="show this help")

    def __call__(self, parser: argparse.ArgumentParser,
                 namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        raise HelpRequested(parser.format_help())


class _Formatter(argparse.HelpFormatter):
    """Help at a fixed width: it is read by agents as often as on a
    terminal, and argparse would import shutil (3 ms) to ask the terminal."""

    def __init__(self, prog: str, indent_increment: int = 2,
                 max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position,
                         width or 78)


class _RaisingParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message, self.format_usage().strip())


def build(parser_class: type[_Parser], prog: str, schema: Schema,
          description: str | None = None,
          help_action: str | type[argparse.Action] = "help") -> _Parser:
    """A ``parser_class`` parser with one argument per property."""
    props = checked_properties(schema)
    required = set(schema.get("required", []))
    # argparse %-formats usage and help texts: a literal % must be doubled.
    parser = parser_class(
        prog=prog, usage=usage(prog, schema).replace("%", "%%"),
        add_help=False, allow_abbrev=False, formatter_class=_Formatter,
        description=schema.get("description") or description)
    taken = {p["x-acor"].get("flag") for p in props.values()}
    helps = [f for f in ("-h", "--help") if f not in taken]
    if helps:
        parser.add_argument(*helps, action=help_action,
                            help="show this help")
    for name in positionals(props):
        prop = props[name]
        kwargs: dict[str, Any] = {"metavar": metavar(name, prop),
                                  "help": _help(prop)}
        if prop["type"] == "array":
            kwargs.update(nargs="+" if name in required else "*",
                          type=_converter(prop["items"]),
                          default=prop.get("default", []))
            kwargs.update(_choices(prop["items"]))
        else:
            kwargs.update(type=_converter(prop), **_choices(prop))
            if name not in required:
                kwargs.update(nargs="?", default=prop.get("default"))
        parser.add_argument(name, **kwargs)
    for name in flag_names(props):
        prop = props[name]
        flag = prop["x-acor"]["flag"]
        help_text = argparse.SUPPRESS if prop["x-acor"].get("hidden") \
            else _help(prop)
        kwargs = {"dest": name, "help": help_text}
        if prop["type"] == "boolean":
            kwargs.update(action="store_true")
        else:
            kwargs.update(metavar=metavar(name, prop),
                          required=name in required)
            item = prop["items"] if prop["type"] == "array" else prop
            kwargs.update(type=_converter(item), **_choices(item))
            if prop["type"] != "array":
                kwargs.update(default=prop.get("default"))
            elif prop["x-acor"].get("repeat"):
                kwargs.update(action="append", default=None)
            else:  # several values after the flag; given twice, extends
                kwargs.update(action="extend", nargs="+", default=None)
        parser.add_argument(flag, **kwargs)
    return parser


def _help(prop: Schema) -> str | None:
    text = prop.get("description", "")
    allowed = prop.get("items", prop).get("enum")
    if allowed:  # the metavar hides argparse's own {a,b}
        text = f"{text} (one of: {', '.join(map(str, allowed))})".lstrip()
    if prop.get("default") not in (None, False, [], ""):
        text = f"{text} (default: {prop['default']})".lstrip()
    return text.replace("%", "%%") or None


def _choices(prop: Schema) -> dict[str, Any]:
    return {"choices": prop["enum"]} if "enum" in prop else {}


def parse(schema: Schema, argv: Iterable[str], prog: str,
          description: str | None = None,
          human: dict[str, str] | None = None) -> argparse.Namespace:
    """Parse ``argv`` with ``schema``: a Namespace with one attribute per
    property (absent values are their defaults; an array flag not given is
    its default or []). A human-only property takes its value from
    ``human`` ({name: text}, what a person gave: see :mod:`acor.human`),
    None when no person gave it. Raises UsageError or HelpRequested, never
    exits."""
    parser = build(_RaisingParser, prog, schema, description, _Help)
    try:
        values = parser.parse_args(list(argv))
    except UsageError as wrong:
        given = _human_flag(schema, argv)
        if given is not None:
            raise UsageError(
                f"{given!r} cannot be given on the command line: only a "
                "person may give it (an approval or a secret). Run the "
                "command without it at a terminal and acor asks the person",
                wrong.usage) from None
        wrong.fixed = corrected(parser, schema, list(argv))
        raise
    human = human or {}
    for name, prop in schema.get("properties", {}).items():
        if is_human(prop):
            value = None
            if name in human:
                value, problem = human_value(prop, human[name])
                if problem is not None:
                    raise UsageError(f"{name} (given by a person): {problem}",
                                     parser.format_usage().strip())
            setattr(values, name, value)
        elif prop["type"] == "array" and getattr(values, name) is None:
            setattr(values, name, list(prop.get("default", [])))
    return values


# Words of a refused command line tried one at a time: a longer one is
# not a typo to guess at.
_MAX_TRIED = 64


def corrected(parser: argparse.ArgumentParser, schema: Schema,
              argv: list[str]) -> list[str] | None:
    """``argv`` with one word replaced so that ``parser`` accepts it: an
    unknown flag by the known flag it is closest to, a value by the
    allowed value it is closest to (an enum's), a number out of bounds by
    the bound. None when no single word does it (a missing required
    argument, a value nothing resembles)."""
    props = checked_properties(schema)
    flags = [p["x-acor"]["flag"] for p in props.values()
             if "flag" in p["x-acor"] and not is_human(p)]
    allowed = [str(v) for p in props.values() for v in
               (p.get("items", p).get("enum") or ())]
    bounds = [str(p.get("items", p)[key]) for p in props.values()
              for key in ("minimum", "maximum") if key in p.get("items", p)]
    for i, word in enumerate(argv[:_MAX_TRIED]):
        if word == "--":
            break
        for fix in _tries(word, flags, allowed, bounds):
            again = argv[:i] + [fix] + argv[i + 1:]
            try:
                parser.parse_args(again)
            except (UsageError, HelpRequested):
                continue
            return again
    return None


def _tries(word: str, flags: list[str], allowed: list[str],
           bounds: list[str]) -> list[str]:
    """What one word of a refused command line might have meant: the
    closest known flag, or the closest allowed value, then the bounds
    (the nearest first) when it is a number."""
    import difflib  # 0.9 ms, a tenth of argparse: only a refused line pays
    name, eq, value = word.partition("=")
    if word.startswith("--") and name not in flags:
        return [m + eq + value for m in
                difflib.get_close_matches(name, flags, 3, 0.6)]
    prefix, value = (name + eq, value) if word.startswith("--") \
        else ("", word)
    tries = difflib.get_close_matches(value, allowed, 3, 0.6)
    if _is_number(value):  # the nearest bound first
        tries += sorted(bounds, key=lambda b: abs(float(b) - float(value)))
    return [prefix + t for t in tries]


def _is_number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True


def _human_flag(schema: Schema, argv: Iterable[str]) -> str | None:
    """The human-only argument ``argv`` tries to give as ``--name``, if
    any: the usage error then says why it cannot be given so."""
    names = {n.replace("_", "-") for n in human_names(schema)} | \
        set(human_names(schema))
    for word in argv:
        if word == "--":
            break
        flag = word.split("=", 1)[0]
        if flag.startswith("--") and flag[2:] in names:
            return flag[2:]
    return None


def to_argparse(prog: str, schema: Schema) -> argparse.ArgumentParser:
    """An argparse parser for ``schema``; ``prog`` starts the usage line
    (e.g. "acor hello"). It behaves as argparse does: a usage error or
    --help prints and exits."""
    return build(argparse.ArgumentParser, prog, schema)
