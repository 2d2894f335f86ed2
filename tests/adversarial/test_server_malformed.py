"""Malformed HTTP against the real mock server: what h11 rejects before the app still gets a bounded
``ErrorResponse`` answer and a closed connection, and a stream of it does not flood the log."""

from __future__ import annotations

import json
import socket
import time

import pytest

from projectops.conventions import API_KEY_HEADER
from tests.adversarial.servers import LOOPBACK, mock_server, raw_exchange, read_until_closed

OP = "/api/mcp/list_rum_environments"
START = f"POST {OP} HTTP/1.1\r\nHost: 127.0.0.1\r\n".encode()
KEY = f"{API_KEY_HEADER}: demo-key\r\n".encode()

# (name, bytes sent, status, code)
MALFORMED: list[tuple[str, bytes, int, str]] = [
    (
        "not HTTP (a TLS hello)",
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"x" * 64 + b"\r\n\r\n",
        400,
        "invalid_argument",
    ),
    ("request line without version", f"POST {OP}\r\n\r\n".encode(), 400, "invalid_argument"),
    ("no Host header", f"POST {OP} HTTP/1.1\r\n\r\n".encode(), 400, "invalid_argument"),
    (
        "NUL in a header value",
        START + f"{API_KEY_HEADER}: demo\x00key\r\n\r\n".encode(),
        400,
        "invalid_argument",
    ),
    ("CR inside a header value", START + b"X-A: a\rb\r\n\r\n", 400, "invalid_argument"),
    ("space in a header name", START + b"Bad Name: y\r\n\r\n", 400, "invalid_argument"),
    (
        "Content-Length not a number",
        START + KEY + b"Content-Length: abc\r\n\r\n{}",
        400,
        "invalid_argument",
    ),
    (
        "negative Content-Length",
        START + KEY + b"Content-Length: -1\r\n\r\n{}",
        400,
        "invalid_argument",
    ),
    (
        "two different Content-Lengths",
        START + KEY + b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
        400,
        "invalid_argument",
    ),
    (
        "bad chunk size",
        START + KEY + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
        400,
        "invalid_argument",
    ),
    (
        "transfer coding other than chunked",
        START + KEY + b"Transfer-Encoding: gzip\r\n\r\n",
        501,
        "unimplemented",
    ),
    # h11 alone bounds only a head still incomplete after a read; these come in one piece.
    (
        "64 KiB header",
        START + b"X-Big: " + b"a" * (64 << 10) + b"\r\n\r\n",
        431,
        "resource_exhausted",
    ),
    (
        "1 MiB header",
        START + b"X-Big: " + b"a" * (1 << 20) + b"\r\n\r\n",
        431,
        "resource_exhausted",
    ),
]
#: Longest answer to malformed HTTP (head and ErrorResponse body), in bytes.
MAX_ANSWER = 1024


def parse(answer: bytes) -> tuple[int, dict[str, str], dict[str, object]]:
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, json.loads(body)


@pytest.fixture(scope="module")
def server_port() -> object:
    with mock_server(["--request-timeout", "3"]) as server:
        yield server.port


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "payload", "status", "code"), MALFORMED, ids=[m[0] for m in MALFORMED]
)
def test_malformed_http_gets_an_error_response_and_a_closed_connection(
    server_port: int, name: str, payload: bytes, status: int, code: str
) -> None:
    answer, closed, seconds = raw_exchange(server_port, payload, timeout=5)
    assert closed and seconds < 2, (name, seconds)
    assert len(answer) <= MAX_ANSWER, answer[:300]
    got_status, headers, body = parse(answer)
    assert (got_status, body["code"]) == (status, code), answer
    assert headers["content-type"] == "application/json"
    assert headers["connection"] == "close"
    assert "demo" not in str(body["message"])  # h11 quotes the bad bytes; the answer does not


@pytest.mark.slow
def test_a_head_over_the_limit_that_arrives_in_pieces_is_answered_431(server_port: int) -> None:
    with socket.create_connection((LOOPBACK, server_port), timeout=5) as sock:
        sock.sendall(START + KEY)
        for _ in range(8):  # 8 x 4 KiB: more than h11's 16 KiB, each read small
            try:
                sock.sendall(b"X-Pad: " + b"p" * 4096 + b"\r\n")
            except OSError:
                break  # answered and closed once over the limit
            time.sleep(0.05)
        answer, closed = read_until_closed(sock, time.monotonic() + 5)
    status, _, body = parse(answer)
    assert closed and (status, body["code"]) == (431, "resource_exhausted")


BIG_HEAD = START + KEY + b"X-Big: " + b"a" * 20_000 + b"\r\nContent-Length: 2\r\n\r\n{}"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("writes", "first_status", "status", "code"),
    [
        # A whole request, then one whose 20 KiB head, already whole, waits in the buffer while
        # the first is answered: h11 alone would parse it whatever its size.
        ([START + KEY + b"Content-Length: 2\r\n\r\n{}" + BIG_HEAD], 200, 431, "resource_exhausted"),
        # Answered 401 before its body was read; the body comes with the big head behind it.
        (
            [START + b"Content-Length: 2\r\n\r\n", b"{}" + BIG_HEAD],
            401,
            431,
            "resource_exhausted",
        ),
        # A whole request, then a malformed one behind it: answered too, not just dropped.
        (
            [START + KEY + b"Content-Length: 2\r\n\r\n{}" + START + b"Content-Length: x\r\n\r\n"],
            200,
            400,
            "invalid_argument",
        ),
    ],
    ids=["pipelined big head", "big head behind an early answer", "pipelined malformed"],
)
def test_a_bad_request_behind_an_answered_one_gets_its_own_error_answer(
    server_port: int, writes: list[bytes], first_status: int, status: int, code: str
) -> None:
    with socket.create_connection((LOOPBACK, server_port), timeout=5) as sock:
        for data in writes:
            sock.sendall(data)
            time.sleep(0.05)  # the first answer goes out between the writes
        answer, closed = read_until_closed(sock, time.monotonic() + 5)
    assert closed and answer.count(b"HTTP/1.1 ") == 2, answer[:500]
    assert answer.startswith(f"HTTP/1.1 {first_status} ".encode()), answer[:200]
    second = parse(answer[answer.rindex(b"HTTP/1.1 ") :])
    assert (second[0], second[2]["code"]) == (status, code)


@pytest.mark.slow
def test_a_stream_of_malformed_requests_does_not_flood_the_log() -> None:
    with mock_server() as server:
        for _ in range(200):
            raw_exchange(server.port, START + b"Content-Length: x\r\n\r\n", timeout=5)
        log = server.stderr()
    lines = log.count("\n")
    print(f"\n200 malformed requests: {lines} log lines, {len(log.encode())} bytes")
    assert lines <= 12, log
