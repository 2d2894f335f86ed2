"""The error answers of the server adapter, each stated once: status, code, headers, condition.

The adapter (:func:`projectops.server.create_app`) answers from these rows: the exception it
raises comes from :meth:`ErrorCase.error`, the status of its answer from
:attr:`ErrorCase.http_status`, and headers such as ``Allow`` from :attr:`ErrorCase.headers`. The
OpenAPI document (:mod:`projectops.openapi`) describes every operation's error responses from
:data:`ERROR_CASES`. A core module, so that both layers can read it (the server layer cannot be
imported from the core).

A row's status is :data:`~projectops.errors.HTTP_STATUS_BY_CODE`'s for its code unless the row
says otherwise: only :data:`WRONG_METHOD` does (405), a transport answer outside that table.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from projectops.conventions import API_KEY_HEADER, MAX_BODY_BYTES
from projectops.errors import ERROR_CLASSES, HTTP_STATUS_BY_CODE, ApiError, Code, FieldViolation

__all__ = [
    "ALLOWED_METHOD",
    "BODY_TOO_LARGE",
    "BUSINESS_RULE",
    "ERROR_CASES",
    "INTERNAL_FAILURE",
    "MALFORMED_BODY",
    "MISSING_REQUIRED",
    "NOT_IMPLEMENTED",
    "NO_OPERATION",
    "UNAUTHENTICATED",
    "WRONG_METHOD",
    "ErrorCase",
]

#: The one HTTP method of every operation.
ALLOWED_METHOD = "POST"


@dataclass(frozen=True)
class ErrorCase:
    """One error answer: a situation, its code, its HTTP status and the headers it carries.

    Attributes:
        code: the ``ErrorResponse.code`` of the answer (a :class:`~projectops.errors.Code` or
            its name).
        situation: when the server answers so, as a sentence (Markdown).
        status: the HTTP status when it is not ``HTTP_STATUS_BY_CODE[code]`` (the 405 of a
            wrong method is a transport answer of the adapter, outside that table).
        headers: response headers the answer always carries (name -> value).
        when: the situation in a few words that follow "when" (``the method is not allowed``),
            for the description of those headers; empty when `headers` is.
    """

    code: str
    situation: str
    status: int | None = None
    headers: Mapping[str, str] | None = None
    when: str = ""

    @property
    def http_status(self) -> int:
        """The HTTP status of the answer (an ``int`` such as 401).

        Raises:
            ValueError: `code` is no :class:`~projectops.errors.Code` name.
        """
        if self.status is not None:
            return self.status
        return HTTP_STATUS_BY_CODE[Code(self.code)]

    def error(self, message: str, violations: Iterable[FieldViolation] = ()) -> ApiError:
        """A new exception of this answer's code (its class from ``ERROR_CLASSES``), carrying
        `message` and `violations`; raise it, or answer it with :attr:`http_status`.

        Raises:
            ValueError: `code` is no :class:`~projectops.errors.Code` name.
        """
        return ERROR_CLASSES[Code(self.code)](message, violations)


UNAUTHENTICATED = ErrorCase(
    Code.UNAUTHENTICATED,
    f"The `{API_KEY_HEADER}` header is missing or blank, sent twice, or the key is "
    f"unknown. Checked once the path is an operation's and the method {ALLOWED_METHOD}, before "
    "the body is read: a request without a valid key gets this whatever its body.",
)
NO_OPERATION = ErrorCase(
    Code.NOT_FOUND,
    "The path is no operation's path (checked first, whatever the method and key; a "
    "percent-encoded path never matches).",
)
WRONG_METHOD = ErrorCase(
    Code.UNIMPLEMENTED,
    f"Any method but {ALLOWED_METHOD}, on an operation's path.",
    status=405,
    headers={"Allow": ALLOWED_METHOD},
    when="the method is not allowed",
)
BODY_TOO_LARGE = ErrorCase(
    Code.RESOURCE_EXHAUSTED,
    f"The body is larger than {MAX_BODY_BYTES} bytes ({MAX_BODY_BYTES / 2**20:g} MiB).",
)
MALFORMED_BODY = ErrorCase(
    Code.INVALID_ARGUMENT,
    "The body is not UTF-8 JSON, not an object, or a field has the "
    "wrong type; `violations` names the field.",
)
MISSING_REQUIRED = ErrorCase(
    Code.INVALID_ARGUMENT, "A REQUIRED field is missing or blank; one violation per field."
)
#: Not the adapter's own check: a handler's (the mock server's when no answer matches).
BUSINESS_RULE = ErrorCase(
    Code.FAILED_PRECONDITION,
    "A business rule refuses the request (for example, no "
    "release with that version in the project).",
)
NOT_IMPLEMENTED = ErrorCase(
    Code.UNIMPLEMENTED,
    "The operation is in the registry, but this server does not implement it.",
)
INTERNAL_FAILURE = ErrorCase(
    Code.INTERNAL, "The server failed unexpectedly; the message is generic."
)

#: Every error answer an operation can get, as the README's error table lists them; the
#: OpenAPI document describes each status of its responses by these rows, in this order.
ERROR_CASES: tuple[ErrorCase, ...] = (
    UNAUTHENTICATED,
    NO_OPERATION,
    WRONG_METHOD,
    BODY_TOO_LARGE,
    MALFORMED_BODY,
    MISSING_REQUIRED,
    BUSINESS_RULE,
    NOT_IMPLEMENTED,
    INTERNAL_FAILURE,
)
