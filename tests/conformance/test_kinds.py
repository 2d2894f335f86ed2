"""The conformance runner's checks and the proxy's judging over the tests' schema of every kind
(tests/kinds/v1/kinds.proto, issue 40 item 2): the mock serving the test service passes every
check; the proxy forwards its responses without drift and names a broken one."""

from __future__ import annotations

from typing import Any

import anyio
import httpx2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from projectops.client import AsyncRawClient
from projectops.codec import to_json
from projectops.conformance import CHECKS, run_checks
from projectops.conformance._proxy import ValidationProxy, Violation
from projectops.conventions import API_KEY_HEADER
from projectops.mock import MockProject, create_mock_app, generate
from tests.kinds.v1 import kinds_client
from tests.openapi.support import serving

REGISTRY = kinds_client.REGISTRY
OPS = REGISTRY.operations()
KEY = "kinds-key"


def test_the_mock_of_the_test_service_passes_every_check() -> None:
    app = create_mock_app({KEY: MockProject("kinds", {})}, docs=False, registry=REGISTRY)
    with serving(app) as url:
        report = run_checks(url, KEY, timeout=10, operations=OPS)
    failed = [check for check in report.checks if check.status == "failed"]
    assert failed == []
    assert not report.must_failed and report.unimplemented == ()
    assert len(report.checks) == len(CHECKS) * len(OPS)
    # Every operation got a 200 response to a request derived from its schema, and it was judged.
    for op in OPS:
        for check_id in ("response.decodes", "response.rules"):
            found = [c for c in report.checks if (c.operation, c.id) == (op.name, check_id)]
            assert [c.status for c in found] == ["passed"], found


def _answering(body: bytes) -> Starlette:
    """An upstream that answers every POST with 200 and `body`: a server the adapter's checks
    do not stand in front of."""

    async def answer(request: Request) -> Response:
        return Response(body, media_type="application/json")

    return Starlette(routes=[Route(op.path, answer, methods=["POST"]) for op in OPS])


def _through_proxy(upstream: Any, calls: list[tuple[str, bytes]]) -> tuple[list[int], list[Any]]:
    drifts: list[Violation] = []

    async def main() -> list[int]:
        transport = httpx2.ASGITransport(upstream)
        forward = AsyncRawClient("http://upstream", timeout=10, transport=transport)
        app = ValidationProxy(forward, report=drifts.append, registry=REGISTRY)
        statuses = []
        async with httpx2.AsyncClient(
            transport=httpx2.ASGITransport(app), base_url="http://p"
        ) as client:
            for path, body in calls:
                r = await client.post(path, content=body, headers={API_KEY_HEADER: KEY})
                statuses.append(r.status_code)
        await forward.aclose()
        return statuses

    return anyio.run(main), drifts


def test_the_proxy_judges_the_test_services_calls() -> None:
    mock = create_mock_app({KEY: MockProject("kinds", {})}, docs=False, registry=REGISTRY)
    calls = [(op.path, to_json(generate(op.request_type, op.name)).encode()) for op in OPS]
    statuses, drifts = _through_proxy(mock, calls)
    assert statuses == [200] * len(OPS)
    assert drifts == []
    # get_flat's answer without its REQUIRED `name` (min_len 1, too).
    flat = REGISTRY.operation("get_flat")
    statuses, drifts = _through_proxy(_answering(b'{"count": 1}'), [(flat.path, b"{}")])
    assert statuses == [200]
    assert {(d.operation, d.side, d.field) for d in drifts} >= {("get_flat", "answer", "name")}
