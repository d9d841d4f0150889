"""``acor tasks``: the MCP tasks of this project's store, for people and
operators.

    $ acor tasks                       # ID, STATUS, TOOL, AGE, SERVER
    $ acor tasks show 3f9c0a1b         # one task, its result or question
    $ acor tasks cancel 3f9c0a1b       # stops its run, wherever it runs
    $ acor tasks --format json         # the same, as JSON

The store is the config's state dir's (:mod:`acor.cli.tasks.store`), or
the shared one ``--task-store URL`` (or ``ACOR_TASK_STORE``) names
(:mod:`acor.cli.tasks.postgres`); the person at the command line owns
it, so every task in it is shown, with the server (replica) holding it.
An id may be given by any unique prefix. ``cancel`` marks the task: the
server holding it stops the run's whole process group (at its next lease
renewal, or at once through the shared store's engine); a task no live
server holds is cancelled at once.
"""

import json
import os
import time
from typing import TYPE_CHECKING, Any

import click

from acor import exitcodes

from acor.cli.commands.context import command_registry
from acor.cli.errors import UsageError
from acor.cli.tasks.place import STORE_ENV, describe, store_path
from acor.cli.tasks.stores import Store, StoreProblem, open_store
from acor.cli.textsafe import printable

if TYPE_CHECKING:
    from acor.cli.tasks.row import Task

FORMATS = ("text", "json")


def _url(ctx: click.Context) -> str | None:
    """The shared store's URL the group was given, or None."""
    url: str | None = (ctx.find_object(dict) or {}).get("task_store")
    return url


def _where(ctx: click.Context) -> tuple[str, str]:
    return describe(_url(ctx), command_registry(ctx).config.state_dir)


def _store(ctx: click.Context) -> Store | None:
    """The store, or None: no embedded store made yet (no task ever)."""
    url = _url(ctx)
    state_dir = command_registry(ctx).config.state_dir
    if not url and not os.path.exists(store_path(state_dir)):
        return None
    try:
        return open_store(url, state_dir)
    except StoreProblem as exc:
        raise UsageError(exc.title, exc.recovery,
                         code="E_TASK_STORE") from None


def _fmt(ctx: click.Context, fmt: str | None) -> str:
    if fmt is not None:
        return fmt
    parent = ctx.find_root().obj
    wanted = parent.get("format") if isinstance(parent, dict) else None
    return "json" if wanted in ("json", "jsonl") else "text"


def _age(seconds: float) -> str:
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m")):
        if seconds >= size:
            return f"{seconds / size:.0f}{unit}"
    return f"{seconds:.0f}s"


def summary(task: "Task") -> dict[str, Any]:
    from acor.cli.tasks.row import iso  # loaded by _store already
    return {"id": task.id, "status": task.status, "tool": task.tool,
            "created": iso(task.created), "updated": iso(task.updated),
            "server": task.server, "owner": task.owner,
            "message": task.message, "checkpoint": task.checkpoint,
            "ttl_ms": task.ttl_ms, "resumable": bool(task.resumable)}


def _find(ctx: click.Context, store: Store | None,
          prefix: str) -> "Task":
    found = [] if store is None else \
        [task for task in store.all() if task.id.startswith(prefix)]
    if len(found) != 1:
        what = "no task" if not found else f"{len(found)} tasks"
        raise UsageError(f"{what} with an id starting {printable(prefix)!r}",
                         "Run `acor tasks` to see every task and its id.",
                         code="E_UNKNOWN_TASK", next=["acor", "tasks"])
    return found[0]


@click.group("tasks", invoke_without_command=True)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
              help="text (default) or json.")
@click.option("--task-store", "task_store", metavar="URL",
              envvar=STORE_ENV, show_envvar=True,
              help="The shared store (a postgresql:// URL) acor mcp "
                   "--task-store serves; default: the state dir's.")
@click.pass_context
def tasks(ctx: click.Context, fmt: str | None,
          task_store: str | None) -> None:
    """List the MCP tasks of this project's store (status, tool, age,
    the server running it); `show ID` and `cancel ID` act on one."""
    ctx.ensure_object(dict)["tasks_format"] = fmt
    ctx.obj["task_store"] = task_store
    if ctx.invoked_subcommand is not None:
        return
    store = _store(ctx)
    rows = [] if store is None else store.all()
    if _fmt(ctx, fmt) == "json":
        kind, where = _where(ctx)
        click.echo(json.dumps({"store": where, "kind": kind,
                               "tasks": [summary(t) for t in rows]},
                              indent=2))
        return
    if not rows:
        click.echo("No tasks.")
        return
    now = time.time()
    click.echo(f"{'ID':<34}{'STATUS':<16}{'TOOL':<20}{'AGE':<6}SERVER")
    for task in rows:
        click.echo(f"{task.id:<34}{task.status:<16}"
                   f"{printable(task.tool):<20}"
                   f"{_age(now - task.created):<6}"
                   f"{printable(task.server or '-')}")


@tasks.command("show")
@click.argument("task_id")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
              help="text (default) or json.")
@click.pass_context
def show(ctx: click.Context, task_id: str, fmt: str | None) -> None:
    """One task: its status, message, and its result, error or
    question."""
    task = _find(ctx, _store(ctx), task_id)
    fmt = fmt or ctx.obj.get("tasks_format")
    detail = {**summary(task), "arguments": task.request.get("arguments"),
              "result": task.result, "error": task.error,
              "input_requests": task.input_requests}
    if _fmt(ctx, fmt) == "json":
        click.echo(json.dumps(detail, indent=2))
        return
    for key in ("id", "status", "tool", "created", "updated", "server",
                "owner", "message", "checkpoint"):
        if detail[key] is not None:
            click.echo(f"{key + ':':<12}{printable(str(detail[key]))}")
    for key in ("arguments", "result", "error", "input_requests"):
        if detail[key] is not None:
            # ensure_ascii: every control or bidi character an escape.
            click.echo(f"{key}:\n" + json.dumps(detail[key], indent=2,
                                                ensure_ascii=True))


@tasks.command("cancel")
@click.argument("task_id")
@click.pass_context
def cancel(ctx: click.Context, task_id: str) -> None:
    """Cancel a task: its server stops the run's whole process group."""
    store = _store(ctx)
    task = _find(ctx, store, task_id)
    assert store is not None  # _find found a task in it
    if task.terminal:
        click.echo(f"Task {task.id} is already {task.status}.")
        ctx.exit(exitcodes.OK)
    if not store.request_cancel(task.id):  # no live server holds it
        store.set_status(task.id, "cancelled", "cancelled from the command "
                         "line")
        click.echo(f"Task {task.id} cancelled.")
    else:
        click.echo(f"Task {task.id}: cancel requested; its server "
                   f"({printable(task.server or '-')}) stops the run.")
