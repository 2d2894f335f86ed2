"""The MCP tool server (extra ``mcp``): one tool per operation, over stdio or streamable HTTP
(docs/mcp.md).

Names are imported on first use: importing the package does not import the ``mcp`` SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from projectops._lazy import lazy_attributes

if TYPE_CHECKING:
    from projectops.mcp._server import (
        DEFAULT_MAX_RESULT_BYTES,
        HTTP_PATH,
        SERVER_NAME,
        call_operation_tool,
        configure_logging,
        create_server,
        http_app,
        operation_tools,
        run,
        serve_http,
        serve_stdio,
    )

_WHERE = {
    name: "projectops.mcp._server"
    for name in (
        "DEFAULT_MAX_RESULT_BYTES",
        "HTTP_PATH",
        "SERVER_NAME",
        "call_operation_tool",
        "configure_logging",
        "create_server",
        "http_app",
        "operation_tools",
        "run",
        "serve_http",
        "serve_stdio",
    )
}

__all__ = [
    "DEFAULT_MAX_RESULT_BYTES",
    "HTTP_PATH",
    "SERVER_NAME",
    "call_operation_tool",
    "configure_logging",
    "create_server",
    "http_app",
    "operation_tools",
    "run",
    "serve_http",
    "serve_stdio",
]

if not TYPE_CHECKING:
    __getattr__ = lazy_attributes(__name__, _WHERE)
