"""The mock server's HTTP/1.1 protocol: uvicorn's h11 protocol with a whole-request deadline and
``ErrorResponse`` answers to malformed HTTP (:class:`SheddingH11Protocol`).

uvicorn (h11 protocol) bounds only the idle time after a response (``timeout_keep_alive``, and a
single byte cancels it): a connection that sends nothing, or a request line, headers or a body one
byte at a time, is held for good; and malformed HTTP is answered in plain text. So:

- from the moment a connection waits for a request (it opened, or its last response went out)
  until that request has fully arrived, head and body, at most ``request_timeout`` seconds may
  pass; then the connection is closed, after a 408 ``ErrorResponse`` (code
  ``deadline_exceeded``) when part of a request came;
- malformed HTTP that h11 rejects is answered with an ``ErrorResponse`` (400
  ``invalid_argument``; 431 ``resource_exhausted`` for a request head over
  ``h11_max_incomplete_event_size``, also one already whole in the buffer (one large read, or
  behind a pipelined request or an early answer), which h11 alone would parse; 501
  ``unimplemented`` for a transfer coding other than chunked) and the connection closed.

The connections waiting for a request are kept per listening port, oldest first
(:func:`waiting_peers`), so that :class:`~projectops.server._listener.GuardedListener` can shed
them at its connection cap. uvicorn's graceful stop is left as it is: ``shutdown`` closes an idle
connection and lets one whose answer is under way finish (then close).
"""

from __future__ import annotations

import asyncio
import re
from http import HTTPStatus
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from projectops._text import outside_text
from projectops.codec import error_body
from projectops.conventions import DEFAULT_REQUEST_TIMEOUT
from projectops.errors import (
    ApiError,
    DeadlineExceeded,
    InvalidArgument,
    ResourceExhausted,
    Unavailable,
    Unimplemented,
)
from projectops.server._limits import ServerLimits

__all__ = ["SheddingH11Protocol", "error_answer", "waiting_peers"]

# How long a closed connection may take to flush its last bytes before it is aborted.
_LINGER = 1.0


def error_answer(status: int, error: ApiError) -> bytes:
    """A complete HTTP/1.1 answer (bytes) with status `status` carrying `error`'s
    ``ErrorResponse`` as JSON; it says ``connection: close``."""
    body = error_body(error).encode("utf-8")
    head = (
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
        "content-type: application/json\r\n"
        f"content-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


# The end of a request head (h11 also accepts bare line feeds).
_HEAD_END = re.compile(rb"\n\r?\n")
# Where h11's error text starts quoting the request: ": bytearray(b'...')" or ": b'...'".
# Linear over a request's bytes: white space is taken whole (``*+``) from a colon or from the
# start of a run, never from inside one (from each position of a run it was quadratic).
_QUOTED_BYTES = re.compile(r"(?::|(?<!\s))\s*+(?:bytearray\()?b['\"]")


class _Peers:
    """The connections of one listening address that wait for a request, oldest first
    (a dict keeps insertion order, and a connection is re-inserted when it waits anew)."""

    def __init__(self) -> None:
        self.waiting: dict[SheddingH11Protocol, None] = {}

    def shed(self, count: int) -> int:
        """Close up to `count` of the connections that have waited longest; return how many."""
        victims = []
        for protocol in self.waiting:
            victims.append(protocol)
            if len(victims) >= count:
                break
        for protocol in victims:
            protocol.shed()
        return len(victims)


# Listening port -> its waiting connections. The port, not the address: a listener bound to
# 0.0.0.0 accepts connections whose local address is a particular interface's.
_PEERS: dict[int, _Peers] = {}


def waiting_peers(address: Any) -> _Peers:
    """The waiting connections of the listening port of `address` (a socket address)."""
    port = address[1] if isinstance(address, tuple) and len(address) >= 2 else 0
    return _PEERS.setdefault(port, _Peers())


class _Connection(h11.Connection):
    """h11's connection that refuses a request head over `head_limit` bytes however it came,
    and remembers the last protocol error it raised (for its status hint).

    h11 bounds only a head still incomplete after a read; one already whole in the buffer (a
    single large read, or one that waited there behind a pipelined request or an answer sent
    before the body was read) it parses whatever its size.
    """

    last_error: h11.RemoteProtocolError | None = None

    def __init__(self, role: type[h11.SERVER], head_limit: int) -> None:
        super().__init__(role, head_limit)
        self.head_limit = head_limit

    def next_event(self) -> Any:
        try:
            if self.their_state is h11.IDLE and self._starts_with_long_head():
                raise h11.RemoteProtocolError("request head too long", error_status_hint=431)
            return super().next_event()
        except h11.RemoteProtocolError as exc:
            self.last_error = exc
            raise

    def _starts_with_long_head(self) -> bool:
        buffered, _ = self.trailing_data
        if len(buffered) <= self.head_limit:
            return False  # h11's own limit covers what is still incomplete
        return not _HEAD_END.search(buffered, 0, self.head_limit + 4)


class SheddingH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a whole-request deadline and ``ErrorResponse`` answers to
    malformed HTTP (module docstring). Reads ``config.request_timeout`` (seconds)."""

    def __init__(self, config: uvicorn.Config, *args: Any, **kwargs: Any) -> None:
        super().__init__(config, *args, **kwargs)
        self._head_limit = (
            config.h11_max_incomplete_event_size or ServerLimits.h11_max_incomplete_event_size
        )
        self.conn = _Connection(h11.SERVER, self._head_limit)
        self._request_timeout = float(getattr(config, "request_timeout", DEFAULT_REQUEST_TIMEOUT))
        self._timer: asyncio.TimerHandle | None = None
        self._partial = False
        self._waiting_in: _Peers | None = None

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[arg-type]
        self._waiting_in = waiting_peers(transport.get_extra_info("sockname"))
        self._reconcile()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_waiting()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._timer is not None and data:
            self._partial = True
        super().data_received(data)
        self._reconcile()

    def _head_error(self) -> ApiError:
        return ResourceExhausted(f"the request head is larger than {self._head_limit} bytes")

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._reconcile()

    # The deadline of a request

    def _reconcile(self) -> None:
        """Arm the deadline while the peer owes us (part of) a request, disarm it otherwise."""
        waiting = (
            self.conn.their_state in (h11.IDLE, h11.SEND_BODY) and not self.transport.is_closing()
        )
        if waiting and self._timer is None:
            self._partial = bool(self.conn.trailing_data[0])
            self._timer = self.loop.call_later(self._request_timeout, self._expire)
            if self._waiting_in is not None:
                self._waiting_in.waiting[self] = None
        elif not waiting and self._timer is not None:
            self._stop_waiting()

    def _stop_waiting(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._waiting_in is not None:
            self._waiting_in.waiting.pop(self, None)

    def _owes_answer(self) -> bool:
        """Part of a request came and nothing of its answer went out."""
        started = self.cycle is not None and self.cycle.response_started
        body_pending = self.conn.their_state is h11.SEND_BODY and not started
        return body_pending or (self.conn.their_state is h11.IDLE and self._partial)

    def _expire(self) -> None:
        self._timer = None
        answer = b""
        if self._owes_answer():
            answer = error_answer(
                408,
                DeadlineExceeded(
                    f"no complete request within {self._request_timeout:g} s; "
                    "the connection is closed"
                ),
            )
        self._close(answer)

    def shed(self) -> None:
        """Close this waiting connection to make room (503 when part of a request came)."""
        answer = b""
        if self._owes_answer():
            answer = error_answer(503, Unavailable("the server is at its connection limit; retry"))
        self._close(answer, abort=not answer)

    def _close(self, answer: bytes, *, abort: bool = False) -> None:
        self._stop_waiting()
        if self.cycle is not None and not self.cycle.response_complete:
            # The app waiting for the body learns of the disconnect; its answer goes nowhere.
            self.cycle.disconnected = True
            self.cycle.message_event.set()
        if self.transport.is_closing():
            return
        if abort:
            self.transport.abort()
            return
        if answer:
            self.transport.write(answer)
        self.transport.close()
        if self.transport.get_write_buffer_size():
            # A peer that does not read must not keep the socket open.
            self.loop.call_later(_LINGER, self.transport.abort)

    # Malformed HTTP (h11 raised RemoteProtocolError)

    def send_400_response(self, msg: str) -> None:
        """Answer malformed HTTP with an ``ErrorResponse`` and close (uvicorn's is plain text)."""
        error = self.conn.last_error if isinstance(self.conn, _Connection) else None
        hint = error.error_status_hint if error is not None else 400
        # h11 quotes the offending bytes (a header line may hold the key): keep its words only.
        reason = outside_text(_QUOTED_BYTES.split(str(error) if error is not None else msg)[0], 120)
        answer: ApiError
        if hint == 431:
            status = 431
            answer = self._head_error()
        elif hint == 501:
            status = 501
            answer = Unimplemented(f"unsupported HTTP request: {reason}")
        else:
            status = 400
            answer = InvalidArgument(f"malformed HTTP request: {reason}")
        if (
            self.cycle is not None
            and self.cycle.response_started
            and not self.cycle.response_complete
        ):
            self._close(b"", abort=True)  # an answer is under way: no second one
        else:
            self._close(error_answer(status, answer))
