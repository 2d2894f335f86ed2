"""The HTTP client of the API, synchronous and asynchronous.

One call is ``POST {base_url}/api/mcp/<operation_name>`` with the request message as a JSON
object in the protobuf JSON mapping, ``Content-Type: application/json`` and the project API key
in ``Service-Api-Key``; nothing else identifies the project. The answer is decoded into the
operation's response message, or raised as the :class:`~projectops.ApiError` subclass of its
``ErrorResponse`` body. Redirects are never followed and no cookie is kept (a ``Set-Cookie``
is never sent back).

Retries: a call is repeated (``retries=``, 2 extra attempts by default, 0: never) only when
its rpc is marked ``NO_SIDE_EFFECTS`` or ``IDEMPOTENT`` and no answer came (connection refused
or reset before an answer) or the answer is 429, 502, 503 or 504 (:func:`may_retry`). The
waits are exponential with full jitter, or the answer's ``Retry-After`` in seconds, cut to
:data:`MAX_RETRY_AFTER` (:func:`retry_delay`). The time-out covers every attempt and wait: a
wait that would cross it is not taken, and the call ends with the last answer's error (or
:class:`AnswerTimedOut` if no answer came).

Interceptors (``interceptors=[...]``) wrap each call, retries included:
``interceptor(request, context, call_next) -> response`` (``async def`` for
:class:`AsyncClient`), first in the list outermost. `request` is the validated request
message, `context` a :class:`CallContext` (the operation; ``headers`` to add request headers,
never the API key's; ``attempts``). An interceptor may time the call, raise an
:class:`~projectops.ApiError`, pass another request message of the operation's type on (it is
validated), or return another response message of the operation's type.

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

import math
import threading
import time
from collections.abc import Sequence
from contextlib import aclosing
from types import TracebackType
from typing import Self, TypeVar, overload

import anyio
import httpx
from google.protobuf.message import Message

from projectops.client._base import (
    AsyncCallNext,
    AsyncInterceptor,
    Attempt,
    BaseClient,
    CallContext,
    CallNext,
    Interceptor,
    OperationKey,
    RequestHeaders,
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
    MissingBaseUrl,
    ServiceUnreachable,
    UnexpectedRedirect,
    error_from_answer,
)
from projectops.client._proxy import InvalidProxy, environment_proxy
from projectops.client._retry import (
    DEFAULT_RETRIES,
    MAX_RETRY_AFTER,
    RETRY_STATUSES,
    may_retry,
    retry_delay,
)
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
from projectops.registry import Operation

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DEFAULT_RETRIES",
    "MAX_RETRY_AFTER",
    "RETRY_STATUSES",
    "AnswerTimedOut",
    "AnswerTooLarge",
    "AsyncCallNext",
    "AsyncClient",
    "AsyncInterceptor",
    "CallContext",
    "CallNext",
    "Client",
    "Interceptor",
    "InvalidProxy",
    "InvalidRequest",
    "InvalidResponse",
    "MissingApiKey",
    "MissingBaseUrl",
    "OperationKey",
    "RequestHeaders",
    "RequestLike",
    "ServiceUnreachable",
    "UnexpectedRedirect",
    "error_from_answer",
    "may_retry",
    "prepare_request",
    "request_message",
    "retry_delay",
]

R = TypeVar("R", bound=Message)


class Client(BaseClient):
    """Synchronous client of the API.

    Args:
        base_url: the service's base address, e.g. ``https://ops.example.com``. Defaults to
            the ``SERVICE_BACKEND_URL`` environment variable (empty counts as unset); there is
            no default address: without either, :class:`MissingBaseUrl`. Trailing slashes are
            stripped. (The mock server, ``projectops mock-server``, listens on
            ``http://127.0.0.1:8787``.)
        api_key: the project API key. Defaults to the ``SERVICE_API_KEY`` environment
            variable. A missing key is not an error here (a tool server starts without one);
            :meth:`call` raises :class:`MissingApiKey` instead. Never shown by ``repr``, and
            redacted from every exception a call raises.
        timeout: seconds a whole call may take, from connecting to the last byte of the
            answer (not per socket read), every retry and wait between attempts included;
            ``None`` waits forever. Exceeding it raises :class:`AnswerTimedOut` (a
            :class:`~projectops.DeadlineExceeded`).
        max_response_bytes: the largest answer body read, in bytes (default 32 MiB); a
            larger answer raises :class:`AnswerTooLarge` without being read to its end.
        retries: extra attempts after the first, for an operation whose rpc is
            ``NO_SIDE_EFFECTS`` or ``IDEMPOTENT`` when no answer came or the answer is 429,
            502, 503 or 504 (default 2; 0 turns retries off). See the module's "Retries".
        interceptors: sync callables ``(request, context, call_next) -> response`` around
            every call, retries included, the first outermost (see the module's
            "Interceptors").
        transport: an ``httpx.BaseTransport`` to send through instead of the network (for
            tests, e.g. ``httpx.MockTransport``, or to embed the client, e.g.
            ``httpx.HTTPTransport(...)``). The time-out still bounds the whole call: each
            attempt then runs in a helper thread that the call stops waiting for at the
            deadline (a server that trickles its answer keeps that thread, and its
            connection, until the transport's own per-read time-out, which is `timeout` too,
            or the server's end). Without it, a proxy named by the environment is used, and
            the time-out bounds the call through it as a whole, on the calling thread.

    Raises:
        MissingBaseUrl: (a ``ValueError`` and a :class:`~projectops.InvalidBaseUrl`) neither
            `base_url` nor ``SERVICE_BACKEND_URL`` is set; the message names the variable.
        projectops.InvalidBaseUrl: (a ``ValueError``) the base URL is not an absolute
            http(s) URL, or holds a user name or password (the message never quotes them).
        InvalidProxy: (a ``ValueError``) the environment's proxy for the base URL
            (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``; ``NO_PROXY`` exempts hosts) is not
            an http, https or socks5 URL.
        ValueError: `timeout` is not positive, `max_response_bytes` is less than 1, or
            `retries` is negative.
        TypeError: `max_response_bytes` or `retries` is not an int, or an interceptor is not
            callable.

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
        retries: int = DEFAULT_RETRIES,
        interceptors: Sequence[Interceptor] = (),
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        super().__init__(base_url, api_key, timeout, max_response_bytes, retries, interceptors)
        self._sync_interceptors: tuple[Interceptor, ...] = tuple(interceptors)
        # Our own transport bounds every socket wait by the deadline; a caller's cannot.
        self._own_transport = transport is None
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
            TypeError: the request or `response_type` is not the operation's, or an
                interceptor returned something else than the operation's response message.
            InvalidRequest: invalid request, found locally (nothing is sent).
            MissingApiKey: no usable API key (nothing is sent).
            projectops.ApiError: the server answered with a non-2xx status: the subclass of
                :func:`error_from_answer` (the class of the code the server sent:
                ``Unauthenticated``, ``InvalidArgument``, ``FailedPrecondition``,
                ``Unavailable``, ...; ``http_status`` is the answer's). After retries, the
                last answer's.
            UnexpectedRedirect: a 3xx answer (not followed).
            InvalidResponse: a 2xx answer that is not the response message, or any answer
                in a ``Content-Encoding`` not asked for (never decoded).
            AnswerTooLarge: a 2xx answer over `max_response_bytes`, not read to its end (an
                :class:`InvalidResponse`).
            ServiceUnreachable: no answer: the service could not be reached (an
                :class:`~projectops.Unavailable`), after any retries.
            AnswerTimedOut: no complete answer within `timeout` seconds (a
                :class:`~projectops.DeadlineExceeded`).
            Whatever an interceptor raises.

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
        op, message = self._prepare(key, request, response_type)
        deadline = None if self._timeout is None else time.monotonic() + self._timeout

        def send(request: Message, context: CallContext) -> Message:
            return self._attempts(op, self._build(op, request, message, context), context, deadline)

        call_next: CallNext = send
        for interceptor in reversed(self._sync_interceptors):
            call_next = _wrap(interceptor, call_next)
        return self._checked(op, call_next(message, CallContext(op)))

    def _attempts(
        self,
        op: Operation,
        http_request: httpx.Request,
        context: CallContext,
        deadline: float | None,
    ) -> Message:
        """Send `http_request` until it succeeds, or fails for good (see the module's
        "Retries"); all attempts and waits end by `deadline` (``time.monotonic()``)."""
        retry = 0
        while True:
            self._starting(context)
            attempt = self._attempt(op, http_request, deadline)
            outcome = self._outcome(op, attempt, context)
            if isinstance(outcome, Message):
                return outcome
            left = None if deadline is None else deadline - time.monotonic()
            time.sleep(self._retry_wait(op, retry, attempt, outcome, left))
            retry += 1

    def _attempt(
        self, op: Operation, http_request: httpx.Request, deadline: float | None
    ) -> Attempt:
        if self._own_transport or deadline is None:
            token = DEADLINE.set(deadline)
            try:
                return self._send(op, http_request, deadline, None)
            finally:
                DEADLINE.reset(token)
        return self._send_bounded(op, http_request, deadline)

    def _send_bounded(self, op: Operation, http_request: httpx.Request, deadline: float) -> Attempt:
        """One attempt through a caller's transport, whose waits know no deadline: it runs in a
        daemon thread, and the call stops waiting for it at `deadline`."""
        done: list[Attempt | BaseException] = []
        stop = threading.Event()

        def work() -> None:
            try:
                done.append(self._send(op, http_request, deadline, stop))
            except BaseException as exc:  # handed to the calling thread
                done.append(exc)

        worker = threading.Thread(target=work, name="projectops-call", daemon=True)
        worker.start()
        worker.join(max(0.0, deadline - time.monotonic()))
        if not done:
            stop.set()  # the worker drops the answer when it comes
            return Attempt(None, b"", self._timed_out())
        result = done[0]
        if isinstance(result, BaseException):
            raise result
        return result

    def _send(
        self,
        op: Operation,
        http_request: httpx.Request,
        deadline: float | None,
        stop: threading.Event | None,
    ) -> Attempt:
        failure: ApiError | None = None
        response: httpx.Response | None = None
        body = bytearray()
        try:
            response = self._http.send(http_request, stream=True)
            try:
                limit = self._body_limit(op, response)
                for chunk in raw_chunks(response):
                    if not self._take(op, response, body, chunk, limit):
                        break
                    if (deadline is not None and time.monotonic() > deadline) or (
                        stop is not None and stop.is_set()
                    ):
                        raise Expired  # a transport of the caller's: checked between chunks
            finally:
                response.close()
        except httpx.RequestError as exc:
            failure = self._no_answer(exc)
        except Expired:
            failure = self._timed_out()
        # The failure is raised by the caller, outside this handler: no __context__ holding
        # the request's headers.
        return Attempt(response, bytes(body), failure)

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


def _wrap(interceptor: Interceptor, call_next: CallNext) -> CallNext:
    def call(request: Message, context: CallContext) -> Message:
        return interceptor(request, context, call_next)

    return call


def _async_wrap(interceptor: AsyncInterceptor, call_next: AsyncCallNext) -> AsyncCallNext:
    async def call(request: Message, context: CallContext) -> Message:
        return await interceptor(request, context, call_next)

    return call


class AsyncClient(BaseClient):
    """Asynchronous client of the API: :class:`Client` with ``await client.call(...)``.

    Same arguments, retries and errors as :class:`Client`; `transport` is an
    ``httpx.AsyncBaseTransport``, and `interceptors` are ``async def`` callables
    ``(request, context, call_next) -> response`` that ``await call_next(request, context)``.
    The time-out is an anyio cancel scope around all the attempts of the call, whatever the
    transport; the waits between attempts are ``anyio.sleep``. Use as an async context
    manager, or ``await aclose()``.
    """

    _http: httpx.AsyncClient

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float | None = DEFAULT_CALL_TIMEOUT,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        retries: int = DEFAULT_RETRIES,
        interceptors: Sequence[AsyncInterceptor] = (),
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(base_url, api_key, timeout, max_response_bytes, retries, interceptors)
        self._async_interceptors: tuple[AsyncInterceptor, ...] = tuple(interceptors)
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
        op, message = self._prepare(key, request, response_type)
        # anyio's clock (the event loop's, monotonic): what cancel scopes' deadlines read.
        deadline = None if self._timeout is None else anyio.current_time() + self._timeout

        async def send(request: Message, context: CallContext) -> Message:
            http_request = self._build(op, request, message, context)
            return await self._attempts(op, http_request, context, deadline)

        call_next: AsyncCallNext = send
        for interceptor in reversed(self._async_interceptors):
            call_next = _async_wrap(interceptor, call_next)
        return self._checked(op, await call_next(message, CallContext(op)))

    async def _attempts(
        self,
        op: Operation,
        http_request: httpx.Request,
        context: CallContext,
        deadline: float | None,
    ) -> Message:
        """:meth:`Client._attempts`, waiting with anyio; `deadline` is on anyio's clock."""
        retry = 0
        while True:
            self._starting(context)
            attempt = await self._attempt(op, http_request, deadline)
            outcome = self._outcome(op, attempt, context)
            if isinstance(outcome, Message):
                return outcome
            left = None if deadline is None else deadline - anyio.current_time()
            await anyio.sleep(self._retry_wait(op, retry, attempt, outcome, left))
            retry += 1

    async def _attempt(
        self, op: Operation, http_request: httpx.Request, deadline: float | None
    ) -> Attempt:
        failure: ApiError | None = None
        response: httpx.Response | None = None
        body = bytearray()
        try:
            with anyio.move_on_after(math.inf) as scope:
                scope.deadline = math.inf if deadline is None else deadline
                response = await self._http.send(http_request, stream=True)
                try:
                    limit = self._body_limit(op, response)
                    async with aclosing(araw_chunks(response)) as chunks:
                        async for chunk in chunks:
                            if not self._take(op, response, body, chunk, limit):
                                break
                finally:
                    await response.aclose()
            if scope.cancelled_caught:
                failure = self._timed_out()
        except httpx.RequestError as exc:
            failure = self._no_answer(exc)
        # Raised by the caller, outside this handler: no __context__ holding the headers.
        return Attempt(response, bytes(body), failure)

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
