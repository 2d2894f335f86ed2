"""The error model of the API: codes, HTTP statuses and the `ErrorResponse` body (spec section 7).

One table, :data:`HTTP_STATUS_BY_CODE`, maps each Connect/gRPC code name to the HTTP status the
service answers with; the client and the server both read it. Every non-2xx answer carries an
:class:`~projectops.v1.error_pb2.ErrorResponse` body, and :class:`ApiError` converts to and from it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from projectops.v1.error_pb2 import ErrorResponse, FieldViolation

__all__ = [
    "HTTP_STATUS_BY_CODE",
    "ApiError",
    "DeadlineExceeded",
    "FailedPrecondition",
    "FieldViolation",
    "Internal",
    "InvalidArgument",
    "NotFound",
    "ResourceExhausted",
    "Unauthenticated",
    "Unavailable",
    "Unimplemented",
]

#: Connect/gRPC code name -> HTTP status of the answer (DESIGN.md, "Errors").
HTTP_STATUS_BY_CODE: Mapping[str, int] = {
    "invalid_argument": 400,
    "failed_precondition": 400,
    "unauthenticated": 401,
    "not_found": 404,
    "unimplemented": 405,
    "resource_exhausted": 413,
    "internal": 500,
    "unknown": 500,
    # Raised by clients when no answer came: the service was unreachable or too slow.
    "unavailable": 503,
    "deadline_exceeded": 504,
}

# For bodies without a usable code: the code a bare status most likely means.
_CODE_BY_HTTP_STATUS = {
    400: "invalid_argument",
    401: "unauthenticated",
    404: "not_found",
    405: "unimplemented",
    413: "resource_exhausted",
    500: "internal",
}


class ApiError(Exception):
    """An error of the API, raised locally or decoded from an answer's `ErrorResponse` body.

    Attributes:
        code: Connect/gRPC code name in snake_case (``"invalid_argument"``, ...).
        message: the human-readable sentence; never contains an API key.
        violations: one :class:`FieldViolation` (``field`` path in camelCase, ``description``)
            per invalid field; empty when the error is not about a field.
        http_status: the HTTP status of the answer (from :data:`HTTP_STATUS_BY_CODE` unless the
            error was decoded from an answer with another status).

    Subclasses fix the code; construct them from a message alone, e.g.
    ``InvalidArgument("version: is required")``.
    """

    #: Default code of the class; an instance decoded from an answer keeps the server's code.
    code: str = "unknown"

    def __init__(
        self,
        message: str,
        violations: Iterable[FieldViolation] = (),
        *,
        http_status: int | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code or type(self).code
        self.message = message
        self.violations: tuple[FieldViolation, ...] = tuple(violations)
        self.http_status: int = http_status or HTTP_STATUS_BY_CODE.get(self.code, 500)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, http_status={self.http_status})"

    def describe(self) -> str:
        """The message, followed by ``[field: description; ...]`` for the violations the
        message does not already state (a server's message often lists them itself)."""
        extra = [
            f"{v.field}: {v.description}" if v.field else v.description for v in self.violations
        ]
        extra = [text for text in extra if text not in self.message]
        return f"{self.message.rstrip('.')} [{'; '.join(extra)}]" if extra else self.message

    def to_proto(self) -> ErrorResponse:
        """The `ErrorResponse` message of this error."""
        return ErrorResponse(code=self.code, message=self.message, violations=self.violations)

    def to_json(self) -> str:
        """The JSON body of this error, in the protobuf JSON mapping (compact)."""
        from projectops.codec import to_json  # the codec raises these errors: import late

        return to_json(self.to_proto(), indent=None)

    @staticmethod
    def from_response(status: int, body: bytes | str) -> ApiError:
        """Build the error an HTTP answer with a non-2xx `status` and `body` stands for.

        The body is read as an `ErrorResponse`; when it is not one (not JSON, no ``message``),
        the raw text (or the status alone when it is empty) becomes the message and the code
        is inferred from the status. Returns the subclass of the code (``ApiError`` itself for
        codes without one); never raises.
        """
        from projectops.codec import from_json

        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        try:
            proto = from_json(text, ErrorResponse)
        except InvalidArgument:
            proto = ErrorResponse()
        if not proto.message:
            proto.message = text.strip() or f"HTTP {status}"
        code = proto.code or _CODE_BY_HTTP_STATUS.get(status, "unknown")
        cls = _ERROR_CLASSES.get(code, ApiError)
        return cls(proto.message, proto.violations, http_status=status, code=code)


class InvalidArgument(ApiError, ValueError):
    """The request is malformed or fails validation (400 ``invalid_argument``).

    Also a :class:`ValueError`, so local validation failures can be caught as such.
    """

    code = "invalid_argument"


class FailedPrecondition(ApiError):
    """A business rule refuses the request, e.g. no release with that version (400)."""

    code = "failed_precondition"


class Unauthenticated(ApiError):
    """The API key is missing or unknown (401 ``unauthenticated``, spec section 5)."""

    code = "unauthenticated"


class NotFound(ApiError):
    """No operation of that name (404 ``not_found``)."""

    code = "not_found"


class Unimplemented(ApiError):
    """The HTTP method is not POST (405 ``unimplemented``)."""

    code = "unimplemented"


class ResourceExhausted(ApiError):
    """The request body is larger than the server accepts (413 ``resource_exhausted``)."""

    code = "resource_exhausted"


class Internal(ApiError):
    """The server failed unexpectedly (500 ``internal``); the message is generic."""

    code = "internal"


class Unavailable(ApiError):
    """No answer: the service could not be reached (raised by clients; Connect's code)."""

    code = "unavailable"


class DeadlineExceeded(ApiError):
    """No answer within the client's time-out (raised by clients; Connect's code)."""

    code = "deadline_exceeded"


_ERROR_CLASSES: Mapping[str, type[ApiError]] = {
    cls.code: cls
    for cls in (
        InvalidArgument,
        FailedPrecondition,
        Unauthenticated,
        NotFound,
        Unimplemented,
        ResourceExhausted,
        Internal,
        Unavailable,
        DeadlineExceeded,
    )
}
