"""``projectops mcp --http --drain-timeout S`` on SIGTERM: the tool call in flight gets its
result, a new connection is refused, and the process exits 0 within the drain time; a call
slower than the drain time is cut at the bound.

The backend is the slow ``create_app`` app of ``tests/server/slow_app.py`` under uvicorn, so
the tool call is in flight (its handler has announced itself through a marker file) when the
signal comes. Real processes on 127.0.0.1; the client speaks Streamable HTTP through httpx.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest

from projectops import API_KEY_ENV, BASE_URL_ENV
from tests.loopback import LOOPBACK, free_port, refuses_while_running, stop, wait_until_listening
from tests.mcp.support import MCP_COMMAND, HttpServer, http_server
from tests.server.slow_app import KEY

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
#: Seconds the backend's handler sleeps in the drain test.
SLEEP = 2.0
#: Seconds of slack on a busy 2-core machine beyond what a bound under test allows.
SLACK = 10.0


@contextmanager
def slow_backend(sleep: float, mark: Path, log: Path) -> Iterator[str]:
    """The slow app under uvicorn on a free port; yields its base URL."""
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "SLOW_APP_SLEEP": str(sleep),
        "SLOW_APP_MARK": str(mark),
    }
    args = [sys.executable, "-m", "uvicorn", "--factory", "tests.server.slow_app:app_from_env"]
    args += ["--host", LOOPBACK, "--port", str(port), "--log-level", "warning"]
    with log.open("wb") as out:
        process = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=ROOT
        )
    try:
        wait_until_listening(process, port, "slow backend", log.read_text)
        yield f"http://{LOOPBACK}:{port}"
    finally:
        stop(process, signal.SIGKILL)


def _rpc(
    client: httpx2.Client, url: str, method: str, params: dict[str, Any], id: int | None = None
) -> dict[str, Any] | None:
    """One JSON-RPC message POSTed to `url`; the response to it (JSON or the first SSE
    ``data:`` event), ``None`` for a notification."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if id is not None:
        message["id"] = id
    response = client.post(url, json=message)
    response.raise_for_status()
    if "mcp-session-id" in response.headers:
        client.headers["Mcp-Session-Id"] = response.headers["mcp-session-id"]
    if id is None:
        return None
    if response.headers.get("content-type", "").startswith("application/json"):
        return dict(response.json())
    for line in response.text.splitlines():
        if line.startswith("data:"):
            return dict(json.loads(line[5:]))
    raise AssertionError(f"no answer in {response.text!r}")


def _call_during_sigterm(server: HttpServer, mark: Path) -> dict[str, Any]:
    """A session (no event stream of its own: only POSTs), then a tool call; SIGTERM once the
    backend handles it. What happened, with monotonic times."""
    seen: dict[str, Any] = {}
    # Imported here, not at the top: the MCP SDK costs a second at collection in every worker.
    from mcp import types

    headers = {"Accept": "application/json, text/event-stream"}
    with httpx2.Client(headers=headers, timeout=SLEEP + 3 * SLACK) as client:
        init = _rpc(
            client,
            server.url,
            "initialize",
            {
                "protocolVersion": types.LATEST_PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "drain-test", "version": "1"},
            },
            id=1,
        )
        assert init is not None and "result" in init, init
        client.headers["MCP-Protocol-Version"] = init["result"]["protocolVersion"]
        _rpc(client, server.url, "notifications/initialized", {})

        def call() -> None:
            try:
                seen["answer"] = _rpc(
                    client,
                    server.url,
                    "tools/call",
                    {"name": "get-release-details", "arguments": {"version": "1.0.0"}},
                    id=2,
                )
            except httpx2.HTTPError as exc:  # the cut call: any failure, as long as it ends
                seen["error"] = repr(exc)
            seen["ended"] = time.monotonic()

        thread = threading.Thread(target=call, daemon=True)
        thread.start()
        deadline = time.monotonic() + SLACK
        while not mark.exists():
            assert time.monotonic() < deadline, "the call never reached the backend"
            time.sleep(0.02)
        server.process.send_signal(signal.SIGTERM)
        seen["signalled"] = time.monotonic()
        seen["refused"] = refuses_while_running(server.process, server.port, SLACK)
        seen["refused_before_answer"] = "ended" not in seen
        thread.join(SLEEP + 2 * SLACK)
    return seen


@contextmanager
def draining_mcp(drain: int, sleep: float, tmp_path: Path) -> Iterator[tuple[HttpServer, Path]]:
    mark = tmp_path / "in-flight"
    with slow_backend(sleep, mark, tmp_path / "backend.log") as base_url:
        env = {BASE_URL_ENV: base_url, API_KEY_ENV: KEY}
        args = [*MCP_COMMAND, "--http", "--drain-timeout", str(drain)]
        with http_server(args, env, tmp_path / "mcp.log") as server:
            yield server, mark


def test_sigterm_lets_the_tool_call_in_flight_finish_refuses_new_ones_and_exits_0(
    tmp_path: Path,
) -> None:
    drain = 10
    with draining_mcp(drain, SLEEP, tmp_path) as (server, mark):
        seen = _call_during_sigterm(server, mark)
        code = server.process.wait(drain + SLACK)
        exited = time.monotonic()
        log = server.log()
    result = (seen.get("answer") or {}).get("result")
    assert result is not None and not result.get("isError"), (seen, log)
    assert "1.0.0" in json.dumps(result)
    assert seen["refused"] and seen["refused_before_answer"], (seen, log)
    assert exited - seen["signalled"] < drain + SLACK
    assert code == 0, log


def test_a_tool_call_slower_than_the_drain_time_is_cut_at_the_bound(tmp_path: Path) -> None:
    drain = 1
    with draining_mcp(drain, 60.0, tmp_path) as (server, mark):
        seen = _call_during_sigterm(server, mark)
        code = server.process.wait(drain + SLACK)
        waited = time.monotonic() - seen["signalled"]
        log = server.log()
    assert drain - 0.2 <= waited < drain + SLACK, (seen, log)
    assert code == 0, log
    # The cut call ends (no response, or an error), never hangs.
    assert "ended" in seen, seen
    assert "error" in seen or (seen["answer"].get("result") or {}).get("isError", True), seen
