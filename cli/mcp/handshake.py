"""Who ``acor mcp`` says it is, and its answer to the opening handshake,
written without the MCP SDK.

An agent client gives a server about 1.5 s to answer its first request, and
importing the SDK alone takes about 0.9 s here. So the stdio transport
(:mod:`acor.cli.mcp.transports.stdio`) answers the handshake every client
opens with from here, in the standard library alone: ``initialize`` (protocol
versions up to 2025-11-25) or ``server/discover`` (2026-07-28), exactly as
the SDK's server built by :mod:`acor.cli.mcp.server` would (the stdio
transport compares the two; ``tests/launcher/mcp/test_mcp.py`` holds them
equal). Anything else, or a version this module does not know, is left for
the SDK to answer.
"""

import json
from typing import Any

from acor import __version__

from acor.cli.mcp.versions import HANDSHAKE_VERSIONS, MODERN_VERSIONS

SERVER_NAME = "acor"
SERVER_TITLE = "acor tools"
INSTRUCTIONS = (
    "Each tool runs a local command-line program through acor. A result "
    "whose text starts with 'Input needed' asks for more arguments: call the "
    "same tool again with them; when it says only a person may answer, ask "
    "the user and never answer it yourself. Errors carry a code, a recovery "
    "and often the next call to make.")

_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
_CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
_SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
# What acor's server (acor.cli.mcp.server.AcorServer) advertises over
# stdio: a tools list whose changes it sends (acor.cli.mcp.listchanged),
# the resources of acor.cli.mcp.resources, whose changes it does not.
_CAPABILITIES = {"tools": {"listChanged": True},
                 "resources": {"subscribe": False, "listChanged": False}}
# At 2026-07-28 only: the Tasks extension (acor.cli.mcp.tasks).
_EXTENSIONS: dict[str, dict[str, object]] = {
    "io.modelcontextprotocol/tasks": {}}
_SERVER_INFO = {"name": SERVER_NAME, "title": SERVER_TITLE,
                "version": __version__}

RequestId = int | str


def early_answer(line: bytes) -> tuple[RequestId | None,
                                       dict[str, Any] | None]:
    """(request id, result) for a well-formed ``initialize`` or
    ``server/discover``, else (None, None). Conservative on purpose: any
    doubt about the request's shape leaves it to the SDK."""
    try:
        message = json.loads(line)
    except ValueError:
        return None, None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return None, None
    request_id = message.get("id")
    params = message.get("params")
    if isinstance(request_id, bool) or not isinstance(request_id, (int, str)) \
            or not isinstance(params, dict):
        return None, None
    method = message.get("method")
    answer = _initialize_result(params) if method == "initialize" else \
        _discover_result(params) if method == "server/discover" else None
    return (request_id, answer) if answer is not None else (None, None)


def _initialize_result(params: dict[str, Any]) -> dict[str, Any] | None:
    version = params.get("protocolVersion")
    info = params.get("clientInfo")
    if not (isinstance(version, str) and isinstance(params.get("capabilities"),
                                                    dict)
            and isinstance(info, dict) and isinstance(info.get("name"), str)
            and isinstance(info.get("version"), str)
            and _plain_meta(params)):
        return None
    # The SDK's rule: the client's version if it speaks it, else its latest.
    negotiated = version if version in HANDSHAKE_VERSIONS \
        else HANDSHAKE_VERSIONS[-1]
    return {"protocolVersion": negotiated, "capabilities": _CAPABILITIES,
            "serverInfo": dict(_SERVER_INFO), "instructions": INSTRUCTIONS}


def _plain_meta(params: dict[str, Any]) -> bool:
    """An ``initialize`` carrying the 2026 envelope is one the SDK refuses
    or routes differently: leave it to the SDK."""
    meta = params.get("_meta")
    return meta is None or (isinstance(meta, dict) and
                            _VERSION_KEY not in meta)


def _discover_result(params: dict[str, Any]) -> dict[str, Any] | None:
    meta = params.get("_meta")
    if not (isinstance(meta, dict) and meta.get(_VERSION_KEY) in
            MODERN_VERSIONS and isinstance(meta.get(_CAPABILITIES_KEY), dict)
            and isinstance(meta.get(_CLIENT_INFO_KEY, {}), dict)
            and set(params) <= {"_meta"}):
        return None
    return {"supportedVersions": list(MODERN_VERSIONS),
            "capabilities": {**_CAPABILITIES, "extensions": _EXTENSIONS},
            "instructions": INSTRUCTIONS, "resultType": "complete",
            "ttlMs": 0, "cacheScope": "private",
            "_meta": {_SERVER_INFO_KEY: dict(_SERVER_INFO)}}


class Opening:
    """The client's first line, and the answer already sent for it (or
    None: the SDK answers it)."""

    __slots__ = ("line", "request_id", "answer")

    def __init__(self, line: bytes, request_id: RequestId | None = None,
                 answer: dict[str, Any] | None = None) -> None:
        self.line = line
        self.request_id = request_id
        self.answer = answer
