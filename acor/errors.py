"""One error base for the library and the launcher.

Every error acor reports says what is wrong (``reason``), gives a stable
``code`` an agent can branch on, the fix (``recovery``) and, when there is
one, the exact command to run next (``next``, an argv list). ``exit_code``
is the process exit code the error ends a run with, and :meth:`to_event`
turns it into the ``## Error`` section the agent reads.
"""

from __future__ import annotations

from . import exitcodes

TYPE_CHECKING = False  # typing costs every run ~3 ms: only mypy
if TYPE_CHECKING:
    from typing import Optional, Sequence

    from .events import Error


class AcorError(Exception):
    """Base of every error acor reports. Subclasses set ``code`` and
    ``exit_code``; instances may override both."""

    code = "E_ACOR"
    exit_code = exitcodes.FAILED

    def __init__(self, reason: str, recovery: Optional[str] = None, *,
                 code: Optional[str] = None, details: Optional[str] = None,
                 next: Optional[Sequence[str]] = None,
                 exit_code: Optional[int] = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.recovery = recovery
        self.details = details
        self.next = list(next) if next is not None else None
        if code is not None:
            self.code = code
        if exit_code is not None:
            self.exit_code = exit_code

    def to_event(self) -> Error:
        # events costs 3 ms; the launcher's start-up imports this module
        # (its errors' base), and only a run that reports one needs events.
        from .events import Error
        return Error(self.reason, self.code, self.details, self.recovery,
                     self.next)


class AcorStateError(AcorError, RuntimeError):
    """A method was called in a state that does not allow it, e.g.
    ``progress()`` before ``start()`` or ``output()`` after ``stop()``::

        AcorStateError: Cannot emit progress: tool 'x' has not started.
        Call start() or use `with AcorTool(...) as tool:`.
    """

    code = "E_TOOL_STATE"
