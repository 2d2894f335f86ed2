"""The error model: one code -> status table, one class per code, ErrorResponse bodies out.

How an HTTP answer maps back to its class is the client's job (``error_from_response``), tested
in tests/client/test_http.py.
"""

import json

import pytest

import projectops
from projectops import errors
from projectops.codec import error_body, read_error_body

# Written out rather than derived from the table, so a change of the table fails here.
CLASSES = [
    (projectops.InvalidArgument, "invalid_argument", 400),
    (projectops.FailedPrecondition, "failed_precondition", 400),
    (projectops.OutOfRange, "out_of_range", 400),
    (projectops.Unauthenticated, "unauthenticated", 401),
    (projectops.PermissionDenied, "permission_denied", 403),
    (projectops.NotFound, "not_found", 404),
    (projectops.AlreadyExists, "already_exists", 409),
    (projectops.Aborted, "aborted", 409),
    (projectops.ResourceExhausted, "resource_exhausted", 413),
    (projectops.Canceled, "canceled", 499),
    (projectops.Internal, "internal", 500),
    (projectops.Unknown, "unknown", 500),
    (projectops.DataLoss, "data_loss", 500),
    (projectops.Unimplemented, "unimplemented", 501),
    (projectops.Unavailable, "unavailable", 503),
    (projectops.DeadlineExceeded, "deadline_exceeded", 504),
]


@pytest.mark.parametrize(("cls", "code", "status"), CLASSES)
def test_each_error_class_has_its_code_and_status(
    cls: type[projectops.ApiError], code: str, status: int
) -> None:
    error = cls("something is off")
    assert isinstance(error, projectops.ApiError)
    assert (error.code, error.message) == (code, "something is off")
    assert error.http_status is None  # raised locally: no HTTP answer was involved
    assert errors.HTTP_STATUS_BY_CODE[projectops.Code(code)] == status
    assert projectops.ERROR_CLASSES[projectops.Code(code)] is cls
    assert error.violations == ()
    body = json.loads(error_body(error))
    assert body == {"code": code, "message": "something is off", "violations": []}
    proto = read_error_body(error_body(error))
    assert proto is not None and (proto.code, proto.message) == (code, "something is off")
    assert error.to_proto() == proto


def test_every_code_has_one_class_and_one_status() -> None:
    codes = set(projectops.Code)
    assert {projectops.Code(code) for _, code, _ in CLASSES} == codes
    assert set(projectops.HTTP_STATUS_BY_CODE) == codes
    assert set(projectops.ERROR_CLASSES) == codes
    assert all(cls.code is code for code, cls in projectops.ERROR_CLASSES.items())


def test_code_is_a_string_enum_of_the_wire_names() -> None:
    wire: str = projectops.Code.INVALID_ARGUMENT
    assert wire == "invalid_argument"
    assert json.dumps({"code": projectops.Code.NOT_FOUND}) == '{"code": "not_found"}'
    assert projectops.Code("unimplemented") is projectops.Code.UNIMPLEMENTED
    assert projectops.ApiError("m").code == projectops.Code.UNKNOWN


def test_http_status_is_the_answer_status_when_given() -> None:
    error = projectops.NotFound("gone", http_status=404)
    assert error.http_status == 404
    assert "http_status=404" in repr(error)
    with pytest.raises(TypeError):
        projectops.ApiError("m", (), 404)  # type: ignore[call-arg]  # keyword only


def test_the_class_fixes_the_code() -> None:
    with pytest.raises(TypeError):
        projectops.ApiError("m", code="not_found")  # type: ignore[call-arg]


def test_invalid_argument_is_a_value_error_with_violations() -> None:
    error = projectops.InvalidArgument(
        "version: is required",
        [projectops.FieldViolation(field="version", description="is required")],
    )
    assert isinstance(error, ValueError)
    body = json.loads(error_body(error))
    assert body["violations"] == [{"field": "version", "description": "is required"}]
    proto = read_error_body(error_body(error).encode())
    assert proto is not None
    assert [(v.field, v.description) for v in proto.violations] == [("version", "is required")]


def test_error_body_escapes_a_lone_surrogate() -> None:
    body = error_body(projectops.Internal("bad \ud800 text"))
    assert json.loads(body)["message"] == "bad \\ud800 text"


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
