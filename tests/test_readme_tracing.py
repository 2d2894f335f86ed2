"""The README's "Interceptors (server)" and "Tracing" examples run as written."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.readme_examples import readme_block, run_against


def test_server_interceptors_example_denies_and_times_as_documented() -> None:
    namespace: dict[str, Any] = {}
    exec(readme_block("### Interceptors (server)"), namespace)
    client = TestClient(namespace["app"])
    listed = client.post(
        "/api/mcp/list_rum_environments", json={}, headers={"Service-Api-Key": "k-guest"}
    )
    assert listed.status_code == 200
    denied = client.post(
        "/api/mcp/get_release_details",
        json={"version": "1.0.0"},
        headers={"Service-Api-Key": "k-guest"},
    )
    assert (denied.status_code, denied.json()["code"]) == (403, "permission_denied")
    assert denied.json()["message"] == "get_release_details is not open to guests"
    # Past the guard: the handler's own answer, timed by the inner interceptor.
    other = client.post(
        "/api/mcp/get_release_details",
        json={"version": "1.0.0"},
        headers={"Service-Api-Key": "k-1"},
    )
    assert (other.status_code, other.json()["code"]) == (400, "failed_precondition")
    timed = [name for name, _ in namespace["durations"]]
    assert timed == ["list_rum_environments", "get_release_details"]


@pytest.mark.slow
def test_tracing_example_of_the_readme_records_the_client_span(mock_server: Any) -> None:
    result = run_against(readme_block("### Tracing"), mock_server.base_url)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["['projectops.v1.OperationsService/ListRumEnvironments']"]
