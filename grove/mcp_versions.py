"""MCP protocol revisions Grove speaks (the initialize handshake era), newest first.
A module of its own: the stdio bridge imports it without Django."""

HANDSHAKE_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
