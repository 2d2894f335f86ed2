"""The client's own errors and the mapping of an answer to its exception (no httpx needed).

See the hierarchy in :mod:`projectops.client.http`. Every text taken from an answer is escaped
and cut (:func:`projectops._text.outside_text`) before it becomes part of an exception.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from projectops._text import outside_text
from projectops.codec import read_error_body
from projectops.conventions import API_KEY_ENV, BASE_URL_ENV, InvalidBaseUrl
from projectops.errors import (
    ERROR_CLASSES,
    ApiError,
    Code,
    DeadlineExceeded,
    FieldViolation,
    Internal,
    InvalidArgument,
    Unauthenticated,
    Unavailable,
    Unknown,
)

__all__ = [
    "AnswerTimedOut",
    "AnswerTooLarge",
    "InvalidRequest",
    "InvalidResponse",
    "MissingApiKey",
    "MissingBaseUrl",
    "ServiceUnreachable",
    "UnexpectedRedirect",
    "error_from_answer",
]


class MissingApiKey(Unauthenticated):
    """No usable API key is configured; raised locally before anything is sent
    (docs/contract.md §2.5).

    The key comes from the ``api_key`` argument or the ``SERVICE_API_KEY`` environment
    variable; it is missing when neither is set, or when it is blank or holds characters an
    HTTP header cannot carry. ``http_status`` is ``None``: no server answered.
    """


#: A key must travel as an HTTP header value: visible ASCII only. Checked locally, so that no
#: HTTP library ever gets to quote an unusable key in its own error message.
_KEY_PATTERN = re.compile(r"[\x21-\x7e]+")


def usable_api_key(key: str | None) -> str:
    """`key` itself if it can be sent as the ``Service-Api-Key`` header (docs/contract.md
    §2.5): not empty, visible ASCII only.

    Raises:
        MissingApiKey: `key` is ``None``, empty, or holds another character; the message says
            which, and never quotes the key.
    """
    if not key or not _KEY_PATTERN.fullmatch(key):
        problem = "is not set" if not key else "is not a valid HTTP header value"
        raise MissingApiKey(
            f"no usable API key: {API_KEY_ENV} {problem}; set it to the "
            "project's API key (from the project settings, key management)"
        )
    return key


class MissingBaseUrl(InvalidBaseUrl):
    """No base URL is configured: neither ``base_url=`` nor a non-empty ``SERVICE_BACKEND_URL``.

    Raised by the clients' constructors (a ``ValueError``, through
    :class:`~projectops.InvalidBaseUrl`): a client never guesses where the service is, since a
    guess could send the API key to whatever listens there. The message names
    ``SERVICE_BACKEND_URL``.
    """


class InvalidRequest(InvalidArgument):
    """The request is invalid, found locally before anything was sent (``http_status=None``).

    Raised for a field of the wrong form, an unknown field of a JSON object given as the
    request, or a REQUIRED field missing or blank; ``violations`` name the fields.
    """


class InvalidResponse(Internal):
    """A 2xx answer whose body is not the operation's response message (``http_status`` is the
    answer's)."""


class AnswerTooLarge(InvalidResponse):
    """A 2xx answer whose body is larger than the client's ``max_response_bytes``; it was not
    read to its end (``http_status`` is the answer's).

    An :class:`InvalidResponse` (code ``internal``): the answer cannot be used as sent, and
    the request was not at fault, so it is not a ``ResourceExhausted`` (the 413 a server
    gives a request body over its limit).
    """


class ServiceUnreachable(Unavailable):
    """No answer: the service could not be reached (``http_status=None``; an *answer* with
    code ``unavailable``, e.g. a 503, is a plain :class:`~projectops.Unavailable`)."""


class AnswerTimedOut(DeadlineExceeded):
    """No complete answer within the client's time-out (``http_status=None``)."""


class UnexpectedRedirect(ApiError):
    """A 3xx answer: never followed, since a POST must not silently become a GET; check the
    base URL (``http_status`` is the answer's)."""


# For an answer without a usable code: what its status means (Connect's HTTP -> code table,
# with this API's 400 and 413).
_CODE_BY_HTTP_STATUS: Mapping[int, Code] = {
    400: Code.INVALID_ARGUMENT,
    401: Code.UNAUTHENTICATED,
    403: Code.PERMISSION_DENIED,
    404: Code.NOT_FOUND,
    409: Code.ABORTED,
    413: Code.RESOURCE_EXHAUSTED,
    429: Code.UNAVAILABLE,
    501: Code.UNIMPLEMENTED,
    502: Code.UNAVAILABLE,
    503: Code.UNAVAILABLE,
    504: Code.UNAVAILABLE,
}


# An error page of a proxy or web server, not an answer of this API.
_MARKUP = re.compile(r"\s*<(?:!doctype|html|head|body|\?xml|[a-z]+[\s>/])", re.IGNORECASE)
#: Characters of a violation's field path kept in an error (the description gets the default).
_MAX_FIELD_CHARS = 200


def _is_markup(text: str, content_type: str | None) -> bool:
    kind = (content_type or "").split(";", 1)[0].strip().lower()
    return kind in ("text/html", "application/xhtml+xml") or bool(_MARKUP.match(text[:200]))


def error_from_answer(
    status: int,
    body: bytes | str,
    *,
    url: str | None = None,
    content_type: str | None = None,
) -> ApiError:
    """The exception an HTTP answer with a non-2xx `status` and `body` stands for.

    The class is that of the body's ``ErrorResponse.code`` whenever it is a known code, whatever
    the status (a 408 ``deadline_exceeded`` is a :class:`~projectops.DeadlineExceeded`, a 431
    ``resource_exhausted`` a :class:`~projectops.ResourceExhausted`): the server said what went
    wrong. Only a body without a known code falls back to the status (Connect's HTTP -> code
    table: 400 ``InvalidArgument``, 401 ``Unauthenticated``, 503 ``Unavailable``, ...;
    anything else ``Unknown``). ``http_status`` is `status` either way. The message and each
    violation's field and description are escaped and cut
    (:func:`~projectops._text.outside_text`: 1,000 characters, 200 for a field path). A body
    that is no ``ErrorResponse`` gives its text (escaped and cut, so one line), or
    ``HTTP <status>``, as the message; an HTML or XML page (by `content_type` or its first
    characters), which no server of this API sends, gives one line naming the status, `url`
    (the request's URL) and ``SERVICE_BACKEND_URL``. Never raises.
    """
    proto = read_error_body(body)
    violations: tuple[FieldViolation, ...] = ()
    if proto is not None:
        message = outside_text(proto.message)
        violations = tuple(
            FieldViolation(
                field=outside_text(v.field, _MAX_FIELD_CHARS),
                description=outside_text(v.description),
            )
            for v in proto.violations
        )
    else:
        head = body[:4096]
        text = head.decode("utf-8", "replace") if isinstance(head, bytes) else head
        if _is_markup(text, content_type):
            where = url or "the service"
            message = (
                f"HTTP {status} from {outside_text(where, 300)} is a web page, not an answer of "
                f"this API; check that {BASE_URL_ENV} (or --base-url) is the service's base URL"
            )
        else:
            whole = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
            message = outside_text(whole.strip()) or f"HTTP {status}"
    try:
        code: Code | None = Code(proto.code) if proto is not None else None
    except ValueError:
        code = None
    if code is None:
        code = _CODE_BY_HTTP_STATUS.get(status, Code.UNKNOWN)
    cls = ERROR_CLASSES.get(code, Unknown)
    return cls(message, violations, http_status=status)
