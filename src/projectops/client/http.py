"""The HTTP client of the API, synchronous and asynchronous.

One call is ``POST {base_url}/api/mcp/<operation_name>`` with the request message as JSON
(the protobuf JSON mapping) and the key in ``Service-Api-Key``; the answer is decoded into the
response message, or raised as the :class:`~projectops.ApiError` of its ``ErrorResponse``.

Retries (``retries=``, default 2, 0: never): only for an rpc marked ``NO_SIDE_EFFECTS`` or
``IDEMPOTENT``, when no complete answer came or it is 429, 502, 503 or 504; waits with full
jitter or the answer's ``Retry-After`` (:func:`~projectops.client._retry.retry_delay`). The
time-out covers every attempt and wait: a wait that would cross it is not taken, and the call
ends with the last answer's error (or :class:`AnswerTimedOut`).

Interceptors (``interceptors=[...]``, first outermost) wrap each call, retries included:
``interceptor(request, context, call_next) -> response`` (``async def`` for
:class:`AsyncClient`); `context` is a :class:`CallContext`. One may raise, pass on another
request of the operation's type (validated) or return another response of its type.

Errors, beside those of :mod:`projectops.errors` (``http_status`` is the answer's, ``None``
when nothing was sent or no whole answer came)::

    ApiError
    ├── InvalidArgument
    │   └── InvalidRequest        the request is invalid, found locally; nothing was sent
    ├── Unauthenticated
    │   └── MissingApiKey         no usable key configured; nothing was sent
    ├── Internal
    │   └── InvalidResponse       a 2xx answer that is not the response message
    │       └── AnswerTooLarge    an answer over max_response_bytes; not read to its end
    ├── UnexpectedRedirect        a 3xx answer (never followed: a POST must not become a GET)
    ├── Unavailable
    │   └── ServiceUnreachable    no answer: the service could not be reached
    └── DeadlineExceeded
        └── AnswerTimedOut        no complete answer within the time-out

Every peer is hostile: the exchange (:class:`~projectops.client.RawClient`) bounds the whole
call by ``timeout``, caps the answer at ``max_response_bytes`` (error bodies at 1 MiB), never
decodes a ``Content-Encoding``, keeps no cookie and follows no redirect; every text of an
answer is escaped, cut and has the key redacted before it enters an exception, and any other
exception a call raises is scrubbed of it (:mod:`projectops.client.redaction`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from types import TracebackType
from typing import Self, TypeVar, overload

import anyio
import anyio.to_thread
import httpx2
from google.protobuf.message import Message

from projectops.client._base import (
    AsyncCallNext,
    AsyncInterceptor,
    BaseClient,
    CallContext,
    CallNext,
    Interceptor,
    OperationKey,
    RequestHeaders,
    RequestLike,
    prepare_request,
    request_message,
)
from projectops.client._errors import (
    MAX_ERROR_BODY_BYTES,
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
from projectops.client._retry import DEFAULT_RETRIES
from projectops.client._transport import AsyncRawClient, InvalidProxy, RawAnswer, RawClient
from projectops.client.redaction import scrub_exception
from projectops.conventions import DEFAULT_CALL_TIMEOUT, DEFAULT_MAX_RESPONSE_BYTES
from projectops.errors import ApiError

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DEFAULT_RETRIES",
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
    "prepare_request",
    "request_message",
]

R = TypeVar("R", bound=Message)
#: Answer bytes above which the async client decodes off the event loop (tests/mcp).
_OFF_LOOP_BYTES = 64 * 1024


class Client(BaseClient):
    """Synchronous client of the API; use it in ``with``, or :meth:`close` it.

    Args:
        base_url: the service's root, e.g. ``https://ops.example.com``; default
            ``SERVICE_BACKEND_URL`` (empty counts as unset). No default address: without
            either, :class:`MissingBaseUrl`. (``projectops mock-server`` listens on
            ``http://127.0.0.1:8787``.)
        api_key: the project API key; default ``SERVICE_API_KEY``. None is no error here (a
            tool server starts without one); :meth:`call` raises :class:`MissingApiKey`.
            Never shown by ``repr``, redacted from every exception a call raises.
        timeout: seconds a whole call may take, connecting to the answer's last byte, every
            retry and wait included; ``None``: no limit. Past it, :class:`AnswerTimedOut`.
        max_response_bytes: the largest answer body read (default 32 MiB); past it,
            :class:`AnswerTooLarge`, the body not read to its end.
        retries: extra attempts of a retryable call (module docstring); 0: none.
        interceptors: ``(request, context, call_next) -> response`` callables around every
            call, the first outermost.
        transport: an ``httpx2.BaseTransport`` instead of the network (``httpx2.MockTransport``
            in tests); the time-out still bounds each call (its attempt runs in a daemon
            thread the call stops waiting for). Without it, the environment's proxy is used.

    Raises:
        MissingBaseUrl: (a ``ValueError``) no base URL; the message names the variable.
        projectops.InvalidBaseUrl: (a ``ValueError``) not an absolute http(s) URL, a user name
            or password in it (never quoted), or a control character.
        InvalidProxy: (a ``ValueError``) the environment's proxy for the base URL is not an
            http, https or socks5 URL.
        ValueError: `timeout` not positive, `max_response_bytes` below 1, `retries` negative.
        TypeError: `max_response_bytes` or `retries` not an int, an interceptor not callable.
    """

    _raw: RawClient

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float | None = DEFAULT_CALL_TIMEOUT,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        retries: int = DEFAULT_RETRIES,
        interceptors: Sequence[Interceptor] = (),
        transport: httpx2.BaseTransport | None = None,
    ) -> None:
        super().__init__(base_url, api_key, timeout, max_response_bytes, retries, interceptors)
        self._interceptors = tuple(interceptors)
        self._raw = RawClient(
            self._url,
            timeout=timeout,
            max_response_bytes=max_response_bytes,
            max_error_bytes=MAX_ERROR_BODY_BYTES,
            transport=transport,
            secrets=self._secrets,
        )

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
                (``TypeError`` if it is not the operation's).

        Returns:
            The decoded response message (fields of a newer server ignored).

        Raises:
            projectops.UnknownOperationError: no such operation.
            TypeError: the request or `response_type` is not the operation's, or an
                interceptor returned something else than its response message.
            ValueError: an interceptor's header is not its to set (:class:`RequestHeaders`).
            InvalidRequest, MissingApiKey: found locally; nothing was sent.
            projectops.ApiError: a non-2xx answer, of the class its code names
                (:func:`error_from_answer`); after retries, the last answer's.
            UnexpectedRedirect, InvalidResponse, AnswerTooLarge, ServiceUnreachable,
                AnswerTimedOut: see the module docstring.
            Whatever an interceptor raises.

        No exception it raises, nor any chained to it, holds the API key.
        """
        try:
            op, message = self._prepare(operation, request, response_type)
            deadline = None if self.timeout is None else time.monotonic() + self.timeout

            def send(request: Message, context: CallContext) -> Message:
                body, headers = self._build(op, request, message, context)
                retry = 0
                while True:
                    answer: RawAnswer | ApiError
                    try:
                        answer = self._raw.send("POST", op.path, body, headers, deadline=deadline)
                    except (ServiceUnreachable, AnswerTimedOut) as exc:
                        answer = exc
                    outcome = self._outcome(op, answer, context)
                    if isinstance(outcome, Message):
                        return outcome
                    left = None if deadline is None else deadline - time.monotonic()
                    time.sleep(self._retry_wait(op, retry, answer, outcome, left))
                    retry += 1

            call_next: CallNext = send
            for interceptor in reversed(self._interceptors):
                call_next = _wrap(interceptor, call_next)
            return self._checked(op, call_next(message, CallContext(op)))
        except Exception as exc:
            scrub_exception(exc, self._secrets)
            raise

    def close(self) -> None:
        """Close the connection pool; the client cannot be used afterwards."""
        self._raw.close()

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
    return lambda request, context: interceptor(request, context, call_next)


def _async_wrap(interceptor: AsyncInterceptor, call_next: AsyncCallNext) -> AsyncCallNext:
    return lambda request, context: interceptor(request, context, call_next)


class AsyncClient(BaseClient):
    """:class:`Client` with ``await client.call(...)``: the same arguments, retries and
    errors; `transport` is an ``httpx2.AsyncBaseTransport``, `interceptors` are ``async def``,
    waits are ``anyio.sleep``. Use in ``async with``, or ``await aclose()``."""

    _raw: AsyncRawClient

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float | None = DEFAULT_CALL_TIMEOUT,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        retries: int = DEFAULT_RETRIES,
        interceptors: Sequence[AsyncInterceptor] = (),
        transport: httpx2.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(base_url, api_key, timeout, max_response_bytes, retries, interceptors)
        self._interceptors = tuple(interceptors)
        self._raw = AsyncRawClient(
            self._url,
            timeout=timeout,
            max_response_bytes=max_response_bytes,
            max_error_bytes=MAX_ERROR_BODY_BYTES,
            transport=transport,
            secrets=self._secrets,
        )

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
        """Call one operation; arguments, result and errors: :meth:`Client.call`."""
        try:
            op, message = self._prepare(operation, request, response_type)
            deadline = None if self.timeout is None else time.monotonic() + self.timeout

            async def send(request: Message, context: CallContext) -> Message:
                body, headers = self._build(op, request, message, context)
                retry = 0
                while True:
                    answer: RawAnswer | ApiError
                    try:
                        answer = await self._raw.send(
                            "POST", op.path, body, headers, deadline=deadline
                        )
                    except (ServiceUnreachable, AnswerTimedOut) as exc:
                        answer = exc
                    if isinstance(answer, RawAnswer) and len(answer.body) > _OFF_LOOP_BYTES:
                        # Decoding takes long: off the event loop, which other tasks share.
                        outcome = await anyio.to_thread.run_sync(self._outcome, op, answer, context)
                    else:
                        outcome = self._outcome(op, answer, context)
                    if isinstance(outcome, Message):
                        return outcome
                    left = None if deadline is None else deadline - time.monotonic()
                    await anyio.sleep(self._retry_wait(op, retry, answer, outcome, left))
                    retry += 1

            call_next: AsyncCallNext = send
            for interceptor in reversed(self._interceptors):
                call_next = _async_wrap(interceptor, call_next)
            return self._checked(op, await call_next(message, CallContext(op)))
        except Exception as exc:
            scrub_exception(exc, self._secrets)
            raise

    async def aclose(self) -> None:
        """Close the connection pool; the client cannot be used afterwards."""
        await self._raw.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
