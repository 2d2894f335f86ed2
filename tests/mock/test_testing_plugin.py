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

import httpx2
import pytest
from google.protobuf.message import Message

import projectops
from _projectops_pytestplugin import projectops_mock  # noqa: F401 (the fixture)
from projectops.conventions import API_KEY_ENV, API_KEY_HEADER, BASE_URL_ENV
from projectops.fixtures import FixtureError
from projectops.mock import Call, MockServer, generate, generated_response
from tests.synthetic import with_required_string, without_request_fields

REPO = Path(__file__).resolve().parents[2]
#: An operation whose request has a REQUIRED string field, and one whose request is empty.
GET, FIELD = with_required_string()
LIST = without_request_fields()
#: Scripted responses: generated, so every field of the schema is in play.
RESPONSE = generate(GET.response_type, "scripted")
LISTED = generate(LIST.response_type, "scripted")


def get(value: str) -> Message:
    """GET's request with FIELD set to `value`."""
    return GET.request_type(**{FIELD.name: value})


def test_scripted_answers_reach_the_typed_client(projectops_mock: MockServer) -> None:
    projectops_mock.answer(GET.name, {FIELD.json_name: "1.0.0"}, response=RESPONSE)
    projectops_mock.answer(GET.path, get("2.0.0"), error=projectops.NotFound("no release 2.0.0"))
    projectops_mock.answer(GET.tool_name, {FIELD.json_name: "3"}, error="permission_denied")
    with projectops_mock.client() as client:
        call = getattr(client, GET.name)
        assert call(**{FIELD.name: " 1.0.0 "}) == RESPONSE
        with pytest.raises(projectops.NotFound) as not_found:
            call(**{FIELD.name: "2.0.0"})
        assert (not_found.value.http_status, not_found.value.message) == (404, "no release 2.0.0")
        with pytest.raises(projectops.PermissionDenied):
            call(**{FIELD.name: "3"})
        with pytest.raises(projectops.FailedPrecondition):
            call(**{FIELD.name: "4"})
    assert projectops_mock.calls == [Call(GET.name, get(v)) for v in (" 1.0.0 ", "2.0.0", "3", "4")]


def test_request_none_answers_every_request_and_exact_answers_win(
    projectops_mock: MockServer,
) -> None:
    projectops_mock.answer(GET.name, response=RESPONSE)
    projectops_mock.answer(GET.name, {FIELD.json_name: "x"}, response={})
    with projectops_mock.client() as client:
        call = getattr(client, GET.name)
        assert call(**{FIELD.name: "anything"}) == RESPONSE
        assert call(**{FIELD.name: "x"}) == GET.response_type()
    # A later answer for the same request replaces the earlier one.
    projectops_mock.answer(GET.name, {FIELD.json_name: "x"}, error=projectops.Code.ABORTED)
    with projectops_mock.client() as client, pytest.raises(projectops.Aborted):
        getattr(client, GET.name)(**{FIELD.name: "x"})


def test_unscripted_operations_are_generated_unless_turned_off(
    projectops_mock: MockServer,
) -> None:
    with projectops_mock.client() as client:
        call = getattr(client, LIST.name)
        assert call() == generated_response(LIST, LIST.request_type())
        projectops_mock.generate = False
        with pytest.raises(projectops.FailedPrecondition):
            call()


def test_a_delay_is_waited_in_process(projectops_mock: MockServer) -> None:
    projectops_mock.answer(LIST.name, delay=timedelta(seconds=0.3))
    with projectops_mock.client() as client:
        start = time.monotonic()
        getattr(client, LIST.name)()
        assert 0.3 <= time.monotonic() - start < 20


def test_the_async_client(projectops_mock: MockServer) -> None:
    projectops_mock.answer(LIST.name, response=LISTED)

    async def call() -> Message:
        async with projectops_mock.async_client() as client:
            answer: Message = await getattr(client, LIST.name)()
            return answer

    assert asyncio.run(call()) == LISTED


def test_base_url_serves_a_real_port(projectops_mock: MockServer) -> None:
    projectops_mock.answer(GET.name, {FIELD.json_name: "1"}, response=RESPONSE)
    url = projectops_mock.base_url
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+", url)
    assert projectops_mock.env == {BASE_URL_ENV: url, API_KEY_ENV: projectops_mock.api_key}
    answer = httpx2.post(
        f"{url}{GET.path}",
        json={FIELD.json_name: "1"},
        headers={API_KEY_HEADER: projectops_mock.api_key},
        timeout=30,
    )
    assert answer.status_code == 200
    assert projectops.from_json(answer.content, GET.response_type, strict=True) == RESPONSE
    refused = httpx2.post(f"{url}{GET.path}", json={}, headers={API_KEY_HEADER: "x"}, timeout=30)
    assert refused.status_code == 401
    assert [c.operation for c in projectops_mock.calls] == [GET.name]


def test_the_port_is_stopped_at_close() -> None:
    server = MockServer()
    url = server.base_url
    server.close()
    with pytest.raises(httpx2.ConnectError):
        httpx2.post(f"{url}{LIST.path}", json={}, timeout=5)


#: A value no field of any type accepts (not an object, a scalar, a list of scalars or objects).
UNFIT = [[[]]]
A_RESPONSE_FIELD = GET.response_type.DESCRIPTOR.fields[0].json_name


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"request": {FIELD.json_name: ""}}, f"request.{FIELD.json_name}: is required"),
        ({"request": {"bogus": 1}}, "bogus"),
        ({"response": {A_RESPONSE_FIELD: UNFIT}}, f"response.{A_RESPONSE_FIELD}"),
        ({"error": "nope"}, '"nope" is no error code'),
        ({"response": {}, "error": "internal"}, "not both"),
        ({"delay": 61}, "delay: 61s is longer than the longest delay, 60s"),
        ({"delay": -1}, "delay: a delay cannot be negative"),
        ({"request": LIST.request_type()}, "expected a"),
    ],
)
def test_bad_scripts_raise_at_once(
    projectops_mock: MockServer, kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(FixtureError, match=re.escape(message)):
        projectops_mock.answer(GET.name, **kwargs)  # type: ignore[arg-type]


def _readme_test() -> str:
    readme = (REPO / "README.md").read_text()
    found = re.search(
        r"## Test code that calls the API\n.*?```python file=test_releases.py\n(.*?)```",
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


@pytest.mark.slow
def test_a_script_that_never_closes_its_mock_still_exits() -> None:
    """A MockServer left open (a script, a notebook) does not keep the interpreter alive: its
    sync transport's event loop runs in a daemon thread."""
    op = without_request_fields()
    script = (
        "from projectops.mock import MockServer\n"
        "mock = MockServer()\n"
        "with mock.client() as client:\n"
        f"    client.call({op.name!r})\n"
        "print('answered')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert (done.returncode, done.stdout.strip()) == (0, "answered"), done.stderr
