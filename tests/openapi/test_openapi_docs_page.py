"""GET /openapi.json and GET /docs (server.docs): served, and rendered by headless Chromium."""

from __future__ import annotations

import tempfile

import httpx2
import pytest
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.testclient import TestClient

import projectops
from projectops import openapi
from projectops.server.docs import docs_routes, swagger_ui_assets

from .support import chromium, dump_dom, mock_app, serving

#: What a shared cache or proxy may forward on someone else's behalf.
FOREIGN = {
    "Host": "evil.example:80",
    "X-Forwarded-Host": "evil.example",
    "X-Forwarded-Proto": "https",
    "X-Forwarded-Prefix": "/evil",
    "Forwarded": "host=evil.example;proto=https",
}


def test_openapi_json_names_no_host_a_request_chose() -> None:
    client = TestClient(mock_app())
    plain = client.get("/openapi.json")
    assert plain.status_code == 200
    assert plain.headers["content-type"] == "application/json"
    assert plain.headers["x-content-type-options"] == "nosniff"
    assert plain.json() == openapi.document(None)
    assert plain.json()["servers"] == [{"url": "/"}]  # the origin the reader is on
    foreign = TestClient(mock_app(), base_url="http://evil.example:8080")
    assert foreign.get("/openapi.json", headers=FOREIGN).content == plain.content


def test_a_real_server_behind_forwarded_headers_names_no_host_either() -> None:
    # uvicorn trusts X-Forwarded-* from 127.0.0.1 (its default), so the scheme and client it
    # reports change; the document must not.
    with serving(mock_app()) as base_url:
        plain = httpx2.get(f"{base_url}/openapi.json", timeout=10)
        foreign = httpx2.get(f"{base_url}/openapi.json", headers=FOREIGN, timeout=10)
    assert plain.status_code == foreign.status_code == 200
    assert foreign.content == plain.content
    assert foreign.json()["servers"] == [{"url": "/"}]


def test_a_configured_base_url_is_the_server_and_the_only_other_origin() -> None:
    fixed = TestClient(Starlette(routes=docs_routes("https://Ops.Example.com:8443/base/")))
    doc = fixed.get("/openapi.json", headers=FOREIGN).json()
    assert doc["servers"] == [{"url": "https://Ops.Example.com:8443/base"}]
    csp = fixed.get("/docs", headers=FOREIGN).headers["content-security-policy"]
    assert "connect-src 'self' https://ops.example.com:8443;" in csp
    for bad in ("not a url", "/relative", "http://ops.example.com;script-src *", "http://a b"):
        with pytest.raises(ValueError):
            docs_routes(bad)


def test_mounted_under_a_prefix_the_server_is_that_path() -> None:
    # The prefix is the app's own configuration (root_path), never X-Forwarded-Prefix.
    client = TestClient(Starlette(routes=[Mount("/ops", routes=docs_routes())]))
    assert client.get("/ops/openapi.json", headers=FOREIGN).json()["servers"] == [{"url": "/ops"}]
    assert '"/ops/openapi.json"' in client.get("/ops/docs/static/init.js").text


def test_docs_page_and_assets_are_local() -> None:
    client = TestClient(mock_app())
    page = client.get("/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    csp = page.headers["content-security-policy"]
    assert "script-src 'self';" in csp
    assert "connect-src 'self';" in csp  # "Try it out" reaches this origin only
    assert page.headers["referrer-policy"] == "no-referrer"
    assert page.headers["x-content-type-options"] == "nosniff"
    assert "http" not in page.text  # every asset from this server
    bundle = client.get("/docs/static/swagger-ui-bundle.js")
    assert bundle.status_code == 200
    assert bundle.content == (swagger_ui_assets() / "swagger-ui-bundle.js").read_bytes()
    assert bundle.headers["x-content-type-options"] == "nosniff"
    init = client.get("/docs/static/init.js")
    assert '"/openapi.json"' in init.text
    assert init.headers["x-content-type-options"] == "nosniff"
    missing = client.get("/docs/static/swagger-editor.js")  # only the page's files are served
    assert missing.status_code == 404 and missing.json()["code"] == "not_found"
    # The operations are still there, with their own checks.
    answer = client.post("/api/mcp/list_rum_environments", json={})
    assert answer.status_code == 401


@pytest.mark.slow
def test_chromium_renders_every_operation_and_field() -> None:
    chromium()  # fails, never skips, when Chromium is missing
    with serving(mock_app()) as base_url, tempfile.TemporaryDirectory() as profile:
        assert httpx2.get(f"{base_url}/docs").status_code == 200
        result = dump_dom(f"{base_url}/docs", profile, budget_ms=30000)
    dom = result.stdout
    assert result.returncode == 0, result.stderr[-2000:]
    assert 'id="swagger-ui"' in dom and "opblock" in dom, dom[:2000]
    for op in projectops.operations():
        assert f'data-path="{op.path}"' in dom
        assert op.name in dom  # displayOperationId
        assert op.summary in dom
    # Field names of requests and responses, from the schemas and the examples.
    for name in (
        "version",
        "environments",
        "sessionCount",
        "detailedResults",
        "testCounts",
        "violations",
        "Service-Api-Key",
    ):
        assert name in dom, name
    assert "Unable to render this definition" not in dom
    assert "Resolver error" not in dom
