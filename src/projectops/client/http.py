"""The HTTP client of the API (spec sections 4.1, 5 and 7), synchronous and asynchronous.

One call is ``POST {base_url}/api/mcp/<operation_name>`` with the request message as a JSON
object in the protobuf JSON mapping, ``Content-Type: application/json`` and the project API key
in ``Service-Api-Key``; nothing else identifies the project. The answer is decoded into the
operation's response message, or raised as the :class:`~projectops.ApiError` subclass of its
``ErrorResponse`` body. Redirects are never followed, nothing is retried, and no cookie is
kept (a ``Set-Cookie`` is never sent back).

:class:`Client` and :class:`AsyncClient` differ only in how they wait for the answer: both
build the request and read the answer with the methods of :class:`_CallBuilder`. The typed
per-rpc clients (``OperationsServiceClient``, generated into :mod:`projectops.client._services`)
subclass them. Errors, beside those of :mod:`projectops.errors` (``http_status`` is the answer's
status, ``None`` when nothing was sent or nothing came back)::

    ApiError
    ├── InvalidArgument
    │   └── InvalidRequest        the request is invalid, found locally; nothing was sent
    ├── Unauthenticated
    │   └── MissingApiKey         no usable key configured; nothing was sent
    ├── Internal
    │   └── InvalidResponse       a 2xx answer that is not the operation's response message
    │       └── AnswerTooLarge    an answer over max_response_bytes; not read to its end
    ├── UnexpectedRedirect        a 3xx answer (never followed: a POST must not become a GET)
    ├── Unavailable
    │   └── ServiceUnreachable    no answer: the service could not be reached
    └── DeadlineExceeded
        └── AnswerTimedOut        no complete answer within the time-out

Every peer is hostile (DESIGN.md, "Trust"), the service included:

- ``timeout`` bounds the whole call, from connecting to the last byte of the answer, not each
  socket read: a server that sends its headers or body a byte a second is cut off when the
  time is up. The async client runs the call in an anyio cancel scope; the sync client's own
  transport gives every socket operation only what is left of the call's time.
- The answer is read as a stream and capped at ``max_response_bytes`` (32 MiB by default):
  a ``Content-Length`` over it is refused before the body is read, and reading stops as soon
  as the bytes read pass it. The client asks for ``Accept-Encoding: identity`` and refuses an
  answer in any other ``Content-Encoding`` without decoding it (:class:`InvalidResponse`),
  so nothing is inflated. Error
  bodies (non-2xx) are read up to 1 MiB only.
- Every text taken from the answer is escaped and cut before it becomes part of an exception
  (:mod:`projectops._text`), and the API key, given as ``api_key`` or through
  ``SERVICE_API_KEY``, is redacted from every exception a call raises and the exceptions
  chained to it, in any spelling (:mod:`projectops.client.redaction`). A base URL that holds
  a user name or password is refused at construction.
"""

from __future__ import annotations

import importlib.util
import os
import re
import time
import urllib.request
from collections.abc import AsyncGenerator, Iterator, Mapping
from contextlib import aclosing, contextmanager
from contextvars import ContextVar
from http.cookiejar import CookieJar, DefaultCookiePolicy
from types import TracebackType
from typing import Any, Self, TypeVar, overload
from urllib.parse import urlsplit

import anyio
import httpcore
import httpx
from google.protobuf.message import Message

import projectops
from projectops._text import outside_text
from projectops.client._errors import (
    AnswerTimedOut,
    AnswerTooLarge,
    InvalidRequest,
    InvalidResponse,
    MissingApiKey,
    ServiceUnreachable,
    UnexpectedRedirect,
    error_from_answer,
)
from projectops.client.redaction import scrub_exception
from projectops.codec import from_json, to_json
from projectops.conventions import (
    API_KEY_ENV,
    API_KEY_HEADER,
    BASE_URL_ENV,
    CONTENT_TYPE,
    DEFAULT_BASE_URL,
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_MAX_RESPONSE_BYTES,
    normalize_base_url,
)
from projectops.errors import ApiError, InvalidArgument
from projectops.registry import Operation, operation
from projectops.validation import validate

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "AnswerTimedOut",
    "AnswerTooLarge",
    "AsyncClient",
    "Client",
    "InvalidProxy",
    "InvalidRequest",
    "InvalidResponse",
    "MissingApiKey",
    "OperationKey",
    "RequestLike",
    "ServiceUnreachable",
    "UnexpectedRedirect",
    "error_from_answer",
    "prepare_request",
    "request_message",
]

R = TypeVar("R", bound=Message)

#: What names an operation: operation name, tool name, path or the :class:`Operation` itself.
OperationKey = str | Operation
#: What a request can be given as: the request message, a JSON object, or ``None`` for ``{}``.
RequestLike = Message | Mapping[str, Any] | None

# A key must travel as an HTTP header value: visible ASCII only. Checked locally so that no
# HTTP library ever gets to quote an unusable key in its own error message.
_KEY_PATTERN = re.compile(r"[\x21-\x7e]+")
_ERRNO_PREFIX = re.compile(r"^\[Errno -?\d+\]\s*")

# Bytes of a non-2xx answer's body that are read: its message is cut to 1,000 characters.
_MAX_ERROR_BODY_BYTES = 1024 * 1024


class _Expired(Exception):
    """The call's deadline passed (raised by the sync transport's streams and between reads)."""


#: The longest single socket wait handed to the OS, in seconds (a day); a longer time-out is
#: still honoured as a whole, in waits of at most this.
_LONGEST_WAIT = 86_400.0

# Monotonic time by which the sync call running in this context must have its whole answer.
_DEADLINE: ContextVar[float | None] = ContextVar("projectops_call_deadline", default=None)


def _left(timeout: float | None, error: type[httpcore.TimeoutException]) -> float | None:
    """`timeout` of one socket operation cut to what is left of the call's time."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise error("the call's time-out passed")
    left = min(left, _LONGEST_WAIT)  # the OS's waits overflow far beyond it
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A socket stream whose every read, write and TLS handshake waits at most what is left
    of the call's time (:data:`_DEADLINE`), so a trickle of bytes cannot stretch a call."""

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


class _DeadlineTransport(httpx.BaseTransport):
    """The sync client's transport: httpx's default connection pool (httpcore), on
    :class:`_DeadlineBackend`, so the whole call is bounded by its time-out (a per-read
    time-out alone lets a server that sends a byte a second hold a call for ever).

    With a proxy from the environment (:func:`_environment_proxy`) the pool is httpcore's
    proxy pool on the same backend, as httpx's own transport would mount it: the time-out
    then bounds the proxy's answer, and a ``CONNECT`` tunnel's, as a whole too.
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
        proxy = _environment_proxy(base_url)
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
        else:  # socks5, socks5h (checked by _environment_proxy); needs httpx[socks]
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


def _raw_chunks(response: httpx.Response) -> Iterator[bytes]:
    """The body of a streamed `response` as it arrives, never decoded (any
    ``Content-Encoding`` was refused before); all at once if a transport already read it."""
    try:
        yield response.content  # an in-memory transport (httpx.MockTransport) read it
    except httpx.ResponseNotRead:
        yield from response.iter_raw()


async def _araw_chunks(response: httpx.Response) -> AsyncGenerator[bytes, None]:
    """:func:`_raw_chunks` of an async `response`."""
    try:
        yield response.content
    except httpx.ResponseNotRead:
        async for chunk in response.aiter_raw():
            yield chunk


# The proxy schemes httpx (httpcore) can speak.
_PROXY_SCHEMES = ("http", "https", "socks5", "socks5h")


class InvalidProxy(ValueError):
    """The environment names a proxy for the base URL that cannot be used (not a URL, an
    unknown scheme, SOCKS without ``socksio``); the message never quotes its address."""


def _environment_proxy(url: str) -> httpx.Proxy | None:
    """The proxy that the environment (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``,
    ``NO_PROXY``, any case) names for requests to `url`, or ``None`` for a direct connection.

    Raises:
        InvalidProxy: the proxy is not a URL, its scheme is none of http, https, socks5 and
            socks5h, or it is socks5 and the ``socksio`` package is missing.
    """
    proxies = urllib.request.getproxies_environment()
    parts = urlsplit(url)
    address = proxies.get(parts.scheme) or proxies.get("all")
    if not address or urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    address = address if "://" in address else f"http://{address}"
    try:
        scheme = urlsplit(address).scheme.lower()
        proxy = httpx.Proxy(address) if scheme in _PROXY_SCHEMES else None
    except (ValueError, httpx.InvalidURL):
        raise InvalidProxy(
            f"the environment's proxy for {parts.scheme} requests is not a valid URL"
        ) from None
    if proxy is None:
        raise InvalidProxy(
            f"the environment's proxy for {parts.scheme} requests has the scheme {scheme!r}; "
            f"use one of {', '.join(_PROXY_SCHEMES)}"
        )
    if scheme.startswith("socks") and importlib.util.find_spec("socksio") is None:
        raise InvalidProxy(
            f"the environment's proxy for {parts.scheme} requests is a SOCKS proxy, which "
            "needs the socksio package: pip install 'httpx[socks]'"
        )
    return proxy


def _no_cookies() -> CookieJar:
    """A cookie jar that keeps no cookie and so sends none.

    The API key alone identifies the caller: a cookie a server set must not ride along with
    later calls (nor, in the tool server, with another agent's session). The standard
    library's policy does it through public API: with no domain allowed, ``set_ok`` refuses
    every ``Set-Cookie`` and ``return_ok`` every stored cookie. httpx extracts cookies in the
    client, not the transport, so this holds for a caller's transport too.
    """
    return CookieJar(policy=DefaultCookiePolicy(allowed_domains=[]))


def _own_headers_only(http: httpx.Client | httpx.AsyncClient) -> None:
    """Drop httpx's default headers: a call sends exactly the headers :meth:`_request` sets
    (and what HTTP/1.1 needs: Host, Content-Length)."""
    for name in list(http.headers):
        del http.headers[name]


class _CallBuilder:
    """Everything of a call but the waiting: configuration, request building, answer decoding.

    Shared by :class:`Client` and :class:`AsyncClient` so the two cannot drift.
    """

    _http: httpx.Client | httpx.AsyncClient

    def __init__(
        self,
        base_url: str | None,
        api_key: str | None,
        timeout: float | None,
        max_response_bytes: int,
    ) -> None:
        # An empty environment variable counts as unset; an explicit argument is checked as is.
        url = (
            base_url if base_url is not None else (os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL)
        )
        self._base_url = normalize_base_url(url)
        key = api_key if api_key is not None else os.environ.get(API_KEY_ENV)
        self._api_key = key.strip() if key else None
        # The argument as given too: a key with surrounding blanks is still a secret.
        self._secrets = (self._api_key, api_key)
        if timeout is not None and not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds or None, not {timeout}")
        self._timeout = timeout
        if isinstance(max_response_bytes, bool) or not isinstance(max_response_bytes, int):
            raise TypeError("max_response_bytes must be an int (bytes)")
        if max_response_bytes < 1:
            raise ValueError(f"max_response_bytes must be at least 1, not {max_response_bytes}")
        self._max_response_bytes = max_response_bytes

    @property
    def base_url(self) -> str:
        """The base URL every path is appended to: absolute http(s), no trailing slash."""
        return self._base_url

    @property
    def timeout(self) -> float | None:
        """Seconds a whole call may take, connecting to the answer's last byte; None: no
        limit."""
        return self._timeout

    @property
    def max_response_bytes(self) -> int:
        """The largest answer body a call reads, in bytes."""
        return self._max_response_bytes

    @property
    def has_api_key(self) -> bool:
        """Whether an API key is configured (its value is never exposed)."""
        return bool(self._api_key)

    def __repr__(self) -> str:
        key = "set" if self._api_key else "unset"
        return f"{type(self).__name__}(base_url={self._base_url!r}, api_key=<{key}>)"

    def _request(
        self, key: OperationKey, request: RequestLike, response_type: type[Message] | None
    ) -> tuple[Operation, httpx.Request]:
        """Check everything locally (validating the request once), then build the HTTP
        request of one call."""
        op = operation(key)
        if response_type is not None and response_type is not op.response_type:
            raise TypeError(
                f"{op.name} answers with {op.response_type.__name__}, not {response_type.__name__}"
            )
        message = prepare_request(op, request)
        if not self._api_key or not _KEY_PATTERN.fullmatch(self._api_key):
            problem = "is not set" if not self._api_key else "is not a valid HTTP header value"
            raise MissingApiKey(
                f"no usable API key: {API_KEY_ENV} {problem}; set it to the "
                "project's API key (from the project settings, key management)"
            )
        headers = {
            "Content-Type": CONTENT_TYPE,
            "Accept": CONTENT_TYPE,
            # Nothing is decompressed that was not asked for (a gzip bomb inflates 1000-fold).
            "Accept-Encoding": "identity",
            "User-Agent": f"projectops/{projectops.__version__}",
            API_KEY_HEADER: self._api_key,
        }
        body = to_json(message).encode("utf-8")
        return op, self._http.build_request(
            "POST", self._base_url + op.path, headers=headers, content=body
        )

    def _body_limit(self, op: Operation, response: httpx.Response) -> int:
        """How many bytes of `response`'s body to read, decided before reading any.

        Raises:
            InvalidResponse: a ``Content-Encoding`` other than identity (not decoded).
            AnswerTooLarge: a 2xx answer whose ``Content-Length`` is over the limit.
        """
        status = response.status_code
        encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            raise InvalidResponse(
                f"the answer of {self._base_url}{op.path} (HTTP {status}) came with "
                f"Content-Encoding: {outside_text(encoding, 40)}, which this client did not ask "
                "for (it sends Accept-Encoding: identity); it was not decoded",
                http_status=status,
            )
        if not 200 <= status < 300:
            return min(self._max_response_bytes, _MAX_ERROR_BODY_BYTES)
        length = response.headers.get("Content-Length", "")
        if length.isdigit() and int(length) > self._max_response_bytes:
            raise self._too_large(op, status, f"announces {int(length):,} bytes", "not read")
        return self._max_response_bytes

    def _too_large(self, op: Operation, status: int, what: str, done: str) -> AnswerTooLarge:
        return AnswerTooLarge(
            f"the answer of {self._base_url}{op.path} (HTTP {status}) {what}, over the limit "
            f"of {self._max_response_bytes:,} bytes (max_response_bytes); it was {done}",
            http_status=status,
        )

    def _take(
        self, op: Operation, response: httpx.Response, body: bytearray, chunk: bytes, limit: int
    ) -> bool:
        """Append `chunk` to `body`; False when the body reached `limit` (stop reading).

        Raises:
            AnswerTooLarge: a 2xx answer's body passed the limit.
        """
        room = limit - len(body)
        if len(chunk) <= room:
            body += chunk
            return True
        if 200 <= response.status_code < 300:
            raise self._too_large(op, response.status_code, "is larger", "read no further")
        body += chunk[:room]  # an error body: its head is enough for its message
        return False

    def _response(self, op: Operation, response: httpx.Response, body: bytes) -> Message:
        """The response message of a 2xx answer; raise the ApiError of any other answer."""
        status = response.status_code
        if not 200 <= status < 300:
            if 300 <= status < 400:
                where = outside_text(response.headers.get("Location", "elsewhere"), 300)
                raise UnexpectedRedirect(
                    f"HTTP {status}: redirect to {where} not followed (a "
                    "POST is never redirected; check the base URL)",
                    http_status=status,
                )
            raise error_from_answer(
                status,
                body,
                url=self._base_url + op.path,
                content_type=response.headers.get("Content-Type"),
            )
        try:
            # Not strict: a newer server may add fields this version does not know.
            return from_json(body, op.response_type)
        except InvalidArgument as exc:
            raise InvalidResponse(
                f"the answer of {op.path} is not a {op.response_type.__name__}: "
                + outside_text(exc.message),
                http_status=status,
            ) from None

    def _timed_out(self) -> AnswerTimedOut:
        limit = "" if self._timeout is None else f" of {self._timeout:g} s"
        return AnswerTimedOut(
            f"no complete answer from {self._base_url} within the time-out{limit}"
        )

    def _no_answer(self, exc: httpx.RequestError) -> ApiError:
        """The error to raise when a call got no answer; `exc` must not be chained to it,
        since it holds the request, API key header included."""
        if isinstance(exc, httpx.TimeoutException):
            return self._timed_out()
        reason = outside_text(_ERRNO_PREFIX.sub("", str(exc)) or type(exc).__name__, 300)
        return ServiceUnreachable(
            f"cannot reach {self._base_url}: {reason[:1].lower()}{reason[1:]}"
        )


def request_message(
    key: OperationKey, request: Message | None, fields: Mapping[str, Any]
) -> Message:
    """The request of a typed per-rpc method: `request` itself, or a new request message
    built from the keyword `fields` that are not ``None`` (nothing is validated here).

    Raises:
        TypeError: both a request message and fields were given.
    """
    given = {name: value for name, value in fields.items() if value is not None}
    if request is not None:
        if given:
            raise TypeError(
                f"give the request message or its fields ({', '.join(given)}), not both"
            )
        return request
    return operation(key).request_type(**given)


def prepare_request(key: OperationKey, request: RequestLike = None) -> Message:
    """The validated request message of one call, built without any I/O.

    Args:
        key: the operation (name, tool name, path or :class:`~projectops.Operation`).
        request: the operation's request message; a JSON object (``Mapping``) decoded strictly
            with :func:`projectops.from_json` (unknown fields are a mistake of local input);
            or ``None`` for the empty request ``{}``.

    Raises:
        projectops.UnknownOperationError: no such operation.
        TypeError: `request` is a message of another type, or neither a message nor a mapping.
        InvalidRequest: a field has the wrong form, is unknown, or a REQUIRED field is missing
            or blank; the message names the field (an :class:`~projectops.InvalidArgument`
            with ``http_status=None``).
    """
    op = operation(key)
    if request is None:
        message = op.request_type()
    elif isinstance(request, Message):
        if request.DESCRIPTOR.full_name != op.request_type.DESCRIPTOR.full_name:
            raise TypeError(
                f"{op.name} takes a {op.request_type.__name__}, not a {type(request).__name__}"
            )
        message = request
    else:
        if not isinstance(request, Mapping):
            raise TypeError(
                f"a request is a {op.request_type.__name__}, a mapping or None, "
                f"not {type(request).__name__}"
            )
        try:
            message = from_json(request, op.request_type, strict=True)
        except InvalidArgument as exc:
            raise InvalidRequest(exc.message, exc.violations) from None
    try:
        validate(message)
    except InvalidArgument as exc:
        raise InvalidRequest(exc.message, exc.violations) from None
    return message


class Client(_CallBuilder):
    """Synchronous client of the API (spec 4.1, 5, 7).

    Args:
        base_url: the service's base address, e.g. ``https://ops.example.com``. Defaults to
            the ``SERVICE_BACKEND_URL`` environment variable, then to
            :data:`~projectops.DEFAULT_BASE_URL` (``http://127.0.0.1:8787``, where
            ``projectops mock-server`` listens). Trailing slashes are stripped.
        api_key: the project API key. Defaults to the ``SERVICE_API_KEY`` environment
            variable. A missing key is not an error here (a tool server starts without one);
            :meth:`call` raises :class:`MissingApiKey` instead. Never shown by ``repr``, and
            redacted from every exception a call raises.
        timeout: seconds a whole call may take, from connecting to the last byte of the
            answer (not per socket read); ``None`` waits forever. Exceeding it raises
            :class:`AnswerTimedOut` (a :class:`~projectops.DeadlineExceeded`).
        max_response_bytes: the largest answer body read, in bytes (default 32 MiB); a
            larger answer raises :class:`AnswerTooLarge` without being read to its end.
        transport: an ``httpx.BaseTransport`` to send through instead of the network (for
            tests, e.g. ``httpx.MockTransport``, or to embed the client). The time-out then
            bounds the wait between chunks of the body, not the transport's own waits. Without
            it, a proxy named by the environment is used, and the time-out bounds the call
            through it as a whole.

    Raises:
        projectops.InvalidBaseUrl: (a ``ValueError``) the base URL is not an absolute
            http(s) URL, or holds a user name or password (the message never quotes them).
        InvalidProxy: (a ``ValueError``) the environment's proxy for the base URL
            (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``; ``NO_PROXY`` exempts hosts) is not
            an http, https or socks5 URL.
        ValueError: `timeout` is not positive, or `max_response_bytes` is less than 1.
        TypeError: `max_response_bytes` is not an int.

    Use as a context manager, or call :meth:`close` when done.
    """

    _http: httpx.Client

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float | None = DEFAULT_CALL_TIMEOUT,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        super().__init__(base_url, api_key, timeout, max_response_bytes)
        if transport is None:
            transport = _DeadlineTransport(self.base_url)
        self._http = httpx.Client(
            timeout=timeout, transport=transport, follow_redirects=False, cookies=_no_cookies()
        )
        _own_headers_only(self._http)

    @overload
    def call(self, operation: OperationKey, request: RequestLike = None) -> Message: ...

    @overload
    def call(
        self, operation: OperationKey, request: RequestLike = None, *, response_type: type[R]
    ) -> R: ...

    def call(
        self,
        operation: OperationKey,
        request: RequestLike = None,
        *,
        response_type: type[Message] | None = None,
    ) -> Message:
        """Call one operation and return its response message.

        Args:
            operation: operation name, tool name, path or :class:`~projectops.Operation`.
            request: the request message, a JSON object, or ``None`` (``{}``); see
                :func:`prepare_request`.
            response_type: the operation's response class, only to type the result
                statically: ``call(op, req, response_type=GetReleaseDetailsResponse)`` is
                typed ``GetReleaseDetailsResponse`` (TypeError if it is not the operation's).

        Returns:
            The decoded response message (unknown fields of a newer server are ignored).

        Raises:
            projectops.UnknownOperationError: no such operation.
            TypeError: the request or `response_type` is not the operation's.
            InvalidRequest: invalid request, found locally (nothing is sent).
            MissingApiKey: no usable API key (nothing is sent).
            projectops.ApiError: the server answered with a non-2xx status: the subclass of
                :func:`error_from_answer` (``Unauthenticated`` for 401, ``InvalidArgument`` or
                ``FailedPrecondition`` for 400, ...; ``http_status`` is the answer's).
            UnexpectedRedirect: a 3xx answer (not followed).
            InvalidResponse: a 2xx answer that is not the response message, or any answer
                in a ``Content-Encoding`` not asked for (never decoded).
            AnswerTooLarge: a 2xx answer over `max_response_bytes`, not read to its end (an
                :class:`InvalidResponse`).
            ServiceUnreachable: no answer: the service could not be reached (an
                :class:`~projectops.Unavailable`).
            AnswerTimedOut: no complete answer within `timeout` seconds (a
                :class:`~projectops.DeadlineExceeded`).

        No exception it raises, nor any chained to it, holds the API key.
        """
        try:
            return self._call(operation, request, response_type)
        except Exception as exc:
            scrub_exception(exc, self._secrets)
            raise

    def _call(
        self, key: OperationKey, request: RequestLike, response_type: type[Message] | None
    ) -> Message:
        op, http_request = self._request(key, request, response_type)
        deadline = None if self._timeout is None else time.monotonic() + self._timeout
        token = _DEADLINE.set(deadline)
        failure: ApiError | None = None
        body = bytearray()
        try:
            response = self._http.send(http_request, stream=True)
            try:
                limit = self._body_limit(op, response)
                for chunk in _raw_chunks(response):
                    if not self._take(op, response, body, chunk, limit):
                        break
                    if deadline is not None and time.monotonic() > deadline:
                        raise _Expired  # a transport of the caller's: checked between chunks
            finally:
                response.close()
        except httpx.RequestError as exc:
            failure = self._no_answer(exc)
        except _Expired:
            failure = self._timed_out()
        finally:
            _DEADLINE.reset(token)
        if failure is not None:
            raise failure  # outside the handler: no __context__ holding the request's headers
        return self._response(op, response, bytes(body))

    def close(self) -> None:
        """Close the connection pool; the client cannot be used afterwards."""
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class AsyncClient(_CallBuilder):
    """Asynchronous client of the API: :class:`Client` with ``await client.call(...)``.

    Same arguments and errors as :class:`Client`; `transport` is an
    ``httpx.AsyncBaseTransport``. The time-out is an anyio cancel scope around the whole
    call, whatever the transport. Use as an async context manager, or ``await aclose()``.
    """

    _http: httpx.AsyncClient

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float | None = DEFAULT_CALL_TIMEOUT,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(base_url, api_key, timeout, max_response_bytes)
        if transport is None:
            # The proxy the sync client takes too: one reading of the environment.
            transport = httpx.AsyncHTTPTransport(proxy=_environment_proxy(self.base_url))
        self._http = httpx.AsyncClient(
            timeout=timeout, transport=transport, follow_redirects=False, cookies=_no_cookies()
        )
        _own_headers_only(self._http)

    @overload
    async def call(self, operation: OperationKey, request: RequestLike = None) -> Message: ...

    @overload
    async def call(
        self, operation: OperationKey, request: RequestLike = None, *, response_type: type[R]
    ) -> R: ...

    async def call(
        self,
        operation: OperationKey,
        request: RequestLike = None,
        *,
        response_type: type[Message] | None = None,
    ) -> Message:
        """Call one operation; see :meth:`Client.call` for arguments, result and errors."""
        try:
            return await self._call(operation, request, response_type)
        except Exception as exc:
            scrub_exception(exc, self._secrets)
            raise

    async def _call(
        self, key: OperationKey, request: RequestLike, response_type: type[Message] | None
    ) -> Message:
        op, http_request = self._request(key, request, response_type)
        failure: ApiError | None = None
        body = bytearray()
        try:
            with anyio.fail_after(self._timeout):
                response = await self._http.send(http_request, stream=True)
                try:
                    limit = self._body_limit(op, response)
                    async with aclosing(_araw_chunks(response)) as chunks:
                        async for chunk in chunks:
                            if not self._take(op, response, body, chunk, limit):
                                break
                finally:
                    await response.aclose()
        except httpx.RequestError as exc:
            failure = self._no_answer(exc)
        except TimeoutError:
            failure = self._timed_out()
        if failure is not None:
            raise failure  # outside the handler: no __context__ holding the request's headers
        return self._response(op, response, bytes(body))

    async def aclose(self) -> None:
        """Close the connection pool; the client cannot be used afterwards."""
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
