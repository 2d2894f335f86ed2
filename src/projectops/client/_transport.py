"""The sync client's transport: a whole-call deadline on every socket wait, and the reading of
an answer's raw bytes for both clients.

A per-read time-out alone lets a server that sends a byte a second hold a call for ever. So the
sync :class:`~projectops.client.http.Client` sets :data:`DEADLINE` (a monotonic time) for the
call, and :class:`DeadlineTransport`, httpx's default connection pool (httpcore) on a network
backend whose streams wait at most what is left of it, turns a passed deadline into an httpx
time-out. The async client needs none of this: an anyio cancel scope bounds its whole call.
The proxy comes from :mod:`projectops.client._proxy`.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import httpcore
import httpx

from projectops.client._proxy import environment_proxy

__all__ = ["DEADLINE", "DeadlineTransport", "Expired", "araw_chunks", "raw_chunks"]


class Expired(Exception):
    """The call's deadline passed (raised by the sync client between reads of the body)."""


#: The longest single socket wait handed to the OS, in seconds (a day); a longer time-out is
#: still honoured as a whole, in waits of at most this.
_LONGEST_WAIT = 86_400.0

#: Monotonic time (``time.monotonic()``, seconds) by which the sync call running in this
#: context must have its whole answer; ``None``: no deadline.
DEADLINE: ContextVar[float | None] = ContextVar("projectops_call_deadline", default=None)


def _left(timeout: float | None, error: type[httpcore.TimeoutException]) -> float | None:
    """`timeout` of one socket operation cut to what is left of the call's time."""
    deadline = DEADLINE.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise error("the call's time-out passed")
    left = min(left, _LONGEST_WAIT)  # the OS's waits overflow far beyond it
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A socket stream whose every read, write and TLS handshake waits at most what is left
    of the call's time (:data:`DEADLINE`), so a trickle of bytes cannot stretch a call."""

    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self,
        ssl_context: Any,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        left = _left(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._stream.start_tls(ssl_context, server_hostname, left))

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's own sync network backend, with :class:`_DeadlineStream` streams."""

    def __init__(self) -> None:
        self._backend = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.NetworkStream:
        left = _left(timeout, httpcore.ConnectTimeout)
        stream = self._backend.connect_tcp(host, port, left, local_address, socket_options)
        return _DeadlineStream(stream)

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Any = None
    ) -> httpcore.NetworkStream:
        left = _left(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._backend.connect_unix_socket(path, left, socket_options))

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


# httpcore's exceptions -> httpx's, most specific first (what httpx's own transport maps).
_HTTPX_ERRORS: tuple[tuple[type[Exception], type[httpx.TransportError]], ...] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.ProxyError, httpx.ProxyError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.ProtocolError, httpx.ProtocolError),
)


@contextmanager
def _as_httpx_errors() -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        for core, mapped in _HTTPX_ERRORS:
            if isinstance(exc, core):
                raise mapped(str(exc)) from None
        raise


class _DeadlineStreamBody(httpx.SyncByteStream):
    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def __iter__(self) -> Iterator[bytes]:
        with _as_httpx_errors():
            yield from self._stream

    def close(self) -> None:
        with _as_httpx_errors():
            self._stream.close()


class DeadlineTransport(httpx.BaseTransport):
    """The sync client's transport: httpx's default connection pool (httpcore), on
    :class:`_DeadlineBackend`, so the whole call is bounded by its time-out (a per-read
    time-out alone lets a server that sends a byte a second hold a call for ever).

    With a proxy from the environment (:func:`~projectops.client._proxy.environment_proxy`)
    the pool is httpcore's proxy pool on the same backend, as httpx's own transport would
    mount it: the time-out then bounds the proxy's answer, and a ``CONNECT`` tunnel's, as a
    whole too.

    Args:
        base_url: the absolute http(s) base URL the calls go to (picks the proxy, and
            whether a TLS context is made).

    Raises:
        InvalidProxy: (at construction) the environment's proxy cannot be used.

    A call past :data:`DEADLINE` raises ``httpx.ConnectTimeout``, ``ReadTimeout`` or
    ``WriteTimeout``, whichever wait it was in; httpcore's other errors become httpx's.
    """

    def __init__(self, base_url: str) -> None:
        # The TLS context (loading the CA bundle) costs tens of milliseconds of start-up: made
        # only for an https base URL. Redirects are never followed, so http stays http.
        ssl_context = httpx.create_ssl_context() if base_url.startswith("https:") else None
        limits: dict[str, Any] = {
            "max_connections": 100,
            "max_keepalive_connections": 20,
            "keepalive_expiry": 5.0,
            "network_backend": _DeadlineBackend(),
        }
        proxy = environment_proxy(base_url)
        self._pool: httpcore.ConnectionPool
        if proxy is None:
            self._pool = httpcore.ConnectionPool(ssl_context=ssl_context, **limits)
            return
        proxy_url = httpcore.URL(
            scheme=proxy.url.raw_scheme,
            host=proxy.url.raw_host,
            port=proxy.url.port,
            target=proxy.url.raw_path,
        )
        if proxy.url.scheme in ("http", "https"):
            self._pool = httpcore.HTTPProxy(
                proxy_url=proxy_url,
                proxy_auth=proxy.raw_auth,
                proxy_headers=proxy.headers.raw,
                ssl_context=ssl_context,
                proxy_ssl_context=proxy.ssl_context,
                **limits,
            )
        else:  # socks5, socks5h (checked by environment_proxy); needs httpx[socks]
            self._pool = httpcore.SOCKSProxy(
                proxy_url=proxy_url, proxy_auth=proxy.raw_auth, ssl_context=ssl_context, **limits
            )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,  # a SyncByteStream: an iterable of bytes
            extensions=request.extensions,
        )
        with _as_httpx_errors():
            answer = self._pool.handle_request(core_request)
        return httpx.Response(
            status_code=answer.status,
            headers=answer.headers,
            stream=_DeadlineStreamBody(answer.stream),
            extensions=answer.extensions,
        )

    def close(self) -> None:
        self._pool.close()


def raw_chunks(response: httpx.Response) -> Iterator[bytes]:
    """The body of a streamed `response` as it arrives, in byte chunks of the transport's
    size, never decoded (any ``Content-Encoding`` was refused before); one chunk of the whole
    body if a transport already read it. Raises what the transport's reads raise."""
    try:
        yield response.content  # an in-memory transport (httpx.MockTransport) read it
    except httpx.ResponseNotRead:
        yield from response.iter_raw()


async def araw_chunks(response: httpx.Response) -> AsyncGenerator[bytes, None]:
    """:func:`raw_chunks` of an async `response`."""
    try:
        yield response.content
    except httpx.ResponseNotRead:
        async for chunk in response.aiter_raw():
            yield chunk
