"""Where the task store lives, apart from :mod:`acor.cli.tasks.store`, so
that ``acor doctor`` and the click application name it without importing
sqlite3 (about 15 ms on every cold command)."""

import os

FILE_NAME = "tasks.sqlite3"
STORE_KIND = "embedded (SQLite, WAL)"


def store_path(state_dir: str) -> str:
    """The task store of the state dir ``state_dir``."""
    return os.path.join(state_dir, FILE_NAME)
