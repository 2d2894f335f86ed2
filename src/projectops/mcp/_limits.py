"""The bounds of ``projectops mcp --http`` that its command states and its server applies
(docs/mcp.md), apart from both: the command imports no SDK, the server no command."""

from __future__ import annotations

__all__ = ["DEFAULT_MAX_SESSIONS", "DEFAULT_SESSION_IDLE_TIMEOUT", "MIN_TOKEN_CHARS", "TOKEN_ENV"]

#: Sessions ``mcp --http`` keeps open at once by default (``--max-sessions``); the SDK's
#: 10,000 would let one local process hold hundreds of MiB and lock real clients out.
DEFAULT_MAX_SESSIONS = 100
#: Seconds an idle session of ``mcp --http`` lives by default (``--session-idle-timeout``); a
#: client with an open event stream is not idle.
DEFAULT_SESSION_IDLE_TIMEOUT = 300.0
#: The environment variable that holds the bearer token of ``mcp --http`` (``--bearer-token``).
TOKEN_ENV = "PROJECTOPS_MCP_TOKEN"
#: The fewest characters of a bearer token.
MIN_TOKEN_CHARS = 16
