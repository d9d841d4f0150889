"""Misuses mypy must catch (tests/library/test_typing.py): a public API typed as
Any would let every one of them through."""

from acor import AcorTool
from acor.cli.run.launch import run
from acor.cli.run.request import build_request


def wrong() -> None:
    with AcorTool() as tool:
        tool.no_such_method()
    result = run(build_request("hello"))
    result.exit_code + "1"
    result.no_such_field
