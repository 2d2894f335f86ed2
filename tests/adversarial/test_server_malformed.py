"""Malformed HTTP against the real mock server gets uvicorn's own response (the edge is the proxy's,
docs/server.md): a short 400 and a closed connection, quoting nothing of the request; and the
limits the mock server passes on to uvicorn hold."""

from __future__ import annotations

import socket
import time

import pytest

from projectops.conventions import API_KEY_HEADER
from tests.adversarial.servers import LOOPBACK, mock_server, raw_exchange, read_until_closed

OP = "/api/mcp/list_rum_environments"
START = f"POST {OP} HTTP/1.1\r\nHost: 127.0.0.1\r\n".encode()
KEY = f"{API_KEY_HEADER}: demo-key\r\n".encode()
REQUEST = START + KEY + b"Content-Length: 2\r\n\r\n{}"
HEAD_LIMIT = 4096

MALFORMED: dict[str, bytes] = {
    "not HTTP (a TLS hello)": b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"x" * 64,
    "no Host header": f"POST {OP} HTTP/1.1\r\n\r\n".encode(),
    "NUL in the key's value": START + f"{API_KEY_HEADER}: demo\x00key\r\n\r\n".encode(),
    "Content-Length not a number": START + KEY + b"Content-Length: abc\r\n\r\n{}",
    "two different Content-Lengths": START
    + KEY
    + b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
    "head over --h11-max-incomplete-event-size": START + b"X-Big: " + b"a" * 4 * HEAD_LIMIT,
}


@pytest.fixture(scope="module")
def server_port() -> object:
    args = ["--h11-max-incomplete-event-size", str(HEAD_LIMIT), "--timeout-keep-alive", "1"]
    with mock_server([*args, "--limit-concurrency", "2"]) as server:
        yield server.port


@pytest.mark.slow
@pytest.mark.parametrize("payload", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_http_gets_a_short_400_and_a_closed_connection(
    server_port: int, payload: bytes
) -> None:
    answer, closed, seconds = raw_exchange(server_port, payload, timeout=5)
    assert closed and seconds < 3, seconds
    assert answer.startswith(b"HTTP/1.1 400 "), answer[:300]
    assert len(answer) < 1024 and b"demo" not in answer


@pytest.mark.slow
def test_an_idle_connection_is_closed_after_timeout_keep_alive(server_port: int) -> None:
    with socket.create_connection((LOOPBACK, server_port), timeout=5) as sock:
        sock.sendall(REQUEST)
        started = time.monotonic()
        answer, closed = read_until_closed(sock, started + 5)
    assert closed and answer.startswith(b"HTTP/1.1 200 ")
    assert time.monotonic() - started < 4  # --timeout-keep-alive 1, not uvicorn's 5


@pytest.mark.slow
def test_limit_concurrency_answers_503_past_it(server_port: int) -> None:
    with socket.create_connection((LOOPBACK, server_port), timeout=5) as held:
        held.sendall(REQUEST)
        assert held.recv(65536).startswith(b"HTTP/1.1 200 ")  # accepted and counted
        held.sendall(REQUEST[:-2])  # a request whose body never comes keeps it open
        answer, _, _ = raw_exchange(server_port, REQUEST, timeout=5)
    assert answer.startswith(b"HTTP/1.1 503 "), answer[:300]
