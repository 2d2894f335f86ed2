"""error_from_response: the ApiError class a non-2xx response stands for, from its status and body.

Moved here from the HTTP client's tests: the mapping is :mod:`projectops.client._errors`'s, and
both clients and the tool server raise what it gives.
"""

from __future__ import annotations

import json

import pytest

import projectops
from projectops import (
    Aborted,
    ApiError,
    DeadlineExceeded,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    OutOfRange,
    PermissionDenied,
    ResourceExhausted,
    Unauthenticated,
    Unavailable,
    Unimplemented,
    Unknown,
)
from projectops.client._errors import error_from_response
from projectops.codec import error_body


@pytest.mark.parametrize("cls", list(projectops.ERROR_CLASSES.values()), ids=lambda c: c.__name__)
def test_an_error_body_comes_back_as_its_class(cls: type[ApiError]) -> None:
    status = projectops.HTTP_STATUS_BY_CODE[cls.code]
    sent = cls("something is off")
    for body in (error_body(sent), error_body(sent).encode()):
        error = error_from_response(status, body)
        assert type(error) is cls
        assert (error.message, error.http_status) == ("something is off", status)


def test_an_error_body_keeps_its_violations() -> None:
    sent = InvalidArgument(
        "version: is required",
        [projectops.FieldViolation(field="version", description="is required")],
    )
    error = error_from_response(400, error_body(sent).encode())
    assert type(error) is InvalidArgument
    assert [(v.field, v.description) for v in error.violations] == [("version", "is required")]


@pytest.mark.parametrize(
    ("status", "body", "cls", "message"),
    [
        (502, b"Bad gateway\r\n", Unavailable, "Bad gateway"),
        (503, b"", Unavailable, "HTTP 503"),
        (504, b"upstream timed out", Unavailable, "upstream timed out"),
        # Too many requests: retry later, as for a server that cannot take the call (§5.2).
        (429, b"", Unavailable, "HTTP 429"),
        (429, b"slow down", Unavailable, "slow down"),
        (401, b"", Unauthenticated, "HTTP 401"),
        (403, b"", PermissionDenied, "HTTP 403"),
        (404, b"Not Found", NotFound, "Not Found"),
        (409, b"", Aborted, "HTTP 409"),
        (413, b"too big", ResourceExhausted, "too big"),
        (400, b"plain text reason", InvalidArgument, "plain text reason"),
        (400, b'{"error": "no message field"}', InvalidArgument, '{"error": "no message field"}'),
        (418, b"teapot", Unknown, "teapot"),
        (501, b"", Unimplemented, "HTTP 501"),
        (500, b"", Unknown, "HTTP 500"),
    ],
)
def test_an_answer_without_a_usable_body_is_the_class_of_its_status(
    status: int, body: bytes, cls: type[ApiError], message: str
) -> None:
    error = error_from_response(status, body)
    assert type(error) is cls
    assert error.message == message
    assert error.http_status == status


@pytest.mark.parametrize(
    ("status", "code", "cls"),
    [
        (400, "failed_precondition", FailedPrecondition),
        (400, "out_of_range", OutOfRange),
        (409, "aborted", Aborted),
        # A known code is kept whatever the status: the server said what went wrong.
        (408, "deadline_exceeded", DeadlineExceeded),
        (431, "resource_exhausted", ResourceExhausted),
        (400, "not_found", NotFound),
        (404, "invalid_argument", InvalidArgument),
        (500, "unauthenticated", Unauthenticated),
        (400, "teapot", InvalidArgument),  # an unknown code string: the status decides
        (503, "teapot", Unavailable),
        (418, "teapot", Unknown),
    ],
)
def test_a_known_body_code_gives_the_class_and_the_status_stays_the_answers(
    status: int, code: str, cls: type[ApiError]
) -> None:
    error = error_from_response(status, json.dumps({"code": code, "message": "m"}))
    assert type(error) is cls
    assert (error.message, error.http_status) == ("m", status)


def test_the_0_1_0_name_of_the_time_out_still_imports_and_catches() -> None:
    from projectops.client import AnswerTimedOut, ResponseTimedOut

    with pytest.raises(AnswerTimedOut):
        raise ResponseTimedOut("no complete answer")
