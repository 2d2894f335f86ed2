"""The client's own errors and the mapping of an answer to its exception (no httpx needed).

See the hierarchy in :mod:`projectops.client.http`.
"""

from __future__ import annotations

from collections.abc import Mapping

from projectops.codec import read_error_body
from projectops.errors import (
    ERROR_CLASSES,
    HTTP_STATUS_BY_CODE,
    ApiError,
    Code,
    DeadlineExceeded,
    Internal,
    InvalidArgument,
    Unauthenticated,
    Unavailable,
    Unknown,
)

__all__ = [
    "AnswerTimedOut",
    "InvalidRequest",
    "InvalidResponse",
    "MissingApiKey",
    "ServiceUnreachable",
    "UnexpectedRedirect",
    "error_from_answer",
]


class MissingApiKey(Unauthenticated):
    """No usable API key is configured; raised locally before anything is sent (spec 5).

    The key comes from the ``api_key`` argument or the ``SERVICE_API_KEY`` environment
    variable; it is missing when neither is set, or when it is blank or holds characters an
    HTTP header cannot carry. ``http_status`` is ``None``: no server answered.
    """


class InvalidRequest(InvalidArgument):
    """The request is invalid, found locally before anything was sent (``http_status=None``).

    Raised for a field of the wrong form, an unknown field of a JSON object given as the
    request, or a REQUIRED field missing or blank; ``violations`` name the fields.
    """


class InvalidResponse(Internal):
    """A 2xx answer whose body is not the operation's response message (``http_status`` is the
    answer's)."""


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


def error_from_answer(status: int, body: bytes | str) -> ApiError:
    """The exception an HTTP answer with a non-2xx `status` and `body` stands for.

    The class is that of the body's ``ErrorResponse.code`` when the table
    (:data:`~projectops.HTTP_STATUS_BY_CODE`) gives that code this status, else that of the
    status alone (a 400 is always an ``InvalidArgument``, ``FailedPrecondition`` or
    ``OutOfRange``); ``http_status`` is `status`. A body that is no ``ErrorResponse`` (an HTML
    error page, plain text) gives its text, or ``HTTP <status>``, as the message. Never raises.
    """
    proto = read_error_body(body)
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    message = proto.message if proto is not None else (text.strip() or f"HTTP {status}")
    violations = proto.violations if proto is not None else ()
    try:
        code: Code | None = Code(proto.code) if proto is not None else None
    except ValueError:
        code = None
    if code is None or HTTP_STATUS_BY_CODE[code] != status:
        code = _CODE_BY_HTTP_STATUS.get(status, Code.UNKNOWN)
    cls = ERROR_CLASSES.get(code, Unknown)
    return cls(message, violations, http_status=status)
