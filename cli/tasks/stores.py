"""The one interface of a task store, and the choice of store.

Two stores keep tasks: the embedded one (:mod:`acor.cli.tasks.store`,
SQLite under the state dir, leases of acor's own in
:mod:`acor.cli.tasks.lease`) and the shared one
(:mod:`acor.cli.tasks.postgres`, PostgreSQL, ownership and takeover by
Procrastinate). The wire (:mod:`acor.cli.mcp.tasks`) and ``acor tasks``
see only :class:`Store`: which one they have changes nothing they do.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any, Protocol

from acor.cli.tasks.place import EXTRA_INSTALL, SCHEMES, is_shared, \
    store_path
from acor.cli.tasks.place import StoreProblem as StoreProblem  # re-exported
from acor.cli.textsafe import printable

if TYPE_CHECKING:  # the stores themselves are imported only when opened
    from acor.cli.tasks.row import Task


class Keeper(Protocol):
    """What keeps a server's hold on its tasks (a lease keeper, or the
    engine's worker); stopped when the server stops."""

    def stop(self) -> None: ...


class Store(Protocol):
    """A task store, as the wire and ``acor tasks`` use it."""

    def describe(self) -> tuple[str, str]: ...
    def close(self) -> None: ...
    def get(self, task_id: str, owner: str | None = None
            ) -> Task | None: ...
    def all(self) -> list[Task]: ...
    def held_by(self, server: str) -> list[Task]: ...
    def create(self, *, owner: str, tool: str, request: dict[str, Any],
               ttl_ms: int | None, poll_ms: int, resumable: bool,
               server: str, lease_s: float,
               task_id: str | None = None) -> Task: ...
    def set_status(self, task_id: str, status: str, message: str | None,
                   **payload: Any) -> bool: ...
    def note(self, task_id: str, message: str,
             checkpoint: str | None = None) -> None: ...
    def set_process(self, task_id: str, process: str | None) -> None: ...
    def request_cancel(self, task_id: str) -> bool: ...
    def answer(self, task_id: str, responses: dict[str, Any]) -> None: ...
    def delete(self, task_id: str) -> None: ...
    def purge_expired(self) -> list[str]: ...
    def keep(self, server: str, on_orphan: Callable[[Task], None],
             on_stop: Callable[[str], None],
             running: Callable[[], set[str]]) -> Keeper: ...
    def release(self, server: str) -> None: ...


def check_url(url: str) -> None:
    """Raise :class:`StoreProblem` unless ``url`` names a store this
    install can open (a PostgreSQL URL, the extra installed). Looks,
    imports nothing."""
    if not is_shared(url):
        raise StoreProblem(
            "the task store given is not a PostgreSQL URL",
            f"Give a URL starting {SCHEMES[0]}:// (e.g. --task-store "
            f"postgresql://acor@db/acor), or none for the embedded store.")
    if find_spec("procrastinate") is None or find_spec("psycopg") is None:
        raise StoreProblem(
            "a shared task store needs the tasks-postgres extra, which is "
            "not installed",
            f"Install it: `{EXTRA_INSTALL}`, then start again.")


def open_store(url: str | None, state_dir: str) -> Store:
    """The store ``url`` names (None: the embedded one of ``state_dir``);
    :class:`StoreProblem` when it cannot be opened."""
    if not url:
        # Here: sqlite3 costs every cold command (which imports this
        # module through the click application) about 15 ms.
        from acor.cli.tasks.store import TaskStore
        return TaskStore(store_path(state_dir))
    check_url(url)
    # Only here: Procrastinate and psycopg cost about 100 ms to import,
    # paid only when a shared store is asked for.
    try:
        from acor.cli.tasks.postgres import SharedStore
    except ImportError as exc:  # installed, but it cannot load: no libpq
        raise StoreProblem(
            f"the shared task store's PostgreSQL driver cannot load: "
            f"{_last_line(exc)}",
            "psycopg needs libpq: install it (Debian, Ubuntu: `apt-get "
            "install libpq5`), or psycopg's own build of it (`pip install "
            "'psycopg[binary]'`), then start again.") from None
    return SharedStore(url)


def _last_line(exc: BaseException) -> str:
    """The exception's last line (psycopg's says what its last try
    lacked), printable and bounded."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return printable((lines or [type(exc).__name__])[-1])[:300]
