"""A tool's colours in the person's view (issue 38, point 8):
`textsafe.keep_colours` keeps SGR sequences and only those, less blink
and conceal, and rich reads what it keeps as the colours and type styles
the tool set. The real terminal is `tests/launcher/terminal/
test_tool_colours.py`'s; these hold the rule over any input."""

import re

from hypothesis import given, settings, strategies as st
from rich.style import Style
from rich.text import Text

from acor.cli.textsafe import keep_colours, strip_terminal

# Pieces of a tool's text: SGR parameters of every kind (extended
# colours, empty and padded parameters, colon sub-parameters), other
# sequences, controls and plain words.
PARAMS = st.lists(st.sampled_from(
    ["", "0", "1", "2", "5", "6", "8", "008", "25", "28", "31", "38", "48",
     "58", "2", "5", "255", "300", "5:1", "38:5:8", "7", "9", "97"]),
    max_size=8)
SGR = PARAMS.map(lambda ps: "\x1b[" + ";".join(ps) + "m")
OTHER = st.sampled_from(["\x1b[2J", "\x1b[7;3H", "\x1b]0;title\x07",
                         "\x1b]8;;https://e.example\x1b\\", "\x9b2J",
                         "\x1b[?1049h", "\x07", "\r", "\x00", "\u202e",
                         "\x1bc", "\x1b[", "\x1b", "\n", "\t"])
WORDS = st.text(alphabet="ab ;m[0123456789", max_size=6)
TEXT = st.lists(st.one_of(SGR, OTHER, WORDS), max_size=12).map("".join)

KEPT_SGR = re.compile(r"\x1b\[[0-9;:]*m")
STYLE = ("color", "bgcolor", "bold", "dim", "italic", "underline",
         "reverse", "strike", "underline2", "frame", "encircle", "overline")


@settings(max_examples=400, deadline=None)
@given(TEXT)
def test_only_sgr_is_kept_and_the_rest_is_cleaned_as_text(text):
    shown = keep_colours(text)
    without = KEPT_SGR.sub("", shown)
    assert "\x1b" not in without and "\x9b" not in without
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e]", without)
    # Text without colours reads exactly as the agent's.
    if "\x1b[" not in text:
        assert shown == strip_terminal(text)


def styles(text):
    """The style rich gives the character after ``text``."""
    rendered = Text.from_ansi(text + "x")
    return [span.style for span in rendered.spans
            if span.start <= len(rendered) - 1 < span.end]


@settings(max_examples=400, deadline=None)
@given(st.lists(SGR, min_size=1, max_size=3).map("".join))
def test_kept_colours_read_as_the_tool_set_them_less_blink_and_conceal(
        sequences):
    before, after = styles(sequences), styles(keep_colours(sequences))
    combined = Style.combine(before) if before else Style()
    shown = Style.combine(after) if after else Style()
    for name in STYLE:
        assert getattr(combined, name, None) == getattr(shown, name, None), \
            (name, sequences, keep_colours(sequences))
    for name in ("blink", "blink2", "conceal"):
        assert getattr(shown, name, None) is not True, (name, sequences)


def test_blink_and_conceal_go_colours_stay():
    assert keep_colours("\x1b[5;31mred\x1b[0m") == "\x1b[31mred\x1b[0m"
    assert keep_colours("\x1b[8mhidden\x1b[0m") == "hidden\x1b[0m"
    assert keep_colours("\x1b[38;5;8m\x1b[48;2;5;6;8m") == \
        "\x1b[38;5;8m\x1b[48;2;5;6;8m"
    assert keep_colours("\x1b]0;t\x07\x1b[2Jgreen \x1b[32mok\x1b[0m") == \
        "green \x1b[32mok\x1b[0m"


def test_a_carriage_return_before_a_colour_is_a_line_break():
    # As strip_terminal makes it in text without colours: nothing is
    # overwritten, and the two lines stay two.
    assert keep_colours("50%\r\x1b[32m60%\x1b[0m") == \
        "50%\n\x1b[32m60%\x1b[0m"
    assert keep_colours("a\x1b[0m\r") == "a\x1b[0m"
    assert keep_colours("a\r\r\x1b[1mb") == "a\n\n\x1b[1mb"
