"""acor: let AI agents hold a conversation with command-line tools.

    from acor import AcorTool

    with AcorTool() as tool:
        tool.progress(50, "Halfway")
        tool.output({"rows": 1000})

Names are loaded on first use (PEP 562), so ``import acor`` costs almost
nothing and a tool pays only for what it touches.
"""

__version__ = "0.1.0"

_EXPORTS = {
    "AcorTool": "tool", "ToolState": "tool",
    "AcorStateError": "errors",
    "parse": "grammar", "render": "grammar", "Parser": "grammar",
    "events": None, "grammar": None, "framing": None, "exitcodes": None,
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'acor' has no attribute {name!r}")
    import importlib
    module = importlib.import_module("." + (_EXPORTS[name] or name), __name__)
    value = module if _EXPORTS[name] is None else getattr(module, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
