"""acor's own secrets: which variables hold them, how the process they are
for takes them, and how it keeps them from the tools it runs and from
other processes of its user.

``acor mcp`` reads its bearer token and its sealing key once, at start,
and removes them from its environment, so that no process it starts
inherits them; the runner also drops them from every tool's environment,
whoever started acor with them (a test session, a shell). A process that
holds them makes itself undumpable (``PR_SET_DUMPABLE`` 0, as ssh-agent
does): its ``/proc/<pid>/environ`` and memory are then closed to the
user's other processes, which matters because the environment the kernel
shows there is the one the process started with, whatever ``os.environ``
later drops. A program the server executes is dumpable again (the kernel
resets it at ``execve``), and gets none of the secrets.

Standard library only, imported by the runner on every run: no ctypes
until a server asks for it.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # only mypy: the typing module is not needed to run
if TYPE_CHECKING:
    from typing import Mapping

    from acor.args import Schema

TOKEN_VAR = "ACOR_MCP_TOKEN"     # the bearer token of acor mcp --http
KEY_VAR = "ACOR_MCP_KEY"         # the key that seals requestState
# The server's variables (these, and any later one, or the options an
# older acor handed its workers) are never a tool's: every name with this
# prefix is kept out of a tool's environment.
SECRET_PREFIX = "ACOR_MCP_"

# A tool's credentials (its human-only arguments marked "secret", of the
# standard level) that an agent host keeps for a person, as its sensitive
# user settings, and hands acor mcp in its environment: one variable per
# tool and argument. Kept out of every tool's environment too: a tool gets
# its own, on its human channel, and no other's.
HOST_SECRET_PREFIX = "ACOR_SECRET_"

_PR_SET_DUMPABLE = 4


def take(name: str) -> str | None:
    """The variable's value, removed from this process's environment (so no
    process started later inherits it), or None when it is unset."""
    return os.environ.pop(name, None)


def take_all() -> dict[str, str]:
    """Every server variable this process was given, each removed."""
    return {name: value for name in list(os.environ)
            if name.startswith(SECRET_PREFIX)
            and (value := take(name)) is not None}


def without_secrets(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` less every variable that may hold one of acor's secrets or
    a tool's credential a host handed acor."""
    return {key: value for key, value in env.items()
            if not key.startswith((SECRET_PREFIX, HOST_SECRET_PREFIX))}


def host_secret_var(tool: str, argument: str) -> str:
    """The variable that holds ``tool``'s credential ``argument``."""
    def word(name: str) -> str:
        return name.upper().replace("-", "_")
    return f"{HOST_SECRET_PREFIX}{word(tool)}__{word(argument)}"


def host_secret_names(schema: Schema | None) -> list[str]:
    """The arguments of the args ``schema`` a host may keep for a person:
    human-only, secret, and not of the high level (which is given only on
    acor's own page)."""
    props = (schema or {}).get("properties") or {}
    return [name for name, prop in props.items()
            if isinstance(prop, dict) and isinstance(prop.get("x-acor"), dict)
            and prop["x-acor"].get("human") is True
            and prop["x-acor"].get("secret") is True
            and prop["x-acor"].get("level", "standard") != "high"]


def host_secrets(tool: str, schema: Schema | None,
                 environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``tool``'s credentials its host set in ``environ`` (default: this
    process's), by argument name: what the person gave the host."""
    env = os.environ if environ is None else environ
    found: dict[str, str] = {}
    for name in host_secret_names(schema):
        value = env.get(host_secret_var(tool, name))
        if value:
            found[name] = value
    return found


def keep_private() -> bool:
    """Make this process undumpable: other processes of the same user can
    then no longer read its ``/proc/<pid>/environ`` or memory, or trace it
    (root still can). Whether the kernel agreed (False off Linux)."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


