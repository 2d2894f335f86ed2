"""The MCP tool server (extra ``mcp``): one tool per operation, over stdio or Streamable HTTP
(docs/mcp.md). Names are imported on first use: importing the package does not import the SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from projectops._lazy import lazy_attributes, modules_by_name

if TYPE_CHECKING:
    from projectops.mcp._command import command as command
    from projectops.mcp._limits import DEFAULT_MAX_SESSIONS as DEFAULT_MAX_SESSIONS
    from projectops.mcp._limits import (
        DEFAULT_SESSION_IDLE_TIMEOUT as DEFAULT_SESSION_IDLE_TIMEOUT,
    )
    from projectops.mcp._limits import TOKEN_ENV as TOKEN_ENV
    from projectops.mcp._server import DEFAULT_MAX_RESULT_BYTES as DEFAULT_MAX_RESULT_BYTES
    from projectops.mcp._server import call_operation_tool as call_operation_tool
    from projectops.mcp._server import configure_logging as configure_logging
    from projectops.mcp._server import create_server as create_server
    from projectops.mcp._server import http_app as http_app
    from projectops.mcp._server import operation_tools as operation_tools
    from projectops.mcp._server import run as run
    from projectops.mcp._server import serve_http as serve_http
    from projectops.mcp._stdio import serve_stdio as serve_stdio

_NAMES = {
    "projectops.mcp._command": "command",
    "projectops.mcp._limits": "DEFAULT_MAX_SESSIONS DEFAULT_SESSION_IDLE_TIMEOUT TOKEN_ENV",
    "projectops.mcp._server": "DEFAULT_MAX_RESULT_BYTES call_operation_tool configure_logging "
    "create_server http_app operation_tools run serve_http",
    "projectops.mcp._stdio": "serve_stdio",
}
_WHERE = modules_by_name(_NAMES)
__all__ = sorted(_WHERE)

if not TYPE_CHECKING:
    __getattr__ = lazy_attributes(__name__, _WHERE, extra="mcp")
