"""The error model: one code -> status table, ErrorResponse bodies in and out."""

import json

import pytest

import projectops
from projectops import errors


@pytest.mark.parametrize(
    ("cls", "code", "status"),
    [
        (projectops.InvalidArgument, "invalid_argument", 400),
        (projectops.FailedPrecondition, "failed_precondition", 400),
        (projectops.Unauthenticated, "unauthenticated", 401),
        (projectops.NotFound, "not_found", 404),
        (projectops.Unimplemented, "unimplemented", 405),
        (projectops.ResourceExhausted, "resource_exhausted", 413),
        (projectops.Internal, "internal", 500),
    ],
)
def test_each_error_class_has_its_code_and_status(
    cls: type[projectops.ApiError], code: str, status: int
) -> None:
    error = cls("something is off")
    assert (error.code, error.http_status, error.message) == (code, status, "something is off")
    assert errors.HTTP_STATUS_BY_CODE[code] == status
    assert error.violations == ()
    body = json.loads(error.to_json())
    assert body == {"code": code, "message": "something is off", "violations": []}
    decoded = projectops.ApiError.from_response(status, error.to_json())
    assert type(decoded) is cls and decoded.message == "something is off"


def test_invalid_argument_is_a_value_error_with_violations() -> None:
    error = projectops.InvalidArgument(
        "version: is required",
        [projectops.FieldViolation(field="version", description="is required")],
    )
    assert isinstance(error, ValueError)
    decoded = projectops.ApiError.from_response(400, error.to_json().encode())
    assert isinstance(decoded, projectops.InvalidArgument)
    assert [(v.field, v.description) for v in decoded.violations] == [("version", "is required")]


@pytest.mark.parametrize(
    ("status", "body", "cls", "message"),
    [
        (502, b"<html>Bad gateway</html>", projectops.ApiError, "<html>Bad gateway</html>"),
        (401, b"", projectops.Unauthenticated, "HTTP 401"),
        (400, b"plain text reason", projectops.InvalidArgument, "plain text reason"),
        (
            400,
            b'{"error": "no message field"}',
            projectops.InvalidArgument,
            '{"error": "no message field"}',
        ),
        (409, b'{"code": "aborted", "message": "try later"}', projectops.ApiError, "try later"),
    ],
)
def test_from_response_falls_back_to_raw_text(
    status: int, body: bytes, cls: type[projectops.ApiError], message: str
) -> None:
    error = projectops.ApiError.from_response(status, body)
    assert type(error) is cls
    assert error.message == message
    assert error.http_status == status


def test_unknown_code_from_the_server_is_kept() -> None:
    error = projectops.ApiError.from_response(409, '{"code": "aborted", "message": "m"}')
    assert error.code == "aborted"


@pytest.mark.parametrize(
    ("message", "violations", "described"),
    [
        ("version: is required", [("version", "is required")], "version: is required"),
        (
            "invalid request.",
            [("version", "is required")],
            "invalid request [version: is required]",
        ),
        ("bad body", [("", "is not valid JSON")], "bad body [is not valid JSON]"),
        ("plain", [], "plain"),
    ],
)
def test_describe_adds_only_violations_the_message_does_not_state(
    message: str, violations: list[tuple[str, str]], described: str
) -> None:
    error = projectops.InvalidArgument(
        message, [projectops.FieldViolation(field=f, description=d) for f, d in violations]
    )
    assert error.describe() == described
