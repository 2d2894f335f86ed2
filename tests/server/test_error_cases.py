"""The adapter's own error responses come from one table (``projectops.error_cases``), which the
OpenAPI document describes: each row, triggered for real, is answered with the row's status,
code and headers, and the document's response for that status states the same."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest

import projectops
from projectops import error_cases, openapi
from projectops.conventions import API_KEY_HEADER, MAX_BODY_BYTES
from projectops.errors import ERROR_CLASSES, Code, FailedPrecondition
from projectops.server import create_app
from projectops.v1 import operations_pb2 as ops

GET = projectops.operation("get_release_details")
LIST = projectops.operation("list_rum_environments")
KEY = "key-a"


class _Service:
    """Implements get_release_details only (list_rum_environments answers 501): version "boom"
    crashes, "slow" takes half a second, "raise:<code>" raises that code's error."""

    def get_release_details(self, request: ops.GetReleaseDetailsRequest, context: Any) -> Any:
        if request.version == "boom":
            raise RuntimeError("a bug")
        if request.version == "slow":
            time.sleep(0.5)  # a thread the adapter stops waiting for; it ends on its own
        code = request.version.removeprefix("raise:")
        if code != request.version:
            raise ERROR_CLASSES[Code(code)](f"raised as {code}")
        raise FailedPrecondition(f"no release {request.version!r}")


#: body_timeout of APP: the trickling trigger's body stops past it.
BODY_TIMEOUT = 0.2
APP = create_app(_Service(), authenticate={KEY: "project-a"}.get, body_timeout=BODY_TIMEOUT)
# The same, where the handler may take 50 ms.
HURRIED_APP = create_app(_Service(), authenticate={KEY: "project-a"}.get, handler_timeout=0.05)


@dataclass(frozen=True)
class _Request:
    path: str
    body: bytes = b"{}"
    method: str = "POST"
    key: str | None = KEY
    stalls: bool = False  # the body's first byte comes, then nothing for long past BODY_TIMEOUT
    app: Any = APP


# One request per row, in the table's order, that the adapter answers with that row.
TRIGGERS: list[tuple[error_cases.ErrorCase, _Request]] = [
    (error_cases.UNAUTHENTICATED, _Request(GET.path, key="not-a-key")),
    (error_cases.NO_OPERATION, _Request("/api/mcp/no_such_operation")),
    (error_cases.WRONG_METHOD, _Request(GET.path, method="PUT")),
    (error_cases.BODY_TOO_LARGE, _Request(GET.path, body=b" " * (MAX_BODY_BYTES + 1))),
    (error_cases.BODY_TIMED_OUT, _Request(GET.path, stalls=True)),
    (error_cases.MALFORMED_BODY, _Request(GET.path, body=b"[]")),
    (error_cases.MISSING_REQUIRED, _Request(GET.path, body=b'{"version": "  "}')),
    (error_cases.BUSINESS_RULE, _Request(GET.path, body=b'{"version": "9.9.9"}')),
    (error_cases.NOT_IMPLEMENTED, _Request(LIST.path)),
    (error_cases.INTERNAL_FAILURE, _Request(GET.path, body=b'{"version": "boom"}')),
    (error_cases.DEADLINE_EXCEEDED, _Request(GET.path, b'{"version": "slow"}', app=HURRIED_APP)),
    *(
        (case, _Request(GET.path, json.dumps({"version": f"raise:{case.code}"}).encode()))
        for case in error_cases.HANDLER_ERRORS
    ),
]


def _send(request: _Request) -> httpx2.Response:
    headers = {"Content-Type": "application/json"}
    if request.key is not None:
        headers[API_KEY_HEADER] = request.key

    async def stalling() -> AsyncIterator[bytes]:
        yield request.body[:1]
        await asyncio.sleep(BODY_TIMEOUT * 50)
        yield request.body[1:]

    async def go() -> httpx2.Response:
        transport = httpx2.ASGITransport(app=request.app)
        content = stalling() if request.stalls else request.body
        async with httpx2.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.request(
                request.method, request.path, content=content, headers=headers
            )

    return asyncio.run(go())


def test_every_row_of_the_table_has_a_trigger_here() -> None:
    assert [case for case, _ in TRIGGERS] == list(error_cases.ERROR_CASES)


@pytest.mark.parametrize(
    ("case", "request_"), TRIGGERS, ids=[case.situation[:40] for case, _ in TRIGGERS]
)
def test_the_adapter_answers_each_row_as_the_row_states(
    case: error_cases.ErrorCase, request_: _Request
) -> None:
    response = _send(request_)
    assert response.status_code == case.http_status
    assert response.headers["content-type"] == "application/json"
    assert response.json()["code"] == case.code
    for name, value in (case.headers or {}).items():
        assert response.headers[name] == value


@pytest.mark.parametrize("case", error_cases.ERROR_CASES, ids=lambda case: case.situation[:40])
def test_the_document_states_each_row(case: error_cases.ErrorCase) -> None:
    doc = openapi.document()
    if case in openapi.OUTSIDE_OPERATIONS:  # 404, 405: no response of a POST; stated apart
        (entry,) = [
            e for e in doc["x-answers-outside-operations"] if e["situation"] == case.situation
        ]
        assert (entry["status"], entry["code"]) == (case.http_status, case.code)
        assert entry["headers"] == dict(case.headers or {})
        return
    for path in doc["paths"]:
        documented = doc["paths"][path]["post"]["responses"][str(case.http_status)]
        assert f"`{case.code}`: {case.situation}" in documented["description"]
        for name, value in (case.headers or {}).items():
            assert documented["headers"][name]["schema"]["const"] == value
            assert documented["headers"][name]["required"] is True


def test_the_document_reads_the_adapters_table() -> None:
    assert openapi.ERROR_CASES is error_cases.ERROR_CASES
    assert openapi.ErrorCase is error_cases.ErrorCase
    inside = [case for case in error_cases.ERROR_CASES if case not in openapi.OUTSIDE_OPERATIONS]
    statuses = {case.http_status for case in inside}
    for item in openapi.document()["paths"].values():
        assert {int(s) for s in item["post"]["responses"]} - {200} == statuses


def test_only_the_wrong_method_and_late_body_rows_leave_the_code_table() -> None:
    # Every other response's status is HTTP_STATUS_BY_CODE's for its code, so a client maps it
    # back to its class; the 405 says which method to use instead, the 408 that the client,
    # not the service, was late (docs/contract.md §5.4).
    outside = [case for case in error_cases.ERROR_CASES if case.status is not None]
    assert outside == [error_cases.WRONG_METHOD, error_cases.BODY_TIMED_OUT]
    assert error_cases.BODY_TIMED_OUT.http_status == 408
    assert error_cases.BODY_TIMED_OUT.headers == {"Connection": "close"}
    assert error_cases.WRONG_METHOD.http_status == 405
    assert (
        error_cases.WRONG_METHOD.headers
        == {"Allow": error_cases.ALLOWED_METHOD}
        == {"Allow": "POST"}
    )
    for case in error_cases.ERROR_CASES:
        if case.status is None:
            assert case.http_status == projectops.HTTP_STATUS_BY_CODE[projectops.Code(case.code)]


def test_error_builds_the_codes_class() -> None:
    error = error_cases.UNAUTHENTICATED.error("no key")
    assert isinstance(error, projectops.Unauthenticated)
    assert (error.code, error.message, error.violations) == ("unauthenticated", "no key", ())
    assert isinstance(error_cases.MALFORMED_BODY.error("bad"), projectops.InvalidArgument)
