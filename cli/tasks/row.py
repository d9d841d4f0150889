"""A task as both stores keep it (:mod:`acor.cli.tasks.store`, embedded;
:mod:`acor.cli.tasks.postgres`, shared): its columns, its statuses, its
id and timestamps. Standard library only."""

import json
import secrets
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

STATUSES = ("working", "input_required", "completed", "failed", "cancelled")
TERMINAL = frozenset({"completed", "failed", "cancelled"})

COLUMNS = ("id", "owner", "tool", "request", "status", "message",
            "created", "updated", "ttl_ms", "poll_ms", "result", "error",
            "input_requests", "input_responses", "cancel", "resumable",
            "checkpoint", "server", "lease_until", "process")
_JSON = frozenset({"request", "result", "error", "input_requests",
                   "input_responses"})
ACTIVE = "status IN ('working', 'input_required')"


@dataclass
class Task:
    """One row of the store, its JSON columns decoded."""

    id: str
    owner: str
    tool: str
    request: dict[str, Any]
    status: str
    message: str | None
    created: float
    updated: float
    ttl_ms: int | None
    poll_ms: int
    result: dict[str, Any] | None
    error: dict[str, Any] | None
    input_requests: dict[str, Any] | None
    input_responses: dict[str, Any] | None
    cancel: int
    resumable: int
    checkpoint: str | None
    server: str | None
    lease_until: float
    process: str | None = None  # the running tool's group (tasks.group)

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    def expired(self, now: float) -> bool:
        return self.ttl_ms is not None and \
            now > self.created + self.ttl_ms / 1000


def iso(moment: float) -> str:
    """An ISO 8601 UTC timestamp, to the millisecond."""
    return datetime.fromtimestamp(moment, timezone.utc).isoformat(
        timespec="milliseconds").replace("+00:00", "Z")


def new_id() -> str:
    """An unguessable task id: 128 random bits."""
    return secrets.token_hex(16)


def starting(*, owner: str, tool: str, request: dict[str, Any],
             ttl_ms: int | None, poll_ms: int, resumable: bool, server: str,
             lease_until: float, task_id: str | None = None) -> Task:
    """A new task, working, its run about to start on ``server``."""
    now = time.time()
    return Task(id=task_id or new_id(), owner=owner, tool=tool,
                request=request, status="working",
                message="The run is starting.", created=now, updated=now,
                ttl_ms=ttl_ms, poll_ms=poll_ms, result=None, error=None,
                input_requests=None, input_responses=None, cancel=0,
                resumable=int(resumable), checkpoint=None, server=server,
                lease_until=lease_until)


def owned(found: list[Task], owner: str | None) -> Task | None:
    """The task found by id, or None when there is none or it is not
    ``owner``'s (None: any owner, for the person at the command line,
    whose store this is)."""
    if not found or (owner is not None and found[0].owner != owner):
        return None
    return found[0]


def column_value(name: str, value: Any) -> Any:
    if name in _JSON and value is not None:
        return json.dumps(value, separators=(",", ":"))
    return value


def task_of_row(row: tuple[Any, ...]) -> Task:
    values = {name: (json.loads(value) if name in _JSON and value is not None
                     else value) for name, value in zip(COLUMNS, row,
                                                     strict=True)}
    return Task(**values)
