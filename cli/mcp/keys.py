"""The key that seals 2026-07-28 ``requestState``: this process's own, or
``ACOR_MCP_KEY``, shared by every replica of one service.

A call that needs input returns its state sealed (AES-256-GCM, by the SDK's
:class:`mcp.server.request_state.RequestStateBoundary`); the client's retry
brings it back, and whichever server answers the retry must unseal it. One
process can use a key of its own; several replicas behind a load balancer
(or several workers of one ``acor mcp --http``) must share one, or a retry
that lands on another replica is refused as "Invalid or expired".

``ACOR_MCP_KEY`` is one secret of at least 32 bytes, or several separated
by commas for rotation: the first seals, every one unseals. Standard
library only: checked before the SDK is imported, so a bad key is a clear
error at start, never a failure at the first retry.

The server takes the variable once, at start, and removes it from its
environment (:mod:`acor.cli.run.own_secrets`): the key is then held in the
server's memory only, never passed to a tool or a worker's environment.
"""

from acor.cli.run.own_secrets import KEY_VAR

ENV = KEY_VAR
MIN_BYTES = 32
MAKE_ONE = "python3 -c 'import secrets; print(secrets.token_hex(32))'"


class KeyProblem(ValueError):
    """ACOR_MCP_KEY is set but unusable; the message says why and how."""


def shared_keys(value: str | None) -> list[str] | None:
    """The key ring from ``value``, ``ACOR_MCP_KEY`` as the server took it
    (first seals), or None when it is unset or blank: this process then
    uses a key of its own."""
    if value is None or not value.strip():
        return None
    keys = [part.strip() for part in value.split(",")]
    for index, key in enumerate(keys):
        if len(key.encode()) < MIN_BYTES:
            where = f"key {index + 1} of {len(keys)}" if len(keys) > 1 \
                else "it"
            raise KeyProblem(
                f"{ENV} is too short: {where} has {len(key.encode())} bytes, "
                f"and a sealing key needs at least {MIN_BYTES} bytes of "
                f"randomness. Make one with `{MAKE_ONE}` and give every "
                "replica the same value.")
    if len(set(keys)) != len(keys):
        raise KeyProblem(f"{ENV} names the same key twice; list each key "
                         "once (the first seals, every one unseals).")
    return keys

