"""The public API as a tool author and a test suite use it: mypy must
accept every line and infer the types below (tests/library/test_typing.py)."""

from acor import AcorTool
from acor.cli.run.launch import run
from acor.cli.run.request import build_request
from acor.cli.run.result import RunResult
from acor.decode import Decoder
from acor.events import Event


def a_tool() -> None:
    with AcorTool() as tool:
        reveal_type(tool)
        tool.progress(50, "half way")
        tool.output({"rows": 3})


def a_test() -> None:
    result = run(build_request("hello", ["Ada"]))
    reveal_type(result)
    code: int = result.exit_code
    state: str = result.state
    assert code == 0 and state == "complete"


def a_reader(stream: bytes) -> list[Event]:
    decoder = Decoder("0" * 32)
    return decoder.feed(stream) + decoder.close()


def a_record(result: RunResult) -> dict:
    return result.to_dict()
