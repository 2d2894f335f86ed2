"""The HTTP client, sync and async: what a caller of `Client.call` relies on.

Most tests run twice (the `call` fixture): through `Client` and through `AsyncClient`. Real
sockets where behaviour depends on the network (mock server, dead and silent ports);
`httpx2.MockTransport` where a test needs to see or shape the exact HTTP exchange. The clients'
parts have their own tests: configuration and the request's checks (`test_base.py`), the
deadline transport (`test_transport.py`), the environment's proxy (`test_proxy.py`), the class
of an error response (`test_errors.py`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx2
import pytest

import projectops
from projectops import (
    Aborted,
    ApiError,
    DeadlineExceeded,
    FailedPrecondition,
    Internal,
    InvalidArgument,
    NotFound,
    Unauthenticated,
    Unavailable,
    Unimplemented,
    Unknown,
)
from projectops.client import (
    AsyncClient,
    Client,
    InvalidRequest,
    InvalidResponse,
    MissingApiKey,
    ResponseTimedOut,
    ResponseTooLarge,
    ServiceUnreachable,
    UnexpectedRedirect,
)
from projectops.v1.operations_pb2 import (
    GetReleaseDetailsRequest,
    GetReleaseDetailsResponse,
    ListRumEnvironmentsRequest,
    ListRumEnvironmentsResponse,
)
from tests.client.backoff import shorten_backoff
from tests.support import KEY, OTHER_KEY, Recorder

Handler = Callable[[httpx2.Request], httpx2.Response]
Call = Callable[..., Any]

LIST = projectops.operation("list_rum_environments")
GET = projectops.operation("get_release_details")


@pytest.fixture(autouse=True)
def short_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """Retries of a 502/503/504 or a refused connection wait a few ms instead of up to 0.75 s:
    these tests are about what the call ends with, not the wait (tests/client/test_retries.py)."""
    shorten_backoff(monkeypatch)


@pytest.fixture(params=["sync", "async"])
def call(request: pytest.FixtureRequest) -> Call:
    """``call(operation, req=None, *, handler=None, **client_kwargs)``: one call through a fresh
    `Client` or `AsyncClient` (the fixture's param); `handler` answers via MockTransport."""

    def run(
        operation: Any,
        req: Any = None,
        *,
        handler: Handler | None = None,
        response_type: Any = None,
        **kwargs: Any,
    ) -> Any:
        extra = {} if response_type is None else {"response_type": response_type}
        transport = httpx2.MockTransport(handler) if handler is not None else None
        if transport is not None:
            kwargs.setdefault("base_url", "http://127.0.0.1:9")  # never reached: MockTransport
        if request.param == "sync":
            with Client(**kwargs, transport=transport) as client:
                return client.call(operation, req, **extra)

        async def go() -> Any:
            async with AsyncClient(**kwargs, transport=transport) as client:
                return await client.call(operation, req, **extra)

        return asyncio.run(go())

    return run


class Exchanges:
    """A MockTransport handler that records requests and gives one fixed answer."""

    def __init__(
        self, status: int = 200, body: bytes | str = b"{}", headers: dict[str, str] | None = None
    ) -> None:
        self.requests: list[httpx2.Request] = []
        self.status, self.body, self.headers = status, body, headers or {}

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        return httpx2.Response(self.status, content=self.body, headers=self.headers)


def assert_clean(exc: BaseException, key: str = KEY) -> None:
    """No key in the error's text, and no chained exception that could show the request."""
    assert key not in str(exc) and key not in repr(exc)
    assert exc.__cause__ is None and exc.__context__ is None


# --- against the mock server (real socket) -------------------------------------------------


@pytest.mark.slow
def test_both_operations_against_the_mock_server(call: Call, mock_server: Any) -> None:
    envs = call("list-rum-environments", base_url=mock_server.base_url, api_key=OTHER_KEY)
    assert isinstance(envs, ListRumEnvironmentsResponse)
    assert [e.environment for e in envs.environments] == ["staging", "prod-eu"]

    details = call(
        GET,
        {"version": "1.0.0"},
        base_url=mock_server.base_url,
        api_key="demo-key",
        response_type=GetReleaseDetailsResponse,
    )
    assert details.summary.release.version == "1.0.0"
    assert details.summary.release.git_sha  # the fixture's SHA came through


@pytest.mark.slow
def test_server_errors_are_the_subclass_of_their_code(call: Call, mock_server: Any) -> None:
    with pytest.raises(Unauthenticated) as wrong_key:
        call(LIST, base_url=mock_server.base_url, api_key=KEY)
    assert not isinstance(wrong_key.value, MissingApiKey)  # the server answered
    assert wrong_key.value.http_status == 401
    assert_clean(wrong_key.value)

    with pytest.raises(FailedPrecondition) as unknown:
        call(
            GET,
            GetReleaseDetailsRequest(version="9.9.9"),
            base_url=mock_server.base_url,
            api_key=OTHER_KEY,
        )
    assert unknown.value.http_status == 400
    assert "9.9.9" in unknown.value.message


@pytest.mark.slow
def test_trailing_slashes_of_the_base_url_are_ignored(call: Call, mock_server: Any) -> None:
    envs = call(LIST, base_url=mock_server.base_url + "//", api_key="demo-key")
    assert len(envs.environments) > 0


# --- the exact HTTP exchange ----------------------------------------------------------------


def test_request_is_a_post_with_exactly_the_spec_headers(call: Call) -> None:
    exchanges = Exchanges(body=b'{"environments": []}')
    call(LIST, base_url="http://127.0.0.1:9/base/", api_key=KEY, handler=exchanges)

    (sent,) = exchanges.requests
    assert sent.method == "POST"
    assert str(sent.url) == "http://127.0.0.1:9/base" + LIST.path
    assert sent.headers.get_list("Content-Type") == ["application/json"]
    assert sent.headers.get_list("Service-Api-Key") == [KEY]
    assert "project-id" not in sent.headers and "organization-id" not in sent.headers
    assert "cookie" not in sent.headers and "authorization" not in sent.headers
    # Nothing is decompressed that was not asked for; httpx2's other defaults are not sent.
    assert sent.headers.get_list("Accept-Encoding") == ["identity"]
    assert "connection" not in sent.headers
    assert sent.content == b"{}"  # an operation without input sends the empty object


def test_an_in_memory_answer_is_capped_too(call: Call) -> None:
    body = b'{"environments": [{"environment": "' + b"x" * 2000 + b'"}]}'
    with pytest.raises(ResponseTooLarge) as caught:
        call(LIST, api_key=KEY, handler=Exchanges(200, body), max_response_bytes=1000)
    assert caught.value.http_status == 200 and "1,000 bytes" in caught.value.message
    envs = call(LIST, api_key=KEY, handler=Exchanges(200, body), max_response_bytes=len(body))
    assert len(envs.environments[0].environment) == 2000  # exactly at the cap: read


def test_request_body_is_the_protobuf_json_of_the_request(call: Call) -> None:
    exchanges = Exchanges()
    call(GET, GetReleaseDetailsRequest(version="1.2.0"), api_key=KEY, handler=exchanges)
    call(GET, {"version": "1.2.0"}, api_key=KEY, handler=exchanges)
    assert [json.loads(r.content) for r in exchanges.requests] == [{"version": "1.2.0"}] * 2


def test_redirects_are_errors_and_never_followed(call: Call) -> None:
    exchanges = Exchanges(307, b"", {"Location": "http://127.0.0.1:9/elsewhere"})
    with pytest.raises(UnexpectedRedirect) as caught:
        call(LIST, api_key=KEY, handler=exchanges)
    assert caught.value.http_status == 307
    assert "not followed" in caught.value.message
    assert len(exchanges.requests) == 1


@pytest.mark.parametrize(
    ("status", "body", "error", "message"),
    [
        (
            400,
            '{"code": "invalid_argument", "message": "version: is required", '
            '"violations": [{"field": "version", "description": "is required"}]}',
            InvalidArgument,
            "version: is required",
        ),
        (
            400,
            '{"code": "failed_precondition", "message": "no release 9"}',
            FailedPrecondition,
            "no release 9",
        ),
        (401, '{"code": "unauthenticated", "message": "bad key"}', Unauthenticated, "bad key"),
        (
            404,
            '{"code": "not_found", "message": "no such operation"}',
            NotFound,
            "no such operation",
        ),
        (409, '{"code": "aborted", "message": "try later"}', Aborted, "try later"),
        (500, '{"code": "internal", "message": "internal error"}', Internal, "internal error"),
        (501, '{"code": "unimplemented", "message": "not here"}', Unimplemented, "not here"),
        # raw text; an answered 502 is a plain Unavailable, not a ServiceUnreachable
        (502, "Bad Gateway", Unavailable, "Bad Gateway"),
        (
            504,
            '{"code": "deadline_exceeded", "message": "upstream slow"}',
            DeadlineExceeded,
            "upstream slow",
        ),  # an answered 504 is no ResponseTimedOut
        (500, "", Unknown, "HTTP 500"),  # no code: a bare 500 says nothing more than "unknown"
    ],
)
def test_non_2xx_answers_raise_the_error_of_their_body(
    call: Call, status: int, body: str, error: type[ApiError], message: str
) -> None:
    with pytest.raises(error) as caught:
        call(LIST, api_key=KEY, handler=Exchanges(status, body))
    assert type(caught.value) is error
    assert caught.value.http_status == status
    assert caught.value.message == message
    assert_clean(caught.value)


def test_an_html_error_page_is_one_line_naming_status_url_and_base_url_variable(
    call: Call,
) -> None:
    page = "<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head>\n" + "x" * 5000
    with pytest.raises(Unavailable) as caught:
        call(LIST, base_url="http://127.0.0.1:9", api_key=KEY, handler=Exchanges(502, page))
    message = caught.value.message
    assert message.startswith("HTTP 502 from http://127.0.0.1:9/api/mcp/list_rum_environments ")
    assert "SERVICE_BACKEND_URL" in message and "\n" not in message and "<" not in message
    assert caught.value.http_status == 502


def test_violations_of_an_error_body_are_kept(call: Call) -> None:
    body = (
        '{"code": "invalid_argument", "message": "bad", '
        '"violations": [{"field": "version", "description": "is required"}]}'
    )
    with pytest.raises(InvalidArgument) as caught:
        call(LIST, api_key=KEY, handler=Exchanges(400, body))
    assert [(v.field, v.description) for v in caught.value.violations] == [
        ("version", "is required")
    ]


@pytest.mark.parametrize("body", ["not json", '{"environments": 5}'])
def test_2xx_answer_that_is_not_the_response_type_is_an_internal_error(
    call: Call, body: str
) -> None:
    with pytest.raises(InvalidResponse) as caught:
        call(LIST, api_key=KEY, handler=Exchanges(200, body))
    assert isinstance(caught.value, Internal) and caught.value.code == "internal"
    assert not isinstance(caught.value, InvalidArgument)  # not the caller's mistake
    assert caught.value.http_status == 200  # the server did answer
    assert "ListRumEnvironmentsResponse" in caught.value.message
    assert KEY not in str(caught.value) and KEY not in repr(caught.value)


def test_unknown_response_fields_are_ignored(call: Call) -> None:
    body = '{"environments": [{"environment": "QA", "addedLater": 1}], "newField": true}'
    envs = call(LIST, api_key=KEY, handler=Exchanges(200, body))
    assert [e.environment for e in envs.environments] == ["QA"]


# --- local checks: nothing is sent ----------------------------------------------------------


def test_missing_key_fails_locally_and_says_how_to_set_it(
    call: Call, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SERVICE_API_KEY", raising=False)
    exchanges = Exchanges()
    with pytest.raises(MissingApiKey) as caught:
        call(LIST, handler=exchanges)
    assert isinstance(caught.value, Unauthenticated)
    assert caught.value.http_status is None  # nothing was sent
    assert "SERVICE_API_KEY" in caught.value.message
    assert exchanges.requests == []


@pytest.mark.parametrize("empty", ["", "  "])
def test_an_empty_key_is_called_empty_not_unset(
    call: Call, monkeypatch: pytest.MonkeyPatch, empty: str
) -> None:
    """`SERVICE_API_KEY=` is a variable set to nothing: saying "not set" sends the user looking
    for a variable that is there."""
    exchanges = Exchanges()
    for given in ({"api_key": empty}, {}):  # given, or read from the environment
        monkeypatch.setenv("SERVICE_API_KEY", empty)
        with pytest.raises(MissingApiKey) as caught:
            call(LIST, handler=exchanges, **given)
        assert "SERVICE_API_KEY is empty" in caught.value.message
    assert exchanges.requests == []


def test_key_that_cannot_be_a_header_value_fails_locally_without_quoting_it(call: Call) -> None:
    exchanges = Exchanges()
    bad = KEY + "\n" + KEY
    with pytest.raises(MissingApiKey) as caught:
        call(LIST, api_key=bad, handler=exchanges)
    assert caught.value.http_status is None
    assert_clean(caught.value)
    assert exchanges.requests == []


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        ({}, "version"),
        ({"version": "   "}, "version"),
        ({"version": "1.0.0", "releaseId": "x"}, "releaseId"),  # strict: unknown field named
        ({"version": 1}, "version"),
    ],
)
def test_invalid_local_request_is_rejected_before_sending(
    call: Call, request_: dict[str, Any], field: str
) -> None:
    exchanges = Exchanges()
    with pytest.raises(InvalidRequest) as caught:
        call(GET, request_, api_key=KEY, handler=exchanges)
    assert isinstance(caught.value, InvalidArgument)
    assert caught.value.http_status is None  # found locally: nothing was sent
    assert field in str(caught.value)
    assert [v.field for v in caught.value.violations] == [field]
    assert exchanges.requests == []


def test_request_of_another_type_is_a_type_error(call: Call) -> None:
    exchanges = Exchanges()
    with pytest.raises(TypeError, match="GetReleaseDetailsRequest"):
        call(GET, ListRumEnvironmentsRequest(), api_key=KEY, handler=exchanges)
    with pytest.raises(TypeError):
        call(GET, '{"version": "1.0.0"}', api_key=KEY, handler=exchanges)
    with pytest.raises(TypeError, match="ListRumEnvironmentsResponse"):
        call(LIST, api_key=KEY, handler=exchanges, response_type=GetReleaseDetailsResponse)
    assert exchanges.requests == []


def test_unknown_operation_is_a_lookup_error(call: Call) -> None:
    with pytest.raises(LookupError, match="get_release_details"):
        call("delete-everything", api_key=KEY, handler=Exchanges())


# --- no response ------------------------------------------------------------------------------


def test_unreachable_service_is_unavailable_naming_the_base_url(call: Call, dead_url: str) -> None:
    with pytest.raises(ServiceUnreachable) as caught:
        call(LIST, base_url=dead_url, api_key=KEY)
    assert isinstance(caught.value, Unavailable)
    assert caught.value.message.startswith(f"cannot reach {dead_url}: ")
    assert caught.value.http_status is None  # no response came back
    assert_clean(caught.value)


def test_silent_service_is_deadline_exceeded(call: Call, silent_url: str) -> None:
    with pytest.raises(ResponseTimedOut) as caught:
        call(LIST, base_url=silent_url, api_key=KEY, timeout=0.2)
    assert isinstance(caught.value, DeadlineExceeded)
    assert silent_url in caught.value.message
    assert caught.value.http_status is None  # no response came back
    assert_clean(caught.value)


def test_typed_call_returns_the_response_type(recorder: Recorder) -> None:
    recorder.respond(200, '{"environments": [{"environment": "QA"}]}')
    with Client(recorder.base_url, KEY) as client:
        typed = client.call(LIST, response_type=ListRumEnvironmentsResponse)
        assert typed.environments[0].environment == "QA"  # typed for mypy as well
    (sent,) = recorder.requests  # a real socket: what the server saw
    assert sent.header("Service-Api-Key") == [KEY]
    assert sent.header("Content-Type") == ["application/json"]
