"""The HTTP client of the API, sync and async (docs/python.md; the wire: docs/contract.md §1-2).

Retries (``retries=``, default 2): only an rpc marked ``NO_SIDE_EFFECTS`` or ``IDEMPOTENT``,
when no complete answer came or it is 429, 502, 503 or 504; ``timeout`` covers every attempt
and wait. Interceptors (first outermost) wrap each call, retries included. Errors beside
:mod:`projectops.errors` (``http_status`` ``None`` when no whole response came)::

    ApiError
    ├── InvalidArgument
    │   └── InvalidRequest        the request is invalid, found locally; nothing was sent
    ├── Unauthenticated
    │   └── MissingApiKey         no usable key configured; nothing was sent
    ├── Internal
    │   └── InvalidResponse       a 2xx response that is not the response message
    │       └── ResponseTooLarge    a response over max_response_bytes; not read to its end
    ├── UnexpectedRedirect        a 3xx answer (never followed: a POST must not become a GET)
    ├── Unavailable
    │   └── ServiceUnreachable    no response: the service could not be reached
    └── DeadlineExceeded
        └── ResponseTimedOut        no complete answer within the time-out

Every peer is hostile: the exchange (:class:`~projectops.client.RawClient`) bounds and caps
the call (error bodies at 1 MiB); outside text is escaped, cut and has the key redacted before
it enters an exception; any other exception of a call is scrubbed of the key
(:mod:`projectops.client.redaction`).
"""

from __future__ import annotations

import time
from functools import partial

import anyio
import anyio.to_thread
from google.protobuf.message import Message
from httpx2 import AsyncBaseTransport, BaseTransport

from projectops.client import _transport
from projectops.client._base import (
    AsyncInterceptor,
    BaseClient,
    CallContext,
    Interceptor,
    OperationKey,
    RequestLike,
    ResponseT,
    request_message,
)
from projectops.client._errors import ResponseTimedOut, ServiceUnreachable
from projectops.client.redaction import scrub_exception
from projectops.codec import OFF_LOOP_BYTES
from projectops.errors import ApiError

__all__ = ["AsyncClient", "Client", "request_message"]  # the generated clients import these


class Client(_transport.Closing, BaseClient[Interceptor, BaseTransport]):
    """The synchronous client of the API (docs/contract.md §1-§2, §5): one ``POST`` a call, retried
    where the schema allows, bounded as a whole, the response read within its cap.

    Use it in ``with``, or call ``close()``. The arguments are those of ``__init__`` (base_url,
    api_key, timeout, max_response_bytes, retries, interceptors, transport), listed below; the
    generated :class:`~projectops.client.OperationsServiceClient` adds one typed method per rpc.

    Examples:
        >>> with Client("https://ops.example.com", "k-1", timeout=10) as client:
        ...     response = client.call("get_release_details", {"version": "1.0.0"})
    """

    _exchange = _transport.RawClient
    _http: _transport.RawClient

    def call(
        self,
        operation: OperationKey,
        request: RequestLike = None,
        *,
        response_type: type[ResponseT] | None = None,
    ) -> ResponseT:
        """Call one operation and return its response message.

        Args:
            operation: the operation: an operation name, tool name, path, or an
                :class:`~projectops.Operation` (:data:`OperationKey`).
            request: the request message, a JSON object (decoded strictly), or ``None`` (the
                default) for ``{}`` (:func:`prepare_request`).
            response_type: the response message class the caller expects, for type checkers and a
                check at run time; ``None`` (the default): the operation's.

        Returns:
            The response message (the operation's response type).

        Raises:
            projectops.UnknownOperationError: no such operation.
            InvalidRequest: the request is invalid; nothing was sent.
            MissingApiKey: no usable key; nothing was sent.
            TypeError: a request, `response_type` or interceptor result of another type.
            ValueError: a header an interceptor may not set (:class:`RequestHeaders`).
            projectops.ApiError: the last attempt's non-2xx response, as its code's class
                (:func:`error_from_response`, §5.5); :class:`ServiceUnreachable` or
                :class:`ResponseTimedOut` when no response came; :class:`ResponseTooLarge`,
                :class:`InvalidResponse` or :class:`UnexpectedRedirect` for a response that cannot
                be used. Whatever an interceptor raises. No exception holds the key (§9.4).
        """
        try:
            op, message, deadline = self._prepare(operation, request, response_type)

            def send(request: Message, context: CallContext) -> Message:
                parts = self._build(op, request, message, context)  # body, headers
                for retry in range(self._retries + 1):
                    answer: _transport.RawResponse | ApiError
                    try:
                        answer = self._http.send("POST", op.path, *parts, deadline=deadline)
                    except (ServiceUnreachable, ResponseTimedOut) as exc:
                        answer = exc
                    step = self._after_attempt(op, retry, answer, context, deadline)
                    if isinstance(step, Message):
                        return step
                    time.sleep(step)
                raise AssertionError("unreachable: the last attempt returns or raises")

            call = self._chain(send)
            response = call(message, CallContext(op))
            return self._checked(op, response, response_type)
        except Exception as exc:
            scrub_exception(exc, self._secrets)
            raise


class AsyncClient(_transport.AsyncClosing, BaseClient[AsyncInterceptor, AsyncBaseTransport]):
    """:class:`Client` for ``await`` and ``async with``: `transport` is an
    ``httpx2.AsyncBaseTransport`` and `interceptors` are ``async def``. A response over 64 KiB is
    decoded in a worker thread, off the event loop.
    """

    _exchange = _transport.AsyncRawClient
    _http: _transport.AsyncRawClient

    async def call(
        self,
        operation: OperationKey,
        request: RequestLike = None,
        *,
        response_type: type[ResponseT] | None = None,
    ) -> ResponseT:
        """Call one operation and return its response message, awaited.

        Args:
            operation: the operation: an operation name, tool name, path, or an
                :class:`~projectops.Operation`.
            request: the request message, a JSON object (decoded strictly), or ``None`` (the
                default) for ``{}``.
            response_type: the response message class the caller expects; ``None`` (the default):
                the operation's.

        Returns:
            The response message.

        Raises:
            projectops.ApiError: as :meth:`Client.call`, and the same other exceptions.
        """
        try:
            op, message, deadline = self._prepare(operation, request, response_type)

            async def send(request: Message, context: CallContext) -> Message:
                parts = self._build(op, request, message, context)  # body, headers
                for retry in range(self._retries + 1):
                    answer: _transport.RawResponse | ApiError
                    try:
                        answer = await self._http.send("POST", op.path, *parts, deadline=deadline)
                    except (ServiceUnreachable, ResponseTimedOut) as exc:
                        answer = exc
                    # Decoding a large response takes long: off the event loop other tasks share.
                    large = not isinstance(answer, ApiError) and len(answer.body) > OFF_LOOP_BYTES
                    decide = partial(self._after_attempt, op, retry, answer, context, deadline)
                    if large:
                        step = await anyio.to_thread.run_sync(decide)
                    else:
                        step = decide()
                    if isinstance(step, Message):
                        return step
                    await anyio.sleep(step)
                raise AssertionError("unreachable: the last attempt returns or raises")

            response = await self._chain(send)(message, CallContext(op))
            return self._checked(op, response, response_type)
        except Exception as exc:
            scrub_exception(exc, self._secrets)
            raise
