"""The HTTP client of the API, sync and async (docs/python.md; the wire: docs/contract.md §1-2).

Retries (``retries=``, default 2): only an rpc marked ``NO_SIDE_EFFECTS`` or ``IDEMPOTENT``,
when no complete answer came or it is 429, 502, 503 or 504; ``timeout`` covers every attempt
and wait. Interceptors (first outermost) wrap each call, retries included. Errors beside
:mod:`projectops.errors` (``http_status`` ``None`` when no whole answer came)::

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

Every peer is hostile: the exchange (:class:`~projectops.client.RawClient`) bounds and caps
the call (error bodies at 1 MiB); outside text is escaped, cut and has the key redacted before
it enters an exception; any other exception of a call is scrubbed of the key.
"""

from __future__ import annotations

import time
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
    RequestLike,
    request_message,
)
from projectops.client._errors import (
    AnswerTimedOut,
    ServiceUnreachable,
)
from projectops.client._transport import AsyncRawClient, RawAnswer, RawClient
from projectops.client.redaction import scrub_exception
from projectops.errors import ApiError

__all__ = ["AsyncClient", "Client", "request_message"]  # the generated clients import these

R = TypeVar("R", bound=Message)
#: Answer bytes above which the async client decodes off the event loop (tests/mcp).
_OFF_LOOP_BYTES = 64 * 1024


class Client(BaseClient[Interceptor, httpx2.BaseTransport]):
    """Synchronous client of the API; use it in ``with``, or :meth:`close` it.

    Args:
        base_url: the service's root (``https://ops.example.com``); default
            ``SERVICE_BACKEND_URL``; none at all: :class:`MissingBaseUrl`.
        api_key: the project API key; default ``SERVICE_API_KEY``. Missing is no error until
            :meth:`call` (:class:`MissingApiKey`); never shown by ``repr``.
        timeout: seconds a whole call may take, connect to last byte, retries and waits
            included; ``None``: no limit.
        max_response_bytes: the largest answer body read (default 32 MiB).
        retries: extra attempts of a retryable call; 0: none.
        interceptors: ``(request, context, call_next) -> response`` callables.
        transport: an ``httpx2.BaseTransport`` instead of the network (``MockTransport``);
            the time-out still bounds each call. Without it, the environment's proxy is used.

    Raises:
        MissingBaseUrl, projectops.InvalidBaseUrl, InvalidProxy: (``ValueError``) no base URL,
            one :func:`~projectops.normalize_base_url` refuses, an unusable proxy.
        ValueError, TypeError: a time-out, limit, retries or interceptor that cannot work.
    """

    _exchange = RawClient
    _raw: RawClient

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
        """Call one operation and return its response message (fields of a newer server
        ignored).

        Args:
            operation: operation name, tool name, path or :class:`~projectops.Operation`.
            request: the request message, a JSON object or ``None`` (:func:`prepare_request`).
            response_type: the operation's response class, to type the result.

        Raises:
            projectops.UnknownOperationError: no such operation.
            TypeError: a request, `response_type` or interceptor result of another type.
            ValueError: a header an interceptor may not set (:class:`RequestHeaders`).
            projectops.ApiError: a non-2xx answer (:func:`error_from_answer`; after retries,
                the last one's), or one of the module docstring's errors.
            Whatever an interceptor raises. None of them, nor those chained, holds the key.
        """
        try:
            op, message = self._prepare(operation, request, response_type)
            deadline = None if self.timeout is None else time.monotonic() + self.timeout

            def send(request: Message, context: CallContext) -> Message:
                body, headers = self._build(op, request, message, context)
                for retry in range(self._retries + 1):
                    answer: RawAnswer | ApiError
                    try:
                        answer = self._raw.send("POST", op.path, body, headers, deadline=deadline)
                    except (ServiceUnreachable, AnswerTimedOut) as exc:
                        answer = exc
                    outcome = self._outcome(op, answer, context)
                    if isinstance(outcome, Message):
                        return outcome
                    time.sleep(self._retry_wait(op, retry, answer, outcome, deadline))
                raise AssertionError("unreachable: the last attempt returns or raises")

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

    def __exit__(self, *exc: object) -> None:
        self.close()


def _wrap(interceptor: Interceptor, call_next: CallNext) -> CallNext:
    return lambda request, context: interceptor(request, context, call_next)


def _async_wrap(interceptor: AsyncInterceptor, call_next: AsyncCallNext) -> AsyncCallNext:
    return lambda request, context: interceptor(request, context, call_next)


class AsyncClient(BaseClient[AsyncInterceptor, httpx2.AsyncBaseTransport]):
    """:class:`Client` with ``await client.call(...)``: the same arguments, retries and
    errors; `transport` is an ``httpx2.AsyncBaseTransport``, `interceptors` are ``async def``.
    Use in ``async with``, or ``await aclose()``."""

    _exchange = AsyncRawClient
    _raw: AsyncRawClient

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
                for retry in range(self._retries + 1):
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
                    await anyio.sleep(self._retry_wait(op, retry, answer, outcome, deadline))
                raise AssertionError("unreachable: the last attempt returns or raises")

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

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
