"""Clients of the adversarial tests that send a request slowly or at once, on raw sockets to
127.0.0.1 (no client library normalises what they send): :func:`trickle` sends a body a byte
every 0.1 s, :func:`exchange` one request and reads the whole response."""

from __future__ import annotations

import json
import socket
import threading
import time
from typing import Any

from projectops.conventions import API_KEY_HEADER
from tests.adversarial.servers import read_until_closed
from tests.loopback import LOOPBACK

__all__ = ["BODY_TIMEOUT", "KEY", "PROMPT", "assert_cut_in_time", "body_of", "exchange", "head"]
__all__ += ["port_of", "status", "trickle"]

#: The key the requests carry by default.
KEY = "ground-key-5b1e"
#: body_timeout of the servers under test.
BODY_TIMEOUT = 0.5
#: The most a refusal may take on a busy machine: far less than a trickle lasts.
PROMPT = 5.0
#: Seconds a trickling client goes on sending, unless the server closes first.
TRICKLE = 15.0


def port_of(url: str) -> int:
    """The port of a `url` ``http://127.0.0.1:PORT``."""
    return int(url.rsplit(":", 1)[1])


def head(port: int, target: str, length: int, key: str = KEY, *more: str) -> bytes:
    """The head of a ``POST`` of `target` with a `length`-byte body, the key `key` and the
    header lines `more`."""
    lines = [f"POST {target} HTTP/1.1", f"Host: {LOOPBACK}:{port}", f"{API_KEY_HEADER}: {key}"]
    lines += ["Content-Type: application/json", f"Content-Length: {length}", *more]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def trickle(port: int, target: str, key: str = KEY) -> tuple[bytes, bool, float]:
    """A request whose 1,000-byte body comes a byte every 0.1 s: the response, whether the server
    closed the connection, and the seconds until it did (or the trickle ended)."""
    start = time.monotonic()
    with socket.create_connection((LOOPBACK, port), timeout=TRICKLE) as sock:
        sock.sendall(head(port, target, 1000, key) + b"{")
        stop = threading.Event()

        def drip() -> None:
            while not stop.wait(0.1) and time.monotonic() < start + TRICKLE:
                try:
                    sock.sendall(b" ")
                except OSError:  # the server closed: what is wanted
                    return

        dripping = threading.Thread(target=drip, daemon=True)
        dripping.start()
        got, closed = read_until_closed(sock, start + TRICKLE)
        elapsed = time.monotonic() - start
        stop.set()
        dripping.join(5)
    return got, closed, elapsed


def status(raw: bytes) -> int:
    """The status of a raw answer."""
    return int(raw.split(b" ", 2)[1])


def body_of(raw: bytes) -> dict[str, Any]:
    """The JSON object of a raw response's body."""
    return dict(json.loads(raw.partition(b"\r\n\r\n")[2]))


def exchange(port: int, target: str, body: bytes = b"{}", key: str = KEY) -> bytes:
    """One ``POST`` of `target` with `body` on a new connection: the whole raw answer."""
    request = head(port, target, len(body), key, "Connection: close") + body
    with socket.create_connection((LOOPBACK, port), timeout=PROMPT * 4) as sock:
        sock.sendall(request)
        got, _ = read_until_closed(sock, time.monotonic() + PROMPT * 4, limit=1 << 26)
    return got


def assert_cut_in_time(got: bytes, closed: bool, elapsed: float) -> None:
    """`got` is the 408 ``deadline_exceeded`` of a body past :data:`BODY_TIMEOUT`, and the
    server closed the connection well before the trickle would have ended."""
    assert status(got) == 408, got[:300]
    assert body_of(got)["code"] == "deadline_exceeded"
    assert b"connection: close" in got.partition(b"\r\n\r\n")[0].lower()
    assert closed, "the server kept the trickling connection open"
    assert elapsed < BODY_TIMEOUT + PROMPT
