"""Function tools: a typed Python function is an acor tool.

    from typing import Annotated, Literal
    from acor import AcorTool, Arg, tool

    @tool(sandbox={"write": ["out"], "network": False})
    def stats(n: Annotated[int, Arg("how many numbers", minimum=1)],
              dist: Literal["uniform", "gauss"] = "uniform",
              *, acor: AcorTool) -> dict:
        \"\"\"Summarise n random numbers.\"\"\"
        ...

The launcher never runs this code to learn the tool: it reads the
signature, the docstring and the ``@tool(...)`` keywords from the source
(:mod:`acor.cli.discovery.functions`), so what those say must be literals.
At run time :mod:`acor.functions.entry` imports the file and calls the
function with its arguments.

Here only the markers a signature is written with: :func:`tool`,
:class:`Arg`, :class:`Human` and :class:`Secret`. At run time they only
record what they were given; nothing here is imported but by the tool's
own module, so ``from acor import tool`` stays as cheap as ``import acor``.
"""

TYPE_CHECKING = False  # typing costs a tool's start-up: only mypy reads it
if TYPE_CHECKING:
    from typing import Any, Callable, Literal, TypeVar, overload
    F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["Arg", "Human", "Secret", "tool", "TOOL_OPTIONS"]

#: What ``@tool(...)`` takes: a manifest's fields, less the ones the
#: function itself says (its name, docstring, signature).
TOOL_OPTIONS = ("name", "version", "description", "timeout", "idle_timeout",
                "max_output", "cwd", "stdin", "examples", "annotations",
                "sandbox", "warm", "usage", "task")


def _tool(function: "Any" = None, **options: "Any") -> "Any":
    unknown = sorted(set(options) - set(TOOL_OPTIONS))
    if unknown:
        raise TypeError(f"@tool() takes {', '.join(TOOL_OPTIONS)}; not "
                        f"{', '.join(unknown)}")

    def mark(target: "Any") -> "Any":
        target.__acor_tool__ = dict(options)
        return target
    return mark if function is None else mark(function)


if TYPE_CHECKING:
    @overload
    def tool(function: F, /) -> F: ...

    @overload
    def tool(*, name: str = ..., version: str = ...,
             description: str = ..., timeout: float = ...,
             idle_timeout: float = ..., max_output: int = ...,
             cwd: str = ..., stdin: bool = ...,
             examples: "list[dict[str, Any]]" = ...,
             annotations: "dict[str, Any]" = ...,
             sandbox: "dict[str, Any]" = ..., warm: bool = ...,
             usage: str = ...,
             task: "Literal['optional', 'required']" = ...
             ) -> "Callable[[F], F]": ...

    def tool(function: "Any" = None, **options: "Any") -> "Any":
        """Mark ``function`` as an acor tool: ``@tool`` or
        ``@tool(version="1.2.0", timeout=60, sandbox={...})``."""
else:
    tool = _tool
    tool.__name__ = tool.__qualname__ = "tool"
    tool.__doc__ = """Mark ``function`` as an acor tool: ``@tool`` or
    ``@tool(version="1.2.0", timeout=60, sandbox={...})``, the keywords a
    manifest's fields (:data:`TOOL_OPTIONS`), literals only. The function is
    returned as it is, so it stays callable from Python and its tests."""


class Arg:
    """What an argument means beyond its type, in ``Annotated[int,
    Arg("how many", minimum=1)]``: its description, bounds, a regular
    expression a string must match in full (``pattern``), how usage names
    its value (``metavar``) and whether help hides it (``hidden``)."""

    __slots__ = ("description", "minimum", "maximum", "pattern", "metavar",
                 "hidden")

    def __init__(self, description: "str | None" = None, *,
                 minimum: "float | None" = None,
                 maximum: "float | None" = None,
                 pattern: "str | None" = None,
                 metavar: "str | None" = None, hidden: bool = False) -> None:
        self.description = description
        self.minimum, self.maximum = minimum, maximum
        self.pattern, self.metavar, self.hidden = pattern, metavar, hidden


class Human:
    """An argument only a person may give (an approval): never from the
    command line, ``acor call`` or an MCP client's arguments, as
    ``"x-acor": {"human": true}`` in a manifest. ``level="high"`` asks
    that it be given only out of band, never through a client's form."""

    __slots__ = ("level",)
    secret = False

    def __init__(self, level: str = "standard") -> None:
        if level not in ("standard", "high"):
            raise ValueError('level must be "standard" or "high"')
        self.level = level


class Secret(Human):
    """A credential only a person may give (a string), as ``"x-acor":
    {"human": true, "secret": true}``: never echoed, never stored."""

    __slots__ = ()
    secret = True
