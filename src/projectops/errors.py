"""The error model of the API (docs/contract.md §5): :class:`Code`, the one table
:data:`HTTP_STATUS_BY_CODE`, and one exception class per code, all under :class:`ApiError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum

from projectops.v1.error_pb2 import ErrorResponse, FieldViolation

__all__ = [
    "ERROR_CLASSES",
    "HTTP_STATUS_BY_CODE",
    "Aborted",
    "AlreadyExists",
    "ApiError",
    "Canceled",
    "Code",
    "DataLoss",
    "DeadlineExceeded",
    "FailedPrecondition",
    "FieldViolation",
    "Internal",
    "InvalidArgument",
    "NotFound",
    "OutOfRange",
    "PermissionDenied",
    "ResourceExhausted",
    "Unauthenticated",
    "Unavailable",
    "Unimplemented",
    "Unknown",
]


class Code(StrEnum):
    """The Connect/gRPC error codes, by their Connect wire names (``ErrorResponse.code``)."""

    CANCELED = "canceled"
    UNKNOWN = "unknown"
    INVALID_ARGUMENT = "invalid_argument"
    DEADLINE_EXCEEDED = "deadline_exceeded"
    NOT_FOUND = "not_found"
    ALREADY_EXISTS = "already_exists"
    PERMISSION_DENIED = "permission_denied"
    RESOURCE_EXHAUSTED = "resource_exhausted"
    FAILED_PRECONDITION = "failed_precondition"
    ABORTED = "aborted"
    OUT_OF_RANGE = "out_of_range"
    UNIMPLEMENTED = "unimplemented"
    INTERNAL = "internal"
    UNAVAILABLE = "unavailable"
    DATA_LOSS = "data_loss"
    UNAUTHENTICATED = "unauthenticated"


#: Code -> HTTP status of the response (§5.2: Connect's, but ``resource_exhausted`` is 413).
HTTP_STATUS_BY_CODE: Mapping[Code, int] = {
    Code.CANCELED: 499,
    Code.UNKNOWN: 500,
    Code.INVALID_ARGUMENT: 400,
    Code.DEADLINE_EXCEEDED: 504,
    Code.NOT_FOUND: 404,
    Code.ALREADY_EXISTS: 409,
    Code.PERMISSION_DENIED: 403,
    Code.RESOURCE_EXHAUSTED: 413,
    Code.FAILED_PRECONDITION: 400,
    Code.ABORTED: 409,
    Code.OUT_OF_RANGE: 400,
    Code.UNIMPLEMENTED: 501,
    Code.INTERNAL: 500,
    Code.UNAVAILABLE: 503,
    Code.DATA_LOSS: 500,
    Code.UNAUTHENTICATED: 401,
}


class ApiError(Exception):
    """An error of the API (docs/contract.md §5.1), the base of one subclass per :class:`Code`.

    A subclass fixes `code`; construct it from a message alone:
    ``InvalidArgument("version: is required")``. Servers raise these from handlers and answer
    with their code's status (§5.2); clients raise them for an error response (§5.5).

    Args:
        message: the human-readable message, sent as ``ErrorResponse.message``.
        violations: one :class:`FieldViolation` per invalid field (field path and description,
            §4.3); empty (the default) for an error about no field.
        http_status: the status of the HTTP answer that caused this error (§5.3); ``None`` (the
            default) when no response was involved (raised locally, or by a server's handler).

    Attributes:
        code: the error's :class:`Code` (a class attribute of each subclass).
        message: as given.
        violations: as given, a tuple.
        http_status: as given.
    """

    code: Code = Code.UNKNOWN

    def __init__(
        self,
        message: str,
        violations: Iterable[FieldViolation] = (),
        *,
        http_status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.violations: tuple[FieldViolation, ...] = tuple(violations)
        self.http_status = http_status

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, http_status={self.http_status})"

    def describe(self) -> str:
        """The message and the violations it does not already state, for one line of output.

        Returns:
            The message, followed by ``[field: description; ...]`` for each violation whose text the
            message does not contain (a server's message often lists them itself).
        """
        extra = [
            f"{v.field}: {v.description}" if v.field else v.description for v in self.violations
        ]
        extra = [text for text in extra if text not in self.message]
        return f"{self.message.rstrip('.')} [{'; '.join(extra)}]" if extra else self.message

    def to_proto(self) -> ErrorResponse:
        """This error as the ``ErrorResponse`` message of docs/contract.md §5.1.

        Returns:
            A new ``ErrorResponse`` with `code`, `message` and `violations`; encode it with
            :func:`projectops.codec.error_body`.
        """
        return ErrorResponse(code=self.code, message=self.message, violations=self.violations)


class InvalidArgument(ApiError, ValueError):
    """The request is malformed or fails validation (400); a :class:`ValueError` too."""

    code = Code.INVALID_ARGUMENT


class FailedPrecondition(ApiError):
    """A business rule refuses the request, e.g. no release with that version (400)."""

    code = Code.FAILED_PRECONDITION


class OutOfRange(ApiError):
    """A value is outside the range the operation accepts (400 ``out_of_range``)."""

    code = Code.OUT_OF_RANGE


class Unauthenticated(ApiError):
    """The API key is missing or unknown (401 ``unauthenticated``, docs/contract.md §2)."""

    code = Code.UNAUTHENTICATED


class PermissionDenied(ApiError):
    """The key is known but may not do this (403 ``permission_denied``)."""

    code = Code.PERMISSION_DENIED


class NotFound(ApiError):
    """No such operation or path (404 ``not_found``)."""

    code = Code.NOT_FOUND


class AlreadyExists(ApiError):
    """What the request creates exists already (409 ``already_exists``)."""

    code = Code.ALREADY_EXISTS


class Aborted(ApiError):
    """The operation was aborted, e.g. by a concurrency conflict (409 ``aborted``)."""

    code = Code.ABORTED


class ResourceExhausted(ApiError):
    """The request body is larger than the server accepts (413 ``resource_exhausted``)."""

    code = Code.RESOURCE_EXHAUSTED


class Canceled(ApiError):
    """The caller canceled the operation (499 ``canceled``)."""

    code = Code.CANCELED


class Internal(ApiError):
    """The server failed unexpectedly (500 ``internal``); the message is generic."""

    code = Code.INTERNAL


class Unknown(ApiError):
    """An error without a known code (500 ``unknown``)."""

    code = Code.UNKNOWN


class DataLoss(ApiError):
    """Unrecoverable data loss or corruption (500 ``data_loss``)."""

    code = Code.DATA_LOSS


class Unimplemented(ApiError):
    """The operation is in the registry but the server does not implement it (501)."""

    code = Code.UNIMPLEMENTED


class Unavailable(ApiError):
    """The service could not be reached (503; raised by clients with ``http_status=None``)."""

    code = Code.UNAVAILABLE


class DeadlineExceeded(ApiError):
    """No complete answer within the time-out (504; raised by clients, ``http_status=None``)."""

    code = Code.DEADLINE_EXCEEDED


#: Code -> its exception class (every code has one).
ERROR_CLASSES: Mapping[Code, type[ApiError]] = {
    cls.code: cls for cls in ApiError.__subclasses__() if cls.__module__ == __name__
}
