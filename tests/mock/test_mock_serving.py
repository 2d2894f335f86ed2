"""How the mock server serves: the API reference beside the operations, N worker processes, its
limit flags, and answers encoded once."""

from __future__ import annotations

import json
import subprocess
import time
import tracemalloc
from pathlib import Path
from typing import Any

import httpx2
import pytest
from google.protobuf.message import Message

import projectops
from projectops.cli import main
from projectops.codec import to_json
from projectops.conventions import API_KEY_HEADER
from projectops.errors import FailedPrecondition
from projectops.fixtures import request_key
from projectops.mock import generate, load_fixtures
from tests.synthetic import has_fixtures, with_required_string, without_request_fields

#: An operation whose request has a REQUIRED string field, and one whose request is empty.
GET, FIELD = with_required_string(has_fixtures)  # the default fixtures answer it
LIST = without_request_fields()


def fixture_value() -> str:
    """FIELD's value in the demo project's first exact answer of GET (default fixtures)."""
    answers = load_fixtures()["demo-key"].scenario[GET.name]
    value: str = getattr(next(a for a in answers if not a.partial).request, FIELD.name)
    return value


def get(value: str) -> Message:
    return GET.request_type(**{FIELD.name: value})


@pytest.mark.slow
def test_the_mock_server_serves_the_openapi_document_and_the_reference_page(
    mock_server: Any,
) -> None:
    with httpx2.Client(base_url=mock_server.base_url, timeout=10) as client:
        document = client.get("/openapi.json")
        page = client.get("/docs")
    assert document.status_code == 200
    assert document.json()["openapi"].startswith("3.1")
    assert set(document.json()["paths"]) == {op.path for op in projectops.operations()}
    # Relative: the document never names a host taken from the request (docs_routes).
    assert document.json()["servers"] == [{"url": "/"}]
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")


@pytest.mark.slow
@pytest.mark.parametrize("path", ["/openapi.json", "/docs"])
def test_a_wrong_method_on_the_reference_is_the_error_table_405(
    mock_server: Any, path: str
) -> None:
    with httpx2.Client(base_url=mock_server.base_url, timeout=10) as client:
        answer = client.post(path)
    assert answer.status_code == 405 and "GET" in answer.headers["allow"]
    assert answer.json()["code"] == "unimplemented"


def worker_pids(parent: int) -> set[int]:
    """The children of `parent` that run Python (uvicorn's workers; multiprocessing's resource
    tracker is one too, so callers count at least N)."""
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(parent)], capture_output=True)
    return {int(pid) for pid in out.stdout.split()}


W = generate(LIST.response_type, "w")


@pytest.mark.slow
def test_workers_serve_the_given_fixtures_from_n_processes(
    start_mock_server: Any, tmp_path: Path
) -> None:
    fixtures = {
        "projects": [
            {
                "project": "w",
                "apiKey": "w-key",
                "operations": {LIST.name: [{"request": {}, "response": projectops.to_dict(W)}]},
            }
        ]
    }
    path = tmp_path / "fixtures.json"
    path.write_text(json.dumps(fixtures))
    server = start_mock_server(fixtures_path=path, extra_args=["--workers", "2"])
    answers = []
    for _ in range(8):  # new connections: the kernel spreads them over the workers
        with httpx2.Client(base_url=server.base_url, timeout=10) as client:
            answers.append(client.post(LIST.path, json={}, headers={API_KEY_HEADER: "w-key"}))
    assert {a.status_code for a in answers} == {200}
    # The message, not its bytes: a map's keys come in no set order (a planted map, seed
    # 2072533365, was written in another order than to_json(W) wrote it).
    assert all(projectops.from_json(a.content, LIST.response_type) == W for a in answers)
    assert len(worker_pids(server.process.pid)) >= 2
    started = time.monotonic()
    assert server.stop() == 0
    assert time.monotonic() - started < 10
    assert "Traceback" not in server.stderr()


@pytest.mark.parametrize(
    ("flag", "value", "words"),
    [
        ("--timeout-keep-alive", "0", "expected a whole number >= 1"),
        ("--limit-concurrency", "x", "expected a whole number >= 1"),
        ("--workers", "0", "expected a whole number >= 1"),
        ("--backlog", "x", "expected a whole number >= 1"),
        ("--h11-max-incomplete-event-size", "10", "expected a whole number >= 1024"),
    ],
)
def test_bad_limit_flags_are_usage_errors(
    capsys: pytest.CaptureFixture[str], flag: str, value: str, words: str
) -> None:
    assert main(["mock-server", flag, value]) == 2
    assert words in capsys.readouterr().err


def test_an_answer_is_encoded_once_and_equals_the_codec_output() -> None:
    project = load_fixtures()["demo-key"]
    request, spaced = get(fixture_value()), get(f"  {fixture_value()} ")
    first = project.reply(GET, request).body
    [answer] = [a for a in project.scenario[GET.name] if a.key == request_key(request)]
    assert first == to_json(answer.response).encode()
    assert project.reply(GET, request).body is first  # from the cache
    assert project.reply(GET, spaced).body is first  # another spelling, the same response


def test_requests_a_client_makes_up_do_not_grow_the_mock_server() -> None:
    # Each unmatched request is answered 400 and forgotten; a long matched spelling too.

    project = load_fixtures()["demo-key"]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(200):
            unknown = get(f"{i}" + "x" * 50_000)
            with pytest.raises(FailedPrecondition):
                project.reply(GET, unknown)
        spaced = get(" " * 50_000 + fixture_value())
        project.reply(GET, spaced)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 1_000_000, grown  # 200 x 50 kB would be 10 MB if they were kept
