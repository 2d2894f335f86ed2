"""OpenTelemetry spans and duration histograms of a call from the clients through a create_app
server, in process (httpx2.ASGITransport), recorded by the SDK's in-memory exporter and reader.

The interceptors of both sides (``ClientTelemetry``, ``AsyncClientTelemetry``,
``ServerTelemetry``) are given the providers instead of the global ones, so no other test of the
process records anything; the trace context still travels through the global (default W3C)
propagator, in the request's headers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import projectops
from projectops import telemetry
from projectops.client import AsyncClient, Client, ResponseTooLarge
from projectops.server import OperationsServiceHandler, RequestContext, create_app
from projectops.telemetry import AsyncClientTelemetry, ClientTelemetry, ServerTelemetry
from projectops.v1 import operations_pb2 as ops
from tests.client.backoff import shorten_backoff
from tests.synthetic import minimal_response

KEY = "sk-telemetry-Secret-7f3a9c"
# A request value that must never reach a span: bodies stay out of telemetry.
VERSION = "1.0.0-body-marker-e5d1"
SERVICE = "projectops.v1.OperationsService"


class Recorded:
    def __init__(self) -> None:
        self.spans = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.metrics = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.metrics])
        self.current_in_handler: list[trace.SpanContext] = []

    def finished(self) -> list[ReadableSpan]:
        return list(self.spans.get_finished_spans())

    def points(self, metric: str) -> list[HistogramDataPoint]:
        data = self.metrics.get_metrics_data()
        assert data is not None
        found: list[HistogramDataPoint] = []
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for m in scope.metrics:
                    if m.name == metric:
                        assert m.unit == "ms"
                        found += [
                            p for p in m.data.data_points if isinstance(p, HistogramDataPoint)
                        ]
        return found


@pytest.fixture
def rec() -> Iterator[Recorded]:
    recorded = Recorded()
    yield recorded
    recorded.tracer_provider.shutdown()
    recorded.meter_provider.shutdown()


def service(rec: Recorded) -> OperationsServiceHandler:
    class Service(OperationsServiceHandler):
        def list_rum_environments(
            self, request: ops.ListRumEnvironmentsRequest, context: RequestContext[str]
        ) -> ops.ListRumEnvironmentsResponse:
            rec.current_in_handler.append(trace.get_current_span().get_span_context())
            return ops.ListRumEnvironmentsResponse()

        async def get_release_details(
            self, request: ops.GetReleaseDetailsRequest, context: RequestContext[str]
        ) -> ops.GetReleaseDetailsResponse:
            rec.current_in_handler.append(trace.get_current_span().get_span_context())
            if request.version != VERSION:
                raise projectops.FailedPrecondition(f"no release {request.version!r} ({KEY})")
            response = minimal_response(projectops.operation("get_release_details"))
            response.summary.release.version = request.version
            return response

    return Service()


def app_of(rec: Recorded, *inner: Any, traced: bool = True) -> Any:
    """The app, traced by ServerTelemetry (first) around the `inner` interceptors."""
    first = [ServerTelemetry(rec.tracer_provider, rec.meter_provider)] if traced else []
    return create_app(service(rec), authenticate={KEY: "demo"}.get, interceptors=[*first, *inner])


def async_call(app: Any, rec: Recorded, op: str, request: dict[str, Any], key: str = KEY) -> Any:
    async def go() -> Any:
        async with AsyncClient(
            "http://test",
            key,
            retries=0,
            interceptors=[AsyncClientTelemetry(rec.tracer_provider, rec.meter_provider)],
            transport=httpx2.ASGITransport(app=app),
        ) as client:
            return await client.call(op, request)

    return asyncio.run(go())


class _SyncASGI(httpx2.BaseTransport):
    """The sync client's requests served by an ASGI app in process."""

    def __init__(self, app: Any) -> None:
        self._asgi = httpx2.ASGITransport(app=app)

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        async def go() -> httpx2.Response:
            response = await self._asgi.handle_async_request(request)
            body = b"".join([chunk async for chunk in response.stream])  # type: ignore[union-attr]
            return httpx2.Response(response.status_code, headers=response.headers, content=body)

        return asyncio.run(go())


def by_kind(spans: list[ReadableSpan]) -> tuple[ReadableSpan, ReadableSpan]:
    assert len(spans) == 2, [s.name for s in spans]
    (client,) = [s for s in spans if s.kind is SpanKind.CLIENT]
    (server,) = [s for s in spans if s.kind is SpanKind.SERVER]
    return client, server


def assert_one_trace(client: ReadableSpan, server: ReadableSpan) -> None:
    assert client.context is not None and server.context is not None
    assert server.context.trace_id == client.context.trace_id
    assert server.parent is not None and server.parent.is_remote
    assert server.parent.span_id == client.context.span_id
    assert client.parent is None


def test_a_call_makes_a_client_and_a_server_span_of_one_trace(rec: Recorded) -> None:
    response = async_call(app_of(rec), rec, "get_release_details", {"version": VERSION})
    assert response.summary.release.version == VERSION
    client, server = by_kind(rec.finished())
    assert_one_trace(client, server)
    for span in (client, server):
        assert span.name == f"{SERVICE}/GetReleaseDetails"
        assert span.attributes is not None
        assert span.attributes["rpc.system"] == "projectops"
        assert span.attributes["rpc.service"] == SERVICE
        assert span.attributes["rpc.method"] == "GetReleaseDetails"
        assert "projectops.error_code" not in span.attributes
        assert span.status.status_code is StatusCode.UNSET
        assert span.attributes["http.response.status_code"] == 200
    # The handler runs inside the server span: its own spans would be children of it.
    assert server.context is not None
    assert [c.span_id for c in rec.current_in_handler] == [server.context.span_id]


def test_the_sync_client_joins_the_trace_too(rec: Recorded) -> None:
    with Client(
        "http://test",
        KEY,
        retries=0,
        interceptors=[ClientTelemetry(rec.tracer_provider, rec.meter_provider)],
        transport=_SyncASGI(app_of(rec)),
    ) as client:
        client.call("list_rum_environments", {})
    client_span, server_span = by_kind(rec.finished())
    assert_one_trace(client_span, server_span)
    assert client_span.name == server_span.name == f"{SERVICE}/ListRumEnvironments"
    assert client_span.attributes is not None
    assert client_span.attributes["http.response.status_code"] == 200


def test_a_call_failed_by_its_last_answer_records_that_answers_status(
    rec: Recorded, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 503, then a 200 too large to read: the span has the 200 that failed the call, not the
    503 before it, and an interceptor sees no status left over from the first attempt."""
    shorten_backoff(monkeypatch)
    answers = iter(
        [
            httpx2.Response(503, json={"code": "unavailable", "message": "busy"}),
            httpx2.Response(200, content=b"{" + b" " * 100 + b"}"),
        ]
    )
    seen: list[int | None] = []

    def last_status(request: Any, context: Any, call_next: Any) -> Any:
        try:
            return call_next(request, context)
        finally:
            seen.append(context.http_status)

    with Client(
        "http://test",
        KEY,
        max_response_bytes=10,
        interceptors=[ClientTelemetry(rec.tracer_provider, rec.meter_provider), last_status],
        transport=httpx2.MockTransport(lambda request: next(answers)),
    ) as client:
        with pytest.raises(ResponseTooLarge):
            client.call("list_rum_environments", {})
    (span,) = rec.finished()
    assert span.attributes is not None
    assert span.attributes["http.response.status_code"] == 200
    assert seen == [None]


def test_an_error_call_records_status_and_code(rec: Recorded) -> None:
    app = app_of(rec)
    with pytest.raises(projectops.FailedPrecondition):
        async_call(app, rec, "get_release_details", {"version": "9.9.9"})
    client, server = by_kind(rec.finished())
    assert_one_trace(client, server)
    for span in (client, server):
        assert span.attributes is not None
        assert span.attributes["http.response.status_code"] == 400
        assert span.attributes["projectops.error_code"] == "failed_precondition"
        assert span.attributes["error.type"] == "failed_precondition"
    # A 4xx is the caller's fault: an error of the client's call, not of the server.
    assert client.status.status_code is StatusCode.ERROR
    assert client.status.description == "failed_precondition"
    assert server.status.status_code is StatusCode.UNSET

    # A refused key is answered before the interceptors (docs/contract.md §2.4): the server
    # makes no span of it; the client's span records the response.
    rec.spans.clear()
    with pytest.raises(projectops.Unauthenticated):
        async_call(app, rec, "list_rum_environments", {}, key="wrong-key")
    (client,) = rec.finished()
    assert client.kind is SpanKind.CLIENT and client.attributes is not None
    assert client.attributes["http.response.status_code"] == 401
    assert client.attributes["projectops.error_code"] == "unauthenticated"


def test_a_server_failure_marks_the_server_span_as_error(rec: Recorded) -> None:
    async def broken(request: Any, context: Any, call_next: Any) -> Any:
        raise RuntimeError(f"boom {KEY} {VERSION}")

    with pytest.raises(projectops.Internal):
        async_call(app_of(rec, broken), rec, "get_release_details", {"version": VERSION})
    _client, server = by_kind(rec.finished())
    assert server.attributes is not None
    assert server.attributes["http.response.status_code"] == 500
    assert server.attributes["projectops.error_code"] == "internal"
    assert server.status.status_code is StatusCode.ERROR
    assert_no_secret(rec)


def all_text(span: ReadableSpan) -> str:
    parts: list[str] = [span.name, str(span.status.description)]
    parts += [f"{k}={v!r}" for k, v in (span.attributes or {}).items()]
    for event in span.events:
        parts.append(event.name)
        parts += [f"{k}={v!r}" for k, v in (event.attributes or {}).items()]
    for link in span.links:
        parts += [f"{k}={v!r}" for k, v in (link.attributes or {}).items()]
    return "\n".join(parts)


def assert_no_secret(rec: Recorded) -> None:
    spans = rec.finished()
    assert spans
    text = "\n".join(all_text(s) for s in spans).lower()
    assert KEY.lower() not in text
    assert VERSION.lower() not in text
    assert "body-marker" not in text


def test_neither_the_key_nor_the_body_reaches_any_span(rec: Recorded) -> None:
    app = app_of(rec)
    async_call(app, rec, "get_release_details", {"version": VERSION})
    with pytest.raises(projectops.FailedPrecondition):  # its message quotes the body and key
        async_call(app, rec, "get_release_details", {"version": VERSION + "-other"})
    with pytest.raises(projectops.Unauthenticated):
        async_call(app, rec, "get_release_details", {"version": VERSION}, key=KEY + "x")
    assert len(rec.finished()) == 5  # the refused key: a client span only
    assert_no_secret(rec)


def test_the_duration_histograms_have_a_point_per_operation(rec: Recorded) -> None:
    app = app_of(rec)
    async_call(app, rec, "get_release_details", {"version": VERSION})
    async_call(app, rec, "get_release_details", {"version": VERSION})
    async_call(app, rec, "list_rum_environments", {})
    for metric in ("rpc.server.duration", "rpc.client.duration"):
        points = rec.points(metric)
        counts = {str((p.attributes or {})["rpc.method"]): p.count for p in points}
        assert counts == {"GetReleaseDetails": 2, "ListRumEnvironments": 1}, metric
        for point in points:
            assert point.attributes is not None
            assert point.attributes["rpc.service"] == SERVICE
            assert point.attributes["rpc.system"] == "projectops"
            assert 0 <= point.min <= point.max < 60_000  # milliseconds


def test_a_hostile_traceparent_starts_a_new_trace(rec: Recorded) -> None:
    hostile = {
        "traceparent": "00-" + "f" * 8000 + "-" + "-" * 4000,
        "tracestate": "a=" + "=" * 8000,
        "baggage": "k=" + "%" * 8000,
    }
    answer = asyncio.run(_post(app_of(rec), hostile))
    assert answer.status_code == 200
    (span,) = rec.finished()
    assert span.parent is None


def test_no_span_without_a_provider_or_without_the_interceptor(rec: Recorded) -> None:
    # The global providers are the API's defaults in the tests: nothing to record into.
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
    app = create_app(service(rec), authenticate={KEY: "demo"}.get, interceptors=[ServerTelemetry()])
    assert asyncio.run(_post(app)).status_code == 200
    (current,) = rec.current_in_handler
    assert not current.is_valid  # the handler ran in no span
    assert asyncio.run(_post(app_of(rec, traced=False))).status_code == 200
    assert rec.finished() == [] and rec.metrics.get_metrics_data() is None


def test_the_tracer_and_histogram_are_looked_up_once(rec: Recorded) -> None:
    looked_up: list[str] = []

    class Counting(TracerProvider):
        def get_tracer(self, *args: Any, **kwargs: Any) -> trace.Tracer:
            looked_up.append(args[0])
            return rec.tracer_provider.get_tracer(*args, **kwargs)

    app = create_app(
        service(rec),
        authenticate={KEY: "demo"}.get,
        interceptors=[ServerTelemetry(Counting(), rec.meter_provider)],
    )
    for _ in range(3):
        assert asyncio.run(_post(app)).status_code == 200
    assert looked_up == ["projectops"] and len(rec.finished()) == 3


def test_without_the_api_installed_nothing_is_imported_or_recorded(
    rec: Recorded, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(telemetry, "_AVAILABLE", False)
    assert not telemetry.available()
    app = app_of(rec)
    assert asyncio.run(_post(app)).status_code == 200
    assert rec.finished() == []
    sync = ClientTelemetry(rec.tracer_provider, rec.meter_provider)
    assert sync(None, None, lambda request, context: "passed") == "passed"


async def _post(app: Any, headers: dict[str, str] | None = None) -> httpx2.Response:
    """``list_rum_environments`` of `app` with the key and `headers`, in-process."""
    async with httpx2.AsyncClient(
        transport=httpx2.ASGITransport(app=app), base_url="http://test"
    ) as client:
        return await client.post(
            "/api/mcp/list_rum_environments",
            content=b"{}",
            headers={projectops.conventions.API_KEY_HEADER: KEY, **(headers or {})},
        )
