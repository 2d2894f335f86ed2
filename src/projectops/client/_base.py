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
from collections.abc import Mapping
from http.cookiejar import CookieJar, DefaultCookiePolicy
from typing import Any

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
    "BaseClient",
    "OperationKey",
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

# A key must travel as an HTTP header value: visible ASCII only. Checked locally so that no
# HTTP library ever gets to quote an unusable key in its own error message.
_KEY_PATTERN = re.compile(r"[\x21-\x7e]+")
_ERRNO_PREFIX = re.compile(r"^\[Errno -?\d+\]\s*")

# Bytes of a non-2xx answer's body that are read: its message is cut to 1,000 characters.
_MAX_ERROR_BODY_BYTES = 1024 * 1024


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
            as unset), then ``DEFAULT_BASE_URL``.
        api_key: the project API key; ``None``: ``SERVICE_API_KEY``.
        timeout: seconds a whole call may take; ``None``: no limit.
        max_response_bytes: the largest answer body read, in bytes.

    Raises:
        projectops.InvalidBaseUrl: (a ``ValueError``) the base URL is not an absolute
            http(s) URL, or holds a user name or password.
        ValueError: `timeout` is not positive, or `max_response_bytes` is less than 1.
        TypeError: `max_response_bytes` is not an int.
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
