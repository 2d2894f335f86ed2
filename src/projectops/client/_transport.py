"""The bounded raw HTTP exchange under the clients, conformance and the proxy (docs/python.md).

`timeout` bounds each exchange as a whole: the sync exchange's own transport cuts every socket
wait to what is left (:data:`_DEADLINE`), a caller's runs in a daemon thread it stops waiting
for; the async one runs in a cancel scope.
"""

from __future__ import annotations

import importlib.util
import re
import threading
import time
import urllib.request
from collections.abc import Iterable, Mapping
from contextlib import aclosing, closing
from contextvars import ContextVar
from http.cookiejar import CookieJar, DefaultCookiePolicy
from typing import Any, NamedTuple, Self
from urllib.parse import urlsplit

import anyio
import httpcore2
import httpx2

from projectops._text import outside_text
from projectops.client._errors import ResponseTimedOut, ServiceUnreachable
from projectops.conventions import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_MAX_RESPONSE_BYTES,
    header_key,
    normalize_base_url,
    shown_url,
)


class InvalidProxy(ValueError):
    """The environment's proxy cannot be used; its address (maybe with a password) is not quoted."""


def environment_proxy(url: str) -> httpx2.Proxy | None:
    """The proxy ``HTTP(S)_PROXY`` / ``ALL_PROXY`` (any case; ``NO_PROXY`` exempts) names for
    `url`, as the standard library reads them; ``None``: direct.

    Raises:
        InvalidProxy: not a URL, a scheme other than http(s) or socks5(h), or SOCKS without socksio.
    """
    proxies = urllib.request.getproxies_environment()
    parts = urlsplit(url)
    address = proxies.get(parts.scheme) or proxies.get("all")
    if not address or urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    if "://" not in address:
        address = f"http://{address}"
    what = f"the environment's proxy for {parts.scheme} requests"
    try:
        scheme = urlsplit(address).scheme  # lowercased by urlsplit
        proxy = None
        if scheme in ("http", "https", "socks5", "socks5h"):
            proxy = httpx2.Proxy(address)
    except (ValueError, httpx2.InvalidURL):
        raise InvalidProxy(f"{what} is not a valid URL") from None
    if proxy is None:
        raise InvalidProxy(f"{what} has the scheme {scheme!r}; use one of http, https, socks5")
    if scheme.startswith("socks") and importlib.util.find_spec("socksio") is None:
        raise InvalidProxy(f"{what} is SOCKS, which needs socksio: pip install 'httpx2[socks]'")
    return proxy


#: ``time.monotonic()`` by which the sync exchange running in this context must be done.
_DEADLINE: ContextVar[float | None] = ContextVar("projectops_deadline", default=None)
_LONGEST_WAIT = 86_400.0  # seconds: the OS's waits overflow far beyond; longer ones in pieces
#: Connections to the service open at once at most, by default (``max_connections``).
DEFAULT_MAX_CONNECTIONS = 100
_KEPT_ALIVE = 20  # idle connections kept for reuse at most (httpx's default)


def _left(
    timeout: float | None,
    error: type[httpcore2.TimeoutException],
) -> float | None:
    """`timeout` of one socket wait cut to what is left of the exchange's time."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return timeout
    left = min(deadline - time.monotonic(), _LONGEST_WAIT)
    if left <= 0:
        raise error("the call's time-out passed")
    if timeout is None:
        return left
    return min(timeout, left)


class _DeadlineStream(httpcore2.NetworkStream):
    def __init__(self, stream: httpcore2.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _left(timeout, httpcore2.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _left(timeout, httpcore2.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self,
        ssl_context: Any,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore2.NetworkStream:
        left = _left(timeout, httpcore2.ConnectTimeout)
        return _DeadlineStream(self._stream.start_tls(ssl_context, server_hostname, left))

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _DeadlineBackend(httpcore2.SyncBackend):
    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        *args: Any,
        **kwargs: Any,
    ) -> httpcore2.NetworkStream:
        left = _left(timeout, httpcore2.ConnectTimeout)
        return _DeadlineStream(super().connect_tcp(host, port, left, *args, **kwargs))


class _DeadlineTransport(httpx2.HTTPTransport):
    """httpx2's transport on :class:`_DeadlineBackend` (its ``__init__`` takes no backend)."""

    def __init__(self, base_url: str, max_connections: int) -> None:
        env = environment_proxy(base_url)
        proxy = None
        if env is not None:
            proxy = httpcore2.Proxy(str(env.url), env.raw_auth, env.headers.raw)
        ssl_context = None
        if base_url.startswith("https:"):
            # Loading the CA bundle costs tens of ms of start-up: only for https.
            ssl_context = httpx2.create_ssl_context()
        self._pool = httpcore2.ConnectionPool(
            ssl_context=ssl_context,
            proxy=proxy,
            max_connections=max_connections,
            max_keepalive_connections=min(max_connections, _KEPT_ALIVE),
            keepalive_expiry=5.0,
            network_backend=_DeadlineBackend(),
        )


_SHOWN_BYTES = 1 << 20  # what is kept of a response over its cap


class RawResponse(NamedTuple):
    """A response as it came, before anything reads it (docs/contract.md §9.2).

    Attributes:
        status: the HTTP status code.
        headers: ``(name, value)`` pairs in the order received, decoded as Latin-1.
        body: the body, never decoded, at most the exchange's cap.
        truncated: there was more than the cap (for a 2xx announcing more, none was read); `body`
            is then only its first MiB at most: a response over the cap is shown, never used.
            ``False`` by default.
    """

    status: int
    headers: list[tuple[str, str]]
    body: bytes
    truncated: bool = False

    def header(self, name: str) -> str | None:
        """One header of the response.

        Args:
            name: the header's name, any case.

        Returns:
            The first value of header `name`, or ``None`` when the response has none.
        """
        name = name.lower()
        for key, value in self.headers:
            if key.lower() == name:
                return value
        return None


_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_VALUE = re.compile(r"[\x20-\x7e\t]*")
# The exchange writes these itself.
_FRAMING = frozenset(
    {
        "contentlength",
        "transferencoding",
        "host",
        "connection",
        "acceptencoding",
    }
)


def check_header(name: object, value: object) -> None:
    """Raise ``ValueError`` naming the header unless `name` is an HTTP token that is none of
    :data:`_FRAMING` (any spelling) and `value` is visible ASCII, spaces and tabs."""
    if not isinstance(name, str) or not _TOKEN.fullmatch(name):
        raise ValueError(f"not an HTTP header name: {outside_text(str(name), 100)}")
    if header_key(name) in _FRAMING:
        raise ValueError(f"{name} frames the request: only the client sets it")
    if not isinstance(value, str) or not _VALUE.fullmatch(value):
        raise ValueError(f"the value of header {name} must be text without control characters")


def timed_out(client: _BaseRawClient) -> ResponseTimedOut:
    """The failure of an exchange of `client` not done within its time-out."""
    limit = "the time-out"
    if client.timeout is not None:
        limit = f"the time-out of {client.timeout:g} s"
    return ResponseTimedOut(f"no complete answer from {client.shown_url} within {limit}")


def check_limits(
    timeout: float | None,
    max_bytes: int,
    max_error_bytes: int | None,
) -> int:
    """The error bodies' cap; ``ValueError``, ``TypeError``: a time-out or cap that cannot work."""
    if timeout is not None and not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds or None, not {timeout}")
    error_cap = max_error_bytes
    if error_cap is None:
        error_cap = max_bytes
    for name, cap in (("max_response_bytes", max_bytes), ("max_error_bytes", error_cap)):
        if isinstance(cap, bool) or not isinstance(cap, int):
            raise TypeError(f"{name} must be an int (bytes)")
        if cap < 1:
            raise ValueError(f"{name} must be at least 1, not {cap}")
    return min(max_bytes, error_cap)


class _BaseRawClient:
    _http_class: Any = httpx2.Client

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float | None = DEFAULT_CALL_TIMEOUT,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        max_error_bytes: int | None = None,
        transport: httpx2.BaseTransport | httpx2.AsyncBaseTransport | None = None,
        secrets: Iterable[str | None] = (),
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
    ) -> None:
        """Configure exchanges with one service; nothing is connected until the first exchange.

        Args:
            base_url: the service's root (docs/contract.md §1.4), normalised by
                :func:`~projectops.normalize_base_url`.
            timeout: seconds one exchange may take as a whole (connecting, sending and reading the
                body, §9.1), not each socket read;
                :data:`~projectops.conventions.DEFAULT_CALL_TIMEOUT` (30) by default; ``None``: no
                limit.
            max_response_bytes: the largest 2xx body read, in bytes (§6); 32 MiB by default. A
                larger one is cut and marked ``truncated``.
            max_error_bytes: the largest body of another status read, in bytes; ``None`` (the
                default): `max_response_bytes`.
            transport: an ``httpx2.BaseTransport`` (``AsyncBaseTransport`` for
                :class:`AsyncRawClient`) to use instead of the network and the environment's proxy,
                e.g. an ASGI app's; ``None`` (the default): the network, through the proxy
                ``HTTP(S)_PROXY``/``ALL_PROXY`` name (``NO_PROXY`` exempts).
            secrets: strings redacted from every text an error quotes (§9.4), e.g. the API key;
                ``None`` items are skipped.
            max_connections: connections to the service open at once at most (without
                `transport`); an exchange past them waits for one, and the wait counts against
                its `timeout`; 100 by default.

        Raises:
            projectops.InvalidBaseUrl: (a ``ValueError``) see
                :func:`~projectops.normalize_base_url`.
            InvalidProxy: (a ``ValueError``) the environment's proxy cannot be used.
            ValueError: a time-out or cap that is not positive.
            TypeError: a time-out or cap that is not a number.
        """
        self._max_error = check_limits(timeout, max_response_bytes, max_error_bytes)
        if isinstance(max_connections, bool) or not isinstance(max_connections, int):
            raise TypeError("max_connections must be an int")
        if max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, not {max_connections}")
        self.max_connections = max_connections
        self._secrets = tuple(secrets)
        self.base_url = normalize_base_url(base_url, secrets=self._secrets)
        #: The base URL as messages show it: a key in its path redacted (docs/contract.md §9.4).
        self.shown_url = shown_url(self.base_url, self._secrets)
        self.timeout = timeout
        self.max_response_bytes = max_response_bytes
        self._own = transport is None
        self._http = self._http_class(
            timeout=timeout,
            transport=transport or self._transport(),
            follow_redirects=False,
            # No domain allowed: every Set-Cookie is refused, so none rides along later.
            cookies=CookieJar(policy=DefaultCookiePolicy(allowed_domains=[])),
            trust_env=False,  # the proxy is the transport's; no .netrc
        )
        self._http.headers.clear()  # httpx2's defaults: only the caller's go out

    def _transport(self) -> Any:
        return _DeadlineTransport(self.base_url, self.max_connections)

    def _request(
        self,
        method: str,
        path: str,
        body: bytes | None,
        headers: Any,
    ) -> Any:
        if isinstance(headers, Mapping):
            headers = headers.items()
        pairs = list(headers)
        for name, value in pairs:
            check_header(name, value)
        pairs.append(("Accept-Encoding", "identity"))  # nothing inflates (a gzip bomb: 1000x)
        url = self.base_url + path
        return self._http.build_request(method, url, headers=pairs, content=body)

    def _end(self, deadline: float | None) -> float | None:
        """The earlier of this exchange's time-out and the caller's `deadline`, or ``None``."""
        ends: list[float] = []
        if deadline is not None:
            ends.append(deadline)
        if self.timeout is not None:
            ends.append(time.monotonic() + self.timeout)
        return min(ends, default=None)

    def _cap(self, response: httpx2.Response) -> int:
        """The cap of this response's body; 0: a 2xx announcing more (not read)."""
        if not 200 <= response.status_code < 300:
            return self._max_error
        length = response.headers.get("Content-Length", "")
        over = length.isascii() and length.isdigit() and int(length) > self.max_response_bytes
        if over:
            return 0
        return self.max_response_bytes

    @staticmethod
    def _take(body: bytearray, chunk: bytes, cap: int) -> bool:
        """Append `chunk` up to one byte past `cap`; False once it is there (stop reading)."""
        body += chunk[: cap + 1 - len(body)]
        return len(body) <= cap

    @staticmethod
    def _response(
        response: httpx2.Response,
        body: bytearray,
        cap: int,
    ) -> RawResponse:
        headers = [
            (name.decode("latin-1"), value.decode("latin-1"))
            for name, value in response.headers.raw
        ]
        truncated = not cap or len(body) > cap
        # Cut in place before the copy: a slice, then bytes, would hold the response three times.
        kept = cap
        if truncated:
            kept = min(cap, _SHOWN_BYTES)
        del body[kept:]
        return RawResponse(response.status_code, headers, bytes(body), truncated)

    def _failure(self, exc: httpx2.RequestError) -> ResponseTimedOut | ServiceUnreachable:
        if isinstance(exc, httpx2.TimeoutException):
            return timed_out(self)
        reason = re.sub(r"^\[Errno -?\d+\]\s*", "", str(exc))
        if not reason:
            reason = type(exc).__name__
        reason = outside_text(reason, 300, self._secrets)
        return ServiceUnreachable(
            f"cannot reach {self.shown_url}: {reason[:1].lower()}{reason[1:]}"
        )


class Closing:  # of RawClient and Client
    _http: Any

    def close(self) -> None:
        """Close the connection pool; the client cannot be used afterwards."""
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncClosing:
    _http: Any

    async def aclose(self) -> None:
        """Close the connection pool; the client cannot be used afterwards."""
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class RawClient(_BaseRawClient, Closing):
    """Bounded raw HTTP exchanges with one service, under the clients, the conformance runner and
    the proxy (docs/contract.md §9.1, §9.2).

    Each exchange is bounded as a whole by `timeout`; the body is read raw up to a cap
    (``Accept-Encoding: identity``); no cookie is kept and no redirect followed (§1.5). Use it
    in ``with``, or call ``close()``. The arguments are those of ``__init__`` below.
    """

    def send(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: Mapping[str, str] | Iterable[tuple[str, str]] = (),
        *,
        deadline: float | None = None,
    ) -> RawResponse:
        """One exchange: `method` to ``base_url + path`` with `body` and exactly `headers`, plus the
        framing headers the exchange writes itself.

        Args:
            method: the HTTP method, ``"POST"``.
            path: the path after the base URL, ``/api/mcp/get_release_details``, sent as it is.
            body: the request body; ``None`` (the default): none.
            headers: the request headers, a mapping or ``(name, value)`` pairs (a name may repeat).
            deadline: a ``time.monotonic()`` instant the exchange must end by, besides `timeout`
                (the earlier bounds it); ``None`` (the default): only `timeout`.

        Returns:
            The response, whatever its status.

        Raises:
            ValueError: a header the exchange refuses (a framing header, a name that is not
                a token, a value with a control character); nothing was sent.
            ResponseTimedOut: no complete answer in time.
            ServiceUnreachable: refused, reset, no such host; never chained to the HTTP library's
                exception.
        """
        request = self._request(method, path, body, headers)
        end = self._end(deadline)
        result: RawResponse | BaseException
        if self._own or end is None:
            token = _DEADLINE.set(end)
            try:
                result = self._read(request, None)
            finally:
                _DEADLINE.reset(token)
        else:  # a caller's transport knows no deadline: the exchange stops waiting for it
            done: list[RawResponse | BaseException] = []
            stop = threading.Event()

            def work() -> None:
                try:
                    done.append(self._read(request, stop))
                except BaseException as exc:  # handed to the calling thread
                    done.append(exc)

            worker = threading.Thread(target=work, name="projectops-exchange", daemon=True)
            worker.start()
            worker.join(max(0.0, end - time.monotonic()))
            stop.set()  # a late worker drops its response
            if done:
                result = done[0]
            else:
                result = timed_out(self)
        if isinstance(result, BaseException):
            raise result  # outside any handler: no __context__ holding the request
        return result

    def _read(
        self, request: httpx2.Request, stop: threading.Event | None
    ) -> RawResponse | Exception:
        try:
            with closing(self._http.send(request, stream=True)) as response:
                body = bytearray()
                cap = self._cap(response)
                chunks: Iterable[bytes] = ()  # a 2xx announcing more than the cap: not read
                if cap and response.is_stream_consumed:  # an in-memory answer, read already
                    chunks = (response.content,)
                elif cap:
                    chunks = response.iter_raw()
                for chunk in chunks:
                    if not self._take(body, chunk, cap):
                        break
                    if stop is not None and stop.is_set():
                        raise httpx2.ReadTimeout("the exchange stopped waiting for this answer")
                return self._response(response, body, cap)
        except httpx2.RequestError as exc:
            return self._failure(exc)


class AsyncRawClient(_BaseRawClient, AsyncClosing):
    """:class:`RawClient` for ``await`` and ``async with``: `transport` is an
    ``httpx2.AsyncBaseTransport``; a cancel scope bounds each exchange.
    """

    _http_class = httpx2.AsyncClient

    def _transport(self) -> Any:
        limits = httpx2.Limits(
            max_connections=self.max_connections,
            max_keepalive_connections=min(self.max_connections, _KEPT_ALIVE),
        )
        proxy = environment_proxy(self.base_url)
        return httpx2.AsyncHTTPTransport(proxy=proxy, limits=limits)

    async def send(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: Mapping[str, str] | Iterable[tuple[str, str]] = (),
        *,
        deadline: float | None = None,
    ) -> RawResponse:
        """One exchange, awaited: :meth:`RawClient.send`.

        Args:
            method: the HTTP method, ``"POST"``.
            path: the path after the base URL, sent as it is.
            body: the request body; ``None`` (the default): none.
            headers: the request headers, a mapping or ``(name, value)`` pairs.
            deadline: a ``time.monotonic()`` instant the exchange must end by; ``None`` (the
                default): only `timeout`.

        Returns:
            The response, whatever its status.

        Raises:
            ValueError: a header the exchange refuses; nothing was sent.
            ResponseTimedOut: no complete answer in time.
            ServiceUnreachable: refused, reset, no such host.
        """
        request = self._request(method, path, body, headers)
        end = self._end(deadline)
        left = None
        if end is not None:
            left = end - time.monotonic()
        with anyio.move_on_after(left):
            result = await self._read(request)
            if isinstance(result, Exception):
                raise result
            return result
        raise timed_out(self)  # cancelled at the end

    async def _read(self, request: httpx2.Request) -> RawResponse | Exception:
        try:
            async with aclosing(await self._http.send(request, stream=True)) as response:
                body = bytearray()
                cap = self._cap(response)
                if response.is_stream_consumed:  # an in-memory answer, read already
                    self._take(body, response.content, cap)
                elif cap:
                    async for chunk in response.aiter_raw():
                        if not self._take(body, chunk, cap):
                            break
                return self._response(response, body, cap)
        except httpx2.RequestError as exc:
            return self._failure(exc)
