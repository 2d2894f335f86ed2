"""Server interceptors of create_app, in process (httpx2.ASGITransport): refusing a call by
operation, timing it, editing its response, their order, and their failures."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import httpx2
import pytest

import projectops
from projectops.conventions import API_KEY_HEADER
from projectops.errors import FailedPrecondition, PermissionDenied
from projectops.server import (
    OperationsServiceHandler,
    RequestContext,
    ServerCallNext,
    ServerInterceptor,
    create_app,
)
from projectops.v1 import operations_pb2 as ops
from projectops.v1 import rum_environment_pb2
from tests.synthetic import minimal_response

KEY = "key-of-interceptor-tests-4242"
LIST = "/api/mcp/list_rum_environments"
GET = "/api/mcp/get_release_details"


class Service(OperationsServiceHandler):
    def list_rum_environments(
        self, request: ops.ListRumEnvironmentsRequest, context: RequestContext[str]
    ) -> ops.ListRumEnvironmentsResponse:
        return ops.ListRumEnvironmentsResponse(
            environments=[rum_environment_pb2.RumEnvironment(environment="prod")]
        )

    async def get_release_details(
        self, request: ops.GetReleaseDetailsRequest, context: RequestContext[str]
    ) -> ops.GetReleaseDetailsResponse:
        if request.version != "1.0.0":
            raise FailedPrecondition(f"no release {request.version!r}")
        response = minimal_response(projectops.operation("get_release_details"))
        response.summary.release.version = request.version
        return response


def app_with(*interceptors: Any) -> Any:
    return create_app(Service(), authenticate={KEY: "demo"}.get, interceptors=list(interceptors))


def post(app: Any, path: str, body: str = "{}", key: str = KEY) -> httpx2.Response:
    async def go() -> httpx2.Response:
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.post(path, content=body, headers={API_KEY_HEADER: key})

    return asyncio.run(go())


def test_an_interceptor_denies_by_operation_with_403_and_an_error_response() -> None:
    seen: list[str] = []

    async def read_only(
        request: Any, context: RequestContext[Any], call_next: ServerCallNext
    ) -> Any:
        seen.append(context.operation.name)
        if not context.operation.read_only:
            raise PermissionDenied(f"{context.operation.name} is not allowed for this key")
        return await call_next(request, context)

    handled: list[str] = []

    class Counting(Service):
        async def get_release_details(
            self, request: ops.GetReleaseDetailsRequest, context: RequestContext[str]
        ) -> ops.GetReleaseDetailsResponse:
            handled.append("get")
            return await super().get_release_details(request, context)

    # Deny one operation by name, whatever its options say.
    async def no_release_details(
        request: Any, context: RequestContext[Any], call_next: ServerCallNext
    ) -> Any:
        if context.operation.name == "get_release_details":
            raise PermissionDenied("get_release_details is not allowed for this key")
        return await call_next(request, context)

    app = create_app(Counting(), authenticate={KEY: "demo"}.get, interceptors=[no_release_details])
    denied = post(app, GET, '{"version": "1.0.0"}')
    assert denied.status_code == 403
    assert denied.headers["content-type"] == "application/json"
    body = denied.json()
    assert (body["code"], body["message"]) == (
        "permission_denied",
        "get_release_details is not allowed for this key",
    )
    assert handled == []  # the handler never ran
    allowed = post(app, LIST)
    assert allowed.status_code == 200
    assert allowed.json()["environments"][0]["environment"] == "prod"
    # The key check comes first: an unknown key is 401 and no interceptor runs.
    assert post(app_with(read_only), LIST, key="wrong").status_code == 401
    assert seen == []


def test_an_interceptor_times_each_call_and_sees_its_outcome() -> None:
    timings: list[tuple[str, str, float]] = []

    async def timing(request: Any, context: RequestContext[Any], call_next: ServerCallNext) -> Any:
        start = time.perf_counter()
        outcome = "ok"
        try:
            return await call_next(request, context)
        except projectops.ApiError as error:
            outcome = str(error.code)
            raise
        finally:
            timings.append((context.operation.name, outcome, time.perf_counter() - start))

    class Slow(Service):
        async def get_release_details(
            self, request: ops.GetReleaseDetailsRequest, context: RequestContext[str]
        ) -> ops.GetReleaseDetailsResponse:
            await asyncio.sleep(0.05)
            return await super().get_release_details(request, context)

    app = create_app(Slow(), authenticate={KEY: "demo"}.get, interceptors=[timing])
    assert post(app, GET, '{"version": "1.0.0"}').status_code == 200
    assert post(app, GET, '{"version": "9.9.9"}').status_code == 400
    assert [(name, outcome) for name, outcome, _ in timings] == [
        ("get_release_details", "ok"),
        ("get_release_details", "failed_precondition"),
    ]
    assert all(seconds >= 0.04 for _, _, seconds in timings)
    # A body that does not decode never reaches the interceptors.
    assert post(app, GET, '{"version": 7}').status_code == 400
    assert len(timings) == 2


def test_an_interceptor_edits_the_request_and_the_response() -> None:
    async def edit(request: Any, context: RequestContext[Any], call_next: ServerCallNext) -> Any:
        if isinstance(request, ops.GetReleaseDetailsRequest):
            request = ops.GetReleaseDetailsRequest(version=request.version.strip())
        response = await call_next(request, context)
        if isinstance(response, ops.GetReleaseDetailsResponse):
            response.summary.release.focus_areas.append(f"served for {context.project}")
        return response

    answer = post(app_with(edit), GET, '{"version": " 1.0.0 "}')
    assert answer.status_code == 200
    release = answer.json()["summary"]["release"]
    assert (release["version"], release["focusAreas"]) == ("1.0.0", ["served for demo"])


def test_interceptors_run_in_order_first_outermost() -> None:
    events: list[str] = []

    def named(name: str) -> ServerInterceptor:
        async def interceptor(
            request: Any, context: RequestContext[Any], call_next: ServerCallNext
        ) -> Any:
            events.append(f"{name} in")
            response = await call_next(request, context)
            events.append(f"{name} out")
            return response

        return interceptor

    class Recording(Service):
        def list_rum_environments(
            self, request: ops.ListRumEnvironmentsRequest, context: RequestContext[str]
        ) -> ops.ListRumEnvironmentsResponse:
            events.append("handler")
            return super().list_rum_environments(request, context)

    app = create_app(
        Recording(), authenticate={KEY: "demo"}.get, interceptors=[named("a"), named("b")]
    )
    assert post(app, LIST).status_code == 200
    assert events == ["a in", "b in", "handler", "b out", "a out"]


def test_an_interceptor_failing_unexpectedly_is_a_redacted_500(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def broken(request: Any, context: RequestContext[Any], call_next: ServerCallNext) -> Any:
        raise RuntimeError(f"boom with {context.headers[API_KEY_HEADER.lower()]} and {KEY}")

    with caplog.at_level(logging.ERROR, logger="projectops.server"):
        answer = post(app_with(broken), LIST)
    assert answer.status_code == 500
    body = answer.json()
    assert (body["code"], body["message"]) == (
        "internal",
        "internal error while serving list_rum_environments",
    )
    assert KEY not in answer.text
    assert "an interceptor of list_rum_environments failed" in caplog.text
    assert "RuntimeError: boom with" in caplog.text
    assert KEY not in caplog.text


def test_an_interceptor_returning_the_wrong_type_is_a_500(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def wrong(request: Any, context: RequestContext[Any], call_next: ServerCallNext) -> Any:
        await call_next(request, context)
        return {"environments": []}

    with caplog.at_level(logging.ERROR, logger="projectops.server"):
        answer = post(app_with(wrong), LIST)
    assert answer.status_code == 500
    assert answer.json()["code"] == "internal"
    assert "returned dict, not ListRumEnvironmentsResponse" in caplog.text


def test_a_handler_failure_reaches_the_interceptors_as_internal() -> None:
    seen: list[object] = []

    async def watch(request: Any, context: RequestContext[Any], call_next: ServerCallNext) -> Any:
        try:
            return await call_next(request, context)
        except projectops.ApiError as error:
            seen.append(error.code)
            raise

    class Broken(Service):
        def list_rum_environments(
            self, request: ops.ListRumEnvironmentsRequest, context: RequestContext[str]
        ) -> ops.ListRumEnvironmentsResponse:
            raise KeyError("secret detail")

    app = create_app(Broken(), authenticate={KEY: "demo"}.get, interceptors=[watch])
    answer = post(app, LIST)
    assert answer.status_code == 500
    assert "secret detail" not in answer.text
    assert seen == [projectops.Code.INTERNAL]


def test_a_handler_failing_under_an_interceptor_is_logged_as_the_handlers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def passing_on(
        request: Any, context: RequestContext[Any], call_next: ServerCallNext
    ) -> Any:
        return await call_next(request, context)

    class Broken(Service):
        def list_rum_environments(
            self, request: ops.ListRumEnvironmentsRequest, context: RequestContext[str]
        ) -> ops.ListRumEnvironmentsResponse:
            raise KeyError("a detail of the handler")

    app = create_app(Broken(), authenticate={KEY: "demo"}.get, interceptors=[passing_on])
    with caplog.at_level(logging.ERROR, logger="projectops.server"):
        answer = post(app, LIST)
    assert answer.status_code == 500
    assert answer.json()["message"] == "internal error while serving list_rum_environments"
    assert "the handler of list_rum_environments failed" in caplog.text
    assert "KeyError: 'a detail of the handler'" in caplog.text
    assert "an interceptor of" not in caplog.text


def test_a_replaced_request_is_validated() -> None:
    async def blank(request: Any, context: RequestContext[Any], call_next: ServerCallNext) -> Any:
        return await call_next(ops.GetReleaseDetailsRequest(version=" "), context)

    answer = post(app_with(blank), GET, '{"version": "1.0.0"}')
    assert answer.status_code == 400
    assert answer.json()["violations"] == [{"field": "version", "description": "is required"}]


@pytest.mark.parametrize("interceptors", [[42], ["not callable"], "abc", 7, None])
def test_create_app_refuses_what_is_no_sequence_of_callables(interceptors: Any) -> None:
    with pytest.raises(TypeError, match="interceptors"):
        create_app(Service(), authenticate={KEY: "demo"}.get, interceptors=interceptors)
