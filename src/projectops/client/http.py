"""The HTTP client of the API, synchronous and asynchronous.

One call is ``POST {base_url}/api/mcp/<operation_name>`` with the request message as a JSON
object in the protobuf JSON mapping, ``Content-Type: application/json`` and the project API key
in ``Service-Api-Key``; nothing else identifies the project. The answer is decoded into the
operation's response message, or raised as the :class:`~projectops.ApiError` subclass of its
``ErrorResponse`` body. Redirects are never followed, nothing is retried, and no cookie is
kept (a ``Set-Cookie`` is never sent back).

:class:`Client` and :class:`AsyncClient` differ only in how they wait for the answer: both
build the request and read the answer with the methods of their one base,
:class:`projectops.client._base.BaseClient`. The sync client's whole-call deadline transport
is :mod:`projectops.client._transport`; the proxy both take from the environment,
:mod:`projectops.client._proxy`. The typed per-rpc clients (``OperationsServiceClient``,
generated into :mod:`projectops.client._services`) subclass them. Errors, beside those of
:mod:`projectops.errors` (``http_status`` is the answer's status, ``None`` when nothing was
sent or nothing came back)::

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

Every peer is hostile, the service included:

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

import time
from contextlib import aclosing
from types import TracebackType
from typing import Self, TypeVar, overload

import anyio
import httpx
from google.protobuf.message import Message

from projectops.client._base import (
    BaseClient,
    OperationKey,
    RequestLike,
    no_cookies,
    own_headers_only,
    prepare_request,
    request_message,
)
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
from projectops.client._proxy import InvalidProxy, environment_proxy
from projectops.client._transport import (
    DEADLINE,
    DeadlineTransport,
    Expired,
    araw_chunks,
    raw_chunks,
)
from projectops.client.redaction import scrub_exception
from projectops.conventions import DEFAULT_CALL_TIMEOUT, DEFAULT_MAX_RESPONSE_BYTES
from projectops.errors import ApiError

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


class Client(BaseClient):
    """Synchronous client of the API.

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
            transport = DeadlineTransport(self.base_url)
        self._http = httpx.Client(
            timeout=timeout, transport=transport, follow_redirects=False, cookies=no_cookies()
        )
        own_headers_only(self._http)

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
        token = DEADLINE.set(deadline)
        failure: ApiError | None = None
        body = bytearray()
        try:
            response = self._http.send(http_request, stream=True)
            try:
                limit = self._body_limit(op, response)
                for chunk in raw_chunks(response):
                    if not self._take(op, response, body, chunk, limit):
                        break
                    if deadline is not None and time.monotonic() > deadline:
                        raise Expired  # a transport of the caller's: checked between chunks
            finally:
                response.close()
        except httpx.RequestError as exc:
            failure = self._no_answer(exc)
        except Expired:
            failure = self._timed_out()
        finally:
            DEADLINE.reset(token)
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


class AsyncClient(BaseClient):
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
            transport = httpx.AsyncHTTPTransport(proxy=environment_proxy(self.base_url))
        self._http = httpx.AsyncClient(
            timeout=timeout, transport=transport, follow_redirects=False, cookies=no_cookies()
        )
        own_headers_only(self._http)

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
                    async with aclosing(araw_chunks(response)) as chunks:
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
