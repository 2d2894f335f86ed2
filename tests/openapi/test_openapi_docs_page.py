"""GET /openapi.json and GET /docs (server.docs): served, and rendered by headless Chromium."""

from __future__ import annotations

import subprocess
import tempfile

import httpx
import pytest
from starlette.testclient import TestClient

import projectops
from projectops import openapi
from projectops.server.docs import docs_routes, swagger_ui_assets

from .support import chromium, mock_app, serving


def test_openapi_json_uses_the_request_base_url_or_the_given_one() -> None:
    client = TestClient(mock_app(), base_url="http://ops.test:8080")
    response = client.get("/openapi.json")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json() == openapi.document("http://ops.test:8080")

    from starlette.applications import Starlette

    fixed = TestClient(Starlette(routes=docs_routes("https://ops.example.com/")))
    assert fixed.get("/openapi.json").json()["servers"] == [{"url": "https://ops.example.com"}]
    with pytest.raises(ValueError):
        docs_routes("not a url")


def test_docs_page_and_assets_are_local() -> None:
    client = TestClient(mock_app())
    page = client.get("/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert "http" not in page.text  # every asset from this server
    bundle = client.get("/docs/static/swagger-ui-bundle.js")
    assert bundle.status_code == 200
    assert bundle.content == (swagger_ui_assets() / "swagger-ui-bundle.js").read_bytes()
    assert '"/openapi.json"' in client.get("/docs/static/init.js").text
    missing = client.get("/docs/static/swagger-editor.js")  # only the page's files are served
    assert missing.status_code == 404 and missing.json()["code"] == "not_found"
    # The operations are still there, with their own checks.
    answer = client.post("/api/mcp/list_rum_environments", json={})
    assert answer.status_code == 401


@pytest.mark.slow
def test_chromium_renders_every_operation_and_field() -> None:
    browser = chromium()  # fails, never skips, when Chromium is missing
    with serving(mock_app()) as base_url, tempfile.TemporaryDirectory() as profile:
        assert httpx.get(f"{base_url}/docs").status_code == 200
        result = subprocess.run(
            [
                str(browser),
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                f"--user-data-dir={profile}",
                "--virtual-time-budget=10000",
                "--dump-dom",
                f"{base_url}/docs",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
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
