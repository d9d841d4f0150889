"""The MCP protocol versions acor mcp speaks: the one place they are
listed (the opening handshake, the results and the calls read them here).

Up to 2025-11-25 a session opens with ``initialize``; from 2026-07-28 a
client may open with ``server/discover`` and every request stands alone
(stateless: state a call needs comes back sealed in ``requestState``).
"""

# The versions the SDK negotiates (mcp_types.version), restated so that the
# first answer needs no SDK import; a test compares them with the SDK's.
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MODERN_VERSIONS = ("2026-07-28",)
