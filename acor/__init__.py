"""acor: let AI agents hold a conversation with command-line tools.

    from acor import AcorTool

    with AcorTool() as tool:
        args = tool.parse_args()        # the "args" schema of manifest.json
        tool.progress(50, "Halfway")
        tool.output({"rows": 1000})

The public names are listed in ``__all__``. Each is loaded on first use
(PEP 562), so ``import acor`` costs almost nothing and a tool pays only for
what it touches: ``from acor import AcorTool`` loads the tool and no more.
"""

# A new public name takes three lines, side by side below: its name in
# __all__, where it lives in _LAZY, and its import in the TYPE_CHECKING
# block (for type checkers; the interpreter loads it on first use).
# tests/library/test_import_cost.py checks that every name in __all__ resolves.
__all__ = [
    "AcorError",
    "AcorStateError",
    "AcorTool",
    "Arg",
    "Human",
    "Parser",
    "Secret",
    "ToolState",
    "__version__",
    "args",
    "events",
    "exitcodes",
    "framing",
    "grammar",
    "parse",
    "render",
    "tool",
]

# Where each lazy name lives: (module, attribute or None for the module).
_LAZY = {
    "__version__": ("events", "__version__"),
    "AcorTool": ("acortool", "AcorTool"),
    "ToolState": ("toolstate", "ToolState"),
    "tool": ("functions", "tool"),
    "Arg": ("functions", "Arg"),
    "Human": ("functions", "Human"),
    "Secret": ("functions", "Secret"),
    "AcorError": ("errors", "AcorError"),
    "AcorStateError": ("errors", "AcorStateError"),
    "parse": ("grammar", "parse"),
    "render": ("grammar", "render"),
    "Parser": ("grammar", "Parser"),
    "args": ("args", None),
    "events": ("events", None),
    "exitcodes": ("exitcodes", None),
    "framing": ("framing", None),
    "grammar": ("grammar", None),
}

# Type checkers read the imports below; the interpreter never runs them
# (``typing.TYPE_CHECKING`` would import typing, which costs more than acor).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from . import args, events, exitcodes, framing, grammar
    from .events import __version__
    from .errors import AcorError, AcorStateError
    from .functions import Arg, Human, Secret, tool
    from .grammar import Parser, parse, render
    from .acortool import AcorTool
    from .toolstate import ToolState


def _strict_warnings() -> None:
    """A switch for acor's own test suite: with ACOR_STRICT_WARNINGS=1 a
    DeprecationWarning raised in acor's code is an error, in every process
    acor starts (pytest's filters reach only its own, and PYTHONWARNINGS
    cannot name a module pattern). Every acor process imports this file
    first, so this is the one place that can set it."""
    import os  # built in, already loaded by the interpreter
    if os.environ.get("ACOR_STRICT_WARNINGS") == "1":
        import warnings  # only acor's own test suite sets the switch
        warnings.filterwarnings("error", category=DeprecationWarning,
                                module=r"acor(\.|$)")


_strict_warnings()


def __getattr__(name: str) -> object:
    try:
        module_name, attribute = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'acor' has no attribute {name!r}") \
            from None
    import sys  # built in; importlib would be a real import
    __import__(f"{__name__}.{module_name}")
    module = sys.modules[f"{__name__}.{module_name}"]
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value
    return value


def __dir__() -> "list[str]":
    return sorted(set(globals()) | set(__all__))
