"""The bearer tokens of ``acor mcp --http``: one shared token, or several
named ones, one per person or agent, so a team's server tells them apart.

A token file holds either one token (every holder is one principal,
"acor-token", as before), or one ``NAME: TOKEN`` line per holder (blank
lines and ``#`` comments skipped)::

    # ~/.config/acor/mcp-tokens, chmod 600
    alice: 9bW3...32 random bytes...
    ci-agent: Qx7p...

The server logs which name each request came with; an MCP task is bound
to the token that created it (:mod:`acor.cli.mcp.tasks`), so one holder
never sees another's. Standard library only: checked before the SDK is
imported.
"""

import hmac

SHARED = "acor-token"   # the principal of a file (or variable) of one token
MIN_TOKEN = 16          # characters a bearer token needs at least
MAKE_TOKEN = "python3 -c 'import secrets; print(secrets.token_urlsafe(32))'"
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz"
                        "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._@-")


def _usable(token: str) -> bool:
    return len(token) >= MIN_TOKEN and token.isprintable() and \
        not any(c.isspace() for c in token)


def named_tokens(text: str, where: str) -> dict[str, str]:
    """{name: token} from a token file's or variable's ``text``; raises
    ValueError saying what is wrong (never quoting a token)."""
    lines = [line.strip() for line in text.splitlines()]
    lines = [line for line in lines if line and not line.startswith("#")]
    if len(lines) == 1 and ":" not in lines[0]:
        if not _usable(lines[0]):
            raise ValueError(f"{where} must hold one token of at least "
                             f"{MIN_TOKEN} printable characters and no "
                             f"spaces; make one with `{MAKE_TOKEN}`")
        return {SHARED: lines[0]}
    tokens: dict[str, str] = {}
    for number, line in enumerate(lines, 1):
        name, colon, token = (part.strip() for part in line.partition(":"))
        if not colon or not name or not set(name) <= _NAME_CHARS \
                or len(name) > 64:
            raise ValueError(
                f"{where}, token line {number}: expected `NAME: TOKEN`, the "
                "name of 1-64 letters, digits, '.', '_', '@' or '-'")
        if not _usable(token):
            raise ValueError(
                f"{where}, token {name!r}: a token needs at least "
                f"{MIN_TOKEN} printable characters and no spaces; make one "
                f"with `{MAKE_TOKEN}`")
        if name in tokens:
            raise ValueError(f"{where} names {name!r} twice")
        if token in tokens.values():
            raise ValueError(f"{where} gives {name!r} a token another name "
                             "has: give each holder a token of its own")
        tokens[name] = token
    if not tokens:
        raise ValueError(f"{where} holds no token; make one with "
                         f"`{MAKE_TOKEN}`")
    return tokens


def holder(tokens: dict[str, str], presented: str) -> str | None:
    """The name whose token ``presented`` is, or None. Every token is
    compared, in constant time, whichever matches."""
    given = presented.encode("utf-8", "replace")
    found = None
    for name, token in tokens.items():
        if hmac.compare_digest(given, token.encode()):
            found = name
    return found
