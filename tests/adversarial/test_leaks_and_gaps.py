"""Small leaks of the client layer, against real HTTP servers on 127.0.0.1.

- Cookies: a ``Set-Cookie`` in a response is never sent back, by :class:`Client`,
  :class:`AsyncClient` (with their own transport or a caller's) or by two sessions of one MCP
  tool server (which share one HTTP client): the API key alone identifies the caller, and a
  cookie one session was given must not travel with another session's calls.
- The tool server redacts the API key from successful results too: a backend that echoes the
  key in a response field hands the agent ``***``, in the text and in ``structuredContent``.
"""

from __future__ import annotations

import json
import socket
from typing import Any

import anyio
import httpx2
import pytest

from projectops import API_KEY_ENV
from projectops.client import AsyncClient, Client
from tests.adversarial.hostile import HostileServer, Request, answer, hostile_server

KEY = "k-cookie-7f3a"
OPERATION = "list_rum_environments"
TOOL = "list-rum-environments"
# Seconds a whole call may take: generous for a busy 2-core machine, and the test still stops.
CALL_TIMEOUT = 20.0
COOKIE_ANSWER = answer(
    200,
    "{}",
    {"Set-Cookie": "session=s3cr3t-session; Path=/", "Connection": "close"},
)


def _cookies_sent(server: HostileServer) -> list[str | None]:
    return [request.header("Cookie") for request in server.requests]


def test_the_sync_client_never_sends_a_cookie_it_was_given() -> None:
    with hostile_server(COOKIE_ANSWER) as server:
        with Client(server.base_url, KEY, timeout=CALL_TIMEOUT) as client:
            client.call(OPERATION, {})
            client.call(OPERATION, {})
    assert _cookies_sent(server) == [None, None]


def test_the_async_client_never_sends_a_cookie_it_was_given() -> None:
    async def run() -> None:
        async with AsyncClient(server.base_url, KEY, timeout=CALL_TIMEOUT) as client:
            await client.call(OPERATION, {})
            await client.call(OPERATION, {})

    with hostile_server(COOKIE_ANSWER) as server:
        anyio.run(run)
    assert _cookies_sent(server) == [None, None]


def test_a_transport_of_the_callers_keeps_no_cookies_either() -> None:
    with hostile_server(COOKIE_ANSWER) as server:
        with Client(server.base_url, KEY, transport=httpx2.HTTPTransport()) as client:
            client.call(OPERATION, {})
            client.call(OPERATION, {})

        async def run() -> None:
            transport = httpx2.AsyncHTTPTransport()
            async with AsyncClient(server.base_url, KEY, transport=transport) as client:
                await client.call(OPERATION, {})
                await client.call(OPERATION, {})

        anyio.run(run)
    assert _cookies_sent(server) == [None] * 4


def test_two_tool_server_sessions_share_no_cookie() -> None:
    # Imported here, not at the top: the MCP SDK costs a second at collection in every worker.
    from mcp import Client as McpClient

    from projectops import mcp as mcp_server

    async def run() -> None:
        async with AsyncClient(server.base_url, KEY, timeout=CALL_TIMEOUT) as http:
            tools = mcp_server.create_server(http)
            for _ in range(2):  # two agents, one after the other, on the one server
                with anyio.fail_after(CALL_TIMEOUT):
                    async with McpClient(tools) as session:
                        result = await session.call_tool(TOOL, {})
                assert result.is_error is False

    with hostile_server(COOKIE_ANSWER) as server:
        anyio.run(run)
    assert _cookies_sent(server) == [None, None]


def _echo_key_in_a_field(sock: socket.socket, request: Request) -> None:
    """A 200 response whose environment tags echo the request's key, plain and upper case."""
    key = request.header("Service-Api-Key") or ""
    body = {"environments": [{"environment": f"env of {key}"}, {"environment": key.upper()}]}
    answer(200, json.dumps(body), {"Connection": "close"})(sock, request)


def _tool_result(base_url: str) -> Any:
    from mcp import Client as McpClient

    from projectops import mcp as mcp_server

    async def run() -> Any:
        with anyio.fail_after(CALL_TIMEOUT):
            return await session_call()

    async def session_call() -> Any:
        async with AsyncClient(base_url, timeout=CALL_TIMEOUT) as http:
            async with McpClient(mcp_server.create_server(http)) as session:
                return await session.call_tool(TOOL, {})

    return anyio.run(run)


def test_the_tool_server_redacts_the_key_from_a_successful_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(API_KEY_ENV, KEY)  # how `projectops mcp` gets its key
    with hostile_server(_echo_key_in_a_field) as server:
        result = _tool_result(server.base_url)
    assert result.is_error is False
    text = result.content[0].text
    assert KEY not in text and KEY.upper() not in text
    structured = result.structured_content
    assert [e["environment"] for e in structured["environments"]] == ["env of ***", "***"]
    assert json.loads(text) == structured
