"""Resumable runs for AcorTool: session(), checkpoint() and resume().

State lives on disk (see :mod:`acor.sessions`, imported by the first
session() call); the session id travels as an argument, so the tool stays
stateless between runs.
"""

from __future__ import annotations

from .checks import state_error
from .events import Checkpoint, Session

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    import _thread
    from typing import Any, Protocol, Self

    from .events import Event
    from .sessions import SessionStore

    class _Host(Protocol):
        """What ResumableMixin needs of the class it is mixed into."""
        name: str
        _lock: _thread.RLock

        def _emit(self, what: str, event: Event) -> Self: ...
        def _require_running(self, what: str) -> None: ...

    _Base = _Host
else:
    _Base = object


class ResumableMixin(_Base):
    """For AcorTool, which provides what ``_Host`` lists: name, _lock,
    _emit(what, event), _require_running(what); and sets _session and
    _store to None at first."""

    _session: str | None  # None until session()
    _store: SessionStore | None  # None until session()

    def session(self, session_id: str, keep: int | None = None
                ) -> Self:
        """Bind this run to a resumable session and emit ``## Session: id``.

        The id travels as an argument (the CLI stays stateless); state lives
        on disk under ``ACOR_STATE_DIR`` (default ``.acor/state``)::

            tool.session(args.session)
            last = tool.resume()            # (checkpoint_id, state) or None
            start = last[1]["offset"] if last else 0

        ``keep`` bounds how many checkpoints the session file holds (default
        1000); a tool whose state is large and cumulative needs only the
        newest one or two, and every save rewrites the whole file.
        """
        from . import sessions  # json and re: only tools with sessions pay
        # The store checks the tool name; the session id is checked here,
        # before the Session section says it exists.
        sessions.validate_session_id(session_id)
        store = sessions.SessionStore(
            sessions.state_dir_from_env(), self.name,
            keep=sessions.KEEP if keep is None else keep)
        self._emit("session", Session(session_id))
        self._session, self._store = session_id, store
        return self

    def checkpoint(self, checkpoint_id: str, state: Any) -> Self:
        """Save JSON-serialisable ``state`` for the session (atomically, and
        safely against other processes), then emit
        ``## Session Checkpoint: id``."""
        session, store = self._require_session("checkpoint")
        with self._lock:
            self._require_running("checkpoint")
        store.save(session, checkpoint_id, state)
        return self._emit("checkpoint", Checkpoint(checkpoint_id))

    def resume(self) -> tuple[str, Any] | None:
        """The session's latest checkpoint as ``(checkpoint_id, state)``, or
        None when there is none yet (a first run)."""
        session, store = self._require_session("resume")
        saved = store.latest(session)
        return None if saved is None else (saved.id, saved.state)

    def _require_session(self, what: str) -> tuple[str, SessionStore]:
        """The session and its store (session() sets both)."""
        if self._session is None or self._store is None:
            raise state_error(
                f"Cannot {what}: tool '{self.name}' has no session. Call "
                f"tool.session(session_id) first.")
        return self._session, self._store
