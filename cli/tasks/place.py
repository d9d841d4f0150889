"""Where the task store lives, apart from :mod:`acor.cli.tasks.store`, so
that ``acor doctor`` and the click application name it without importing
sqlite3 (about 15 ms on every cold command) or the shared store's engine.

The store is the state dir's embedded one unless a PostgreSQL URL names a
shared one (``--task-store``, ``ACOR_TASK_STORE``): replicas of ``acor mcp
--http`` on several machines then share their tasks through Procrastinate
(:mod:`acor.cli.tasks.postgres`).
"""

import os
from urllib.parse import SplitResult, parse_qsl, urlencode, urlsplit, \
    urlunsplit

FILE_NAME = "tasks.sqlite3"
STORE_KIND = "embedded (SQLite, WAL)"
SHARED_KIND = "Procrastinate on PostgreSQL"
STORE_ENV = "ACOR_TASK_STORE"
# How the command hands the URL to the server and its HTTP workers: the
# ACOR_MCP_ prefix keeps it (and its password) out of every tool's
# environment (acor.cli.run.own_secrets).
SERVER_ENV = "ACOR_MCP_TASK_STORE"
SCHEMES = ("postgresql", "postgres")
EXTRA_INSTALL = "pip install 'acor-cli[tasks-postgres]'"
_SECRET_PARAMETERS = frozenset({"password", "sslpassword"})


def store_path(state_dir: str) -> str:
    """The task store of the state dir ``state_dir``."""
    return os.path.join(state_dir, FILE_NAME)


def _split(url: str) -> SplitResult | None:
    """``url``'s parts, or None: not a URL Python can read."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (a port out of range raises only here)
    except ValueError:
        return None
    return parts


def is_shared(url: str | None) -> bool:
    """Whether ``url`` names a shared store (a PostgreSQL URL)."""
    parts = _split(url or "")
    return bool(url) and parts is not None and \
        parts.scheme.lower() in SCHEMES


def hidden(url: str, mask: str | None = "***") -> str:
    """``url`` with its passwords (the login's, and libpq's ``password``
    and ``sslpassword`` parameters) shown as ``mask`` (None: left out):
    every place that shows a store's URL shows this. A value that is not a
    PostgreSQL URL (a libpq ``key=value`` string may hold a password) is
    not shown at all."""
    parts = _split(url)
    if parts is None or parts.scheme.lower() not in SCHEMES:
        return "(not a postgresql:// URL)"
    netloc = parts.netloc
    if parts.password is not None:
        login = parts.username or ""
        if mask is not None:
            login = f"{login}:{mask}"
        netloc = f"{login}@{netloc.rsplit('@', 1)[1]}"
    query = []
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key in _SECRET_PARAMETERS:
            if mask is None:
                continue
            value = mask
        query.append((key, value))
    return urlunsplit(parts._replace(netloc=netloc,
                                     query=urlencode(query, safe="/*")))


def without_password(url: str) -> str:
    """``url`` as a command may be given it: the passwords left out (the
    client asks for one)."""
    return hidden(url, None)


def describe(url: str | None, state_dir: str) -> tuple[str, str]:
    """(kind, where) of the store ``url`` (None: the embedded one of
    ``state_dir``), the password hidden."""
    if url:
        return SHARED_KIND, hidden(url)
    return STORE_KIND, store_path(state_dir)


class StoreProblem(Exception):
    """Why the asked-for store cannot be used: ``title``, ``recovery``
    (the exact next command)."""

    def __init__(self, title: str, recovery: str) -> None:
        super().__init__(title)
        self.title = title
        self.recovery = recovery
