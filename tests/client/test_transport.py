"""The raw exchange under both clients (:class:`projectops.client.RawClient` and its async
twin), as the conformance runner and the proxy use it: the time-out bounds it as a whole, the
body is read raw up to its cap, headers come as pairs in linear time, framing headers are the
exchange's own.

Real sockets on 127.0.0.1 (the recording server, hostile servers); in-memory answers through
``httpx2.MockTransport``.
"""

from __future__ import annotations

import asyncio
import gzip
import socket
import time
from collections.abc import Callable
from typing import Any

import httpx2
import pytest

from projectops.client import AsyncRawClient, RawClient, RawResponse, ResponseTimedOut
from tests.adversarial.hostile import Request, hostile_server, trickle_body, trickle_head
from tests.support import Recorder

#: Each read of the trickle tests is quick (a byte each 0.05 s): only the whole-exchange bound
#: ends them this early.
TIMEOUT = 0.3


def exchange(kind: str, base_url: str, *args: Any, **options: Any) -> RawResponse:
    """One POST through a fresh sync or async exchange (`kind`)."""
    if kind == "sync":
        with RawClient(base_url, **options) as raw:
            return raw.send("POST", "/x", b"{}", *args)

    async def go() -> RawResponse:
        async with AsyncRawClient(base_url, **options) as raw:
            return await raw.send("POST", "/x", b"{}", *args)

    return asyncio.run(go())


KINDS = ["sync", "async"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("trickle", [trickle_head, trickle_body], ids=["head", "body"])
def test_a_trickling_answer_is_cut_off_at_the_time_out(kind: str, trickle: Any) -> None:
    with hostile_server(trickle(interval=0.05, limit=10)) as server:
        started = time.monotonic()
        with pytest.raises(ResponseTimedOut) as caught:
            exchange(kind, server.base_url, timeout=TIMEOUT)
        elapsed = time.monotonic() - started
    assert TIMEOUT * 0.9 <= elapsed < TIMEOUT + 2.0, elapsed
    assert caught.value.__context__ is None and caught.value.__cause__ is None


def test_a_passed_deadline_sends_nothing(recorder: Recorder, no_proxy_in_env: Any) -> None:
    with RawClient(recorder.base_url) as raw, pytest.raises(ResponseTimedOut):
        raw.send("POST", "/x", b"{}", deadline=time.monotonic() - 1)
    assert recorder.requests == []


@pytest.mark.parametrize("kind", KINDS)
def test_the_answer_comes_raw_with_exactly_the_given_headers(
    kind: str, recorder: Recorder, no_proxy_in_env: Any
) -> None:
    packed = gzip.compress(b'{"environments": []}')
    recorder.respond(200, packed, {"Content-Encoding": "gzip", "Set-Cookie": "s=1"})
    answer = exchange(kind, recorder.base_url, [("X-One", "1"), ("x-two", "2")])
    assert answer.status == 200 and answer.body == packed and not answer.truncated  # not inflated
    assert answer.header("content-encoding") == "gzip" and ("Set-Cookie", "s=1") in answer.headers
    (sent,) = recorder.requests
    assert sent.header("X-One") == ["1"] and sent.header("x-two") == ["2"]
    assert sent.header("Accept-Encoding") == ["identity"]
    assert sent.header_names() == {"host", "content-length", "x-one", "x-two", "accept-encoding"}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    "name", ["Content-Length", "transfer-encoding", "Transfer_Encoding", "Host", "Connection"]
)
def test_framing_headers_are_refused_before_anything_is_sent(
    kind: str, name: str, recorder: Recorder
) -> None:
    with pytest.raises(ValueError, match=name):
        exchange(kind, recorder.base_url, {name: "chunked"})
    with pytest.raises(ValueError, match="control characters"):
        exchange(kind, recorder.base_url, {"X-Split": "a\r\nX-Injected: 1"})
    assert recorder.requests == []


def _answer_with(status: int, body: bytes, **headers: str) -> Callable[[httpx2.Request], Any]:
    return lambda request: httpx2.Response(status, content=body, headers=headers)


@pytest.mark.parametrize(
    ("status", "body", "headers", "expected"),
    [
        (200, b"x" * 10, {}, (b"x" * 10, False)),
        (200, b"x" * 11, {}, (b"", True)),  # announced by its Content-Length: not read
        (500, b"x" * 11, {}, (b"x" * 4, True)),  # an error's head only
    ],
)
def test_the_body_is_cut_at_its_cap(status: int, body: bytes, headers: Any, expected: Any) -> None:
    transport = httpx2.MockTransport(_answer_with(status, body, **headers))
    with RawClient(
        "http://127.0.0.1:9", max_response_bytes=10, max_error_bytes=4, transport=transport
    ) as raw:
        answer = raw.send("POST", "/x")
    assert (answer.body, answer.truncated) == expected


def _announcing(sock: socket.socket, request: Request) -> None:
    sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000000\r\n\r\n" + b"x" * 65536)


@pytest.mark.parametrize("kind", KINDS)
def test_a_2xx_announcing_more_than_the_cap_is_not_read(kind: str) -> None:
    with hostile_server(_announcing) as server:
        answer = exchange(kind, server.base_url, max_response_bytes=1000)
    assert (answer.status, answer.body, answer.truncated) == (200, b"", True)


def _many_headers(sock: socket.socket, request: Request) -> None:
    head = b"HTTP/1.1 200 OK\r\n" + b"a: b\r\n" * 16_000 + b"Content-Length: 2\r\n\r\n{}"
    sock.sendall(head)


@pytest.mark.parametrize("kind", KINDS)
def test_sixteen_thousand_headers_are_read_as_pairs(kind: str) -> None:
    with hostile_server(_many_headers) as server:
        answer = exchange(kind, server.base_url)
    assert len(answer.headers) == 16_001 and answer.body == b"{}"
    assert answer.header("A") == "b"


def test_the_async_exchange_bounds_a_callers_transport_too() -> None:
    async def slow(request: httpx2.Request) -> httpx2.Response:
        await asyncio.sleep(10)
        return httpx2.Response(200)

    with pytest.raises(ResponseTimedOut):
        exchange("async", "http://127.0.0.1:9", timeout=0.2, transport=httpx2.MockTransport(slow))


def test_the_sync_exchange_bounds_a_callers_transport_too() -> None:
    def slow(request: httpx2.Request) -> httpx2.Response:
        time.sleep(2)
        return httpx2.Response(200)

    started = time.monotonic()
    with pytest.raises(ResponseTimedOut):
        exchange("sync", "http://127.0.0.1:9", timeout=0.2, transport=httpx2.MockTransport(slow))
    assert time.monotonic() - started < 1.5
