"""The `acor mcp` rows, measured by bench/mcp_bench.py (written with the MCP
server), bench/tasks_bench.py and bench/sdk_client.py when the ``mcp``
package is there, skipped with a note otherwise.

mcp_bench.py exposes two functions taking no arguments; each returns its
samples in seconds: a number, a list of numbers, or a harness.Result of
its own making.
"""

import importlib
import importlib.util
import numbers
import os

from harness import Result, Unavailable, bound_result, broken, skipped

HERE = os.path.dirname(os.path.abspath(__file__))

ROWS = (
    # function, row name, measured as, target (s), unit shown
    ("initialize_latency", "MCP initialize",
     "`acor mcp` started -> `initialize` answered", 1.0, "s"),
    ("tools_list_1000", "MCP tools/list",
     "`tools/list` with 1,000 tools, warm cache", 0.1, "ms"),
    ("call_vs_sdk", "MCP call vs in-process SDK server", "", 4.0, "x"),
    ("call_1000_tools", "MCP call, 1,000 tools", "", 3.0, "x"),
    ("concurrent_calls", "MCP, 10 concurrent calls", "", 1.2, "x faster"),
    ("warm_fork", "warm start, fork to reaped exit",
     "a trivial program forked from the warm start", 0.005, "ms"),
    ("acor_run_per_run", "acor_run, per run",
     "a trivial tool run in process through the warm start", 0.015, "ms"),
    ("http_50_clients", "MCP over HTTP, 50 clients at once", "", 5.0, "ms"),
)
# bench/tasks_bench.py: MCP tasks on the embedded store and the shared one.
TASK_ROWS = (
    ("task_create", "MCP task created", "`tools/call` -> the task handle, "
     "committed to the embedded store", 0.02, "ms"),
    ("task_get", "MCP tasks/get", "`tasks/get` of a finished task", 0.005,
     "ms"),
    ("task_overhead", "MCP task vs plain call", "", 3.0, "x"),
    # The shared store (skipped where no PostgreSQL can be started).
    ("shared_task_create", "MCP task created, shared store", "`tools/call` "
     "-> the task handle, its row and its job committed to PostgreSQL",
     0.03, "ms"),
    ("shared_task_get", "MCP tasks/get, shared store", "`tasks/get` of a "
     "finished task, read from PostgreSQL", 0.01, "ms"),
)


# bench/sdk_client.py: the official SDK client, as a user's agent calls.
SDK_ROWS = (
    ("stdio_legacy", "MCP call, SDK client, legacy handshake", "", 4.0, "x"),
    ("stdio_modern", "MCP call, SDK client, 2026-07-28", "", 4.0, "x"),
    ("http_20_clients", "MCP over HTTP, 20 clients x 20 calls", "", 0.7,
     "x faster"),
)


def mcp_rows(wanted=lambda name: True):
    """Every MCP row ``wanted`` (given the row's name) keeps."""
    why = None
    if not os.path.exists(os.path.join(HERE, "mcp_bench.py")):
        why = "skipped: bench/mcp_bench.py is not there"
    elif importlib.util.find_spec("mcp") is None:
        why = "skipped: the mcp package is not installed"
    if why:
        return [skipped(name, measured, _shown(target, unit), unit, why)
                for _, name, measured, target, unit in ROWS + TASK_ROWS
                + SDK_ROWS if wanted(name)]
    modules = ((importlib.import_module("mcp_bench"), ROWS),
               (importlib.import_module("tasks_bench"), TASK_ROWS),
               (importlib.import_module("sdk_client"), SDK_ROWS))
    return [_row(module, *row) for module, rows in modules for row in rows
            if wanted(row[1])]


def _shown(seconds, unit):
    return seconds * 1000 if unit == "ms" else seconds


def _row(module, function, name, measured, target, unit):
    try:
        value = getattr(module, function)()
    except Unavailable as exc:
        return skipped(name, measured, _shown(target, unit), unit,
                       f"skipped: {exc}")
    except Exception as exc:  # a broken measurement is a miss, shown
        return broken(name, measured, _shown(target, unit), unit,
                      f"{function}() raised {type(exc).__name__}: {exc}")
    if isinstance(value, Result):
        return value
    samples = [value] if isinstance(value, numbers.Real) else list(value)
    return bound_result(name, measured, [_shown(s, unit) for s in samples],
                        _shown(target, unit), unit, higher_is_better=False)
