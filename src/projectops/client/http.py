"""The HTTP client of the API (spec sections 4.1, 5 and 7), synchronous and asynchronous.

One call is ``POST {base_url}/api/mcp/<operation_name>`` with the request message as a JSON
object in the protobuf JSON mapping, ``Content-Type: application/json`` and the project API key
in ``Service-Api-Key``; nothing else identifies the project. The answer is decoded into the
operation's response message, or raised as the :class:`~projectops.ApiError` subclass of its
``ErrorResponse`` body. Redirects are never followed and nothing is retried.

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
    ├── UnexpectedRedirect        a 3xx answer (never followed: a POST must not become a GET)
    ├── Unavailable
    │   └── ServiceUnreachable    no answer: the service could not be reached
    └── DeadlineExceeded
        └── AnswerTimedOut        no complete answer within the time-out
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Self, TypeVar, overload

import httpx
from google.protobuf.message import Message

import projectops
from projectops.client._errors import (
    AnswerTimedOut,
    InvalidRequest,
    InvalidResponse,
    MissingApiKey,
    ServiceUnreachable,
    UnexpectedRedirect,
    error_from_answer,
)
from projectops.codec import from_json, to_json
from projectops.conventions import (
    API_KEY_ENV,
    API_KEY_HEADER,
    BASE_URL_ENV,
    CONTENT_TYPE,
    DEFAULT_BASE_URL,
    normalize_base_url,
)
from projectops.errors import ApiError, InvalidArgument
from projectops.registry import Operation, operation
from projectops.validation import validate

__all__ = [
    "AnswerTimedOut",
    "AsyncClient",
    "Client",
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


class _CallBuilder:
    """Everything of a call but the waiting: configuration, request building, answer decoding.

    Shared by :class:`Client` and :class:`AsyncClient` so the two cannot drift.
    """

    def __init__(self, base_url: str | None, api_key: str | None, timeout: float | None) -> None:
        # An empty environment variable counts as unset; an explicit argument is checked as is.
        url = (
            base_url if base_url is not None else (os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL)
        )
        self._base_url = normalize_base_url(url)
        key = api_key if api_key is not None else os.environ.get(API_KEY_ENV)
        self._api_key = key.strip() if key else None
        self._timeout = timeout

    @property
    def base_url(self) -> str:
        """The base URL every path is appended to: absolute http(s), no trailing slash."""
        return self._base_url

    @property
    def timeout(self) -> float | None:
        """Seconds to wait for each phase of a call (connect, send, receive); None: no limit."""
        return self._timeout

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
            "User-Agent": f"projectops/{projectops.__version__}",
            API_KEY_HEADER: self._api_key,
        }
        body = to_json(message).encode("utf-8")
        return op, httpx.Request("POST", self._base_url + op.path, headers=headers, content=body)

    def _response(self, op: Operation, response: httpx.Response) -> Message:
        """The response message of a 2xx answer; raise the ApiError of any other answer."""
        status = response.status_code
        if not 200 <= status < 300:
            if 300 <= status < 400:
                where = response.headers.get("Location", "elsewhere")
                raise UnexpectedRedirect(
                    f"HTTP {status}: redirect to {where} not followed (a "
                    "POST is never redirected; check the base URL)",
                    http_status=status,
                )
            raise error_from_answer(status, response.content)
        try:
            # Not strict: a newer server may add fields this version does not know.
            return from_json(response.content, op.response_type)
        except InvalidArgument as exc:
            raise InvalidResponse(
                f"the answer of {op.path} is not a {op.response_type.__name__}: {exc.message}",
                http_status=status,
            ) from None

    def _no_answer(self, exc: httpx.RequestError) -> ApiError:
        """The error to raise when a call got no answer; `exc` must not be chained to it,
        since it holds the request, API key header included."""
        if isinstance(exc, httpx.TimeoutException):
            return AnswerTimedOut(f"no answer from {self._base_url} within {self._timeout} s")
        reason = _ERRNO_PREFIX.sub("", str(exc)) or type(exc).__name__
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
            :meth:`call` raises :class:`MissingApiKey` instead. Never shown by ``repr``.
        timeout: seconds to wait for each of connecting, sending and receiving; ``None``
            waits forever. Exceeding it raises :class:`~projectops.DeadlineExceeded`.
        transport: an ``httpx.BaseTransport`` to send through instead of the network (for
            tests, e.g. ``httpx.MockTransport``, or to embed the client).

    Raises:
        ValueError: the base URL is not an absolute http(s) URL.

    Use as a context manager, or call :meth:`close` when done.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float | None = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        super().__init__(base_url, api_key, timeout)
        self._http = httpx.Client(timeout=timeout, transport=transport, follow_redirects=False)

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
            InvalidResponse: a 2xx answer that is not the response message.
            ServiceUnreachable: no answer: the service could not be reached (an
                :class:`~projectops.Unavailable`).
            AnswerTimedOut: no answer within `timeout` seconds (a
                :class:`~projectops.DeadlineExceeded`).
        """
        op, http_request = self._request(operation, request, response_type)
        try:
            response = self._http.send(http_request)
        except httpx.RequestError as exc:
            failure = self._no_answer(exc)
        else:
            return self._response(op, response)
        raise failure  # outside the handler: no __context__ holding the request's headers

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
    ``httpx.AsyncBaseTransport``. Use as an async context manager, or ``await aclose()``.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float | None = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(base_url, api_key, timeout)
        self._http = httpx.AsyncClient(timeout=timeout, transport=transport, follow_redirects=False)

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
        op, http_request = self._request(operation, request, response_type)
        try:
            response = await self._http.send(http_request)
        except httpx.RequestError as exc:
            failure = self._no_answer(exc)
        else:
            return self._response(op, response)
        raise failure  # outside the handler: no __context__ holding the request's headers

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
