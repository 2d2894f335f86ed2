"""The tool server cuts outside text in its errors (issue 31, item 5): a ``tools/call`` of an
unknown tool whose name is 2,000,000 characters long, sent by the real MCP client, gets a
JSON-RPC error that quotes the name escaped and cut (docs/contract.md §6, §9.3), not whole."""

from __future__ import annotations

import anyio
import pytest

from projectops.client import AsyncClient

CALL_TIMEOUT = 20.0


@pytest.mark.parametrize("name", ["x" * 2_000_000, "evil\x1b]0;title\x07" * 1000])
def test_an_unknown_tools_name_comes_back_escaped_and_cut(name: str, dead_url: str) -> None:
    from mcp import Client as McpClient
    from mcp.shared.exceptions import MCPError

    from projectops import mcp as mcp_server

    async def run() -> str:
        async with AsyncClient(dead_url, "k", timeout=CALL_TIMEOUT) as http:
            with anyio.fail_after(CALL_TIMEOUT):
                async with McpClient(mcp_server.create_server(http)) as session:
                    try:
                        await session.call_tool(name, {})
                    except MCPError as exc:
                        return exc.error.message
        raise AssertionError("no JSON-RPC error")

    message = anyio.run(run)
    assert message.startswith("Unknown tool: ")
    assert "characters cut" in message
    assert len(message) < 1000
    assert not any(ord(c) < 32 for c in message)
