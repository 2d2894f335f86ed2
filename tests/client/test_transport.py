"""The sync client's transport (:mod:`projectops.client._transport`): the call's deadline bounds
every socket wait as a whole, and an answer's bytes are read raw, never decoded.

Real sockets on 127.0.0.1 (the recording server, a trickling server); an in-memory answer
through ``httpx.MockTransport``.
"""

from __future__ import annotations

import asyncio
import gzip
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from projectops.client._transport import (
    DEADLINE,
    DeadlineTransport,
    araw_chunks,
    raw_chunks,
)
from tests.adversarial.hostile import hostile_server, trickle_body, trickle_head
from tests.support import Recorder

#: The whole call's time in the trickle tests, in seconds. Every read is quick (a byte each
#: 0.05 s) and each may wait 10 s: only the call's deadline ends them this early.
DEADLINE_SECONDS = 0.3
PER_WAIT = {"connect": 10.0, "read": 10.0, "write": 10.0, "pool": 10.0}


def post(base_url: str) -> httpx.Request:
    return httpx.Request(
        "POST", base_url + "/api/mcp/x", content=b"{}", extensions={"timeout": PER_WAIT}
    )


@pytest.fixture
def transport(no_proxy_in_env: pytest.MonkeyPatch) -> Iterator[DeadlineTransport]:
    made = DeadlineTransport("http://127.0.0.1")
    try:
        yield made
    finally:
        made.close()


def read_all(transport: DeadlineTransport, request: httpx.Request, seconds: float | None) -> bytes:
    """Send `request` and read its body raw, within `seconds` from now (None: no deadline)."""
    token = DEADLINE.set(None if seconds is None else time.monotonic() + seconds)
    try:
        response = transport.handle_request(request)
        try:
            return b"".join(raw_chunks(response))
        finally:
            response.close()
    finally:
        DEADLINE.reset(token)


@pytest.mark.parametrize("trickle", [trickle_head, trickle_body], ids=["head", "body"])
def test_a_trickling_answer_is_cut_off_at_the_calls_deadline(
    transport: DeadlineTransport, trickle: Any
) -> None:
    with hostile_server(trickle(interval=0.05, limit=10)) as server:
        started = time.monotonic()
        with pytest.raises(httpx.ReadTimeout):
            read_all(transport, post(server.base_url), DEADLINE_SECONDS)
        elapsed = time.monotonic() - started
    # Per read alone, the answer's ~100 (head) or 1,000 (body) bytes would take 5 s or more.
    assert DEADLINE_SECONDS * 0.9 <= elapsed < DEADLINE_SECONDS + 2.0, elapsed


def test_a_passed_deadline_sends_nothing(transport: DeadlineTransport, recorder: Recorder) -> None:
    with pytest.raises(httpx.ConnectTimeout):
        read_all(transport, post(recorder.base_url), -1.0)
    assert recorder.requests == []


def test_without_a_deadline_the_answer_comes_raw_and_whole(
    transport: DeadlineTransport, recorder: Recorder
) -> None:
    packed = gzip.compress(b'{"environments": []}')
    recorder.respond(200, packed, {"Content-Encoding": "gzip"})
    assert read_all(transport, post(recorder.base_url), None) == packed  # never inflated
    assert read_all(transport, post(recorder.base_url), 30.0) == packed
    assert [r.body for r in recorder.requests] == [b"{}", b"{}"]


def test_an_in_memory_answer_is_one_chunk_of_its_whole_body() -> None:
    body = b'{"environments": []}'

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body)

    with httpx.Client(transport=httpx.MockTransport(answer)) as client:
        with client.stream("POST", "http://127.0.0.1:9/") as response:
            assert list(raw_chunks(response)) == [body]

    async def read_async() -> list[bytes]:
        async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as client:
            async with client.stream("POST", "http://127.0.0.1:9/") as response:
                return [chunk async for chunk in araw_chunks(response)]

    assert asyncio.run(read_async()) == [body]
