"""The adapter's responses: its own errors (rows of :mod:`projectops.error_cases`), error
bodies cut to size, the 200 of encoded JSON; and the bounded log of a failure."""

from __future__ import annotations

import logging
import traceback
from collections.abc import Mapping

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from projectops._text import MAX_TEXT_CHARS, cut_counting, outside_text
from projectops.codec import error_body
from projectops.conventions import CONTENT_TYPE
from projectops.error_cases import (
    BODY_TOO_LARGE,
    INTERNAL_FAILURE,
    NO_OPERATION,
    WRONG_METHOD,
    ErrorCase,
)
from projectops.errors import ERROR_CLASSES, HTTP_STATUS_BY_CODE, ApiError, FieldViolation

__all__ = [
    "Abort",
    "EncodedJSONResponse",
    "error_response",
    "http_exception",
    "log_failure",
    "logger",
    "quoted",
    "respond",
    "too_large",
]

#: Where failures of the service's code are logged (docs/contract.md §5).
logger = logging.getLogger("projectops.server")

_CONTENT_TYPE_BYTES = CONTENT_TYPE.encode("ascii")
# The most of one failure's log text: its head and its tail (where the exception is) are kept.
_MAX_LOG_CHARS = 4 * MAX_TEXT_CHARS


async def http_exception(request: Request, exc: Exception) -> Response:
    """Starlette's own errors (no such path, a wrong method on /docs) as ``ErrorResponse``."""
    status = INTERNAL_FAILURE.http_status
    if isinstance(exc, HTTPException):
        status = exc.status_code
    if status == NO_OPERATION.http_status:
        return respond(
            NO_OPERATION,
            f"no operation at {quoted(request.url.path)}; operations are served "
            "at /api/mcp/<operation_name>",
        )
    headers = getattr(exc, "headers", None)
    if status == WRONG_METHOD.http_status:
        allowed = (headers or {}).get("Allow", "GET")
        return respond(
            WRONG_METHOD, f"{request.method} is not allowed here; use {allowed}", headers
        )
    return error_response(
        ApiError(str(getattr(exc, "detail", "")) or f"HTTP {status}"), status, headers
    )


class Abort(Exception):
    """Ends a call with one of the adapter's own error responses, as gRPC's ``context.abort``
    does with a status (no ``ApiError``: a handler's ``except`` cannot catch it)."""

    def __init__(self, case: ErrorCase, message: str) -> None:
        super().__init__(message)
        self.case = case
        self.message = message


def respond(
    case: ErrorCase,
    message: str,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """The response of `case` saying `message` (`headers` replace the row's)."""
    if headers is None:
        headers = case.headers
    return error_response(case.error(message), case.http_status, headers)


def error_response(
    error: ApiError,
    status: int | None = None,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """The response of `error` as the app writes it (docs/contract.md §5.1): its
    ``ErrorResponse`` as JSON, the message and each violation's texts cut to 1,000 characters
    (docs/contract.md §6).

    Args:
        error: any :class:`projectops.ApiError`.
        status: the HTTP status; ``None``: the one of `error`'s code
            (:data:`projectops.HTTP_STATUS_BY_CODE`, docs/contract.md §5.2).
        headers: headers to add (``Content-Type`` is ``application/json`` already).

    Returns:
        A Starlette ``Response``.
    """
    cut_violations = [
        FieldViolation(field=cut_counting(v.field), description=cut_counting(v.description))
        for v in error.violations
    ]
    error_class = ERROR_CLASSES.get(error.code, ApiError)
    error = error_class(cut_counting(error.message), cut_violations)
    return Response(
        error_body(error),
        status_code=status or HTTP_STATUS_BY_CODE[error.code],
        media_type=CONTENT_TYPE,
        headers=headers,
    )


class EncodedJSONResponse:
    """The 200 response of an encoded JSON body, a bare ASGI app (the hot path)."""

    __slots__ = ("_body",)
    status_code = 200

    def __init__(self, body: bytes | str) -> None:
        if isinstance(body, str):
            body = body.encode("utf-8")
        self._body = body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = [
            (b"content-length", str(len(self._body)).encode("ascii")),
            (b"content-type", _CONTENT_TYPE_BYTES),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": self._body})


def too_large(limit: int) -> ApiError:
    """The 413 ``resource_exhausted`` of a request body over `limit` bytes."""
    return BODY_TOO_LARGE.error(f"the request body is larger than {limit} bytes")


def quoted(path: str, limit: int = 100) -> str:
    """`path` as a Python literal cut to `limit` characters, for a message."""
    if len(path) <= limit:
        return repr(path)
    return f"{path[:limit]!r}... ({len(path)} characters)"


def log_failure(what: str, exc: BaseException, api_key: str) -> None:
    """Log `exc` and its traceback, each line redacted, escaped and cut, the whole bounded
    (docs/contract.md §6)."""
    lines = [
        outside_text(line, secrets=[api_key])
        for text in traceback.format_exception(exc)
        for line in text.rstrip("\n").split("\n")
    ]
    text = "\n".join(lines)
    if len(text) > _MAX_LOG_CHARS:
        half = _MAX_LOG_CHARS // 2
        text = f"{text[:half]}\n... [{len(text) - 2 * half:,} characters cut] ...\n{text[-half:]}"
    logger.error("%s failed:\n%s", what, text)
