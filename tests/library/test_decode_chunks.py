"""The decoder against its own one-piece reading: however a framed stream
is cut into reads (a multi-byte character, a frame mark, a section or its
end mark split between two), the events are the same as from the stream
read whole, and every byte of raw text is kept."""

import os

from hypothesis import given, settings, strategies as st

from acor import framing, grammar
from acor.decode import Decoder, LineReader
from acor.events import Heartbeat, Output, Progress, Status, Text

EXAMPLES = int(os.environ.get("ACOR_FUZZ_EXAMPLES", "100"))
TOKEN = "0123456789abcdef0123456789abcdef"

# Text that reaches line ends, multi-byte characters, lookalike marks and
# headings: the places where a cut between two reads could do harm.
_TEXT = st.lists(st.sampled_from(
    list("ab #-`\\\n") + ["é", "€", "𝄞", "\x1e", "\x1eacor:", "## ", "\u2028"]),
    max_size=40).map("".join)


@st.composite
def streams(draw):
    """(bytes, the events framed in them, heartbeats included)."""
    pieces, framed = [], []
    for kind, text in draw(st.lists(st.tuples(
            st.sampled_from(["raw", "output", "status", "progress",
                             "heartbeat"]), _TEXT), max_size=8)):
        if kind == "raw":
            pieces.append(text.encode("utf-8", "surrogatepass") + b"\n")
        elif kind == "heartbeat":
            pieces.append(framing.heartbeat_frame(TOKEN).encode())
            framed.append(Heartbeat())
        else:
            event = Output(text) if kind == "output" else \
                Status("working", text) if kind == "status" else \
                Progress(42, text)
            pieces.append(framing.frame(grammar.render(event),
                                        TOKEN).encode())
            framed.append(event)
    return b"".join(pieces), framed


def _decode(data, cuts):
    decoder = Decoder(TOKEN)
    events, at = [], 0
    for cut in sorted(set(cuts)) + [len(data)]:
        events += decoder.feed(data[at:cut])
        at = cut
    return events + decoder.close()


def _text(events):
    """The raw text, with the line breaks the events stand for."""
    return "\n".join(e.text for e in events if isinstance(e, Text))


@settings(max_examples=EXAMPLES, deadline=None)
@given(stream=streams(), cuts=st.lists(st.integers(0, 4000), max_size=12))
def test_property_a_stream_cut_anywhere_decodes_as_read_whole(stream, cuts):
    data, framed = stream
    whole = _decode(data, [])
    assert [e for e in whole if not isinstance(e, Text)] == framed
    cut = _decode(data, [c for c in cuts if c < len(data)])
    # Raw text may arrive as more Text events when the reads cut it, but
    # never changes; sections and heartbeats are the same, in order.
    assert [e for e in cut if not isinstance(e, Text)] == \
        [e for e in whole if not isinstance(e, Text)]
    assert _text(cut) == _text(whole)


@settings(max_examples=EXAMPLES, deadline=None)
@given(lines=st.lists(_TEXT.map(lambda t: t.replace("\n", "")),
                      min_size=1, max_size=30),
       cuts=st.lists(st.integers(0, 2000), max_size=12),
       end=st.booleans())
def test_property_line_reader_keeps_every_line_whatever_the_reads(lines, cuts,
                                                             end):
    data = "\n".join(lines).encode("utf-8", "surrogatepass") + \
        (b"\n" if end else b"")
    reader = LineReader()
    blocks, at = [], 0
    for cut in sorted({c for c in cuts if c < len(data)}) + [len(data)]:
        blocks += reader.feed(data[at:cut])
        at = cut
    blocks += reader.close()
    # Blocks are lines without their line break: a final one is implied.
    expected = data.decode("utf-8", "replace")
    if expected.endswith("\n"):
        expected = expected[:-1]
    assert "\n".join(blocks) == expected


def test_a_read_larger_than_a_slice_is_taken_in_slices_without_loss():
    # A 1 MiB pipe read holds many 64 KiB slices, and lines that straddle
    # them; a multi-byte character sits on a slice edge.
    line = ("x" * 65_533 + "é\n").encode()
    data = line * 20 + b"tail"
    reader = LineReader()
    blocks = reader.feed(data) + reader.close()
    assert "\n".join(blocks) == data.decode()


@settings(max_examples=EXAMPLES, deadline=None)
@given(stream=streams(), draw=st.data())
def test_property_an_mcp_result_is_the_same_however_the_reads_cut(stream,
                                                                 draw):
    """What an MCP client is given does not depend on where the reads cut
    the stream: the tool's raw text stays one block per run of lines, so a
    forged heading is labelled together with the lines under it."""
    from types import SimpleNamespace

    from acor.cli.mcp.results import content_blocks
    data, _ = stream
    # Cuts inside the stream, line ends among them: where reads split text.
    ends = [i + 1 for i, byte in enumerate(data) if byte == 0x0A]
    cuts = draw.draw(st.lists(st.sampled_from(ends) if ends else
                              st.just(0), max_size=6)) + \
        draw.draw(st.lists(st.integers(0, len(data)), max_size=6))

    def blocks(events):
        return content_blocks(SimpleNamespace(events=events), "/")
    assert blocks(_decode(data, cuts)) == blocks(_decode(data, []))
