"""``projectops mcp --http`` holds its ground (issue 39, item 5), its app served in-process by
uvicorn on 127.0.0.1 and called with raw JSON-RPC and the real ``mcp`` client:

- with a bearer token, a request without it or with another one is 401 and opens no session;
  the real client carrying it lists the tools;
- without a token it refuses to listen anywhere but on loopback (the CLI says so in one line,
  exit 2), and says at start that it serves loopback only;
- at most ``max_sessions`` sessions are open at once (one more ``initialize`` is 503; the
  command's ``--max-sessions`` too), and an idle one is closed after ``session_idle_timeout``,
  which makes room again.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
import uvicorn

from projectops import API_KEY_ENV, BASE_URL_ENV, operations
from projectops.client import AsyncClient
from projectops.mcp import TOKEN_ENV, create_server, http_app, run
from projectops.program.commands import listen, listen_url
from tests.loopback import LOOPBACK
from tests.mcp.support import MCP_COMMAND, http_server

TOKEN = "bearer-0123456789-abcdef"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "adversarial", "version": "1"},
    },
}
#: The most one exchange may take on a busy machine.
PROMPT = 10.0


@contextmanager
def serving(**settings: Any) -> Iterator[str]:
    """``mcp --http``'s app with `settings` (``token``, ``max_sessions``, ...), run with its
    lifespan by uvicorn in a thread on a free port of 127.0.0.1; its ``/mcp`` URL."""
    client = AsyncClient("http://127.0.0.1:9", api_key="unused-key")
    sock = listen(LOOPBACK, 0)
    app = http_app(create_server(client), sock, **settings)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])))
    thread.start()
    try:
        deadline = time.monotonic() + PROMPT
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.01)
        yield f"{listen_url(sock)}/mcp"
    finally:
        server.should_exit = True
        thread.join(PROMPT)
        sock.close()


def _initialize(url: str, token: str | None = None) -> httpx2.Response:
    headers = {"Accept": "application/json, text/event-stream"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return httpx2.post(url, json=INITIALIZE, headers=headers, timeout=PROMPT)


def test_with_a_bearer_token_a_request_without_it_is_401_and_opens_no_session() -> None:
    with serving(token=TOKEN, max_sessions=1) as url:
        refused = [
            _initialize(url),
            _initialize(url, "bearer-0123456789-abcdeX"),  # one character off
            _initialize(url, TOKEN[:-1]),
            _initialize(url, "x"),
        ]
        # None of those took the one session there is room for.
        accepted = _initialize(url, TOKEN)
    for response in refused:
        assert response.status_code == 401
        assert "mcp-session-id" not in response.headers
    assert accepted.status_code == 200
    assert accepted.headers["mcp-session-id"]


def test_the_real_client_with_the_token_lists_the_tools() -> None:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def tools(url: str) -> list[str]:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=PROMPT) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return [tool.name for tool in (await session.list_tools()).tools]

    with serving(token=TOKEN) as url:
        listed = asyncio.run(tools(url))
    assert listed == [op.tool_name for op in operations()]


def test_sessions_past_max_sessions_are_refused_503() -> None:
    with serving(max_sessions=2) as url:
        opened = [_initialize(url) for _ in range(2)]
        full = _initialize(url)
    assert [response.status_code for response in opened] == [200, 200]
    assert full.status_code == 503
    assert "mcp-session-id" not in full.headers


def test_an_idle_session_is_closed_after_session_idle_timeout_making_room() -> None:
    with serving(max_sessions=1, session_idle_timeout=0.5) as url:
        first = _initialize(url)
        deadline = time.monotonic() + PROMPT
        again = _initialize(url)
        while again.status_code == 503 and time.monotonic() < deadline:
            time.sleep(0.1)
            again = _initialize(url)
        headers = {
            "Accept": "application/json, text/event-stream",
            "Mcp-Session-Id": first.headers["mcp-session-id"],
            "Mcp-Protocol-Version": "2025-06-18",
        }
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        gone = httpx2.post(url, json=ping, headers=headers, timeout=PROMPT)
    assert first.status_code == 200
    assert again.status_code == 200  # the idle session was closed
    assert gone.status_code == 404


def test_without_a_token_it_listens_on_loopback_only(
    run_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    with pytest.raises(ValueError, match="loopback only"):
        run(http=True, host="0.0.0.0", port=1, base_url="http://127.0.0.1:9")
    done = run_cli("mcp", "--http", "--host", "0.0.0.0", "--port", "1")
    assert done.returncode == 2
    assert "loopback" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_the_cli_refuses_a_short_token(run_cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TOKEN_ENV, "short-token")
    done = run_cli("mcp", "--http", "--port", "1")
    assert done.returncode == 2
    assert "at least 16" in done.stderr
    assert "short-token" not in done.stderr


@pytest.mark.slow
def test_the_command_says_at_start_whether_it_takes_a_token_and_bounds_sessions(
    tmp_path: Path,
) -> None:
    env = {API_KEY_ENV: "unused-key", BASE_URL_ENV: "http://127.0.0.1:9", TOKEN_ENV: ""}
    with http_server([*MCP_COMMAND, "--http"], env, tmp_path / "plain.log") as server:
        server.wait_for_log("serving on loopback only")
    bounded = [*MCP_COMMAND, "--http", "--max-sessions", "1"]
    with http_server(bounded, {**env, TOKEN_ENV: TOKEN}, tmp_path / "token.log") as server:
        log = server.wait_for_log("must carry the bearer token")
        refused = httpx2.post(server.url, json=INITIALIZE, timeout=PROMPT)
        opened = [_initialize(server.url, TOKEN) for _ in range(2)]
    assert refused.status_code == 401
    assert [response.status_code for response in opened] == [200, 503]
    assert TOKEN not in log
