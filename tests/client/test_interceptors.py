"""Client interceptors: around the whole call (retries included), sync and async; they time
the call, edit the response, raise, and add request headers, never the API key's. Also: the
exit code of a response is keyed by its status where the README promises it, and a missing base
URL is one line naming SERVICE_BACKEND_URL and the mock server."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx2
import pytest

import projectops
from projectops.client import (
    AsyncClient,
    AsyncOperationsServiceClient,
    CallContext,
    Client,
    OperationsServiceClient,
)
from projectops.client._errors import error_from_response
from projectops.program.failures import failure
from projectops.registry import operation
from projectops.v1.operations_pb2 import ListRumEnvironmentsResponse
from tests.support import KEY, RunCli

LIST = operation("list_rum_environments")
BASE = "http://127.0.0.1:9"  # never reached: MockTransport


class Answers:
    """MockTransport handler: 503 `failures` times, then 200; records each request."""

    def __init__(self, failures: int = 0) -> None:
        self.failures = failures
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        if len(self.requests) <= self.failures:
            return httpx2.Response(503, json={"code": "unavailable", "message": "busy"})
        return httpx2.Response(200, json={"environments": [{"environment": "prod"}]})


def test_an_interceptor_times_the_whole_call_retries_included() -> None:
    answers = Answers(failures=1)
    seen: list[tuple[str, int, float]] = []
    statuses: list[int | None] = []

    def timing(request: Any, context: CallContext, call_next: Any) -> Any:
        start = time.perf_counter()
        statuses.append(context.http_status)
        response = call_next(request, context)
        seen.append((context.operation.name, context.attempts, time.perf_counter() - start))
        statuses.append(context.http_status)
        return response

    transport = httpx2.MockTransport(answers)
    with OperationsServiceClient(BASE, KEY, interceptors=[timing], transport=transport) as client:
        client.list_rum_environments()
    assert len(seen) == 1 and seen[0][:2] == ("list_rum_environments", 2)
    assert seen[0][2] >= 0 and len(answers.requests) == 2
    # None before the call went out; after it, the last response's status (not the 503 retried).
    assert statuses == [None, 200]


def test_an_interceptor_edits_the_response_and_adds_headers_outermost_first() -> None:
    answers = Answers()
    order: list[str] = []

    def outer(request: Any, context: CallContext, call_next: Any) -> Any:
        order.append("outer")
        context.headers["X-Request-Id"] = "r-1"
        response = call_next(request, context)
        response.environments.add(environment="added")
        return response

    def inner(request: Any, context: CallContext, call_next: Any) -> Any:
        order.append("inner")
        context.headers["user-agent"] = "mine/1"
        return call_next(request, context)

    with Client(
        BASE, KEY, interceptors=[outer, inner], transport=httpx2.MockTransport(answers)
    ) as client:
        response = client.call(LIST, response_type=ListRumEnvironmentsResponse)
    assert [e.environment for e in response.environments] == ["prod", "added"]
    assert order == ["outer", "inner"]
    sent = answers.requests[0].headers
    assert sent["X-Request-Id"] == "r-1" and sent.get_list("User-Agent") == ["mine/1"]
    assert sent["Service-Api-Key"] == KEY


def test_an_interceptor_that_raises_ends_the_call_before_anything_is_sent() -> None:
    answers = Answers()

    def refuse(request: Any, context: CallContext, call_next: Any) -> Any:
        raise projectops.FailedPrecondition("not during the freeze")

    with Client(BASE, KEY, interceptors=[refuse], transport=httpx2.MockTransport(answers)) as c:
        with pytest.raises(projectops.FailedPrecondition, match="freeze"):
            c.call(LIST)
    assert answers.requests == []


@pytest.mark.parametrize(
    "name",
    [
        *("Service-Api-Key", "service-api-key", "Service_Api_Key", "Content-Type", "Host"),
        *("Content-Length", "Transfer-Encoding", "Connection", "Accept-Encoding"),
    ],
)
def test_an_interceptor_cannot_set_the_key_or_the_clients_own_headers(name: str) -> None:
    answers = Answers()

    def swap(request: Any, context: CallContext, call_next: Any) -> Any:
        context.headers[name] = "other"
        return call_next(request, context)

    with Client(BASE, KEY, interceptors=[swap], transport=httpx2.MockTransport(answers)) as c:
        with pytest.raises(ValueError, match=name) as caught:
            c.call(LIST)
    assert answers.requests == [] and KEY not in str(caught.value)


@pytest.mark.parametrize("value", ["a\r\nX-Injected: 1", "a\x00b"])
def test_a_header_value_cannot_split_the_request(value: str) -> None:
    def inject(request: Any, context: CallContext, call_next: Any) -> Any:
        context.headers["X-Note"] = value
        return call_next(request, context)

    with Client(BASE, KEY, interceptors=[inject], transport=httpx2.MockTransport(Answers())) as c:
        with pytest.raises(ValueError, match="control characters"):
            c.call(LIST)


def test_an_interceptor_returning_something_else_is_a_type_error() -> None:
    def wrong(request: Any, context: CallContext, call_next: Any) -> Any:
        return {"environments": []}

    with Client(BASE, KEY, interceptors=[wrong], transport=httpx2.MockTransport(Answers())) as c:
        with pytest.raises(TypeError, match="ListRumEnvironmentsResponse"):
            c.call(LIST)


def test_async_interceptors_time_edit_and_raise() -> None:
    answers = Answers(failures=2)
    seen: list[int] = []

    async def timing(request: Any, context: CallContext, call_next: Any) -> Any:
        response = await call_next(request, context)
        seen.append(context.attempts)
        seen.append(context.http_status or 0)
        response.environments[0].environment = "edited"
        return response

    async def refuse(request: Any, context: CallContext, call_next: Any) -> Any:
        raise projectops.PermissionDenied("no")

    async def go() -> Any:
        transport = httpx2.MockTransport(answers)
        async with AsyncOperationsServiceClient(
            BASE, KEY, interceptors=[timing], transport=transport
        ) as client:
            response = await client.list_rum_environments()
        async with AsyncClient(BASE, KEY, interceptors=[refuse], transport=transport) as client:
            with pytest.raises(projectops.PermissionDenied):
                await client.call(LIST)
        return response

    response = asyncio.run(go())
    assert response.environments[0].environment == "edited" and seen == [3, 200]
    assert len(answers.requests) == 3


def test_interceptors_must_be_callables() -> None:
    with pytest.raises(TypeError, match="interceptors"):
        Client(BASE, KEY, interceptors=["not callable"])  # type: ignore[list-item]


# --- the exit code of a response follows its status, the class its code -------------------------


@pytest.mark.parametrize(
    ("status", "code", "cls", "exit_code"),
    [
        (400, "not_found", projectops.NotFound, 4),
        (400, "failed_precondition", projectops.FailedPrecondition, 4),
        (401, "invalid_argument", projectops.InvalidArgument, 3),
        (401, "unauthenticated", projectops.Unauthenticated, 3),
        (503, "unauthenticated", projectops.Unauthenticated, 5),
        (404, "invalid_argument", projectops.InvalidArgument, 5),
        (408, "deadline_exceeded", projectops.DeadlineExceeded, 5),
        (431, "resource_exhausted", projectops.ResourceExhausted, 5),
    ],
)
def test_exit_code_is_keyed_by_status_as_the_readme_promises(
    status: int, code: str, cls: type[projectops.ApiError], exit_code: int
) -> None:
    error = error_from_response(status, json.dumps({"code": code, "message": "m"}))
    assert type(error) is cls and error.http_status == status
    assert failure(error).exit_code == exit_code
    line, _ = failure(error).format(error, "list-rum-environments")
    assert line.startswith(f"{status} {code}: m")


# --- no default base URL -------------------------------------------------------------------


def test_the_cli_without_a_base_url_is_one_line_naming_the_variable_and_the_mock_server(
    run_cli: RunCli,
) -> None:
    proc = run_cli(LIST.tool_name, base_url=None)
    assert proc.returncode == 2 and proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert "SERVICE_BACKEND_URL" in line and "projectops mock-server" in line


def test_the_tool_server_without_a_base_url_exits_2_in_one_line(run_cli: RunCli) -> None:
    pytest.importorskip("mcp")
    proc = run_cli("mcp", base_url=None)
    assert proc.returncode == 2
    (line,) = proc.stderr.splitlines()
    assert "SERVICE_BACKEND_URL" in line and "projectops mock-server" in line
