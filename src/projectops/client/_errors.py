"""The client's own errors (docs/python.md "Errors") and the exception a response stands for;
no HTTP library needed. Text from a response goes through :func:`~projectops._text.outside_text`."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from contextlib import suppress

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


class MissingApiKey(Unauthenticated):
    """No usable API key (docs/contract.md §2.5); nothing was sent."""


class MissingBaseUrl(InvalidBaseUrl):
    """Neither ``base_url=`` nor a non-empty ``SERVICE_BACKEND_URL``: a client never guesses."""


class InvalidRequest(InvalidArgument):
    """The request is invalid, found before anything was sent; ``violations`` name the fields."""


class InvalidResponse(Internal):
    """A 2xx response that is not the response message, or in a ``Content-Encoding`` not asked
    for."""


class ResponseTooLarge(InvalidResponse):
    """A 2xx response over ``max_response_bytes``, not read to its end."""


class ServiceUnreachable(Unavailable):
    """No complete answer: refused, reset, or the name does not resolve."""


class ResponseTimedOut(DeadlineExceeded):
    """No complete response within the time-out."""


#: The name of :class:`ResponseTimedOut` in 0.1.0 (deprecated).
AnswerTimedOut = ResponseTimedOut


class UnexpectedRedirect(ApiError):
    """A 3xx answer, never followed: a POST must not silently become a GET."""


# Checked before an HTTP library could quote an unusable key in its own message.
_KEY_PATTERN = re.compile(r"[\x21-\x7e]+")


def usable_api_key(key: str | None) -> str:
    """Check that a key can be sent as the ``Service-Api-Key`` header (docs/contract.md §2.5).

    Args:
        key: the API key as configured; ``None`` when none is.

    Returns:
        `key` itself: non-empty visible ASCII.

    Raises:
        MissingApiKey: it is ``None`` ("is not set"), empty ("is empty") or holds another
            character; the key is never quoted.
    """
    if key is not None and _KEY_PATTERN.fullmatch(key):
        return key
    problem = "is not a valid HTTP header value"
    if not key:  # `SERVICE_API_KEY=` is a variable set to nothing, not a missing one
        problem = "is not set" if key is None else "is empty"
    raise MissingApiKey(
        f"no usable API key: {API_KEY_ENV} {problem}; set it to the "
        "project's API key (from the project settings, key management)"
    )


# For a response without a known code: Connect's HTTP -> code table, with this API's 400 and 413.
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
# A proxy's or web server's error page, not a response of this API.
_MARKUP = re.compile(r"\s*<(?:!doctype|html|head|body|\?xml|[a-z]+[\s>/])", re.IGNORECASE)
_MAX_FIELD_CHARS = 200
#: Bytes of an error body parsed as an ``ErrorResponse``; a longer one is shown by its head.
MAX_ERROR_BODY_BYTES = 1024 * 1024


def error_from_response(
    status: int,
    body: bytes | str,
    *,
    url: str | None = None,
    content_type: str | None = None,
    secrets: Iterable[str | None] = (),
) -> ApiError:
    """The exception a non-2xx response stands for (docs/contract.md §5.4, §5.5); never raises.

    The class is that of the body's ``ErrorResponse.code`` when the code is known, else the
    status's (§5.2), else ``Unknown``. A body that is no ``ErrorResponse`` gives its text or
    ``HTTP <status>``; a web page, one line naming `url`.

    Args:
        status: the response's HTTP status.
        body: the response's body, as read (capped).
        url: the URL called, named when the body is a web page; ``None`` (the default): not
            named.
        content_type: the response's ``Content-Type``; ``None`` (the default): none was sent.
        secrets: strings redacted from every quoted text (§9.4), e.g. the API key.

    Returns:
        An :class:`~projectops.ApiError` subclass whose ``http_status`` is `status`; its texts
        escaped and cut (§9.3).
    """
    proto = read_error_body(body) if len(body) <= MAX_ERROR_BODY_BYTES else None
    violations: tuple[FieldViolation, ...] = ()
    code = _CODE_BY_HTTP_STATUS.get(status, Code.UNKNOWN)
    if proto is not None:
        message = outside_text(proto.message, secrets=secrets)
        violations = tuple(
            FieldViolation(
                field=outside_text(v.field, _MAX_FIELD_CHARS, secrets),
                description=outside_text(v.description, secrets=secrets),
            )
            for v in proto.violations
        )
        with suppress(ValueError):  # a code this version does not know: the status's
            code = Code(proto.code)
    else:
        head = body[:MAX_ERROR_BODY_BYTES]
        text = head.decode("utf-8", "replace") if isinstance(head, bytes) else head
        media_type = (content_type or "").split(";", 1)[0]
        kind = media_type.strip().lower()
        if kind in ("text/html", "application/xhtml+xml") or _MARKUP.match(text[:200]):
            message = (
                f"HTTP {status} from {outside_text(url or 'the service', 300)} is a web page, not "
                f"an answer of this API; check that {BASE_URL_ENV} (or --base-url) is the "
                "service's base URL"
            )
        else:
            message = outside_text(text.strip(), secrets=secrets) or f"HTTP {status}"
    cls = ERROR_CLASSES.get(code, Unknown)
    return cls(message, violations, http_status=status)
