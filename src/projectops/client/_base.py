"""What the sync and async clients share: configuration, the building of a call's request, and
the reading of its answer; everything of a call but the waiting (like httpx's ``BaseClient``).

:class:`BaseClient` is the base of :class:`~projectops.client.http.Client` and
:class:`~projectops.client.http.AsyncClient`, so the two cannot drift; :func:`prepare_request`
and :func:`request_message` are the request's checks without I/O, public through
:mod:`projectops.client.http`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Awaitable, Callable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from http.cookiejar import CookieJar, DefaultCookiePolicy
from typing import Any, NamedTuple

import httpx
from google.protobuf.message import Message

import projectops
from projectops._text import outside_text
from projectops.client._errors import (
    AnswerTimedOut,
    AnswerTooLarge,
    InvalidRequest,
    InvalidResponse,
    MissingBaseUrl,
    ServiceUnreachable,
    UnexpectedRedirect,
    error_from_answer,
    usable_api_key,
)
from projectops.client._retry import DEFAULT_RETRIES, may_retry, retry_delay
from projectops.codec import from_json, to_json
from projectops.conventions import (
    API_KEY_ENV,
    API_KEY_HEADER,
    BASE_URL_ENV,
    CONTENT_TYPE,
    normalize_base_url,
)
from projectops.errors import ApiError, InvalidArgument
from projectops.registry import Operation, operation
from projectops.validation import validate

__all__ = [
    "AsyncCallNext",
    "AsyncInterceptor",
    "BaseClient",
    "CallContext",
    "CallNext",
    "Interceptor",
    "OperationKey",
    "RequestHeaders",
    "RequestLike",
    "no_cookies",
    "own_headers_only",
    "prepare_request",
    "request_message",
]
#: What names an operation: operation name, tool name, path or the :class:`Operation` itself.
OperationKey = str | Operation
#: What a request can be given as: the request message, a JSON object, or ``None`` for ``{}``.
RequestLike = Message | Mapping[str, Any] | None

_ERRNO_PREFIX = re.compile(r"^\[Errno -?\d+\]\s*")

# Bytes of a non-2xx answer's body that are read: its message is cut to 1,000 characters.
_MAX_ERROR_BODY_BYTES = 1024 * 1024


class Attempt(NamedTuple):
    """What one attempt of a call got: the answer (``None`` when none came), the bytes of its
    body read, and the failure that ended it early (no answer, time-out), if any."""

    response: httpx.Response | None
    body: bytes
    failure: ApiError | None


# --- interceptors ---------------------------------------------------------------------------

# An HTTP header name (RFC 9110 token) and a value without control characters: an
# interceptor's header must not split the request.
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_HEADER_VALUE = re.compile(r"[\x20-\x7e\t]*")
# Headers the client sets itself; an interceptor may add others only.
_OWN_HEADERS = frozenset(
    {API_KEY_HEADER.lower(), "content-type", "content-length", "host", "accept-encoding"}
)


class RequestHeaders(MutableMapping[str, str]):
    """Extra request headers an interceptor adds to a call (``context.headers``).

    Names are case-insensitive. Setting the API key header (``Service-Api-Key``), or a header
    the client sets itself (``Content-Type``, ``Content-Length``, ``Host``,
    ``Accept-Encoding``), raises ``ValueError``: the key comes from the client's
    configuration only, so no interceptor can swap or leak it. A name that is no HTTP token or
    a value holding control characters raises ``ValueError`` too.
    """

    def __init__(self) -> None:
        self._items: dict[str, tuple[str, str]] = {}

    def __setitem__(self, name: str, value: str) -> None:
        if not isinstance(name, str) or not _HEADER_NAME.fullmatch(name):
            raise ValueError(f"not an HTTP header name: {outside_text(str(name), 100)}")
        if name.lower() in _OWN_HEADERS:
            raise ValueError(f"the client sets {name} itself; an interceptor cannot set it")
        if not isinstance(value, str) or not _HEADER_VALUE.fullmatch(value):
            raise ValueError(f"the value of header {name} must be text without control characters")
        self._items[name.lower()] = (name, value)

    def __getitem__(self, name: str) -> str:
        return self._items[name.lower()][1]

    def __delitem__(self, name: str) -> None:
        del self._items[name.lower()]

    def __iter__(self) -> Iterator[str]:
        return iter([name for name, _ in self._items.values()])

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"RequestHeaders({dict(self.items())!r})"


@dataclass
class CallContext:
    """What an interceptor knows of the call it wraps, beside the request message.

    Attributes:
        operation: the :class:`~projectops.Operation` called.
        headers: extra request headers to send (:class:`RequestHeaders`; never the API key's).
        attempts: HTTP attempts made so far (0 before the call goes out; after ``call_next``
            returns or raises, 1 plus the retries taken).
        http_status: the HTTP status of the last attempt's answer, once its head came (also
            when its body was then cut off); ``None`` before the call goes out and when that
            attempt got no head (refused, reset, timed out) or failed on it (e.g. too large).
    """

    operation: Operation
    headers: RequestHeaders = field(default_factory=RequestHeaders)
    attempts: int = 0
    http_status: int | None = None


#: What an interceptor of the sync client calls to go on: ``call_next(request, context)``
#: returns the response message (or raises the call's :class:`~projectops.ApiError`).
CallNext = Callable[[Message, CallContext], Message]
#: A sync interceptor: ``interceptor(request, context, call_next) -> response``.
Interceptor = Callable[[Message, CallContext, CallNext], Message]
#: :data:`CallNext` of the async client: awaitable.
AsyncCallNext = Callable[[Message, CallContext], Awaitable[Message]]
#: An async interceptor: ``async def interceptor(request, context, call_next) -> response``.
AsyncInterceptor = Callable[[Message, CallContext, AsyncCallNext], Awaitable[Message]]


def no_cookies() -> CookieJar:
    """A cookie jar that keeps no cookie and so sends none.

    The API key alone identifies the caller: a cookie a server set must not ride along with
    later calls (nor, in the tool server, with another agent's session). The standard
    library's policy does it through public API: with no domain allowed, ``set_ok`` refuses
    every ``Set-Cookie`` and ``return_ok`` every stored cookie. httpx extracts cookies in the
    client, not the transport, so this holds for a caller's transport too.
    """
    return CookieJar(policy=DefaultCookiePolicy(allowed_domains=[]))


def own_headers_only(http: httpx.Client | httpx.AsyncClient) -> None:
    """Drop httpx's default headers from `http`: a call sends exactly the headers
    :meth:`BaseClient._request` sets (and what HTTP/1.1 needs: Host, Content-Length)."""
    for name in list(http.headers):
        del http.headers[name]


class BaseClient:
    """Everything of a call but the waiting: configuration, request building, answer decoding.

    Shared by :class:`~projectops.client.http.Client` and
    :class:`~projectops.client.http.AsyncClient` so the two cannot drift; each sets ``_http``
    to its httpx client and reads the answer with :meth:`_body_limit` and :meth:`_take`.

    Args:
        base_url: the service's base address; ``None``: ``SERVICE_BACKEND_URL`` (empty counts
            as unset). There is no default: without either, :class:`MissingBaseUrl`.
        api_key: the project API key; ``None``: ``SERVICE_API_KEY``.
        timeout: seconds a whole call may take, all attempts and the waits between them;
            ``None``: no limit.
        max_response_bytes: the largest answer body read, in bytes.
        retries: extra attempts of a retryable call (:func:`may_retry`); 0: none.
        interceptors: callables wrapped around every call, the first outermost.

    Raises:
        MissingBaseUrl: (a ``ValueError``) neither `base_url` nor ``SERVICE_BACKEND_URL``.
        projectops.InvalidBaseUrl: (a ``ValueError``) the base URL is not an absolute
            http(s) URL, or holds a user name or password.
        ValueError: `timeout` is not positive, `max_response_bytes` is less than 1, or
            `retries` is negative.
        TypeError: `max_response_bytes` or `retries` is not an int, or an interceptor is not
            callable.
    """

    _http: httpx.Client | httpx.AsyncClient

    def __init__(
        self,
        base_url: str | None,
        api_key: str | None,
        timeout: float | None,
        max_response_bytes: int,
        retries: int = DEFAULT_RETRIES,
        interceptors: Sequence[Callable[..., Any]] = (),
    ) -> None:
        if timeout is not None and not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds or None, not {timeout}")
        self._timeout = timeout
        if isinstance(max_response_bytes, bool) or not isinstance(max_response_bytes, int):
            raise TypeError("max_response_bytes must be an int (bytes)")
        if max_response_bytes < 1:
            raise ValueError(f"max_response_bytes must be at least 1, not {max_response_bytes}")
        self._max_response_bytes = max_response_bytes
        if isinstance(retries, bool) or not isinstance(retries, int):
            raise TypeError("retries must be an int (extra attempts; 0 turns retries off)")
        if retries < 0:
            raise ValueError(f"retries must be 0 or more, not {retries}")
        self._retries = retries
        if isinstance(interceptors, (str, bytes)) or not all(map(callable, interceptors)):
            raise TypeError("interceptors must be a sequence of callables")
        self._interceptors = tuple(interceptors)
        # An empty environment variable counts as unset; an explicit argument is checked as is.
        url = base_url if base_url is not None else os.environ.get(BASE_URL_ENV)
        if not url and base_url is None:
            # No default address: a guessed one could send the key to whatever listens there.
            raise MissingBaseUrl(
                f"no base URL: {BASE_URL_ENV} is not set and none was given; set it to the "
                "service's root, e.g. https://ops.example.com"
            )
        self._base_url = normalize_base_url(url or "")
        key = api_key if api_key is not None else os.environ.get(API_KEY_ENV)
        self._api_key = key.strip() if key else None
        # The argument as given too: a key with surrounding blanks is still a secret.
        self._secrets = (self._api_key, api_key)

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
    def retries(self) -> int:
        """Extra attempts a retryable call may make (:func:`may_retry`); 0: none."""
        return self._retries

    @property
    def has_api_key(self) -> bool:
        """Whether an API key is configured (its value is never exposed)."""
        return bool(self._api_key)

    def __repr__(self) -> str:
        key = "set" if self._api_key else "unset"
        return f"{type(self).__name__}(base_url={self._base_url!r}, api_key=<{key}>)"

    def _prepare(
        self, key: OperationKey, request: RequestLike, response_type: type[Message] | None
    ) -> tuple[Operation, Message]:
        """Check everything locally (validating the request once) before a call goes out."""
        op = operation(key)
        if response_type is not None and response_type is not op.response_type:
            raise TypeError(
                f"{op.name} answers with {op.response_type.__name__}, not {response_type.__name__}"
            )
        message = prepare_request(op, request)
        usable_api_key(self._api_key)
        return op, message

    def _build(
        self, op: Operation, message: Message, given: Message, context: CallContext
    ) -> httpx.Request:
        """The HTTP request of a call of `op` with `message`; `given` is the message the call
        validated, so a replacement an interceptor passes on is validated in its turn."""
        if message is not given:
            message = prepare_request(op, message)
        headers = httpx.Headers(
            {
                "Content-Type": CONTENT_TYPE,
                "Accept": CONTENT_TYPE,
                # Nothing is decompressed that was not asked for (a gzip bomb inflates 1000x).
                "Accept-Encoding": "identity",
                "User-Agent": f"projectops/{projectops.__version__}",
                API_KEY_HEADER: self._api_key or "",
            }
        )
        for name, value in context.headers.items():
            headers[name] = value  # may replace Accept or User-Agent, never the key (refused)
        body = to_json(message).encode("utf-8")
        return self._http.build_request(
            "POST", self._base_url + op.path, headers=headers, content=body
        )

    def _checked(self, op: Operation, response: object) -> Message:
        """The result of the interceptors: the operation's response message, or TypeError."""
        if not isinstance(response, op.response_type):
            raise TypeError(
                f"an interceptor returned a {type(response).__name__}, not the "
                f"{op.response_type.__name__} of {op.name}"
            )
        return response

    @staticmethod
    def _starting(context: CallContext) -> None:
        """Count an attempt in `context`; it has no status until :meth:`_outcome` sees an
        answer (an attempt that raises leaves none)."""
        context.attempts += 1
        context.http_status = None

    def _outcome(self, op: Operation, attempt: Attempt, context: CallContext) -> Message | ApiError:
        """The response message of an attempt, or the error it ends with (not raised); the
        answer's status, if one came, goes into `context`."""
        if attempt.response is not None:
            context.http_status = attempt.response.status_code
        if attempt.failure is not None:
            return attempt.failure
        assert attempt.response is not None
        status = attempt.response.status_code
        if not 200 <= status < 300:
            return self._answer_error(op, attempt.response, attempt.body)
        return self._response(op, attempt.response, attempt.body)

    def _retry_wait(
        self, op: Operation, retry: int, attempt: Attempt, failure: ApiError, left: float | None
    ) -> float:
        """Seconds to wait before retry number `retry` after `attempt` failed with `failure`;
        raises the error the call ends with when there is no retry.

        `left` is the time left of the call (``None``: no limit). A wait that would use it
        all is not taken: the call then ends with `failure` if an answer came, else with the
        time-out error. Raises outside any ``except`` block, so nothing chained holds the
        request's headers.
        """
        answered = attempt.response is not None
        if isinstance(failure, ServiceUnreachable) and not answered:
            status: int | None = None  # refused, or reset before an answer
        elif answered and failure.http_status is not None:
            status = failure.http_status
        else:
            raise failure  # a time-out, or an answer cut short: never repeated
        if retry >= self._retries or not may_retry(op, status):
            raise failure
        after = attempt.response.headers.get("Retry-After") if attempt.response else None
        wait = retry_delay(retry, after)
        if left is not None and wait >= left:
            raise failure if answered else self._timed_out()
        return wait

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

    def _answer_error(self, op: Operation, response: httpx.Response, body: bytes) -> ApiError:
        """The ApiError a non-2xx answer stands for."""
        status = response.status_code
        if 300 <= status < 400:
            where = outside_text(response.headers.get("Location", "elsewhere"), 300)
            return UnexpectedRedirect(
                f"HTTP {status}: redirect to {where} not followed (a "
                "POST is never redirected; check the base URL)",
                http_status=status,
            )
        return error_from_answer(
            status,
            body,
            url=self._base_url + op.path,
            content_type=response.headers.get("Content-Type"),
        )

    def _response(self, op: Operation, response: httpx.Response, body: bytes) -> Message:
        """The response message of a 2xx answer; raise the ApiError of any other answer."""
        status = response.status_code
        if not 200 <= status < 300:
            raise self._answer_error(op, response, body)
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
