"""JSON lines cost at most 1.5x the Markdown of the same run (issue 32,
point 7): schema 2 leaves out null and default keys, and the launcher no
longer repeats seq, time and tool on every line.

A run that says little cannot get there: its result line (100-200 bytes:
state, exit code, error code, tool, argv, versions, next), which Markdown
leaves to the exit code, is a third or more of its Markdown. For those
runs every event costs at most 1.5x its Markdown and the result line
comes on top; the smallest run here (a greeting) stays under 2.5x, where
schema 1 cost 5x.

Each run is made twice by a real `acor` process, once per format, and the
bytes on stdout compared: a count of bytes, not a timing, so the test is
deterministic (every tool here writes only sections, whose events do not
depend on how its output was cut into reads)."""

import shutil

import pytest

from conftest import REPO

REPORT = """
    from acor import AcorTool
    with AcorTool() as tool:
        rows = 1200
        for done in (300, 600, 900, 1200):
            tool.progress_bar(done, rows, "Checking rows")
        tool.output(
            "Checked 1,200 rows of orders.csv against the schema: 1,187 "
            "are valid, 13 are not (9 have a negative quantity, 4 a date "
            "in the future). The invalid rows are listed in "
            "out/invalid.csv with the reason for each.")
        tool.output({"rows": rows, "valid": 1187, "invalid": 13,
                     "reasons": {"negative_quantity": 9, "future_date": 4},
                     "report": "out/invalid.csv"})
        tool.output_files({"out/invalid.csv": "The 13 invalid rows"})
        tool.suggestions(["Fix the 9 negative quantities at the source",
                          "Ask whether future dates are pre-orders"])
        tool.ai_directive("Show the user the 13 invalid rows before "
                          "changing anything")
"""

FAILS = """
    from acor import AcorTool
    with AcorTool() as tool:
        tool.progress(40, "Reading config.yaml")
        tool.output("Read 3 of 4 sections of config.yaml; the fourth, "
                    "`database`, has a key the schema does not know.")
        tool.fail("E_CONFIG_INVALID", "config.yaml: unknown key 'hostnme'",
                  details="section database, line 14: hostnme: db.local\\n"
                          "known keys: host, hostname, port, user",
                  recovery="Rename the key to hostname (a typo?) and run "
                           "the check again",
                  next=["acor", "checkconfig", "config.yaml"])
"""

LISTS = """
    from acor import AcorTool
    with AcorTool() as tool:
        tool.progress(50, "Listing")
        tool.output("\\n".join(
            f"{name:<12} {size:>8} bytes  modified 2026-11-{day:02d}"
            for name, size, day in [("orders.csv", 14900, 3),
                                    ("customers.csv", 5210, 4),
                                    ("returns.csv", 880, 9),
                                    ("stock.csv", 40211, 12),
                                    ("prices.csv", 9120, 12),
                                    ("suppliers.csv", 3000, 15),
                                    ("notes.txt", 120, 20)] * 3))
"""

ASKS = """
    from acor import AcorTool
    with AcorTool() as tool:
        tool.output("orders.csv has no column named id. Deduplicating "
                    "needs a key: one of the columns whose values are "
                    "unique in the first 1,000 rows.")
        tool.input_needed(
            "Which column is the key? Candidates: order_id (unique), "
            "email (unique in 998 of 1,000 rows).",
            fields={"key": {"type": "string", "enum": ["order_id", "email"],
                            "description": "the key column"}},
            next=["acor", "dedupe", "orders.csv", "--key", "order_id"])
"""


def sizes(project, *args):
    """(Markdown bytes, JSON bytes, result line bytes) of the same run."""
    markdown = project.run(*args)
    json_lines = project.run("--format", "json", *args)
    assert markdown.returncode == json_lines.returncode, markdown.stdout
    result = json_lines.stdout.splitlines()[-1]
    assert result.startswith('{"type":"result"')
    return (len(markdown.stdout.encode()), len(json_lines.stdout.encode()),
            len(result.encode()) + 1)


@pytest.fixture
def tools(project):
    shutil.copytree(REPO / "tools" / "csvprofile",
                    project.root / "tools" / "csvprofile")
    shutil.copytree(REPO / "tools" / "hello", project.root / "tools" / "hello")
    project.add_tool("report", REPORT)
    project.add_tool("listing", LISTS)
    project.add_tool("checkconfig", FAILS)
    project.add_tool("dedupe", ASKS)
    return project


@pytest.mark.parametrize("args", [
    ("csvprofile", str(REPO / "tools/csvprofile/sample/orders.csv"),
     "--key", "order_id", "--out", "out"),
    ("report",),
    ("listing",),
], ids=["csvprofile", "report", "listing"])
def test_json_lines_cost_at_most_one_and_a_half_times_markdown(tools, args):
    markdown, json_lines, _ = sizes(tools, *args)
    assert json_lines <= 1.5 * markdown, (markdown, json_lines)


@pytest.mark.parametrize("args", [("checkconfig",), ("dedupe",)],
                         ids=["failure", "input-needed"])
def test_in_a_short_run_only_the_result_line_is_over(tools, args):
    markdown, json_lines, result = sizes(tools, *args)
    assert json_lines - result <= 1.5 * markdown, (markdown, json_lines,
                                                   result)


def test_a_run_that_says_almost_nothing_stays_under_two_and_a_half(tools):
    markdown, json_lines, _ = sizes(tools, "hello", "agent")
    assert json_lines <= 2.5 * markdown, (markdown, json_lines)
