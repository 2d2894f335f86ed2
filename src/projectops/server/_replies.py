"""The server adapter's answers other than a handler's: its own refusals (a row of
:mod:`projectops.answers`), error bodies cut to size, the 200 answer of encoded JSON, and
the log of a failure with the API key redacted."""

from __future__ import annotations

import logging
import traceback
from collections.abc import Mapping

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from projectops._text import MAX_TEXT_CHARS, cut, escape_lines, redact_secrets
from projectops.answers import (
    BODY_TOO_LARGE,
    INTERNAL_FAILURE,
    NO_OPERATION,
    WRONG_METHOD,
    ErrorCase,
)
from projectops.codec import error_body
from projectops.conventions import CONTENT_TYPE, MAX_BODY_BYTES
from projectops.errors import HTTP_STATUS_BY_CODE, ApiError, FieldViolation
from projectops.server._context import REDACTED

__all__ = [
    "Json",
    "Refusal",
    "answer",
    "error_response",
    "http_exception",
    "log_failure",
    "logger",
    "quoted",
    "too_large",
]


#: Where failures of handlers and of `authenticate` are logged, with their traceback (API keys
#: are redacted from the text).
logger = logging.getLogger("projectops.server")

_CONTENT_TYPE_BYTES = CONTENT_TYPE.encode("ascii")
# Longest text of an error body the adapter sends (message, each violation's field and
# description): a handler's or the codec's words may quote a request value.
_MAX_ERROR_TEXT = MAX_TEXT_CHARS


async def http_exception(request: Request, exc: Exception) -> Response:
    """Starlette's own errors (a path that is no operation's) as ErrorResponse bodies."""
    status = exc.status_code if isinstance(exc, HTTPException) else INTERNAL_FAILURE.http_status
    if status == NO_OPERATION.http_status:
        return answer(
            NO_OPERATION,
            f"no operation at {quoted(request.url.path)}; operations are served "
            "at /api/mcp/<operation_name>",
        )
    headers = getattr(exc, "headers", None)
    if status == WRONG_METHOD.http_status:
        # A GET-only route (/docs) asked with POST: the operations' own 405, with the route's
        # Allow header instead of theirs.
        allowed = (headers or {}).get("Allow", "GET")
        return answer(WRONG_METHOD, f"{request.method} is not allowed here; use {allowed}", headers)
    return error_response(
        ApiError(str(getattr(exc, "detail", "")) or f"HTTP {status}"), status, headers
    )


class Refusal(Exception):
    """The adapter refuses the request with one of its own answers (a row of
    :mod:`projectops.answers`), answered by :func:`answer`: its code, status and headers come
    from the row. Not an ApiError, so no ``except ApiError`` meant for handlers catches it."""

    def __init__(self, case: ErrorCase, message: str) -> None:
        super().__init__(message)
        self.case = case
        self.message = message


def answer(case: ErrorCase, message: str, headers: Mapping[str, str] | None = None) -> Response:
    """The adapter's answer of `case` (its code, status and headers) saying `message`;
    `headers` replace the case's own."""
    return error_response(
        case.error(message), case.http_status, case.headers if headers is None else headers
    )


class _ErrorResponse(Response):
    """An error answer that remembers its code, for the span of the request."""

    error_code: str


def error_response(
    error: ApiError, status: int | None = None, headers: Mapping[str, str] | None = None
) -> Response:
    """The error body of `error` (texts cut to size) with `status` (default: its code's) and
    `headers`; the response remembers the code as ``error_code`` for the request's span."""
    response = _ErrorResponse(
        error_body(_Cut(error) if _too_long(error) else error),
        status_code=status or HTTP_STATUS_BY_CODE[error.code],
        media_type=CONTENT_TYPE,
        headers=headers,
    )
    response.error_code = str(error.code)
    return response


class Json:
    """A 200 answer of an already encoded JSON body, as a plain ASGI app: the one path every
    request that succeeds takes, so its two messages are built here, nothing else."""

    __slots__ = ("_body",)
    status_code = 200

    def __init__(self, body: bytes | str) -> None:
        self._body = body.encode("utf-8") if isinstance(body, str) else body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = [
            (b"content-length", str(len(self._body)).encode("ascii")),
            (b"content-type", _CONTENT_TYPE_BYTES),
        ]
        await send({"type": "http.response.start", "status": self.status_code, "headers": headers})
        await send({"type": "http.response.body", "body": self._body})


def too_large() -> Refusal:
    """The refusal of a body larger than MAX_BODY_BYTES (413)."""
    return Refusal(BODY_TOO_LARGE, f"the request body is larger than {MAX_BODY_BYTES} bytes")


def quoted(path: str, limit: int = 100) -> str:
    """`path` as a Python literal, cut to `limit` characters: a request value in a message."""
    return repr(path) if len(path) <= limit else f"{path[:limit]!r}... ({len(path)} characters)"


def _too_long(error: ApiError) -> bool:
    texts = [error.message]
    texts += [text for v in error.violations for text in (v.field, v.description)]
    return any(len(text) > _MAX_ERROR_TEXT for text in texts)


class _Cut(ApiError):
    """`error` with its message and each violation's field and description cut to
    ``_MAX_ERROR_TEXT`` characters, the code kept (what an error body may carry)."""

    def __init__(self, error: ApiError) -> None:
        super().__init__(
            cut(error.message, _MAX_ERROR_TEXT),
            [
                FieldViolation(
                    field=cut(v.field, _MAX_ERROR_TEXT),
                    description=cut(v.description, _MAX_ERROR_TEXT),
                )
                for v in error.violations
            ],
        )
        self.code = error.code


def log_failure(what: str, exc: BaseException, api_key: str) -> None:
    """Log `exc` with its traceback: every form of `api_key` redacted, control characters
    escaped (the text may quote a request)."""
    text = redact_secrets("".join(traceback.format_exception(exc)), [api_key], REDACTED)
    logger.error("%s failed:\n%s", what, escape_lines(text.rstrip()))
