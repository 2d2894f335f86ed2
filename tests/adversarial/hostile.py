"""Hostile backends for the client-side adversarial tests: real HTTP/1.1 servers on 127.0.0.1,
written on raw sockets so they can do what no well-behaved server library would.

:class:`HostileServer` accepts connections in a thread, reads each request (head and
``Content-Length`` body), records it, and hands the socket to a *behaviour*: a function
``(sock, request) -> None`` that writes whatever it likes. The behaviours here:

- :func:`trickle_head` / :func:`trickle_body`: a status line and headers (or a body) sent one
  byte per interval, so no single socket read ever waits long;
- :func:`gzip_bomb`: ~1 MB of gzip that inflates to 1 GiB, with ``Content-Encoding: gzip``;
- :func:`huge_body`: a body of N bytes (100 MB in the tests), with or without
  ``Content-Length``, sent as fast as the client reads;
- :func:`answer`: any fixed status, headers and body (HTML error pages, error JSON holding
  escape sequences, 50,000-character messages);
- :func:`echo_key`: an error whose message and violations echo the request's API key, in upper
  case, repr-escaped and percent-encoded.

Every behaviour stops by itself: trickles after ``limit`` seconds, and any write fails once the
client has closed. The server only ever listens on 127.0.0.1.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from urllib.parse import quote

from tests.loopback import LOOPBACK

__all__ = [
    "Behaviour",
    "HostileServer",
    "Request",
    "answer",
    "echo_key",
    "gzip_bomb",
    "gzip_bomb_body",
    "hostile_server",
    "huge_body",
    "trickle_body",
    "trickle_head",
]

#: Seconds any one connection is served at most (a trickle stops then).
CONNECTION_LIMIT = 30.0


@dataclass
class Request:
    """One request the hostile server read, and when (``time.monotonic()``) it was read."""

    head: bytes
    body: bytes
    received: float = 0.0

    def header(self, name: str) -> str | None:
        """The value of header `name` (the first one), or None."""
        for line in self.head.split(b"\r\n")[1:]:
            key, _, value = line.partition(b":")
            if key.strip().lower() == name.lower().encode():
                return value.strip().decode("latin-1")
        return None


#: What the server does with one connection once the request is read.
Behaviour = Callable[[socket.socket, Request], None]


def _read_request(sock: socket.socket) -> Request | None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        data += chunk
        if len(data) > 1 << 20:
            return None
    head, _, body = data.partition(b"\r\n\r\n")
    request = Request(head, b"")
    length = int(request.header("Content-Length") or 0)
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    request.body = body
    request.received = time.monotonic()
    return request


@dataclass
class HostileServer:
    """A raw-socket HTTP server on 127.0.0.1 that answers every request with `behaviour`.

    Attributes:
        base_url: ``http://127.0.0.1:<port>``.
        requests: every request read, in order.
        served: seconds each finished connection was served (behaviour start to its end).
    """

    behaviour: Behaviour
    base_url: str = ""
    requests: list[Request] = field(default_factory=list)
    served: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind((LOOPBACK, 0))
        self._listener.listen(16)
        self.base_url = f"http://{LOOPBACK}:{self._listener.getsockname()[1]}"
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._accepter = threading.Thread(target=self._accept, daemon=True)
        self._accepter.start()

    def _accept(self) -> None:
        while not self._stopping.is_set():
            try:
                sock, _ = self._listener.accept()
            except OSError:  # closed by close()
                return
            thread = threading.Thread(target=self._serve, args=(sock,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, sock: socket.socket) -> None:
        with sock:
            sock.settimeout(CONNECTION_LIMIT)
            try:
                request = _read_request(sock)
                if request is None:
                    return
                self.requests.append(request)
                started = time.monotonic()
                self.behaviour(sock, request)
                self.served.append(time.monotonic() - started)
            except OSError:
                pass  # the client went away: what a hostile server expects

    def close(self) -> None:
        """Stop accepting, close the listener and wait (bounded) for open connections."""
        self._stopping.set()
        try:
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        except OSError:
            pass
        self._listener.close()
        self._accepter.join(5)
        for thread in self._threads:
            thread.join(CONNECTION_LIMIT + 5)


@contextmanager
def hostile_server(behaviour: Behaviour) -> Iterator[HostileServer]:
    """A :class:`HostileServer` for the duration of the ``with`` block."""
    server = HostileServer(behaviour)
    try:
        yield server
    finally:
        server.close()


def _head(status: int, headers: dict[str, str]) -> bytes:
    """The response's head. Every connection is closed after one response, and the head says so
    (``Connection: close`` unless `headers` has its own): otherwise a retry sent a few ms later
    could go out on the pooled connection before the client sees it closed, and end with no
    answer (1 in 300 under load)."""
    if not any(name.lower() == "connection" for name in headers):
        headers = {**headers, "Connection": "close"}
    lines = [f"HTTP/1.1 {status} Hostile"] + [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _trickle(sock: socket.socket, data: bytes, interval: float, limit: float) -> None:
    deadline = time.monotonic() + limit
    for i in range(len(data)):
        if time.monotonic() > deadline:
            return
        sock.sendall(data[i : i + 1])
        time.sleep(interval)


def trickle_head(interval: float = 1.0, limit: float = CONNECTION_LIMIT) -> Behaviour:
    """Send a valid 200 response's status line and headers one byte per `interval` seconds
    (for at most `limit` seconds): no read waits longer than `interval`."""
    body = b'{"environments": []}'
    head = _head(200, {"Content-Type": "application/json", "Content-Length": str(len(body))})

    def behave(sock: socket.socket, request: Request) -> None:
        _trickle(sock, head + body, interval, limit)

    return behave


def trickle_body(interval: float = 1.0, limit: float = CONNECTION_LIMIT) -> Behaviour:
    """Send a 200 response's headers at once, then its (valid, 1,000-byte) body one byte per
    `interval` seconds, for at most `limit` seconds."""
    body = b'{"environments": [' + b" " * 980 + b"]}"
    body = body[:1000] if len(body) > 1000 else body
    head = _head(200, {"Content-Type": "application/json", "Content-Length": str(len(body))})

    def behave(sock: socket.socket, request: Request) -> None:
        sock.sendall(head)
        _trickle(sock, body, interval, limit)

    return behave


@cache
def gzip_bomb_body(mebibytes: int = 1024) -> bytes:
    """A single-member gzip stream of `mebibytes` MiB of zeros (1 GiB: 1,061,908 bytes).

    Built from one compressed 1 MiB block repeated (a full flush makes every block the same
    bytes), so it takes a fraction of a second instead of compressing 1 GiB.
    """
    zeros = bytes(1 << 20)
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    end = compressor.flush(zlib.Z_FINISH)
    crc = 0
    for _ in range(mebibytes):
        crc = zlib.crc32(zeros, crc)
    size = (mebibytes << 20) & 0xFFFFFFFF
    return (
        b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
        + block * mebibytes
        + end
        + struct.pack("<II", crc, size)
    )


def gzip_bomb(mebibytes: int = 1024) -> Behaviour:
    """A 200 response with ``Content-Encoding: gzip`` whose ~1 MB body inflates to `mebibytes`
    MiB of zeros."""
    body = gzip_bomb_body(mebibytes)
    head = _head(
        200,
        {
            "Content-Type": "application/json",
            "Content-Encoding": "gzip",
            "Content-Length": str(len(body)),
        },
    )

    def behave(sock: socket.socket, request: Request) -> None:
        sock.sendall(head + body)

    return behave


def huge_body(size: int, *, announce: bool = True, status: int = 200) -> Behaviour:
    """A response whose body is `size` bytes of one long JSON string, sent in 1 MiB pieces as
    fast as the client reads; with `announce` False there is no ``Content-Length`` (the body
    ends when the connection closes), so only counting the bytes can stop it."""
    headers = {"Content-Type": "application/json", "Connection": "close"}
    if announce:
        headers["Content-Length"] = str(size)

    def behave(sock: socket.socket, request: Request) -> None:
        sock.sendall(_head(status, headers))
        piece = b"x" * (1 << 20)
        sent = 0
        prefix = b'{"environments": [{"environment": "'
        sock.sendall(prefix)
        sent += len(prefix)
        while sent < size:
            chunk = piece[: size - sent]
            sock.sendall(chunk)
            sent += len(chunk)

    return behave


def answer(status: int, body: bytes | str, headers: dict[str, str] | None = None) -> Behaviour:
    """A fixed answer: `status`, `headers` (``Content-Type: application/json`` unless given)
    and `body`, with its ``Content-Length``."""
    raw = body.encode("utf-8") if isinstance(body, str) else body
    all_headers = {"Content-Type": "application/json", **(headers or {})}
    all_headers["Content-Length"] = str(len(raw))

    def behave(sock: socket.socket, request: Request) -> None:
        sock.sendall(_head(status, all_headers) + raw)

    return behave


def echo_key(status: int = 401) -> Behaviour:
    """An error response whose message, code and violations echo the request's
    ``Service-Api-Key`` as an honest echo writes it: in upper case, repr-escaped,
    percent-encoded and verbatim."""

    def behave(sock: socket.socket, request: Request) -> None:
        key = request.header("Service-Api-Key") or ""
        message = (
            f"unknown key {key.upper()}; repr {key!r}; url ?key={quote(key, safe='')}; "
            f"lower {key.lower()}; plain {key}"
        )
        body = json.dumps(
            {
                "code": "unauthenticated",
                "message": message,
                "violations": [{"field": key, "description": f"key {key.swapcase()} refused"}],
            }
        )
        answer(status, body)(sock, request)

    return behave
