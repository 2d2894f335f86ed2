"""The tool server in-process (``mcp.Client(server)``), with the HTTP client on an
``httpx2.MockTransport``: the failure sentences of every kind of answer, key redaction, one
validation and one HTTP client, and both MCP protocol eras; a wrong key and a refused
connection against real sockets. The end-to-end tests are in ``test_stdio.py``."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
import httpx2
import pytest

import projectops
from projectops import (
    API_KEY_ENV,
    BASE_URL_ENV,
    FailedPrecondition,
    FieldViolation,
    Internal,
    InvalidArgument,
    InvalidBaseUrl,
    Unauthenticated,
)
from projectops.client import (
    AsyncClient,
    InvalidRequest,
    MissingApiKey,
    ResponseTimedOut,
    ServiceUnreachable,
)
from projectops.program.failures import failure
from tests.mcp.support import (
    NO_ARGUMENTS,
    WITH_REQUIRED,
    demo_arguments,
    demo_response,
    required_fields,
    text_of,
)

if TYPE_CHECKING:
    # At run time the MCP SDK is imported by the helpers and tests that use it: importing it
    # costs about a second, which every pytest worker would pay at collection.
    from mcp import types
    from mcp.server import Server

SERVICE = "http://service.test"
KEY = "k-3b1f0e"
Handler = Callable[[httpx2.Request], httpx2.Response]


def factory(handler: Handler, key: str | None = KEY) -> AsyncClient:
    """The one HTTP client of a tool server, sending to `handler`."""
    return AsyncClient(SERVICE, key, transport=httpx2.MockTransport(handler))


def create_server(client: AsyncClient) -> Server[Any]:
    """``mcp_server.create_server(client)``, the SDK imported at the first call."""
    from projectops.mcp._server import create_server as create

    return create(client)


def call(
    server: Any, name: str, arguments: dict[str, Any], mode: str = "legacy"
) -> types.CallToolResult:
    from mcp import Client

    async def run() -> types.CallToolResult:
        async with Client(server, mode=mode) as client:  # type: ignore[arg-type]
            return await client.call_tool(name, arguments)

    return anyio.run(run)


def answer(status: int, body: dict[str, Any]) -> Handler:
    return lambda request: httpx2.Response(status, json=body)


OP, ARGUMENTS, ANSWER = WITH_REQUIRED, demo_arguments(WITH_REQUIRED), demo_response(WITH_REQUIRED)
FIELD = required_fields(OP)[0]
TOOL = OP.tool_name


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_call_sends_the_request_and_returns_text_and_structured_content(mode: str) -> None:
    seen: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, json=ANSWER)

    result = call(create_server(factory(handler)), TOOL, ARGUMENTS, mode)
    assert result.is_error is False
    expected = projectops.to_dict(projectops.from_json(ANSWER, OP.response_type))
    assert result.structured_content == expected  # the codec's output form, defaults included
    assert json.loads(text_of(result)) == expected
    (request,) = seen
    assert str(request.url) == SERVICE + OP.path
    # The arguments as the codec writes the request (fields without presence included).
    sent = projectops.to_dict(projectops.from_json(ARGUMENTS, OP.request_type))
    assert json.loads(request.content) == sent
    assert request.headers[projectops.API_KEY_HEADER] == KEY


def test_invalid_arguments_send_nothing() -> None:
    def handler(request: httpx2.Request) -> httpx2.Response:
        raise AssertionError("nothing may be sent")

    without = {name: value for name, value in ARGUMENTS.items() if name != FIELD}
    result = call(create_server(factory(handler)), TOOL, without)
    assert result.is_error is True
    assert text_of(result) == f"Invalid arguments for {TOOL}: {FIELD}: is required."


@pytest.mark.parametrize(
    ("status", "body", "text"),
    [
        (
            401,
            {"code": "unauthenticated", "message": "unknown key"},
            f"The API key is missing or invalid: set {API_KEY_ENV} to the project's API key; the "
            "service answered 401 unauthenticated: unknown key.",
        ),
        (
            400,
            {
                "code": "invalid_argument",
                "message": "bad request",
                "violations": [{"field": "version", "description": "is required"}],
            },
            "The service rejected the request (400 invalid_argument): bad request "
            "[version: is required].",
        ),
        (
            400,
            {"code": "failed_precondition", "message": "no release 9.9."},
            "The service rejected the request (400 failed_precondition): no release 9.9.",
        ),
        (500, {"code": "internal", "message": "boom"}, "The service failed (500 internal): boom."),
    ],
    ids=["401", "400-violations", "400-precondition", "500"],
)
def test_service_answers_become_one_sentence(status: int, body: dict[str, Any], text: str) -> None:
    result = call(create_server(factory(answer(status, body))), TOOL, ARGUMENTS)
    assert result.is_error is True
    assert result.structured_content is None
    assert text_of(result) == text


@pytest.mark.parametrize(
    ("error", "text"),
    [
        (
            MissingApiKey("no usable API key"),
            f"The API key is missing or invalid: set {API_KEY_ENV} to the project's API key; "
            "it is not set, empty, or not usable as a header value, so nothing was sent.",
        ),
        (
            Unauthenticated("missing API key", http_status=401),
            f"The API key is missing or invalid: set {API_KEY_ENV} to the project's API key; the "
            "service answered 401 unauthenticated: missing API key.",
        ),
        (
            FailedPrecondition("no such release", http_status=400),
            "The service rejected the request (400 failed_precondition): no such release.",
        ),
        (
            InvalidArgument(
                "invalid request", [FieldViolation(field="a.b", description="bad")], http_status=400
            ),
            "The service rejected the request (400 invalid_argument): invalid request [a.b: bad].",
        ),
        (
            InvalidRequest("version: is required"),
            "Invalid arguments for get-release-details: version: is required.",
        ),
        (
            ServiceUnreachable("cannot reach http://h:1: connection refused"),
            "The service did not answer: cannot reach http://h:1: connection refused; "
            f"{BASE_URL_ENV} sets its base URL.",
        ),
        (
            ResponseTimedOut("no answer from http://h:1 within 30.0 s"),
            f"The service did not answer: no answer from http://h:1 within 30.0 s; {BASE_URL_ENV} "
            "sets its base URL.",
        ),
        (Internal("oops", http_status=500), "The service failed (500 internal): oops."),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, Exception) else "",
)
def test_failure_sentence(error: projectops.ApiError, text: str) -> None:
    assert failure(error).format(error, "get-release-details")[1] == text


def test_no_answer_names_the_base_url() -> None:
    def handler(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("connection refused", request=request)

    result = call(create_server(factory(handler)), NO_ARGUMENTS.tool_name, {})
    assert result.is_error is True
    assert SERVICE in text_of(result) and BASE_URL_ENV in text_of(result)


@pytest.mark.slow
def test_a_wrong_key_says_the_key_is_missing_or_invalid_and_which_variable_sets_it(
    mock_server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    key = "not-a-key-7f3a9c"
    server = create_server(AsyncClient(mock_server.base_url, key))  # the real service's 401
    result = call(server, TOOL, ARGUMENTS)
    assert result.is_error is True
    text = text_of(result)
    assert text.startswith(f"The API key is missing or invalid: set {API_KEY_ENV} to ")
    assert "401" in text
    assert key not in text and key not in caplog.text


def test_a_service_nobody_listens_at_is_named_with_its_variable(dead_url: str) -> None:
    server = create_server(AsyncClient(dead_url, KEY))
    result = call(server, NO_ARGUMENTS.tool_name, {})
    assert result.is_error is True
    text = text_of(result)
    assert text.startswith("The service did not answer: ")
    assert dead_url in text and BASE_URL_ENV in text


def test_a_missing_key_fails_the_call_only() -> None:
    def handler(request: httpx2.Request) -> httpx2.Response:
        raise AssertionError("nothing may be sent")

    result = call(create_server(factory(handler, key=None)), NO_ARGUMENTS.tool_name, {})
    assert result.is_error is True
    assert text_of(result).startswith("The API key is missing or invalid: ")


def test_the_key_is_redacted_from_any_message_that_quotes_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(API_KEY_ENV, KEY)
    body = {"code": "unauthenticated", "message": f"key {KEY} is unknown"}
    result = call(create_server(factory(answer(401, body))), NO_ARGUMENTS.tool_name, {})
    assert KEY not in text_of(result)
    assert "key *** is unknown" in text_of(result)


def test_an_unusable_base_url_stops_the_server_before_it_serves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from projectops.mcp import _server as mcp_server

    monkeypatch.setenv(BASE_URL_ENV, "not a url")
    with pytest.raises(InvalidBaseUrl, match=BASE_URL_ENV):
        mcp_server.run(http=False, host="127.0.0.1", port=1)


@pytest.mark.parametrize("limit", [{"timeout": 0}, {"max_response_bytes": 0}])
def test_a_bad_limit_is_refused_without_blaming_the_base_url(
    limit: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    from projectops.mcp import _server as mcp_server

    monkeypatch.setenv(BASE_URL_ENV, "http://127.0.0.1:9")
    with pytest.raises(ValueError) as caught:
        mcp_server.run(http=False, host="127.0.0.1", port=1, **limit)
    assert not isinstance(caught.value, InvalidBaseUrl)
    assert next(iter(limit)) in str(caught.value) and "base-url" not in str(caught.value)


def test_an_unexpected_failure_is_an_error_result_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(request: httpx2.Request) -> httpx2.Response:
        raise RuntimeError("bug")

    result = call(create_server(factory(broken)), NO_ARGUMENTS.tool_name, {})
    assert result.is_error is True
    assert "failed unexpectedly" in text_of(result) and "bug" not in text_of(result)
    assert any(record.exc_info for record in caplog.records)


def test_one_client_serves_every_call(monkeypatch: pytest.MonkeyPatch) -> None:
    from projectops.mcp import _server as mcp_server

    clients: list[AsyncClient] = []
    monkeypatch.setattr(
        mcp_server,
        "AsyncClient",
        lambda *a, **k: clients.append(AsyncClient(*a, **k)) or clients[-1],
    )
    server = create_server(factory(answer(200, ANSWER)))
    for _ in range(3):
        assert call(server, TOOL, ARGUMENTS).is_error is False
    assert clients == []  # no client made per call


def test_tools_list_carries_titles_and_hints_from_the_proto() -> None:
    """Agents see from tools/list which tools are safe to call again: the hints follow each
    rpc's idempotency_level."""

    from mcp import Client

    async def run() -> list[types.Tool]:
        server = create_server(factory(lambda request: httpx2.Response(500)))
        async with Client(server) as client:  # type: ignore[arg-type]
            return (await client.list_tools()).tools

    tools = {tool.name: tool for tool in anyio.run(run)}
    assert list(tools) == [op.tool_name for op in projectops.operations()]
    for tool in tools.values():
        op = projectops.operation(tool.name)
        assert tool.title == op.title and tool.title and not tool.title.endswith(" ")
        assert tool.description is not None
        assert tool.description.removeprefix("Deprecated. ").startswith(tool.title)
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is op.read_only
        assert tool.annotations.idempotent_hint is op.idempotent


def test_a_log_line_quoting_outside_text_is_escaped_and_cut(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 28.2 for the tool server's log: a failure quoting 200,000 characters of outside
    text, terminal controls included, writes a few KiB, traceback included."""
    from projectops.mcp import configure_logging

    for logger in (logging.getLogger(), logging.getLogger("projectops")):  # restored after
        monkeypatch.setattr(logger, "handlers", list(logger.handlers))
        monkeypatch.setattr(logger, "level", logger.level)
    configure_logging()

    def broken(request: httpx2.Request) -> httpx2.Response:
        raise RuntimeError("\x1b]0;pwned\x07" + "A" * 200_000)

    assert call(create_server(factory(broken)), NO_ARGUMENTS.tool_name, {}).is_error is True
    log = capsys.readouterr().err
    assert "failed unexpectedly" in log and "Traceback" in log
    assert "\\x1b]0;pwned\\x07" in log and "\x1b" not in log and "\x07" not in log
    assert len(log) < 8000


def test_a_one_letter_key_leaves_our_sentences_whole_and_is_redacted_from_outside_text(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 25.4: the key is redacted from outside text where it enters, never from the tool
    server's own sentences or log lines (a key "A" once made "SERVICE_B***CKEND_URL")."""
    from projectops.mcp import configure_logging

    for logger in (logging.getLogger(), logging.getLogger("projectops")):  # restored after
        monkeypatch.setattr(logger, "handlers", list(logger.handlers))
        monkeypatch.setattr(logger, "level", logger.level)
    monkeypatch.setenv(API_KEY_ENV, "A")
    configure_logging()

    def refused(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("refused: the key was A")

    server = create_server(factory(refused, key="A"))
    text = text_of(call(server, NO_ARGUMENTS.tool_name, {}))
    assert text.startswith("The service did not answer: cannot reach ")
    assert f"the key w***s ***; {BASE_URL_ENV} sets its base URL." in text
    body = {"code": "unauthenticated", "message": "key a is unknown"}
    text = text_of(call(create_server(factory(answer(401, body), key="A")), TOOL, ARGUMENTS))
    assert text.startswith(f"The API key is missing or invalid: set {API_KEY_ENV} to ")
    assert "key *** is unknown" in text
    log = capsys.readouterr().err
    assert f"{BASE_URL_ENV} sets its base URL" in log and f"set {API_KEY_ENV} to " in log


@pytest.mark.parametrize("name", [OP.name, OP.path, OP.tool_name.upper()])
def test_a_tool_is_called_by_the_name_tools_list_shows_only(name: str) -> None:
    """The registry also takes an operation's name or path; a tool call does not."""
    from mcp import MCPError, types

    server = create_server(factory(answer(200, ANSWER)))
    invalid = pytest.RaisesExc(MCPError, check=lambda e: e.code == types.INVALID_PARAMS)
    with pytest.RaisesGroup(invalid, flatten_subgroups=True):  # the client's task groups
        call(server, name, ARGUMENTS)
    assert call(server, TOOL, ARGUMENTS).is_error is False
