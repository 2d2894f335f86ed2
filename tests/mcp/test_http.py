"""``projectops mcp --http`` (Streamable HTTP) and the MCP conformance suite (issue 4).

The conformance suite runs twice:

- its whole active suite against ``conformance_server.py``, the server of ``projectops mcp
  --http`` plus the suite's fixed-name fixture tools, with ``conformance-expected-failures.yml``
  listing only the scenarios that cannot apply to a tools-only server;
- the scenarios that need no fixture tool against ``projectops mcp --http`` itself, so the
  real entry point is covered too.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import httpx2
import jsonschema
import pytest

from projectops import API_KEY_ENV, BASE_URL_ENV, json_schema, operations
from tests.mcp.support import (
    DEMO_KEY,
    HERE,
    LOOPBACK,
    MCP_COMMAND,
    WITH_REQUIRED,
    HttpServer,
    NpmTools,
    demo_arguments,
    demo_response,
    http_server,
)

if TYPE_CHECKING:
    from mcp import ClientSession

pytestmark = pytest.mark.slow

EXPECTED_FAILURES = HERE / "conformance-expected-failures.yml"
#: Active scenarios that need no fixture tool (and apply to a tools-only server).
PLAIN_SCENARIOS = [
    "server-initialize",
    "ping",
    "tools-list",
    "dns-rebinding-protection",
    "server-sse-multiple-streams",
]
#: Seconds one conformance run may take (the whole suite takes about 3 s).
CONFORMANCE_TIMEOUT = 120


@pytest.fixture(scope="module")
def env(mock_server: Any) -> dict[str, str]:
    return {BASE_URL_ENV: mock_server.base_url, API_KEY_ENV: DEMO_KEY}


@pytest.fixture(scope="module")
def plain(env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    """``projectops mcp --http --port N``, without --host: loopback is the default."""
    log = tmp_path_factory.mktemp("mcp-http") / "server.log"
    with http_server([*MCP_COMMAND, "--http"], env, log, host=None) as server:
        yield server


def conformance(
    tools: NpmTools, url: str, cwd: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(tools.node), str(tools.conformance), "server", "--url", url, *args],
        capture_output=True,
        text=True,
        timeout=CONFORMANCE_TIMEOUT,
        check=False,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
    )


def test_conformance_suite_passes_with_only_non_applicable_scenarios_expected_to_fail(
    npm_tools: NpmTools, env: dict[str, str], tmp_path: Path
) -> None:
    harness = [sys.executable, "-m", "tests.mcp.conformance_server"]
    with http_server(harness, env, tmp_path / "server.log") as server:
        done = conformance(
            npm_tools, server.url, tmp_path, "--expected-failures", str(EXPECTED_FAILURES)
        )
        log = server.log()
    assert done.returncode == 0, f"{done.stdout[-6000:]}\n{done.stderr[-2000:]}\n{log[-2000:]}"
    assert "Running active suite" in done.stdout


@pytest.mark.parametrize("scenario", PLAIN_SCENARIOS)
def test_conformance_scenario_passes_against_projectops_mcp_http(
    npm_tools: NpmTools, plain: HttpServer, scenario: str, tmp_path: Path
) -> None:
    done = conformance(npm_tools, plain.url, tmp_path, "--scenario", scenario)
    assert done.returncode == 0, f"{done.stdout[-4000:]}\n{done.stderr[-2000:]}"
    assert " 0 failed" in done.stdout


def test_http_binds_loopback_by_default_and_logs_its_url(plain: HttpServer) -> None:
    plain.wait_for_log(f"serving {len(operations())} tools on {plain.url}")
    assert plain.url.startswith(f"http://{LOOPBACK}:")


@asynccontextmanager
async def _http_session(url: str) -> AsyncIterator[ClientSession]:
    # Imported here, not at the top: the MCP SDK costs a second at collection in every worker.
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def test_tool_call_over_http_with_the_mcp_client(plain: HttpServer) -> None:
    async def call() -> Any:
        async with _http_session(plain.url) as session:
            names = [tool.name for tool in (await session.list_tools()).tools]
            result = await session.call_tool(WITH_REQUIRED.tool_name, demo_arguments(WITH_REQUIRED))
            return names, result

    names, result = anyio.run(call)
    assert names == [op.tool_name for op in operations()]
    assert result.is_error is False
    jsonschema.Draft202012Validator(json_schema.output_schema(WITH_REQUIRED)).validate(
        result.structured_content
    )
    assert result.structured_content == demo_response(WITH_REQUIRED)


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}
HEADERS = {"Accept": "application/json, text/event-stream"}


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({}, 200),
        ({"Host": "evil.example"}, 421),
        ({"Origin": "http://evil.example"}, 403),
    ],
    ids=["own-host", "foreign-host", "foreign-origin"],
)
def test_dns_rebinding_protection(plain: HttpServer, headers: dict[str, str], status: int) -> None:
    response = httpx2.post(plain.url, json=INITIALIZE, headers={**HEADERS, **headers}, timeout=10)
    assert response.status_code == status
