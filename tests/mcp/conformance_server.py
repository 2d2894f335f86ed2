"""``projectops mcp --http`` plus the conformance suite's fixture tools (test harness).

    python -m tests.mcp.conformance_server --host 127.0.0.1 --port N     (from the repo root)

The server lists the operations' tools of :func:`~projectops.mcp._server.operation_tools`
and the fixed-name tools of ``conformance_fixtures.py``, and runs an operation's tool with the
same :func:`~projectops.mcp._server.call_operation_tool` as ``projectops mcp``; it is
served by the same :func:`~projectops.mcp._server.serve_http`. SERVICE_BACKEND_URL and
SERVICE_API_KEY configure the operations' tools as for ``projectops mcp``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from mcp import types
from mcp.server import Server, ServerRequestContext

from projectops.client import AsyncClient
from projectops.mcp import _server as mcp_server
from projectops.program.commands import listen
from tests.mcp.conformance_fixtures import fixture_tools


def create_server(client: AsyncClient) -> Server[Any]:
    """The tool server with the fixture tools added after the operations' tools."""
    fixtures = {extra.tool.name: extra for extra in fixture_tools()}
    tools = [*mcp_server.operation_tools(), *(extra.tool for extra in fixtures.values())]

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        extra = fixtures.get(params.name)
        if extra is not None:
            return await extra.handler(ctx, dict(params.arguments or {}))
        return await mcp_server.call_operation_tool(client, params.name, params.arguments)

    return Server(mcp_server.SERVER_NAME, on_list_tools=list_tools, on_call_tool=call_tool)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    mcp_server.configure_logging()
    server = create_server(AsyncClient())
    mcp_server.serve_http(server, listen(args.host, args.port))
    return 0


if __name__ == "__main__":
    sys.exit(main())
