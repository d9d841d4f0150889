"""Exceptions raised to tool authors: each says what is wrong and the fix."""


class AcorStateError(RuntimeError):
    """A method was called in a state that does not allow it, e.g.
    ``progress()`` before ``start()`` or ``output()`` after ``stop()``::

        AcorStateError: Cannot emit progress: tool 'x' has not started.
        Call start() or use `with AcorTool(...) as tool:`.
    """
