"""The ASGI adapter in process (httpx2.ASGITransport), with service objects written for each case.

A service is an object with one method per rpc, ``method(request, context)``: the class
:class:`Service` below as a server package writes it, or a ``SimpleNamespace`` of functions.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Mapping
from types import SimpleNamespace
from typing import Any

import httpx2
import pytest
from starlette.applications import Starlette
from starlette.types import Message as AsgiMessage

import projectops
from projectops.conventions import API_KEY_HEADER, MAX_BODY_BYTES
from projectops.errors import FailedPrecondition, InvalidArgument, Unauthenticated
from projectops.server import OperationsServiceHandler, RequestContext, create_app
from projectops.v1 import operations_pb2 as ops
from projectops.v1 import rum_environment_pb2
from tests.synthetic import minimal_response

KEYS = {"key-a": "project-a", "key-b": "project-b"}
LIST = projectops.operation("list_rum_environments")
GET = projectops.operation("get_release_details")


def list_envs(
    request: ops.ListRumEnvironmentsRequest, context: RequestContext[str]
) -> ops.ListRumEnvironmentsResponse:
    return ops.ListRumEnvironmentsResponse(
        environments=[rum_environment_pb2.RumEnvironment(environment=f"env-of-{context.project}")]
    )


async def get_release(
    request: ops.GetReleaseDetailsRequest, context: RequestContext[str]
) -> ops.GetReleaseDetailsResponse:
    if request.version != "1.0.0":
        raise FailedPrecondition(f"no release {request.version!r} in {context.project}")
    response = minimal_response(GET)
    response.summary.release.version = request.version
    response.summary.release.focus_areas.append(context.project)
    return response


class Service(OperationsServiceHandler):
    """As a server package writes it: a sync and an async method."""

    def list_rum_environments(
        self, request: ops.ListRumEnvironmentsRequest, context: RequestContext[str]
    ) -> ops.ListRumEnvironmentsResponse:
        return list_envs(request, context)

    async def get_release_details(
        self, request: ops.GetReleaseDetailsRequest, context: RequestContext[str]
    ) -> ops.GetReleaseDetailsResponse:
        return await get_release(request, context)


async def _async_key(key: str) -> str | None:
    return KEYS.get(key)


def service(**methods: Callable[..., Any]) -> Any:
    """A service object with exactly `methods` (each ``method(request, context)``)."""
    return SimpleNamespace(**methods)


def app_with(service: Any = None, **kwargs: Any) -> Any:
    return create_app(Service() if service is None else service, authenticate=KEYS.get, **kwargs)


APP = create_app(Service(), authenticate=KEYS.get)
_TYPED_ASYNC_KEY: Starlette = create_app(Service(), authenticate=_async_key)


def call(
    app: Any,
    path: str,
    body: bytes | str | None = b"",
    *,
    key: str | None = "key-a",
    method: str = "POST",
    headers: Mapping[str, str] | None = None,
) -> httpx2.Response:
    """One request to `app` in process; `key=None` sends no key header."""
    all_headers = {"Content-Type": "application/json", **(headers or {})}
    if key is not None:
        all_headers[API_KEY_HEADER] = key

    async def go() -> httpx2.Response:
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.request(method, path, content=body, headers=all_headers)

    return asyncio.run(go())


def error_of(response: httpx2.Response) -> dict[str, Any]:
    """The ErrorResponse body; asserts the content type and that code and status agree (a 405
    is the one transport answer outside the table: its code is ``unimplemented``)."""
    assert response.headers["content-type"] == "application/json"
    body: dict[str, Any] = response.json()
    if response.status_code == 405:
        assert body["code"] == "unimplemented"
    else:
        assert projectops.HTTP_STATUS_BY_CODE[projectops.Code(body["code"])] == response.status_code
    assert body["message"]
    return body


# --- success -------------------------------------------------------------------------------


def test_sync_method_gets_the_project_of_the_key() -> None:
    response = call(APP, LIST.path, b"{}", key="key-b")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {
        "environments": [{"environment": "env-of-project-b", "sessionCount": "0"}]
    }


def test_async_method_and_async_authenticate() -> None:
    response = call(_TYPED_ASYNC_KEY, GET.path, '{"version": "1.0.0"}')
    assert response.status_code == 200
    assert response.json()["summary"]["release"] == {
        "version": "1.0.0",
        "gitSha": "",
        "previousVersion": "",
        "previousGitSha": "",
        "focusAreas": ["project-a"],
    }


def test_functions_of_a_namespace_serve_as_well() -> None:
    app = app_with(service(list_rum_environments=list_envs, get_release_details=get_release))
    assert (
        call(app, LIST.path, b"{}", key="key-b").json()
        == call(APP, LIST.path, b"{}", key="key-b").json()
    )
    assert call(app, GET.path, '{"version": "1.0.0"}').status_code == 200


def test_the_context_has_project_operation_and_headers_without_the_key() -> None:
    seen: list[RequestContext[str]] = []

    def spy(
        request: ops.ListRumEnvironmentsRequest, context: RequestContext[str]
    ) -> ops.ListRumEnvironmentsResponse:
        seen.append(context)
        return ops.ListRumEnvironmentsResponse()

    response = call(
        app_with(service(list_rum_environments=spy)),
        LIST.path,
        b"{}",
        key="key-b",
        headers={"X-Trace": "t-1"},
    )
    assert response.status_code == 200
    (context,) = seen
    assert context.project == "project-b"
    assert context.operation is LIST
    assert context.headers["x-trace"] == "t-1"  # names in lower case
    assert context.headers[API_KEY_HEADER.lower()] == "***"
    assert "key-b" not in context.headers.values()


def test_empty_body_is_the_empty_object() -> None:
    assert call(APP, LIST.path, b"").json() == call(APP, LIST.path, b"{}").json()
    assert call(APP, LIST.path, b"").status_code == 200


@pytest.mark.parametrize(
    "content_type",
    ["application/json; charset=utf-8", "text/plain", "application/x-www-form-urlencoded", ""],
)
def test_content_type_is_not_checked(content_type: str) -> None:
    response = call(APP, GET.path, '{"version": "1.0.0"}', headers={"Content-Type": content_type})
    assert response.status_code == 200


@pytest.mark.parametrize("header", ["Project-Id", "Organization-Id"])
def test_project_and_organization_headers_are_ignored(header: str) -> None:
    response = call(APP, LIST.path, b"{}", key="key-a", headers={header: "project-b"})
    assert response.json()["environments"][0]["environment"] == "env-of-project-a"


def test_unknown_fields_ignored_by_default_and_rejected_when_strict() -> None:
    body = '{"version": "1.0.0", "futureField": 1}'
    assert call(APP, GET.path, body).status_code == 200
    error = error_of(call(app_with(strict=True), GET.path, body))
    assert error["code"] == "invalid_argument"
    assert error["violations"][0]["field"] == "futureField"


# --- the error table, in order ---------------------------------------------------------------


@pytest.mark.parametrize("key", [None, "", "   ", "wrong-key"])
def test_missing_blank_or_unknown_key_is_401(key: str | None) -> None:
    error = error_of(call(APP, GET.path, '{"version": "1.0.0"}', key=key))
    assert error["code"] == "unauthenticated"
    assert API_KEY_HEADER in error["message"]
    if key and key.strip():
        assert key not in error["message"]


def test_two_key_headers_are_401() -> None:
    async def go() -> httpx2.Response:
        transport = httpx2.ASGITransport(app=APP)
        async with httpx2.AsyncClient(transport=transport, base_url="http://test") as client:
            headers = [(API_KEY_HEADER, "key-a"), (API_KEY_HEADER, "key-b")]
            return await client.post(LIST.path, content=b"{}", headers=headers)

    error = error_of(asyncio.run(go()))
    assert error["code"] == "unauthenticated"
    assert API_KEY_HEADER in error["message"]
    assert "key-a" not in error["message"] and "key-b" not in error["message"]


@pytest.mark.parametrize(
    "body", [b"not json", b"[]", b'{"version": 5}', b"x" * (MAX_BODY_BYTES + 1)]
)
@pytest.mark.parametrize("app", [APP, app_with(service())], ids=["implemented", "unimplemented"])
def test_authentication_comes_before_the_implementation_and_the_body(body: bytes, app: Any) -> None:
    assert error_of(call(app, GET.path, body, key=None))["code"] == "unauthenticated"
    assert error_of(call(app, GET.path, body, key="wrong"))["code"] == "unauthenticated"


@pytest.mark.parametrize("key", [None, "wrong", "key-a"])
def test_a_path_that_is_no_operation_is_404_before_authentication(key: str | None) -> None:
    error = error_of(call(APP, "/api/mcp/no_such_operation", b"not json", key=key))
    assert error["code"] == "not_found"


def test_authenticate_is_not_called_without_a_key() -> None:
    seen: list[str] = []

    def authenticate(key: str) -> str | None:
        seen.append(key)
        return None

    call(create_app(Service(), authenticate=authenticate), LIST.path, key=None)
    call(create_app(Service(), authenticate=authenticate), LIST.path, key="k1")
    assert seen == ["k1"]


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH", "OPTIONS"])
@pytest.mark.parametrize("path", [LIST.path, GET.path])
@pytest.mark.parametrize("key", [None, "key-a"])
def test_other_methods_are_405_with_allow_post(method: str, path: str, key: str | None) -> None:
    response = call(APP, path, None, method=method, key=key)
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
    assert error_of(response)["code"] == "unimplemented"


@pytest.mark.parametrize("method", ["GET", "PUT", "OPTIONS"])
def test_other_methods_on_a_path_that_is_no_operation_are_404(method: str) -> None:
    response = call(APP, "/api/mcp/no_such_operation", None, method=method)
    assert response.status_code == 404
    assert error_of(response)["code"] == "not_found"


@pytest.mark.parametrize("path", ["/", "/api", "/api/mcp", "/other/list_rum_environments"])
def test_paths_outside_the_prefix_are_404(path: str) -> None:
    error = error_of(call(APP, path, b"{}", key=None))
    assert error["code"] == "not_found"


@pytest.mark.parametrize(
    "path",
    [
        "/api/mcp/",
        "/api/mcp/nope",
        "/api/mcp/get-release-details",
        "/api/mcp/get_release_details/",
        "/api/mcp/a/b",
        "/API/MCP/get_release_details",
    ],
)
@pytest.mark.parametrize("key", [None, "key-a"])
def test_unknown_operation_is_404_naming_the_path(path: str, key: str | None) -> None:
    error = error_of(call(APP, path, b"{}", key=key))
    assert error["code"] == "not_found"
    assert repr(path) in error["message"]


@pytest.mark.parametrize(
    "raw",
    [
        "/api/mcp%2flist_rum_environments",
        "/api/mcp/list%5Frum_environments",
        "/api/mcp/list_rum_environment%73",
    ],
)
def test_a_percent_encoded_path_is_not_an_operation_path(raw: str) -> None:
    # Routed on the path as sent: each of these decodes to an operation's path, but is not it.
    response = call(APP, raw, b"{}")
    assert response.status_code == 404
    assert error_of(response)["code"] == "not_found"


def test_an_operation_without_a_method_is_501_after_authentication() -> None:
    app = app_with(service(list_rum_environments=list_envs))
    error = error_of(call(app, GET.path, '{"version": "1.0.0"}'))
    assert error["code"] == "unimplemented"
    assert "get_release_details" in error["message"]
    assert call(app, LIST.path, b"{}").status_code == 200  # the other rpc is served
    assert error_of(call(app, GET.path, b"{}", key=None))["code"] == "unauthenticated"


def test_a_method_inherited_from_the_generated_base_is_unimplemented() -> None:
    class OnlyList(OperationsServiceHandler):
        def list_rum_environments(
            self, request: ops.ListRumEnvironmentsRequest, context: RequestContext[str]
        ) -> ops.ListRumEnvironmentsResponse:
            return list_envs(request, context)

    app = app_with(OnlyList())  # lacking an rpc is the point
    error = error_of(call(app, GET.path, '{"version": "1.0.0"}'))
    assert error["code"] == "unimplemented"  # the base method is no implementation
    assert call(app, LIST.path, b"{}").status_code == 200


def test_body_over_the_limit_is_413_and_at_the_limit_is_read() -> None:
    assert (
        error_of(call(APP, LIST.path, b" " * (MAX_BODY_BYTES + 1)))["code"] == "resource_exhausted"
    )
    padded = b"{}" + b" " * (MAX_BODY_BYTES - 2)
    assert call(APP, LIST.path, padded).status_code == 200


def test_max_request_bytes_is_the_cap_of_that_app() -> None:
    small = app_with(max_request_bytes=16)
    error = error_of(call(small, LIST.path, b"{}" + b" " * 15))
    assert error["code"] == "resource_exhausted" and "16 bytes" in error["message"]
    assert call(small, LIST.path, b"{}" + b" " * 14).status_code == 200


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "1", None])
def test_max_request_bytes_must_be_a_positive_whole_number(bad: object) -> None:
    with pytest.raises((TypeError, ValueError), match="max_request_bytes"):
        app_with(max_request_bytes=bad)


def raw_asgi(
    app: Any, chunks: list[bytes], headers: list[tuple[bytes, bytes]]
) -> tuple[int, bytes]:
    """Drive `app` with a body in `chunks` and exactly `headers`: no Content-Length is added."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": LIST.path,
        "raw_path": LIST.path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": headers,
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }
    pending = [
        {"type": "http.request", "body": c, "more_body": i < len(chunks) - 1}
        for i, c in enumerate(chunks)
    ]
    sent: list[AsgiMessage] = []
    received = 0

    async def receive() -> AsgiMessage:
        nonlocal received
        received += 1
        return pending.pop(0) if pending else {"type": "http.disconnect"}

    async def send(message: AsgiMessage) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    status = sent[0]["status"]
    body = b"".join(m.get("body", b"") for m in sent[1:])
    # The cap stops the read: not every chunk of a too-large body was taken.
    assert status != 413 or received <= MAX_BODY_BYTES // len(chunks[0]) + 2
    return int(status), body


def test_the_body_is_capped_by_bytes_read_not_by_content_length() -> None:
    key = [(API_KEY_HEADER.lower().encode(), b"key-a")]
    chunk = b" " * 65536
    status, body = raw_asgi(APP, [chunk] * 40, key)  # 2.5 MiB, chunked: no Content-Length
    assert status == 413
    assert json.loads(body)["code"] == "resource_exhausted"
    status, _ = raw_asgi(APP, [chunk] * 40, [*key, (b"content-length", b"2")])  # lies
    assert status == 413
    status, _ = raw_asgi(APP, [b"{", b"}"], key)
    assert status == 200


def test_declared_content_length_over_the_limit_is_413_without_reading() -> None:
    key = (API_KEY_HEADER.lower().encode(), b"key-a")
    status, _ = raw_asgi(APP, [b"{}"], [key, (b"content-length", str(MAX_BODY_BYTES + 1).encode())])
    assert status == 413


@pytest.mark.parametrize(
    ("body", "field", "text"),
    [
        (b"not json", "", "not valid JSON"),
        (b"\xff\xfe{}", "", "UTF-8"),
        (b"[]", "", "expected a JSON object, got an array"),
        (b'"x"', "", "expected a JSON object, got the string"),
        (b"null", "", "expected a JSON object"),
        (b"{}", "version", "is required"),
        (b'{"version": "   "}', "version", "is required"),
        (b'{"version": 5}', "version", "expected a string, got the number 5"),
        (b'{"version": ["1.0.0"]}', "version", "expected a string, got an array"),
    ],
)
def test_invalid_bodies_are_400_naming_the_field(body: bytes, field: str, text: str) -> None:
    error = error_of(call(APP, GET.path, body))
    assert error["code"] == "invalid_argument"
    assert text in error["message"]
    if field:
        assert error["message"].startswith(f"{field}: ")
        assert [v["field"] for v in error["violations"]] == [field]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (rb'{"version": "\ud800"}', "version"),
        (rb'{"\ud800": 1}', ""),
        (rb'{"version": "1.0.0", "x\udfff": [1]}', ""),
    ],
)
def test_unpaired_surrogates_are_400_not_500(body: bytes, field: str) -> None:
    error = error_of(call(APP, GET.path, body))
    assert error["code"] == "invalid_argument"
    assert "unpaired surrogate" in error["message"]
    assert [v["field"] for v in error["violations"]] == [field]


def test_a_handler_message_with_a_lone_surrogate_is_sent_escaped() -> None:
    def refuse(request: Any, context: Any) -> Any:
        raise FailedPrecondition("no release \ud800")

    response = call(app_with(service(get_release_details=refuse)), GET.path, '{"version": "1"}')
    assert response.status_code == 400
    assert error_of(response)["message"] == "no release \\ud800"  # escaped, as text


def test_deeply_nested_json_is_400_not_500() -> None:
    deep = b'{"version": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    assert error_of(call(APP, GET.path, deep))["code"] == "invalid_argument"


# --- handler outcomes ------------------------------------------------------------------------


def test_handler_api_error_is_answered_as_it_is() -> None:
    error = error_of(call(APP, GET.path, '{"version": "2.0.0"}'))
    assert error == {
        "code": "failed_precondition",
        "message": "no release '2.0.0' in project-a",
        "violations": [],
    }

    def invalid(request: ops.GetReleaseDetailsRequest, context: Any) -> Any:
        raise InvalidArgument(
            "version: no such format",
            [projectops.FieldViolation(field="version", description="no such format")],
        )

    error = error_of(
        call(app_with(service(get_release_details=invalid)), GET.path, '{"version": "x"}')
    )
    assert error["code"] == "invalid_argument"
    assert error["violations"] == [{"field": "version", "description": "no such format"}]


def test_authenticate_may_refuse_with_its_own_message() -> None:
    def authenticate(key: str) -> str:
        raise Unauthenticated("this key was revoked")

    error = error_of(call(create_app(Service(), authenticate=authenticate), LIST.path))
    assert error == {"code": "unauthenticated", "message": "this key was revoked", "violations": []}


def test_authenticate_raising_a_lookup_error_is_an_unknown_key(
    caplog: pytest.LogCaptureFixture,
) -> None:
    keys = {"known": "project"}
    app = create_app(Service(), authenticate=lambda key: keys[key])
    with caplog.at_level(logging.ERROR, logger="projectops.server"):
        response = call(app, LIST.path, key="unknown")
    assert response.status_code == 401
    assert error_of(response)["code"] == "unauthenticated"
    assert caplog.records == []  # an unknown key is no failure of the server
    assert call(app, LIST.path, key="known").status_code == 200


@pytest.mark.parametrize("where", ["handler", "authenticate"])
def test_a_crash_is_500_generic_and_logged_without_the_key(
    where: str, caplog: pytest.LogCaptureFixture
) -> None:
    key = "crash-key-7d1f"

    def crash(*args: Any) -> Any:
        raise RuntimeError(f"db password hunter2 for {args[0]!r}")

    served = service(list_rum_environments=crash) if where == "handler" else Service()
    authenticate = crash if where == "authenticate" else (lambda k: k)
    with caplog.at_level(logging.ERROR, logger="projectops.server"):
        response = call(create_app(served, authenticate=authenticate), LIST.path, key=key)
    error = error_of(response)
    assert error["code"] == "internal"
    assert "hunter2" not in response.text and key not in response.text
    assert "RuntimeError" not in response.text
    logged = caplog.text
    assert "RuntimeError: db password hunter2" in logged  # the traceback is in the log
    assert "Traceback" in logged
    assert key not in logged
    assert "***" in logged or where == "handler"


def test_a_handler_returning_the_wrong_type_is_500() -> None:
    def wrong(request: Any, context: Any) -> Any:
        return ops.GetReleaseDetailsResponse()

    error = error_of(call(app_with(service(list_rum_environments=wrong)), LIST.path))
    assert error["code"] == "internal"


def test_the_app_can_be_mounted_under_a_prefix() -> None:
    from starlette.applications import Starlette
    from starlette.routing import Mount

    outer = Starlette(routes=[Mount("/svc", app=APP)])
    response = call(outer, "/svc" + LIST.path, b"{}")
    assert response.status_code == 200
    assert response.json()["environments"][0]["environment"] == "env-of-project-a"
