"""``projectops conformance`` against a server of another schema: the request-form checks that
neither real operation can exercise (no request field whose proto name differs from its JSON
name, no int64 request field) pass on our own server pipeline and fail on a server broken in
exactly their way.

The schema is built in a private descriptor pool; its one operation is served by
:func:`projectops.server.create_app` (``operations=[...]``), on uvicorn in a thread on
127.0.0.1, and the runner is pointed at it with ``run_checks(operations=...)``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, text_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from starlette.applications import Starlette

from projectops.conformance._catalogue import CHECKS
from projectops.conformance._runner import run_checks
from projectops.fixtures import FixtureProject, FixtureResponse, request_key
from projectops.registry import Operation, operation_of
from projectops.server import create_app
from tests.conformance.test_conformance import (
    CANNOT_APPLY,
    TESTED_ON_A_SYNTHETIC_SCHEMA,
    TIMEOUT,
    _Answer,
    _broken,
    _error,
    _Seen,
)
from tests.openapi.support import serving

KEY = "synthetic-key"


def _build_operation() -> Operation:
    """``GetBuild(BuildRequest) returns (BuildResponse)``, both messages with ``release_name``
    (JSON ``releaseName``) and the int64 ``build_number`` (JSON ``buildNumber``)."""
    file = descriptor_pb2.FileDescriptorProto(
        name="synthetic/v1/builds.proto", package="synthetic.v1", syntax="proto3"
    )
    for name in ("BuildRequest", "BuildResponse"):
        message = file.message_type.add(name=name)
        for number, (field, kind) in enumerate(
            (
                ("release_name", FieldDescriptor.TYPE_STRING),
                ("build_number", FieldDescriptor.TYPE_INT64),
            ),
            start=1,
        ):
            message.field.add(
                name=field,
                number=number,
                type=kind,
                label=FieldDescriptor.LABEL_OPTIONAL,
                json_name="releaseName" if field == "release_name" else "buildNumber",
            )
    file.service.add(name="Builds").method.add(
        name="GetBuild",
        input_type=".synthetic.v1.BuildRequest",
        output_type=".synthetic.v1.BuildResponse",
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return operation_of(pool.FindServiceByName("synthetic.v1.Builds").methods_by_name["GetBuild"])


OP = _build_operation()


class _Builds:
    """Answers a build request with its own fields: every form of one request gets one response."""

    def get_build(self, request: Any, context: Any) -> Message:
        return OP.response_type(
            release_name=request.release_name, build_number=request.build_number
        )


def _project() -> FixtureProject:
    request = OP.request_type(release_name="1.0.0", build_number=9_007_199_254_740_993)
    response = _Builds().get_build(request, None)
    answer = FixtureResponse(request, response, key=request_key(request))
    return FixtureProject("builds", KEY, {OP.name: (answer,)})


def _app() -> Starlette:
    """`OP` alone, served by ``create_app`` as it serves a registry rpc."""
    return create_app(_Builds(), authenticate={KEY: "builds"}.get, operations=[OP])  # type: ignore[arg-type]


def _body(seen: _Seen) -> dict[str, Any]:
    try:
        data = json.loads(seen.body)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _refuse_if(test: Callable[[dict[str, Any]], bool], what: str) -> Any:
    def before(seen: _Seen) -> _Answer | None:
        if test(_body(seen)):
            return _error(400, "invalid_argument", f"{what} are not accepted")
        return None

    return before


def _numbers(data: dict[str, Any]) -> bool:
    return any(isinstance(v, int) and not isinstance(v, bool) for v in data.values())


# breakage -> (the app, the checks it must fail: no more, no fewer)
BROKEN: Mapping[str, tuple[Callable[[], Any], set[str]]] = {
    "none": (_app, set()),
    "proto field names refused": (
        lambda: _broken(_app(), before=_refuse_if(lambda d: any("_" in k for k in d), "names")),
        {"request.proto-names"},
    ),
    "int64 numbers refused": (
        lambda: _broken(_app(), before=_refuse_if(_numbers, "numbers")),
        {"request.int64-numbers"},
    ),
}


def test_the_synthetic_table_covers_the_checks_left_to_it() -> None:
    assert set().union(*(expected for _, expected in BROKEN.values())) == set(
        TESTED_ON_A_SYNTHETIC_SCHEMA
    )


@pytest.mark.parametrize("breakage", list(BROKEN))
def test_a_server_of_another_schema_fails_exactly_the_checks_of_its_breakage(
    breakage: str,
) -> None:
    make_app, expected = BROKEN[breakage]
    with serving(make_app()) as url:
        report = run_checks(url, KEY, project=_project(), timeout=TIMEOUT, operations=[OP])
    failed = {c.id for c in report.checks if c.status == "failed"}
    assert failed == expected, [c for c in report.checks if c.status == "failed"]
    assert [c.operation for c in report.checks] == [OP.name] * len(CHECKS)
    status = {c.id: c.status for c in report.checks}
    # Both request forms are really tried, not skipped for want of such a field.
    for check_id in TESTED_ON_A_SYNTHETIC_SCHEMA:
        assert status[check_id] == ("failed" if check_id in expected else "passed")
    # The schema has no REQUIRED field, rule, enum or timestamp: only the checks of those are
    # skipped.
    skipped = {c.id: c.reason for c in report.checks if c.status == "skipped"}
    assert set(skipped) == {
        "request.required",
        "request.rules",
        "errors.violation-paths",
        "json.enum-names",
        "json.timestamps",
    }
    assert set(skipped.values()) <= CANNOT_APPLY, skipped


def _unbreakable_operation() -> Operation:
    """``GetCap(CapRequest) returns (CapResponse)``, its request's one field an int32 whose
    only rule is a bound at the type's end (``lte: 2147483647``): no value breaks it."""
    file = text_format.Parse(
        """
        name: "synthetic/v1/caps.proto" package: "synthetic.caps.v1" syntax: "proto3"
        dependency: "buf/validate/validate.proto"
        message_type {
          name: "CapRequest"
          field {
            name: "limit" number: 1 type: TYPE_INT32 label: LABEL_OPTIONAL json_name: "limit"
            options { [buf.validate.field] { int32 { lte: 2147483647 } } }
          }
        }
        message_type { name: "CapResponse" }
        service {
          name: "Caps"
          method {
            name: "GetCap"
            input_type: ".synthetic.caps.v1.CapRequest"
            output_type: ".synthetic.caps.v1.CapResponse"
          }
        }
        """,
        descriptor_pb2.FileDescriptorProto(),
        descriptor_pool=descriptor_pool.Default(),
    )
    # The default pool, where the buf.validate extensions the engine reads are.
    pool = descriptor_pool.Default()
    pool.Add(file)
    return operation_of(pool.FindServiceByName("synthetic.caps.v1.Caps").methods_by_name["GetCap"])


def test_a_rule_no_derived_value_can_break_is_skipped_never_passed() -> None:
    op = _unbreakable_operation()

    class Caps:
        def get_cap(self, request: Any, context: Any) -> Message:
            return op.response_type()

    app = create_app(Caps(), authenticate={KEY: "caps"}.get, operations=[op])  # type: ignore[arg-type]
    with serving(app) as url:
        report = run_checks(url, KEY, timeout=TIMEOUT, operations=[op])
    (rules,) = [c for c in report.checks if c.id == "request.rules"]
    assert (rules.status, rules.reason) == ("skipped", "not-applicable")
    assert "limit int32.lte" in rules.detail  # the rule no value was derived for, named
