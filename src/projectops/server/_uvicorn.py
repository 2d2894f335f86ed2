"""What the mock server adds to uvicorn so that slow, idle, malformed and numerous peers are shed.

uvicorn (h11 protocol) bounds only the idle time after a response (``timeout_keep_alive``, and a
single byte cancels it): a connection that sends nothing, or a request line, headers or a body one
byte at a time, is held for good; accepting past the process's open-file limit makes asyncio log a
traceback per attempt, thousands a second; malformed HTTP is answered in plain text. Two pieces
close that, each at the smallest place it can live:

- :class:`SheddingH11Protocol`: uvicorn's h11 protocol plus one timer per connection. From the
  moment a connection waits for a request (it opened, or its last response went out) until that
  request has fully arrived, head and body, at most ``request_timeout`` seconds may pass; then
  the connection is closed, after a 408 ``ErrorResponse`` (code ``deadline_exceeded``) when part
  of a request came. Malformed HTTP that h11 rejects is answered with an ``ErrorResponse`` (400
  ``invalid_argument``; 431 ``resource_exhausted`` for a request head over
  ``h11_max_incomplete_event_size``, also one already whole in the buffer (one large read, or
  behind a pipelined request or an early answer), which h11 alone would parse; 501 ``unimplemented``
  for a transfer coding other than chunked) and the connection closed.
- :class:`GuardedListener`: the listening socket, whose ``accept`` keeps the process's open
  connections under ``max_connections`` (by default the open-file limit less a reserve). At the
  cap it first closes the connections that have waited longest for their request (idle or slow
  peers, never one whose handler runs, with a 503 when part of a request came); when none waits,
  a new connection gets a 503 ``unavailable`` and is closed at once.

:class:`LimitedConfig` is ``uvicorn.Config`` with both settings; it selects the protocol and
installs the log filters (:func:`install_log_filters`) in every process that serves, worker
processes included. Production deployments put a reverse proxy in front instead (README).
"""

from __future__ import annotations

import asyncio
import logging
import re
import resource
import socket
import time
from http import HTTPStatus
from multiprocessing import reduction
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

__all__ = [
    "DEFAULT_REQUEST_TIMEOUT",
    "GuardedListener",
    "LimitedConfig",
    "SheddingH11Protocol",
    "default_max_connections",
    "install_log_filters",
]

#: h11's own limit on a request head (uvicorn's ``h11_max_incomplete_event_size`` default).
_H11_DEFAULT_HEAD_BYTES = 16 * 1024
# How long a closed connection may take to flush its last bytes before it is aborted.
_LINGER = 1.0
# Connections refused (503) in one pass of the accept loop before it yields to other work.
_REFUSE_BURST = 64


def default_max_connections(reserve_fraction: int = 8) -> int:
    """The connection cap for this process: the soft open-file limit less a reserve.

    The reserve (an eighth, at least 16 and at most 256 descriptors) keeps room for the
    listening socket, the event loop, logs and files a request opens.
    """
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft > 1 << 20:
        soft = 1 << 20
    reserve = min(256, max(16, soft // reserve_fraction))
    return max(1, soft - reserve)


def _answer(status: int, error: ApiError) -> bytes:
    """A complete HTTP/1.1 answer carrying `error`'s ``ErrorResponse``; the connection closes."""
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


def _peers(address: Any) -> _Peers:
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
        self._head_limit = config.h11_max_incomplete_event_size or _H11_DEFAULT_HEAD_BYTES
        self.conn = _Connection(h11.SERVER, self._head_limit)
        self._request_timeout = float(getattr(config, "request_timeout", DEFAULT_REQUEST_TIMEOUT))
        self._timer: asyncio.TimerHandle | None = None
        self._partial = False
        self._waiting_in: _Peers | None = None

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[arg-type]
        self._waiting_in = _peers(transport.get_extra_info("sockname"))
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
            answer = _answer(
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
            answer = _answer(503, Unavailable("the server is at its connection limit; retry"))
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
            self._close(_answer(status, answer))


class _Tracked(socket.socket):
    """An accepted connection that tells its listener when it is closed (for the count)."""

    _listener: GuardedListener | None = None

    def close(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.open_connections -= 1
        super().close()


class GuardedListener(socket.socket):
    """A listening TCP socket whose ``accept`` keeps open connections under a cap (module
    docstring). Made from a bound, listening socket by :meth:`wrap`; passed to worker
    processes like any socket (it pickles as a duplicate of its descriptor)."""

    max_connections: int = 1
    open_connections: int = 0

    @classmethod
    def wrap(cls, sock: socket.socket, max_connections: int) -> GuardedListener:
        """`sock` (listening; it is detached, do not use it after) as a guarded listener.

        Args:
            sock: a bound, listening stream socket.
            max_connections: the most connections open at once (at least 1).
        """
        listener = cls(sock.family, sock.type, sock.proto, fileno=sock.detach())
        listener.max_connections = max(1, max_connections)
        listener.open_connections = 0
        return listener

    def __reduce__(self) -> Any:
        return _rebuild_listener, (
            reduction.DupFd(self.fileno()),
            self.family,
            self.type,
            self.proto,
            self.max_connections,
        )

    def accept(self) -> tuple[socket.socket, Any]:
        """The next connection, or ``BlockingIOError`` (asyncio's "none waiting") while at the
        cap: then the longest-waiting connections are shed first, and only when none waits is
        the new connection refused with a 503."""
        for _ in range(_REFUSE_BURST):
            if self.open_connections < self.max_connections:
                fd, address = self._accept()  # type: ignore[attr-defined]
                conn = _Tracked(self.family, self.type, self.proto, fileno=fd)
                conn._listener = self
                self.open_connections += 1
                return conn, address
            if _peers(self.getsockname()).shed(max(1, self.max_connections // 16)):
                # Their sockets close on the event loop's next pass; accept again then.
                raise BlockingIOError
            fd, address = self._accept()  # type: ignore[attr-defined]
            _refuse(fd)
        raise BlockingIOError


def _refuse(fd: int) -> None:
    """Answer a connection that cannot be served with a 503 and close it at once."""
    with socket.socket(fileno=fd) as conn:
        conn.setblocking(False)
        try:
            conn.send(_answer(503, Unavailable("the server is at its connection limit; retry")))
            conn.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def _rebuild_listener(
    dup: Any, family: int, kind: int, proto: int, max_connections: int
) -> GuardedListener:
    listener = GuardedListener(family, kind, proto, fileno=dup.detach())
    listener.max_connections = max_connections
    listener.open_connections = 0
    return listener


class _QueryStringFilter(logging.Filter):
    """Drops the query string from uvicorn's access-log lines: a key or token some client put
    in a URL never reaches the log."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str):
            path = args[2].partition("?")[0]
            record.args = (*args[:2], outside_text(path, 200), *args[3:])
        return True


class _RateLimitFilter(logging.Filter):
    """At most `burst` records of one message template per `window` seconds; the first record
    let through after a quiet spell says how many were dropped. A peer that can make the
    server warn (malformed requests, refused connections) cannot flood its log."""

    def __init__(self, burst: int = 10, window: float = 10.0) -> None:
        super().__init__()
        self._burst = burst
        self._window = window
        self._seen: dict[tuple[str, str], tuple[float, int, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, str(record.msg))
        now = time.monotonic()
        start, count, dropped = self._seen.get(key, (now, 0, 0))
        if now - start >= self._window:
            start, count = now, 0
        if count >= self._burst:
            self._seen[key] = (start, count, dropped + 1)
            return False
        self._seen[key] = (start, count + 1, 0)
        if dropped:
            record.msg = f"({dropped} similar messages dropped) {record.msg}"
        if len(self._seen) > 1000:  # message templates are few; never let this grow
            self._seen.clear()
        return True


def install_log_filters() -> None:
    """Rate-limit uvicorn's and asyncio's warnings; cut query strings from the access log.

    Idempotent; called in every process that serves (:meth:`LimitedConfig.configure_logging`).
    """
    for name in ("uvicorn.error", "asyncio"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, _RateLimitFilter) for f in logger.filters):
            logger.addFilter(_RateLimitFilter())
    access = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, _QueryStringFilter) for f in access.filters):
        access.addFilter(_QueryStringFilter())


class LimitedConfig(uvicorn.Config):
    """``uvicorn.Config`` serving with :class:`SheddingH11Protocol` and the log filters.

    Args:
        app, **kwargs: as for ``uvicorn.Config`` (``http`` is set here).
        request_timeout: seconds from the moment a connection waits for a request until the
            whole request (head and body) has arrived; > 0.
    """

    def __init__(
        self, app: Any, *, request_timeout: float = DEFAULT_REQUEST_TIMEOUT, **kwargs: Any
    ) -> None:
        if not request_timeout > 0:
            raise ValueError(f"request_timeout must be > 0, got {request_timeout!r}")
        self.request_timeout = request_timeout
        # loop="asyncio": uvloop accepts connections in C, past GuardedListener.accept.
        kwargs.setdefault("loop", "asyncio")
        super().__init__(app, http=SheddingH11Protocol, **kwargs)

    def configure_logging(self) -> None:
        """uvicorn's logging set-up, then the root handler and :func:`install_log_filters`."""
        super().configure_logging()
        logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
        install_log_filters()
