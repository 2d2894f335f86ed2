"""The error responses of the server adapter, each stated once (the order of the checks:
docs/contract.md §2.4): the adapter responds from these rows and the OpenAPI document describes
them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from projectops.conventions import API_KEY_HEADER, DEFAULT_BODY_TIMEOUT, MAX_BODY_BYTES
from projectops.errors import ERROR_CLASSES, HTTP_STATUS_BY_CODE, ApiError, Code, FieldViolation

__all__ = [
    "ALLOWED_METHOD",
    "BODY_TIMED_OUT",
    "BODY_TOO_LARGE",
    "BUSINESS_RULE",
    "DEADLINE_EXCEEDED",
    "ERROR_CASES",
    "HANDLER_ERRORS",
    "INTERNAL_FAILURE",
    "MALFORMED_BODY",
    "MISSING_REQUIRED",
    "NOT_IMPLEMENTED",
    "NO_OPERATION",
    "OUTSIDE_OPERATIONS",
    "UNAUTHENTICATED",
    "WRONG_METHOD",
    "ErrorCase",
]

#: The one HTTP method of every operation.
ALLOWED_METHOD = "POST"


@dataclass(frozen=True)
class ErrorCase:
    """One error response of the server adapter: what the server sends, and what the OpenAPI
    document says of it (docs/contract.md §2.4, §5).

    Attributes:
        code: the response's error code, a :class:`~projectops.Code` value (``"unauthenticated"``).
        situation: when the response is sent, in Markdown sentences (the OpenAPI description).
        status: the HTTP status when it is not the code's (:data:`~projectops.HTTP_STATUS_BY_CODE`);
            ``None`` (the default): the code's.
        headers: the headers the response always carries, name -> value; none by default (an
            empty mapping).
        when: a few words saying when those headers are sent; ``""`` (the default): always.
    """

    code: str
    situation: str
    status: int | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    when: str = ""

    @property
    def http_status(self) -> int:
        """The HTTP status of the response. Raises ValueError: `code` is no Code name."""
        if self.status is not None:
            return self.status
        return HTTP_STATUS_BY_CODE[Code(self.code)]

    def error(
        self,
        message: str,
        violations: Iterable[FieldViolation] = (),
    ) -> ApiError:
        """A new exception of this response's code (docs/contract.md §5.1).

        Args:
            message: the exception's message.
            violations: its field violations; none by default.

        Returns:
            An instance of the :class:`~projectops.ApiError` subclass of `code`.

        Raises:
            ValueError: `code` is not a :class:`~projectops.Code` value.
        """
        return ERROR_CLASSES[Code(self.code)](message, violations)


UNAUTHENTICATED = ErrorCase(
    Code.UNAUTHENTICATED,
    f"The `{API_KEY_HEADER}` header is missing or blank, sent twice, or the key is "
    "unknown. A request without a valid key gets this whatever its body "
    "(docs/contract.md §2.4).",
)
NO_OPERATION = ErrorCase(
    Code.NOT_FOUND,
    "The path is no operation's path, whatever the method and key (docs/contract.md §2.4).",
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
    f"The body is larger than the server's limit (by default {MAX_BODY_BYTES} bytes, "
    f"{MAX_BODY_BYTES / 2**20:g} MiB).",
)
BODY_TIMED_OUT = ErrorCase(
    Code.DEADLINE_EXCEEDED,
    "The body did not arrive whole within the server's time limit (`body_timeout`, by default "
    f"{DEFAULT_BODY_TIMEOUT:g} s for the whole body, however slowly it trickles); the "
    "connection is closed.",
    status=408,
    headers={"Connection": "close"},
)
MALFORMED_BODY = ErrorCase(
    Code.INVALID_ARGUMENT,
    "The body is not UTF-8 JSON, not an object, or a field has the "
    "wrong type; `violations` names the field.",
)
MISSING_REQUIRED = ErrorCase(
    Code.INVALID_ARGUMENT, "A REQUIRED field is missing or blank; one violation per field."
)
#: Not the adapter's own check: a handler's (the mock server's when no response matches).
BUSINESS_RULE = ErrorCase(
    Code.FAILED_PRECONDITION,
    "A business rule refuses the request (for example, no "
    "release with that version in the project).",
)
NOT_IMPLEMENTED = ErrorCase(
    Code.UNIMPLEMENTED, "The operation is in the registry, but this server does not implement it."
)
INTERNAL_FAILURE = ErrorCase(
    Code.INTERNAL, "The server failed unexpectedly; the message is generic."
)
DEADLINE_EXCEEDED = ErrorCase(
    Code.DEADLINE_EXCEEDED,
    "The server's `handler_timeout` passed before the handler (or `authenticate`, or an "
    "interceptor) finished.",
)

_STATED = (
    UNAUTHENTICATED,
    NO_OPERATION,
    WRONG_METHOD,
    BODY_TOO_LARGE,
    BODY_TIMED_OUT,
    MALFORMED_BODY,
    MISSING_REQUIRED,
    BUSINESS_RULE,
    NOT_IMPLEMENTED,
    INTERNAL_FAILURE,
    DEADLINE_EXCEEDED,
)
#: The responses of no operation (an unknown path, a method but POST).
OUTSIDE_OPERATIONS: tuple[ErrorCase, ...] = (NO_OPERATION, WRONG_METHOD)
#: A handler may raise the error of any code (docs/contract.md §5.1): each code no response of an
#: operation above states is a row of its own, sent with its code's status.
HANDLER_ERRORS: tuple[ErrorCase, ...] = tuple(
    ErrorCase(code, f"The handler raised `projectops.{ERROR_CLASSES[code].__name__}`.")
    for code in Code
    if code not in {case.code for case in _STATED if case not in OUTSIDE_OPERATIONS}
)

#: Every error response of the adapter, in the order the OpenAPI document describes them.
ERROR_CASES: tuple[ErrorCase, ...] = (*_STATED, *HANDLER_ERRORS)
