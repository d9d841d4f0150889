"""ToolState keeps the public behaviour of the Enum it replaced (without
importing enum): members, identity, lookup by value and name, iteration,
repr, pickling, and immutability."""

import copy
import io
import pickle

import pytest

from acor import AcorTool, ToolState

NAMES = ["CREATED", "RUNNING", "COMPLETE", "FAILED", "CANCELLED",
         "INPUT_NEEDED"]


def test_members_in_order_with_names_and_values():
    assert [m.name for m in ToolState] == NAMES
    assert [m.value for m in ToolState] == [n.lower() for n in NAMES]
    assert len(ToolState) == 6
    assert list(reversed(ToolState))[0] is ToolState.INPUT_NEEDED
    assert list(ToolState.__members__) == NAMES


def test_lookup_by_value_and_name_gives_the_member_itself():
    assert ToolState("failed") is ToolState.FAILED
    assert ToolState(ToolState.FAILED) is ToolState.FAILED
    assert ToolState["RUNNING"] is ToolState.RUNNING


@pytest.mark.parametrize("value", ["FAILED", "nope", None, 1, []])
def test_unknown_values_are_value_errors(value):
    with pytest.raises(ValueError, match="is not a valid ToolState"):
        ToolState(value)


@pytest.mark.parametrize("name", ["failed", "name", "value", "_members"])
def test_unknown_names_are_key_errors(name):
    with pytest.raises(KeyError):
        ToolState[name]


def test_comparison_is_by_identity():
    assert ToolState.FAILED == ToolState.FAILED
    assert ToolState.FAILED != ToolState.COMPLETE
    assert ToolState.FAILED != "failed"
    assert {ToolState.FAILED: 1}[ToolState("failed")] == 1
    assert ToolState.FAILED in ToolState and "failed" not in ToolState


def test_repr_and_str_read_as_enum_members_do():
    assert repr(ToolState.FAILED) == "<ToolState.FAILED: 'failed'>"
    assert str(ToolState.INPUT_NEEDED) == "ToolState.INPUT_NEEDED"
    assert f"{ToolState.COMPLETE}" == "ToolState.COMPLETE"


def test_members_survive_pickle_and_copy_as_themselves():
    for member in ToolState:
        assert pickle.loads(pickle.dumps(member)) is member
        assert copy.copy(member) is member and copy.deepcopy(member) is member


def test_members_and_the_class_cannot_be_changed():
    with pytest.raises(AttributeError):
        ToolState.FAILED = ToolState.COMPLETE
    with pytest.raises(AttributeError):
        del ToolState.FAILED
    with pytest.raises(AttributeError):
        ToolState.FAILED.value = "ok"
    assert ToolState.FAILED.value == "failed"


def test_stop_takes_members_and_values_and_the_tool_reports_a_member():
    tool = AcorTool("t", stream=io.StringIO(), frame_token=None).start()
    assert tool.state is ToolState.RUNNING
    tool.stop(ToolState.CANCELLED)
    assert tool.state is ToolState("cancelled")
