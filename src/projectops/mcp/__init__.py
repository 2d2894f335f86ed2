"""The MCP tool server (extra ``mcp``): one tool per operation, over stdio or Streamable HTTP
(docs/mcp.md). Names are imported on first use: importing the package does not import the SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from projectops._lazy import lazy_attributes

if TYPE_CHECKING:
    from projectops.mcp._command import command
    from projectops.mcp._server import (
        DEFAULT_MAX_RESULT_BYTES,
        call_operation_tool,
        configure_logging,
        create_server,
        operation_tools,
        run,
        serve_http,
    )
    from projectops.mcp._stdio import serve_stdio

__all__ = [
    "DEFAULT_MAX_RESULT_BYTES",
    "call_operation_tool",
    "command",
    "configure_logging",
    "create_server",
    "operation_tools",
    "run",
    "serve_http",
    "serve_stdio",
]

if not TYPE_CHECKING:
    _WHERE = dict.fromkeys(__all__, "projectops.mcp._server")
    _WHERE["serve_stdio"] = "projectops.mcp._stdio"
    _WHERE["command"] = "projectops.mcp._command"
    __getattr__ = lazy_attributes(__name__, _WHERE)
