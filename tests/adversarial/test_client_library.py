"""The client library (sync ``Client``, ``AsyncClient`` and the typed clients) against hostile
backends on 127.0.0.1 (:mod:`tests.adversarial.hostile`): trickling, huge, compressed, lying
and key-echoing answers.

Most tests run twice (the `call` fixture): through ``Client`` and through ``AsyncClient``.
Trickle tests use a 1 s time-out, so each costs about a second. Measured figures are printed on
lines starting ``FIGURE`` (``pytest -s ... | grep FIGURE``).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import traceback
import unicodedata
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import pytest

import projectops
from projectops import DeadlineExceeded, Unauthenticated, Unavailable
from projectops.client import (
    AsyncClient,
    AsyncOperationsServiceClient,
    Client,
    InvalidProxy,
    InvalidRequest,
    InvalidResponse,
    OperationsServiceClient,
    ResponseTimedOut,
    ResponseTooLarge,
    ServiceUnreachable,
    UnexpectedRedirect,
)
from projectops.conventions import DEFAULT_MAX_RESPONSE_BYTES
from tests.adversarial.hostile import (
    answer,
    echo_key,
    gzip_bomb,
    hostile_server,
    huge_body,
    trickle_body,
    trickle_head,
)
from tests.client.backoff import shorten_backoff
from tests.support import KEY

LIST = projectops.operation("list_rum_environments")
GET = projectops.operation("get_release_details")
Call = Callable[..., Any]
#: The time-out of the trickling-server tests, in seconds: each read is quick (a byte every
#: 0.05 s), only a deadline on the whole call ends them this early.
TIMEOUT = 0.25

# What a terminal or a log reader acts on; none may reach an error's text.
_CONTROL_CATEGORIES = {"Cc", "Cf", "Zl", "Zp", "Cs"}


def controls(text: str) -> list[str]:
    """The characters of `text` a terminal would act on instead of show."""
    return [c for c in text if unicodedata.category(c) in _CONTROL_CATEGORIES]


@pytest.fixture(autouse=True)
def short_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """Retries of a 502/503/504 or a refused connection wait a few ms instead of up to 0.75 s:
    these tests are about what the call ends with, not the wait (tests/client/test_retries.py)."""
    shorten_backoff(monkeypatch)


@pytest.fixture(params=["sync", "async"])
def call(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Call:
    """``call(base_url, operation=LIST, req=None, **client_kwargs)``: one call through a fresh
    ``Client`` or ``AsyncClient`` (the fixture's param), with SERVICE_API_KEY unset."""
    monkeypatch.delenv("SERVICE_API_KEY", raising=False)
    monkeypatch.delenv("SERVICE_BACKEND_URL", raising=False)

    def run(base_url: str, operation: Any = LIST, req: Any = None, **kwargs: Any) -> Any:
        kwargs.setdefault("api_key", KEY)
        if request.param == "sync":
            with Client(base_url, **kwargs) as client:
                return client.call(operation, req)

        async def go() -> Any:
            async with AsyncClient(base_url, **kwargs) as client:
                return await client.call(operation, req)

        return asyncio.run(go())

    return run


# --- item 1: the time-out bounds the whole call ---------------------------------------------


@pytest.mark.parametrize("trickle", [trickle_head, trickle_body], ids=["head", "body"])
def test_a_trickling_answer_times_out_as_a_whole(call: Call, trickle: Any) -> None:
    with hostile_server(trickle(interval=0.05, limit=10)) as server:
        started = time.monotonic()
        with pytest.raises(ResponseTimedOut) as caught:
            call(server.base_url, timeout=TIMEOUT)
        elapsed = time.monotonic() - started
    print(
        f"FIGURE library trickle-{trickle.__name__}: gave up after {elapsed:.2f} s "
        f"(limit {TIMEOUT} s)"
    )
    # A per-read time-out would wait for all ~100 bytes at 20 a second: 5 s.
    assert TIMEOUT * 0.9 <= elapsed < TIMEOUT + 1.0, elapsed
    message = caught.value.message
    assert message.startswith(f"no complete answer from {server.base_url} within the time-out")
    assert f"{TIMEOUT} s" in message
    assert isinstance(caught.value, DeadlineExceeded) and caught.value.http_status is None


def test_a_trickling_proxy_from_the_environment_times_out_as_a_whole(
    call: Call, no_proxy_in_env: pytest.MonkeyPatch
) -> None:
    with hostile_server(trickle_head(interval=0.05, limit=10)) as proxy:
        no_proxy_in_env.setenv("HTTP_PROXY", proxy.base_url)
        started = time.monotonic()
        with pytest.raises(ResponseTimedOut):
            call("http://svc.example", timeout=TIMEOUT)
        elapsed = time.monotonic() - started
    (request,) = proxy.requests  # the call went through the proxy
    assert request.head.startswith(b"POST http://svc.example/api/mcp/list_rum_environments ")
    assert TIMEOUT * 0.9 <= elapsed < TIMEOUT + 1.0, elapsed


@pytest.mark.parametrize("client_class", [Client, AsyncClient])
@pytest.mark.parametrize(
    ("proxy", "expected"),
    [
        ("ftp://user:hunter2@proxy.example:21", "has the scheme 'ftp'"),
        ("http://user:hunter2@[::1", "is not a valid URL"),
    ],
    ids=["unknown scheme", "not a URL"],
)
def test_a_bad_proxy_in_the_environment_is_refused_without_quoting_it(
    client_class: type[Client] | type[AsyncClient],
    proxy: str,
    expected: str,
    no_proxy_in_env: pytest.MonkeyPatch,
) -> None:
    no_proxy_in_env.setenv("ALL_PROXY", proxy)
    with pytest.raises(InvalidProxy, match=re.escape(expected)) as caught:
        client_class("http://svc.example", KEY)
    assert "hunter2" not in str(caught.value)


def test_the_typed_clients_take_the_same_limits() -> None:
    with hostile_server(trickle_head(interval=0.05, limit=10)) as server:
        started = time.monotonic()
        with (
            OperationsServiceClient(server.base_url, KEY, timeout=TIMEOUT) as client,
            pytest.raises(ResponseTimedOut),
        ):
            client.list_rum_environments()

        async def go() -> None:
            async with AsyncOperationsServiceClient(
                server.base_url, KEY, timeout=TIMEOUT, max_response_bytes=10
            ) as client:
                assert client.max_response_bytes == 10
                await client.list_rum_environments()

        with pytest.raises(ResponseTimedOut):
            asyncio.run(go())
        assert time.monotonic() - started < 2 * TIMEOUT + 1.5
    default = OperationsServiceClient("http://127.0.0.1:1", api_key=KEY)
    assert default.max_response_bytes == DEFAULT_MAX_RESPONSE_BYTES


@pytest.mark.parametrize("value", [0, -1])
def test_a_limit_that_cannot_work_fails_at_construction(value: int) -> None:
    with pytest.raises(ValueError, match="max_response_bytes"):
        Client(max_response_bytes=value)
    with pytest.raises(ValueError, match="timeout"):
        AsyncClient(timeout=value)


# --- item 2: responses are capped; nothing is decompressed that was not asked for --------------


@pytest.mark.parametrize("announce", [True, False], ids=["content-length", "until-close"])
def test_an_answer_over_the_cap_stops_the_read(call: Call, announce: bool) -> None:
    size = 100_000_000
    with hostile_server(huge_body(size, announce=announce)) as server:
        started = time.monotonic()
        with pytest.raises(ResponseTooLarge) as caught:
            call(server.base_url, max_response_bytes=1 << 20)
        elapsed = time.monotonic() - started
    print(f"FIGURE library 100 MB answer, cap 1 MiB, announce={announce}: {elapsed:.2f} s")
    error = caught.value
    assert isinstance(error, InvalidResponse) and error.http_status == 200
    assert "1,048,576 bytes (max_response_bytes)" in error.message
    if announce:
        assert "announces 100,000,000 bytes" in error.message
    assert elapsed < 5.0, elapsed  # read 1 MiB at most, never the 100 MB


def test_a_gzip_bomb_is_refused_without_decoding(call: Call) -> None:
    with hostile_server(gzip_bomb()) as server:
        with pytest.raises(InvalidResponse) as caught:
            call(server.base_url)
        (sent,) = server.requests
    assert sent.header("Accept-Encoding") == "identity"  # nothing else was asked for
    assert caught.value.http_status == 200
    assert "Content-Encoding: gzip" in caught.value.message
    assert "not decoded" in caught.value.message


def test_an_error_body_is_read_only_to_its_first_mebibyte(call: Call) -> None:
    with hostile_server(huge_body(50_000_000, announce=False, status=500)) as server:
        with pytest.raises(projectops.ApiError) as caught:
            call(server.base_url)
    error = caught.value
    assert error.http_status == 500 and type(error) is projectops.Unknown
    assert error.message.endswith("more characters cut]")  # the page's head, cut
    assert len(error.message) < 1100


def test_an_html_error_page_is_one_line_naming_status_url_and_variable(call: Call) -> None:
    page = "<!DOCTYPE html>\n<html><body><h1>502 Bad Gateway</h1>\r\n" + "<p>x</p>\n" * 5000
    headers = {"Content-Type": "text/html; charset=utf-8"}
    with hostile_server(answer(502, page, headers)) as server:
        with pytest.raises(Unavailable) as caught:
            call(server.base_url)
    message = caught.value.message
    assert message.startswith(f"HTTP 502 from {server.base_url}{LIST.path} ")
    assert "SERVICE_BACKEND_URL" in message
    assert not controls(message) and "<" not in message and len(message) < 300


# --- item 3: no terminal or log injection -----------------------------------------------------

INJECTION = "\x1b[2J\x1b[H\x1b]0;pwned\x07\rOK\n\u202eevil\u2028\x9b31m\x00"


def test_control_characters_of_an_error_are_escaped_and_its_text_cut(call: Call) -> None:
    body = {
        "code": "invalid_argument",
        "message": INJECTION + "A" * 50_000,
        "violations": [{"field": "v\x1b[31m", "description": INJECTION}] * 3,
    }
    with hostile_server(answer(400, json.dumps(body, ensure_ascii=False))) as server:
        with pytest.raises(projectops.InvalidArgument) as caught:
            call(server.base_url)
    error = caught.value
    texts = [str(error), repr(error), error.describe()]
    texts += [v.field for v in error.violations] + [v.description for v in error.violations]
    for text in texts:
        assert not controls(text), text[:200]
    assert error.message.startswith("\\x1b[2J\\x1b[H\\x1b]0;pwned\\x07\\x0dOK\\x0a\\u202eevil")
    assert error.message.endswith(" more characters cut]")
    assert len(error.message) <= 1000 + len("... [50,000 more characters cut]")


def test_control_characters_of_a_2xx_answer_and_a_redirect_are_escaped(call: Call) -> None:
    body = '{"environments": [{"environment": 5}], "x": "\\u001b]0;t\\u0007"}'
    with hostile_server(answer(200, body)) as server:
        with pytest.raises(InvalidResponse) as caught:
            call(server.base_url)
    assert not controls(str(caught.value))

    for where in ("http://127.0.0.1:9/\x9b2Jx", "http://127.0.0.1:9/\x1b[2Jx"):
        with hostile_server(answer(307, b"", {"Location": where})) as server:
            # httpx itself refuses a Location with ASCII controls (no response to use).
            with pytest.raises((UnexpectedRedirect, ServiceUnreachable)) as redirect:
                call(server.base_url)
        assert not controls(str(redirect.value)), str(redirect.value)


# --- item 4: the key never leaks -----------------------------------------------------------


def spellings(key: str) -> list[str]:
    """How an honest echo writes a key out: as is, in any case, repr-escaped, percent-encoded."""
    return [key, key.upper(), key.lower(), key.swapcase(), repr(key), quote(key, safe="")]


def assert_no_key(exc: BaseException, key: str = KEY) -> None:
    """No spelling of `key` in `exc`'s str, repr, args, traceback, or those of its chain."""
    texts = ["".join(traceback.format_exception(exc))]
    current: BaseException | None = exc
    while current is not None:
        texts += [str(current), repr(current), repr(current.args)]
        current = current.__cause__ or current.__context__
    for text in texts:
        for spelling in spellings(key):
            assert spelling.lower() not in text.lower(), (spelling, text[:300])


def test_a_key_echoed_by_the_server_is_redacted_in_every_spelling(call: Call) -> None:
    with hostile_server(echo_key()) as server:
        with pytest.raises(Unauthenticated) as caught:
            call(server.base_url)
        (sent,) = server.requests
    assert sent.header("Service-Api-Key") == KEY  # the key given as api_key= was sent
    assert_no_key(caught.value)
    assert "***" in caught.value.message
    assert "***" in caught.value.violations[0].field


def test_a_key_given_as_a_request_value_is_redacted_from_the_chain(call: Call) -> None:
    with hostile_server(answer(200, "{}")) as server:
        with pytest.raises(InvalidRequest) as caught:
            call(server.base_url, GET, {"version": "1", KEY.upper(): 1})
        assert server.requests == []  # found locally: nothing was sent
    assert_no_key(caught.value)


def test_a_key_with_characters_repr_escapes_is_redacted_in_its_repr(call: Call) -> None:
    key = "k'ey\\with-quote"
    with hostile_server(echo_key()) as server:
        with pytest.raises(Unauthenticated) as caught:
            call(server.base_url, api_key=key)
    for text in (str(caught.value), repr(caught.value), repr(caught.value.args)):
        assert "with-quote" not in text.lower()


@pytest.mark.parametrize(
    "url",
    [
        "http://user:s3cr3t-pw@127.0.0.1:9",
        "https://s3cr3t-pw@ops.example.com/base",
        "user:s3cr3t-pw@127.0.0.1:9",  # no scheme: still never quoted
        "http://u:s3cr3t-pw@127.0.0.1:9/?q=1",
    ],
)
def test_a_base_url_with_userinfo_is_refused_without_printing_it(url: str) -> None:
    for client_type in (Client, AsyncClient, OperationsServiceClient):
        with pytest.raises(ValueError, match="user name or password") as caught:
            client_type(url, KEY)
        text = "".join(traceback.format_exception(caught.value))
        assert "s3cr3t" not in text and "s3cr3t" not in repr(caught.value.args)


def test_a_key_in_the_environment_is_redacted_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERVICE_API_KEY", KEY)
    with hostile_server(echo_key()) as server, Client(server.base_url) as client:
        with pytest.raises(Unauthenticated) as caught:
            client.call(LIST)
    assert_no_key(caught.value)


def test_a_one_letter_key_rewrites_none_of_our_own_text(call: Call, silent_url: str) -> None:
    """Issue 25.4: only outside text is redacted; "a" leaves "no complete answer" whole."""
    with pytest.raises(ResponseTimedOut) as caught:
        call(silent_url, api_key="a", timeout=0.2)
    assert caught.value.message.startswith("no complete answer from http://")
    html = answer(502, "<html>a bad gateway</html>", {"Content-Type": "text/html"})
    with hostile_server(html) as server, pytest.raises(Unavailable) as bad_gateway:
        call(server.base_url, api_key="a", retries=0)
    assert "is a web page, not an answer of this API" in bad_gateway.value.message


# --- issue 28.4: an interceptor can neither split the request nor add a second key -----------

REFUSED_HEADERS = [
    ("Transfer-Encoding", "chunked"),
    ("Content-Length", "2"),
    ("Host", "elsewhere.example"),
    ("Connection", "close"),
    ("Service_Api_Key", "another-key"),
    ("SERVICE-API-KEY", "another-key"),
    ("service.api.key", "another-key"),
]


@pytest.mark.parametrize(("name", "value"), REFUSED_HEADERS, ids=[n for n, _ in REFUSED_HEADERS])
@pytest.mark.parametrize("how", ["context.headers", "a plain dict"])
def test_an_interceptor_cannot_set_framing_headers_or_a_second_key(
    name: str, value: str, how: str
) -> None:
    def interceptor(request: Any, context: Any, call_next: Any) -> Any:
        if how == "context.headers":
            context.headers[name] = value
        else:  # a replacement of the mapping is checked when the request is built
            context.headers = {name: value}
        return call_next(request, context)

    with hostile_server(answer(200, "{}")) as server:
        with Client(server.base_url, KEY, interceptors=[interceptor]) as client:
            with pytest.raises(ValueError, match=re.escape(name)) as caught:
                client.call(LIST)
        assert server.requests == []  # refused before anything was sent
    assert len(str(caught.value).splitlines()) == 1 and KEY not in str(caught.value)


# --- issue 28.5: a base URL with a line break is an invalid base URL, everywhere -------------

BROKEN_URLS = ["http://127.0.0.1:1/\r\nX: 1", "http://h\x00st", "http://h\x85st/", "http://h/\tx"]


@pytest.mark.parametrize("url", BROKEN_URLS)
def test_a_base_url_with_a_control_character_is_refused_by_every_client(url: str) -> None:
    from projectops.client import RawClient
    from projectops.conformance import run_checks

    makers = [Client, AsyncClient, OperationsServiceClient, AsyncOperationsServiceClient]
    for make in [*makers, RawClient]:
        with pytest.raises(projectops.InvalidBaseUrl, match="control character"):
            make(url)
    with pytest.raises(projectops.InvalidBaseUrl, match="control character"):
        run_checks(url, KEY, operations=())


@pytest.mark.parametrize("url", BROKEN_URLS[:1])
def test_a_base_url_with_a_line_break_is_exit_2_and_one_line(run_cli: Any, url: str) -> None:
    tool = next(iter(projectops.operations())).tool_name
    runs = [
        run_cli(tool, base_url=url),
        run_cli(tool, "--base-url", url),
        run_cli("conformance", base_url=url),
        run_cli("proxy", "--upstream", url, "--port", "0"),
    ]
    for proc in runs:
        assert proc.returncode == 2, proc
        assert proc.stdout == "" and len(proc.stderr.splitlines()) == 1, proc
        assert "control character" in proc.stderr and "unexpected" not in proc.stderr
