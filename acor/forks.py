"""Fork safety: a child forked while a tool is in use gets a usable tool.

A child forked while another thread (the progress timer, or a thread of the
tool's own) holds a tool's lock would wait for it forever: the thread that
holds it does not exist in the child (1 to 3 of 400 forked workers hung).
Before a fork we take every live tool's lock, so no write is half done (and
the stream's own buffer lock is free too); the parent then releases them,
and the child's tools get fresh locks, no timer and none of the parent's
held progress (``AcorTool._reset_after_fork``). What a child writes goes to
the same stdout as the parent's sections.
"""

from __future__ import annotations

import _weakref
import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    import _thread
    import weakref
    from typing import Protocol

    class Forkable(Protocol):
        """What this module needs of a tool (AcorTool)."""
        _lock: _thread.RLock

        def _reset_after_fork(self) -> None: ...

# Weak references to every tool not yet collected.
_live: set[weakref.ref[Forkable]] = set()
_held_for_fork: list[Forkable] = []


def track(tool: Forkable) -> None:
    """Look after ``tool`` across forks (a weak reference: no leak)."""
    if _unregistered:
        _register()
    _live.add(_weakref.ref(tool, _live.discard))


# The hooks are registered with the first tool, not on import: a process
# that imports the library and forks without a tool (acor's fork server,
# for every tool it starts) would run them in every fork for nothing.
_unregistered = [True]


def _register() -> None:
    try:
        _unregistered.pop()  # atomic: one thread registers them
    except IndexError:
        return
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(before=_before_fork,
                            after_in_parent=_after_fork_in_parent,
                            after_in_child=_after_fork_in_child)


def _tools() -> list[Forkable]:
    return [tool for tool in (ref() for ref in list(_live))
            if tool is not None]


def _before_fork() -> None:
    for tool in _tools():
        tool._lock.acquire()
        _held_for_fork.append(tool)


def _after_fork_in_parent() -> None:
    while _held_for_fork:
        _held_for_fork.pop()._lock.release()


def _after_fork_in_child() -> None:
    _held_for_fork.clear()
    for tool in _tools():
        tool._reset_after_fork()

