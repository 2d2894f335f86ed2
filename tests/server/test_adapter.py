"""The ASGI adapter in process (httpx.ASGITransport), with handlers written for each case."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.types import Message as AsgiMessage

import projectops
from projectops.conventions import API_KEY_HEADER, MAX_BODY_BYTES
from projectops.errors import FailedPrecondition, InvalidArgument, Unauthenticated
from projectops.server import Handler, create_app
from projectops.v1 import operations_pb2 as ops
from projectops.v1 import rum_environment_pb2

KEYS = {"key-a": "project-a", "key-b": "project-b"}
LIST = projectops.operation("list_rum_environments")
GET = projectops.operation("get_release_details")


def list_envs(project: str,
              request: ops.ListRumEnvironmentsRequest) -> ops.ListRumEnvironmentsResponse:
    return ops.ListRumEnvironmentsResponse(
        environments=[rum_environment_pb2.RumEnvironment(environment=f"env-of-{project}")])


async def get_release(project: str,
                      request: ops.GetReleaseDetailsRequest) -> ops.GetReleaseDetailsResponse:
    if request.version != "1.0.0":
        raise FailedPrecondition(f"no release {request.version!r} in {project}")
    response = ops.GetReleaseDetailsResponse()
    response.summary.release.version = request.version
    response.summary.release.focus_areas.append(project)
    return response


async def _async_key(key: str) -> str | None:
    return KEYS.get(key)


HANDLERS: dict[str, Handler[str]] = {"list_rum_environments": list_envs,
                                     "get_release_details": get_release}


def app_with(handlers: Mapping[str, Any] | None = None, **kwargs: Any) -> Any:
    return create_app(HANDLERS if handlers is None else handlers, KEYS.get, **kwargs)


# Typed as a server package would write it: mypy --strict checks these calls.
APP = create_app(HANDLERS, KEYS.get)
_TYPED_INLINE: Starlette = create_app(
    {"get_release_details": get_release, "list_rum_environments": list_envs}, _async_key)


def call(app: Any, path: str, body: bytes | str | None = b"", *, key: str | None = "key-a",
         method: str = "POST", headers: Mapping[str, str] | None = None) -> httpx.Response:
    """One request to `app` in process; `key=None` sends no key header."""
    all_headers = {"Content-Type": "application/json", **(headers or {})}
    if key is not None:
        all_headers[API_KEY_HEADER] = key

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.request(method, path, content=body, headers=all_headers)

    return asyncio.run(go())


def error_of(response: httpx.Response) -> dict[str, Any]:
    """The ErrorResponse body; asserts the content type and that code and status agree."""
    assert response.headers["content-type"] == "application/json"
    body: dict[str, Any] = response.json()
    assert projectops.HTTP_STATUS_BY_CODE[body["code"]] == response.status_code
    assert body["message"]
    return body


# --- success -------------------------------------------------------------------------------

def test_sync_handler_gets_the_project_of_the_key() -> None:
    response = call(APP, LIST.path, b"{}", key="key-b")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {"environments": [{"environment": "env-of-project-b",
                                                 "sessionCount": "0"}]}


def test_async_handler_and_async_authenticate() -> None:
    async def authenticate(key: str) -> str | None:
        return KEYS.get(key)

    app = create_app(HANDLERS, authenticate)
    response = call(app, GET.path, '{"version": "1.0.0"}')
    assert response.status_code == 200
    assert response.json()["summary"]["release"] == {
        "version": "1.0.0", "gitSha": "", "previousVersion": "", "previousGitSha": "",
        "focusAreas": ["project-a"]}


def test_empty_body_is_the_empty_object() -> None:
    assert call(APP, LIST.path, b"").json() == call(APP, LIST.path, b"{}").json()
    assert call(APP, LIST.path, b"").status_code == 200


@pytest.mark.parametrize("content_type", ["application/json; charset=utf-8", "text/plain",
                                          "application/x-www-form-urlencoded", ""])
def test_content_type_is_not_checked(content_type: str) -> None:
    response = call(APP, GET.path, '{"version": "1.0.0"}',
                    headers={"Content-Type": content_type})
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


@pytest.mark.parametrize("body", [b"not json", b"[]", b'{"version": 5}',
                                  b"x" * (MAX_BODY_BYTES + 1)])
@pytest.mark.parametrize("path", [GET.path, "/api/mcp/no_such_operation"])
def test_authentication_comes_before_the_operation_and_the_body(body: bytes, path: str) -> None:
    assert error_of(call(APP, path, body, key=None))["code"] == "unauthenticated"
    assert error_of(call(APP, path, body, key="wrong"))["code"] == "unauthenticated"


def test_authenticate_is_not_called_without_a_key() -> None:
    seen: list[str] = []

    def authenticate(key: str) -> str | None:
        seen.append(key)
        return None

    call(create_app(HANDLERS, authenticate), LIST.path, key=None)
    call(create_app(HANDLERS, authenticate), LIST.path, key="k1")
    assert seen == ["k1"]


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH", "OPTIONS"])
@pytest.mark.parametrize("path", [LIST.path, "/api/mcp/no_such_operation"])
@pytest.mark.parametrize("key", [None, "key-a"])
def test_other_methods_are_405_with_allow_post(method: str, path: str, key: str | None) -> None:
    response = call(APP, path, None, method=method, key=key)
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
    assert error_of(response)["code"] == "unimplemented"


@pytest.mark.parametrize("path", ["/", "/api", "/api/mcp", "/other/list_rum_environments"])
def test_paths_outside_the_prefix_are_404(path: str) -> None:
    error = error_of(call(APP, path, b"{}", key=None))
    assert error["code"] == "not_found"


@pytest.mark.parametrize("path", ["/api/mcp/", "/api/mcp/nope", "/api/mcp/get-release-details",
                                  "/api/mcp/get_release_details/", "/api/mcp/a/b"])
def test_unknown_operation_is_404_listing_the_known_ones(path: str) -> None:
    error = error_of(call(APP, path, b"{}"))
    assert error["code"] == "not_found"
    assert "list_rum_environments, get_release_details" in error["message"]


def test_an_operation_without_handler_is_404() -> None:
    app = app_with({"list_rum_environments": list_envs})
    error = error_of(call(app, GET.path, '{"version": "1.0.0"}'))
    assert error["code"] == "not_found"
    assert "get_release_details" in error["message"]


def test_body_over_the_limit_is_413_and_at_the_limit_is_read() -> None:
    assert error_of(call(APP, LIST.path, b" " * (MAX_BODY_BYTES + 1)))["code"] == \
        "resource_exhausted"
    padded = b"{}" + b" " * (MAX_BODY_BYTES - 2)
    assert call(APP, LIST.path, padded).status_code == 200


def raw_asgi(app: Any, chunks: list[bytes],
             headers: list[tuple[bytes, bytes]]) -> tuple[int, bytes]:
    """Drive `app` with a body in `chunks` and exactly `headers`: no Content-Length is added."""
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
             "scheme": "http", "path": LIST.path, "raw_path": LIST.path.encode(),
             "root_path": "", "query_string": b"", "headers": headers,
             "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80)}
    pending = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1}
               for i, c in enumerate(chunks)]
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


@pytest.mark.parametrize(("body", "field", "text"), [
    (b"not json", "", "not valid JSON"),
    (b"\xff\xfe{}", "", "UTF-8"),
    (b"[]", "", "expected a JSON object, got a list"),
    (b'"x"', "", "expected a JSON object, got the string"),
    (b"null", "", "expected a JSON object"),
    (b"{}", "version", "is required"),
    (b'{"version": "   "}', "version", "is required"),
    (b'{"version": 5}', "version", "expected a string, got the number 5"),
    (b'{"version": ["1.0.0"]}', "version", "expected a string, got a list"),
])
def test_invalid_bodies_are_400_naming_the_field(body: bytes, field: str, text: str) -> None:
    error = error_of(call(APP, GET.path, body))
    assert error["code"] == "invalid_argument"
    assert text in error["message"]
    if field:
        assert error["message"].startswith(f"{field}: ")
        assert [v["field"] for v in error["violations"]] == [field]


@pytest.mark.parametrize(("body", "field"), [
    (rb'{"version": "\ud800"}', "version"),
    (rb'{"\ud800": 1}', ""),
    (rb'{"version": "1.0.0", "x\udfff": [1]}', ""),
])
def test_unpaired_surrogates_are_400_not_500(body: bytes, field: str) -> None:
    error = error_of(call(APP, GET.path, body))
    assert error["code"] == "invalid_argument"
    assert "unpaired surrogate" in error["message"]
    assert [v["field"] for v in error["violations"]] == [field]


def test_a_handler_message_with_a_lone_surrogate_is_sent_escaped() -> None:
    def refuse(project: str, request: Any) -> Any:
        raise FailedPrecondition("no release \ud800")

    response = call(app_with({"get_release_details": refuse}), GET.path, '{"version": "1"}')
    assert response.status_code == 400
    assert error_of(response)["message"] == "no release \\ud800"  # escaped, as text


def test_deeply_nested_json_is_400_not_500() -> None:
    deep = b'{"version": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    assert error_of(call(APP, GET.path, deep))["code"] == "invalid_argument"


# --- handler outcomes ------------------------------------------------------------------------

def test_handler_api_error_is_answered_as_it_is() -> None:
    error = error_of(call(APP, GET.path, '{"version": "2.0.0"}'))
    assert error == {"code": "failed_precondition", "message": "no release '2.0.0' in project-a",
                     "violations": []}

    def invalid(project: str, request: ops.GetReleaseDetailsRequest) -> Any:
        raise InvalidArgument("version: no such format", [projectops.FieldViolation(
            field="version", description="no such format")])

    error = error_of(call(app_with({"get_release_details": invalid}), GET.path,
                          '{"version": "x"}'))
    assert error["code"] == "invalid_argument"
    assert error["violations"] == [{"field": "version", "description": "no such format"}]


def test_authenticate_may_refuse_with_its_own_message() -> None:
    def authenticate(key: str) -> str:
        raise Unauthenticated("this key was revoked")

    error = error_of(call(create_app(HANDLERS, authenticate), LIST.path))
    assert error == {"code": "unauthenticated", "message": "this key was revoked",
                     "violations": []}


@pytest.mark.parametrize("where", ["handler", "authenticate"])
def test_a_crash_is_500_generic_and_logged_without_the_key(
        where: str, caplog: pytest.LogCaptureFixture) -> None:
    key = "crash-key-7d1f"

    def crash(*args: Any) -> Any:
        raise RuntimeError(f"db password hunter2 for {args[0]!r}")

    handlers = {"list_rum_environments": crash} if where == "handler" else HANDLERS
    authenticate = crash if where == "authenticate" else (lambda k: k)
    with caplog.at_level(logging.ERROR, logger="projectops.server"):
        response = call(create_app(handlers, authenticate), LIST.path, key=key)
    error = error_of(response)
    assert error["code"] == "internal"
    assert "hunter2" not in response.text and key not in response.text
    assert "RuntimeError" not in response.text
    logged = caplog.text
    assert "RuntimeError: db password hunter2" in logged  # the traceback is in the log
    assert "Traceback" in logged
    assert key not in logged
    assert "[redacted]" in logged or where == "handler"


def test_a_handler_returning_the_wrong_type_is_500() -> None:
    def wrong(project: str, request: Any) -> Any:
        return ops.GetReleaseDetailsResponse()

    error = error_of(call(app_with({"list_rum_environments": wrong}), LIST.path))
    assert error["code"] == "internal"


def test_unknown_handler_names_are_refused_at_creation() -> None:
    with pytest.raises(ValueError, match=r"'get-release-details'.*known operations: "
                                         r"list_rum_environments, get_release_details"):
        create_app({"get-release-details": get_release}, KEYS.get)


def test_the_app_can_be_mounted_under_a_prefix() -> None:
    from starlette.applications import Starlette
    from starlette.routing import Mount

    outer = Starlette(routes=[Mount("/svc", app=APP)])
    response = call(outer, "/svc" + LIST.path, b"{}")
    assert response.status_code == 200
    assert response.json()["environments"][0]["environment"] == "env-of-project-a"
