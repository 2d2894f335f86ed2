# ruff: noqa: F811 - the tests take the fixture imported below (the plugin may not be installed)
"""The pytest plugin ``_projectops_pytestplugin``: its ``projectops_mock`` fixture (a
:class:`projectops.testing.MockServer`), as a user's test uses it, and the README's example test
run by pytest."""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import httpx2 as httpx
import pytest

import projectops
from _projectops_pytestplugin import projectops_mock  # noqa: F401 (the fixture)
from projectops.conventions import API_KEY_ENV, API_KEY_HEADER, BASE_URL_ENV
from projectops.fixtures import FixtureError
from projectops.mock import Call, MockServer, generated_answer
from projectops.v1 import operations_pb2 as ops

REPO = Path(__file__).resolve().parents[2]
GET = projectops.operation("get_release_details")
LIST = projectops.operation("list_rum_environments")


def test_scripted_answers_reach_the_typed_client(projectops_mock: MockServer) -> None:
    projectops_mock.answer(
        "get_release_details",
        {"version": "1.0.0"},
        response={"summary": {"release": {"version": "1.0.0"}}},
    )
    projectops_mock.answer(
        "/api/mcp/get_release_details",
        ops.GetReleaseDetailsRequest(version="2.0.0"),
        error=projectops.NotFound("no release 2.0.0"),
    )
    projectops_mock.answer("get-release-details", {"version": "3"}, error="permission_denied")
    with projectops_mock.client() as client:
        assert client.get_release_details(version=" 1.0.0 ").summary.release.version == "1.0.0"
        with pytest.raises(projectops.NotFound) as not_found:
            client.get_release_details(version="2.0.0")
        assert (not_found.value.http_status, not_found.value.message) == (404, "no release 2.0.0")
        with pytest.raises(projectops.PermissionDenied):
            client.get_release_details(version="3")
        with pytest.raises(projectops.FailedPrecondition):
            client.get_release_details(version="4")
    assert projectops_mock.calls == [
        Call("get_release_details", ops.GetReleaseDetailsRequest(version=v))
        for v in (" 1.0.0 ", "2.0.0", "3", "4")
    ]


def test_request_none_answers_every_request_and_exact_answers_win(
    projectops_mock: MockServer,
) -> None:
    projectops_mock.answer("get_release_details", response={"summary": {}})
    projectops_mock.answer("get_release_details", {"version": "x"}, response={})
    with projectops_mock.client() as client:
        assert client.get_release_details(version="anything").HasField("summary")
        assert not client.get_release_details(version="x").HasField("summary")
    # A later answer for the same request replaces the earlier one.
    projectops_mock.answer("get_release_details", {"version": "x"}, error=projectops.Code.ABORTED)
    with projectops_mock.client() as client, pytest.raises(projectops.Aborted):
        client.get_release_details(version="x")


def test_unscripted_operations_are_generated_unless_turned_off(
    projectops_mock: MockServer,
) -> None:
    with projectops_mock.client() as client:
        assert client.list_rum_environments() == generated_answer(
            LIST, ops.ListRumEnvironmentsRequest()
        )
        projectops_mock.generate = False
        with pytest.raises(projectops.FailedPrecondition):
            client.list_rum_environments()


def test_a_delay_is_waited_in_process(projectops_mock: MockServer) -> None:
    projectops_mock.answer("list_rum_environments", delay=timedelta(seconds=0.3))
    with projectops_mock.client() as client:
        start = time.monotonic()
        client.list_rum_environments()
        assert 0.3 <= time.monotonic() - start < 20


def test_the_async_client(projectops_mock: MockServer) -> None:
    projectops_mock.answer(
        "list_rum_environments", response={"environments": [{"environment": "e"}]}
    )

    async def call() -> ops.ListRumEnvironmentsResponse:
        async with projectops_mock.async_client() as client:
            return await client.list_rum_environments()

    assert [e.environment for e in asyncio.run(call()).environments] == ["e"]


def test_base_url_serves_a_real_port(projectops_mock: MockServer) -> None:
    projectops_mock.answer("get_release_details", {"version": "1"}, response={"summary": {}})
    url = projectops_mock.base_url
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+", url)
    assert projectops_mock.env == {BASE_URL_ENV: url, API_KEY_ENV: projectops_mock.api_key}
    answer = httpx.post(
        f"{url}{GET.path}",
        json={"version": "1"},
        headers={API_KEY_HEADER: projectops_mock.api_key},
        timeout=30,
    )
    assert answer.status_code == 200 and "summary" in answer.json()
    refused = httpx.post(f"{url}{GET.path}", json={}, headers={API_KEY_HEADER: "x"}, timeout=30)
    assert refused.status_code == 401
    assert [c.operation for c in projectops_mock.calls] == ["get_release_details"]


def test_the_port_is_stopped_at_close() -> None:
    server = MockServer()
    url = server.base_url
    server.close()
    with pytest.raises(httpx.ConnectError):
        httpx.post(f"{url}{LIST.path}", json={}, timeout=5)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"request": {"version": ""}}, "request.version: is required"),
        ({"request": {"bogus": 1}}, "bogus"),
        ({"response": {"summary": 7}}, "summary"),
        ({"error": "nope"}, '"nope" is no error code'),
        ({"response": {}, "error": "internal"}, "not both"),
        ({"delay": 61}, "delay: 61s is longer than the longest delay, 60s"),
        ({"delay": -1}, "delay: a delay cannot be negative"),
        ({"request": ops.ListRumEnvironmentsRequest()}, "expected a"),
    ],
)
def test_bad_scripts_raise_at_once(
    projectops_mock: MockServer, kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(FixtureError, match=re.escape(message)):
        projectops_mock.answer("get_release_details", **kwargs)  # type: ignore[arg-type]


def _readme_test() -> str:
    readme = (REPO / "README.md").read_text()
    found = re.search(
        r"## Test code that calls the API\n.*?```python test\n(.*?)```",
        readme,
        re.S,
    )
    assert found
    return found.group(1)


PLUGIN = "_projectops_pytestplugin"


def _plugin_args() -> list[str]:
    """``-p _projectops_pytestplugin`` unless the installed package registers the plugin."""
    registered = any(ep.value == PLUGIN for ep in importlib.metadata.entry_points(group="pytest11"))
    return [] if registered else ["-p", PLUGIN]


def _pytest_in(folder: Path, plugin: str | None = None) -> str:
    """pytest's output for the tests in `folder`, as a user runs them: the plugin from the
    installed package, or, with plugin autoloading off, ``-p <plugin>``; fails the test unless
    they pass."""
    env = {**os.environ, "PYTHONPATH": ""}
    args = _plugin_args()
    if plugin is not None:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        args = ["-p", plugin]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


@pytest.mark.slow
@pytest.mark.parametrize("plugin", [None, "projectops.testing", PLUGIN])
def test_the_readme_example_test_passes_under_pytest(tmp_path: Path, plugin: str | None) -> None:
    (tmp_path / "test_example.py").write_text(_readme_test())
    assert "1 passed" in _pytest_in(tmp_path, plugin)


def _imported_by(module: str, candidates: tuple[str, ...]) -> list[str]:
    """Which of `candidates` a fresh interpreter has imported after ``import <module>``."""
    code = (
        f"import json, sys, {module}; "
        f"print(json.dumps([m for m in {candidates!r} if m in sys.modules]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    found: list[str] = json.loads(result.stdout)
    return found


@pytest.mark.slow
def test_the_plugin_imports_nothing_of_projectops_at_start_up() -> None:
    # pytest imports the plugin in every session: it costs nothing until a test uses it.
    heavy = ("projectops", "projectops.testing", "google.protobuf", "httpx", "starlette")
    assert _imported_by(PLUGIN, heavy) == []
    # The fixture's module imports the clients and the server only when a mock is used.
    heavy = ("httpx", "starlette", "uvicorn", "projectops.server", "projectops.client")
    assert _imported_by("projectops.testing", heavy) == []


@pytest.mark.slow
def test_a_session_that_uses_no_fixture_still_chooses_the_protobuf_backend(
    tmp_path: Path,
) -> None:
    (tmp_path / "conftest.py").write_text(
        "import os\nos.environ['PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION'] = 'python'\n"
    )
    (tmp_path / "test_backend.py").write_text(
        "from google.protobuf.internal import api_implementation\n\n"
        "def test_backend():\n    assert api_implementation.Type() == 'python'\n"
    )
    _pytest_in(tmp_path)
