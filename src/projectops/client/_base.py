"""What the sync and async clients (:mod:`projectops.client.http`) share: all but the waiting."""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

import httpx2
from google.protobuf.message import Message

import projectops
from projectops._text import outside_text
from projectops.client._errors import (
    MAX_ERROR_BODY_BYTES,
    InvalidRequest,
    InvalidResponse,
    MissingApiKey,
    MissingBaseUrl,
    ResponseTimedOut,
    ResponseTooLarge,
    UnexpectedRedirect,
    error_from_response,
    usable_api_key,
)
from projectops.client._retry import DEFAULT_RETRIES, may_retry, retry_delay
from projectops.client._transport import (
    AsyncRawClient,
    RawClient,
    RawResponse,
    check_header,
    check_limits,
    timed_out,
)
from projectops.client.redaction import mark_redacted
from projectops.codec import from_json, to_json
from projectops.conventions import (
    API_KEY_ENV,
    API_KEY_HEADER,
    BASE_URL_ENV,
    CONTENT_TYPE,
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_MAX_RESPONSE_BYTES,
    header_key,
)
from projectops.errors import ApiError, InvalidArgument
from projectops.registry import Operation, operation
from projectops.validation import validate

#: What names an operation: operation name, tool name, path or the :class:`Operation` itself.
OperationKey = str | Operation
#: What a request can be given as: the request message, a JSON object, or ``None`` for ``{}``.
RequestLike = Message | Mapping[str, Any] | None

# The client's own beside the framing ones; any spelling (CGI reads Service_Api_Key as the key).
_OWN = frozenset({header_key(API_KEY_HEADER), header_key("Content-Type")})


class RequestHeaders(dict[str, str]):
    """Extra request headers an interceptor adds (``context.headers``); ``ValueError`` naming
    the header for the key or ``Content-Type`` (any spelling), one the raw exchange refuses."""

    def __setitem__(self, name: str, value: str) -> None:
        check_header(name, value)
        if header_key(name) in _OWN:
            raise ValueError(f"the client sets {name} itself; an interceptor cannot set it")
        super().__setitem__(name, value)


@dataclass
class CallContext:
    """What an interceptor knows of the call it wraps, and may add to.

    Attributes:
        operation: the operation called.
        headers: extra request headers to send with every attempt (an interceptor adds them;
            :class:`RequestHeaders` refuses the key and ``Content-Type``); empty by default.
        attempts: the attempts made so far; 0 before the first.
        http_status: the status of the last attempt's answer once it came whole and usable;
            ``None`` (the default) before, or when no response came.
    """

    operation: Operation
    headers: RequestHeaders = field(default_factory=RequestHeaders)
    attempts: int = 0
    http_status: int | None = None


#: What a sync interceptor calls to go on: ``call_next(request, context) -> response``.
CallNext = Callable[[Message, CallContext], Message]
#: A sync interceptor: ``interceptor(request, context, call_next) -> response``.
Interceptor = Callable[[Message, CallContext, CallNext], Message]
#: :data:`CallNext` of the async client: awaitable.
AsyncCallNext = Callable[[Message, CallContext], Awaitable[Message]]
#: An async interceptor: ``async def interceptor(request, context, call_next) -> response``.
AsyncInterceptor = Callable[[Message, CallContext, AsyncCallNext], Awaitable[Message]]


if TYPE_CHECKING:  # a default (PEP 696) types `call` without `response_type=` as Message
    from typing_extensions import TypeVar as DefaultTypeVar

    ResponseT = DefaultTypeVar("ResponseT", bound=Message, default=Message)
else:
    ResponseT = TypeVar("ResponseT", bound=Message)
InterceptorT = TypeVar("InterceptorT")
# The transport of the client: httpx2.BaseTransport (sync) or AsyncBaseTransport.
TransportT = TypeVar("TransportT", bound="httpx2.BaseTransport | httpx2.AsyncBaseTransport")


class BaseClient(Generic[InterceptorT, TransportT]):
    """What :class:`~projectops.client.Client` and :class:`~projectops.client.AsyncClient` share:
    the configuration, the request's preparation, the interceptor chain and the reading of an
    answer; each adds only its waiting.
    """

    _exchange: type[RawClient | AsyncRawClient]
    _http: RawClient | AsyncRawClient

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float | None = DEFAULT_CALL_TIMEOUT,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        retries: int = DEFAULT_RETRIES,
        interceptors: Sequence[InterceptorT] = (),
        transport: TransportT | None = None,
    ) -> None:
        """Configure a client of one service; nothing is connected until the first call.

        Args:
            base_url: the service's root URL (docs/contract.md §1.4), e.g.
                ``https://ops.example.com``; ``None`` (the default): the environment's
                ``SERVICE_BACKEND_URL``.
            api_key: the project's API key, sent as ``Service-Api-Key`` (§2.1); ``None`` (the
                default): the environment's ``SERVICE_API_KEY``. A missing or unusable key raises
                :class:`~projectops.client.MissingApiKey` at the first call, not here (§2.5).
            timeout: seconds a whole call may take, every attempt, retry and wait included (§9.1);
                30 by default; ``None``: no limit.
            max_response_bytes: the largest response body read, in bytes (§6); 32 MiB by default.
                A larger one raises :class:`~projectops.client.ResponseTooLarge`.
            retries: extra attempts of a read-only or idempotent call that got no response or 429,
                502, 503 or 504, with backoff, within `timeout` (§1.5); 2 by default; 0: none.
            interceptors: called around each call, retries included, the first outermost:
                ``interceptor(request, context, call_next) -> response``
                (:data:`~projectops.client.Interceptor`; ``async def`` ones,
                :data:`~projectops.client.AsyncInterceptor`, for the async client). None by
                default.
            transport: an ``httpx2.BaseTransport`` (``AsyncBaseTransport`` for the async
                client) to use instead of the network and the environment's proxy, e.g.
                ``httpx2.ASGITransport(app)`` for an app in the same process; ``None`` (the
                default): the network.

        Raises:
            MissingBaseUrl: (a ``ValueError``) no `base_url` and ``SERVICE_BACKEND_URL`` unset.
            projectops.InvalidBaseUrl: (a ``ValueError``) one
                :func:`~projectops.normalize_base_url` refuses.
            InvalidProxy: (a ``ValueError``) the environment's proxy cannot be used.
            ValueError: a time-out or limit that is not positive, or `retries` below 0.
            TypeError: a time-out, limit or `retries` that is not a number, or an interceptor that
                is not callable.
        """
        check_limits(timeout, max_response_bytes, None)
        if isinstance(retries, bool) or not isinstance(retries, int):
            raise TypeError("retries must be an int (extra attempts; 0 turns retries off)")
        if retries < 0:
            raise ValueError(f"retries must be 0 or more, not {retries}")
        if isinstance(interceptors, (str, bytes)) or not all(map(callable, interceptors)):
            raise TypeError("interceptors must be a sequence of callables")
        url = base_url if base_url is not None else os.environ.get(BASE_URL_ENV)
        if not url and base_url is None:
            raise MissingBaseUrl(
                f"no base URL: {BASE_URL_ENV} is not set and none was given; set it to the "
                "service's root, e.g. https://ops.example.com"
            )
        key = api_key if api_key is not None else os.environ.get(API_KEY_ENV)
        self._retries = retries
        self._interceptors = tuple(interceptors)
        self._api_key = None if key is None else key.strip()  # an empty key stays empty
        # The argument as given too: a key with surrounding blanks is still a secret.
        self._secrets = (self._api_key, api_key)
        self._http = self._exchange(
            url or "",
            timeout=timeout,
            max_response_bytes=max_response_bytes,
            max_error_bytes=MAX_ERROR_BODY_BYTES,
            transport=transport,
            secrets=self._secrets,
        )

    @property
    def base_url(self) -> str:
        """Absolute http(s), no trailing slash."""
        return self._http.base_url

    @property
    def timeout(self) -> float | None:
        """Seconds a whole call may take; ``None``: no limit."""
        return self._http.timeout

    @property
    def max_response_bytes(self) -> int:
        """The largest answer body a call reads, in bytes."""
        return self._http.max_response_bytes

    @property
    def has_api_key(self) -> bool:
        """Whether an API key is configured (its value is never exposed)."""
        return bool(self._api_key)

    def __repr__(self) -> str:
        key = "set" if self._api_key else "unset"
        return f"{type(self).__name__}(base_url={self._http.shown_url!r}, api_key=<{key}>)"

    def _prepare(
        self,
        key: OperationKey,
        request: RequestLike,
        response_type: type[Message] | None,
    ) -> tuple[Operation, Message, float | None]:
        """Every local check before a call goes out; its deadline (``time.monotonic()``)."""
        op = operation(key)
        if response_type is not None and response_type is not op.response_type:
            raise TypeError(
                f"{op.name} answers with {op.response_type.__name__}, not {response_type.__name__}"
            )
        message = prepare_request(op, request)
        try:
            usable_api_key(self._api_key)
        except MissingApiKey as exc:
            raise mark_redacted(exc) from None  # never quotes the key
        return op, message, None if self.timeout is None else time.monotonic() + self.timeout

    def _chain(self, send: Any) -> Any:
        """`send` wrapped in the interceptors, the first outermost."""
        for interceptor in reversed(self._interceptors):
            send = partial(_through, interceptor, send)
        return send

    def _build(
        self,
        op: Operation,
        message: Message,
        given: Message,
        context: CallContext,
    ) -> tuple[bytes, list[tuple[str, str]]]:
        """Body and headers of a call; `message`, if not `given`, is validated first."""
        if message is not given:
            message = prepare_request(op, message)
        extra = RequestHeaders()
        for name, value in context.headers.items():  # checked again: a dict may stand in
            extra[name] = value
        agent = f"projectops/{projectops.__version__}"
        own = [("Content-Type", CONTENT_TYPE), ("Accept", CONTENT_TYPE), ("User-Agent", agent)]
        headers = {name.lower(): (name, value) for name, value in [*own, *extra.items()]}
        key = (API_KEY_HEADER, self._api_key or "")
        return to_json(message).encode(), [*headers.values(), key]

    def _checked(
        self,
        op: Operation,
        response: object,
        _: type[ResponseT] | None,
    ) -> ResponseT:
        """`response`, typed as the call's `response_type` asks (or :class:`Message`)."""
        if not isinstance(response, op.response_type):
            raise TypeError(
                f"an interceptor returned a {type(response).__name__}, not the "
                f"{op.response_type.__name__} of {op.name}"
            )
        return cast("ResponseT", response)

    def _after_attempt(
        self,
        op: Operation,
        retry: int,
        answer: RawResponse | ApiError,
        context: CallContext,
        deadline: float | None,
    ) -> Message | float:
        """The response message of attempt `retry` (0: the first), or the seconds to wait before
        the next; raises the error the call ends with (a time-out if the wait passes `deadline`)."""
        context.attempts += 1
        context.http_status = None
        failure = (
            answer if isinstance(answer, ApiError) else self._read_response(op, answer, context)
        )
        if isinstance(failure, Message):
            return failure
        status = failure.http_status  # None: no response came
        last = retry >= self._retries or isinstance(failure, ResponseTimedOut)
        if last or not may_retry(op, status):
            raise mark_redacted(failure)  # the exchange redacted the peer's text
        after = answer.header("Retry-After") if isinstance(answer, RawResponse) else None
        wait = retry_delay(retry, after)
        if deadline is not None and wait >= deadline - time.monotonic():
            raise mark_redacted(failure if status else timed_out(self._http))
        return wait

    def _read_response(
        self,
        op: Operation,
        answer: RawResponse,
        context: CallContext,
    ) -> Message | ApiError:
        """The response message of a response, or its error (returned if retryable, else raised)."""
        status = answer.status
        keys = self._secrets
        where = f"the answer of {self._http.shown_url}{op.path} (HTTP {status})"
        encoding = (answer.header("Content-Encoding") or "identity").strip().lower()
        if encoding not in ("", "identity"):
            shown = outside_text(encoding, 40, keys)
            text = f"{where} came with Content-Encoding: {shown}, which this client did not ask for"
            text += " (it sends Accept-Encoding: identity); it was not decoded"
            raise mark_redacted(InvalidResponse(text, http_status=status))
        if 200 <= status < 300 and answer.truncated:
            length = answer.header("Content-Length") or ""
            what = "is larger"
            done = "read no further"
            if length.isascii() and length.isdigit():
                what = f"announces {int(length):,} bytes"
                done = "not read"
            limit = f"{self.max_response_bytes:,} bytes (max_response_bytes)"
            text = f"{where} {what}, over the limit of {limit}; it was {done}"
            raise mark_redacted(ResponseTooLarge(text, http_status=status))
        context.http_status = status
        if 300 <= status < 400:
            to = outside_text(answer.header("Location") or "elsewhere", 300, keys)
            text = f"HTTP {status}: redirect to {to} not followed (a POST is never redirected;"
            return UnexpectedRedirect(f"{text} check the base URL)", http_status=status)
        if not 200 <= status < 300:
            url = self._http.shown_url + op.path
            kind = answer.header("Content-Type")
            return error_from_response(
                status, answer.body, url=url, content_type=kind, secrets=keys
            )
        try:  # not strict: a newer server may add fields this version does not know
            return from_json(answer.body, op.response_type)
        except InvalidArgument as exc:
            what = f"{where} is not a {op.response_type.__name__}"
            text = f"{what}: {outside_text(exc.message, secrets=keys)}"
            raise mark_redacted(InvalidResponse(text, http_status=status)) from None


def _through(
    interceptor: Any,
    call_next: Any,
    request: Message,
    context: CallContext,
) -> Any:
    return interceptor(request, context, call_next)


def request_message(
    key: OperationKey,
    request: Message | None,
    fields: Mapping[str, Any],
) -> Message:
    """The request of a typed method: the message given, or one built from its fields (the
    generated clients' keyword arguments).

    Args:
        key: the operation, as :func:`~projectops.operation` takes it.
        request: the request message, or ``None``.
        fields: the request's fields by name; those ``None`` are left unset.

    Returns:
        `request`, or a new request message of the operation with `fields` set (not validated:
        :func:`prepare_request` does that).

    Raises:
        TypeError: both `request` and a field are given.
    """
    given = {name: value for name, value in fields.items() if value is not None}
    if request is not None and given:
        raise TypeError(f"give the request message or its fields ({', '.join(given)}), not both")
    return request if request is not None else operation(key).request_type(**given)


def prepare_request(key: OperationKey, request: RequestLike = None) -> Message:
    """The validated request message of one call (docs/contract.md §4).

    Args:
        key: the operation, as :func:`~projectops.operation` takes it.
        request: the request message, a JSON object (a mapping, decoded strictly, §3.4), or
            ``None`` (the default) for ``{}``.

    Returns:
        The request message, its REQUIRED fields checked.

    Raises:
        projectops.UnknownOperationError: no such operation.
        TypeError: a message of another type, or neither a message nor a mapping.
        InvalidRequest: a field of the wrong form, unknown, or REQUIRED and missing; named.
    """
    op = operation(key)
    if isinstance(request, Message):
        if request.DESCRIPTOR.full_name != op.request_type.DESCRIPTOR.full_name:
            raise TypeError(
                f"{op.name} takes a {op.request_type.__name__}, not a {type(request).__name__}"
            )
    elif request is not None and not isinstance(request, Mapping):
        raise TypeError(
            f"a request is a {op.request_type.__name__}, a mapping or None, "
            f"not {type(request).__name__}"
        )
    try:
        if not isinstance(request, Message):
            request = from_json(request or {}, op.request_type, strict=True)
        validate(request)
    except InvalidArgument as exc:
        raise InvalidRequest(exc.message, exc.violations) from None
    return request
