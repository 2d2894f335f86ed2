"""Mock scenarios: error responses, delays, partial matches and generated responses, served from a
fixtures file by the mock app on a real 127.0.0.1 port (uvicorn in a thread of this process)
and called through the CLI's main and the typed clients."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import jsonschema
import pytest
import uvicorn

import projectops
from projectops import json_schema
from projectops.cli import main
from projectops.client import AsyncOperationsServiceClient, OperationsServiceClient
from projectops.conventions import API_KEY_ENV, API_KEY_HEADER
from projectops.fixtures import FixtureError, decode_fixtures
from projectops.mock import (
    MockProject,
    create_mock_app,
    generate,
    generated_response,
    load_fixtures,
)
from tests.synthetic import with_required_string, without_request_fields

#: An operation whose request has a REQUIRED string field, and one whose request is empty.
GET, FIELD = with_required_string()
LIST = without_request_fields()
FLAG = "--" + FIELD.name.replace("_", "-")  # the field's CLI flag
KEY = "s-key"
#: The response of the partial fixture entry.
ANY = generate(GET.response_type, "any")

SCENARIOS: dict[str, Any] = {
    "projects": [
        {
            "project": "s",
            "apiKey": KEY,
            "operations": {
                GET.name: [
                    {
                        "request": {FIELD.json_name: "9.9.9"},
                        "error": {"code": "not_found", "message": "no release 9.9.9"},
                    },
                    {"request": {FIELD.json_name: "slow"}, "delay": "0.3s", "response": {}},
                    # Partial: any value; the exact answers above win over it.
                    {"request": {}, "partial": True, "response": projectops.to_dict(ANY)},
                ],
            },
        }
    ]
}


def call(client: Any, value: str) -> Any:
    """GET through a typed client, with FIELD set to `value`."""
    return getattr(client, GET.name)(**{FIELD.name: value})


def _serve(app: Any) -> Iterator[str]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "server did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def _app(tmp_path: Path, data: dict[str, Any], *, generate: bool = True) -> Any:
    path = tmp_path / "fixtures.json"
    path.write_text(json.dumps(data))
    return create_mock_app(load_fixtures(path, generate=generate), docs=False)


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    # One server for the module: the scenarios are read-only, and stopping uvicorn costs
    # about 0.2 s a test.
    yield from _serve(_app(tmp_path_factory.mktemp("scenarios"), SCENARIOS))


@pytest.fixture
def client(base_url: str) -> Iterator[OperationsServiceClient]:
    with OperationsServiceClient(base_url=base_url, api_key=KEY, timeout=30) as c:
        yield c


def test_an_error_answer_has_its_codes_status_through_the_typed_client(
    client: OperationsServiceClient,
) -> None:
    with pytest.raises(projectops.NotFound) as caught:
        call(client, "9.9.9")
    assert caught.value.http_status == 404
    assert caught.value.message == "no release 9.9.9"


def test_exact_answers_win_and_a_partial_one_answers_the_rest(
    client: OperationsServiceClient,
) -> None:
    assert call(client, "1.2.3") == ANY
    assert call(client, " other ") == ANY
    assert call(client, "slow") == GET.response_type()


def test_a_delay_is_waited(client: OperationsServiceClient) -> None:
    start = time.monotonic()
    call(client, "slow")
    assert 0.3 <= time.monotonic() - start < 20
    with pytest.raises(projectops.DeadlineExceeded):
        with OperationsServiceClient(base_url=client.base_url, api_key=KEY, timeout=0.2) as fast:
            call(fast, "slow")


def test_an_operation_without_fixtures_gets_a_generated_valid_deterministic_answer(
    client: OperationsServiceClient,
) -> None:
    first = getattr(client, LIST.name)()
    assert getattr(client, LIST.name)() == first
    projectops.validate(first)
    jsonschema.validate(projectops.to_dict(first), json_schema.output_schema(LIST))
    assert first == generated_response(LIST, LIST.request_type())


def test_the_async_client_gets_the_same_answers(base_url: str) -> None:
    async def calls() -> tuple[Any, Any]:
        async with AsyncOperationsServiceClient(base_url=base_url, api_key=KEY) as c:
            partial = await call(c, "x")
            return partial, await getattr(c, LIST.name)()

    partial, listed = asyncio.run(calls())
    assert partial == ANY
    assert listed == generated_response(LIST, LIST.request_type())


def test_the_cli_shows_scenario_answers(
    base_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(API_KEY_ENV, KEY)
    assert main([GET.tool_name, FLAG, "4.0", "--base-url", base_url]) == 0
    out, _ = capsys.readouterr()
    assert projectops.from_json(out, GET.response_type) == ANY
    code = main([GET.tool_name, FLAG, "9.9.9", "--base-url", base_url])
    out, err = capsys.readouterr()
    assert code != 0 and out == ""
    assert err.count("\n") == 1 and "no release 9.9.9" in err
    assert main([LIST.tool_name, "--base-url", base_url]) == 0
    out, _ = capsys.readouterr()
    expected = generated_response(LIST, LIST.request_type())
    assert projectops.from_json(out, LIST.response_type) == expected


def test_no_generate_answers_failed_precondition(tmp_path: Path) -> None:
    for url in _serve(_app(tmp_path, SCENARIOS, generate=False)):
        answer = httpx2.post(f"{url}{LIST.path}", json={}, headers={API_KEY_HEADER: KEY})
        assert answer.status_code == 400
        assert answer.json() == {
            "code": "failed_precondition",
            "message": f"project s has no {LIST.name} answer for the empty request",
            "violations": [],
        }


def test_mock_server_has_a_no_generate_flag(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mock-server", "--help"]) == 0
    assert "--no-generate" in capsys.readouterr().out


def _one(answer: dict[str, Any]) -> dict[str, Any]:
    return {"projects": [{"project": "p", "apiKey": "k", "operations": {GET.name: [answer]}}]}


AT = f"projects[0].operations.{GET.name}[0]"
ONE = {FIELD.json_name: "1"}


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (
            {"request": ONE, "delay": "61s", "response": {}},
            f"{AT}.delay: 61s is longer than the longest delay, 60s",
        ),
        (
            {"request": ONE, "delay": "-1s", "response": {}},
            f"{AT}.delay: a delay cannot be negative",
        ),
        (
            {"request": ONE, "error": {"code": "nope", "message": "x"}},
            f'{AT}.error.code: "nope" is no error code',
        ),
        ({"request": ONE, "error": {"code": "not_found"}}, f"{AT}.error.message: is required"),
        (
            {"request": ONE, "response": {}, "error": {"code": "internal", "message": "x"}},
            f"{AT}: set one of response and error",
        ),
        ({"request": ONE}, f"{AT}.response: is required"),
        ({"request": {}, "response": {}}, f"{AT}.request.{FIELD.json_name}: is required"),
    ],
)
def test_bad_scenarios_are_refused_at_load_time(answer: dict[str, Any], message: str) -> None:
    with pytest.raises(FixtureError) as caught:
        decode_fixtures(_one(answer))
    assert str(caught.value).startswith(message)


def test_a_partial_request_may_omit_required_fields_and_exact_and_partial_may_coexist() -> None:
    answers = [
        {"request": {}, "partial": True, "response": {}},
        {"request": ONE, "response": {}},
        {"request": ONE, "partial": True, "response": {}},
    ]
    fixtures = {"projects": [{"project": "p", "apiKey": "k", "operations": {GET.name: answers}}]}
    (project,) = decode_fixtures(fixtures)
    assert [a.partial for a in project.answers[GET.name]] == [True, False, True]


def test_the_first_partial_answer_in_file_order_wins_whatever_the_fields_it_names() -> None:
    wide = {"request": {}, "partial": True, "response": projectops.to_dict(ANY)}
    narrow = {"request": ONE, "partial": True, "response": {}}
    for answers, expected in (([wide, narrow], ANY), ([narrow, wide], GET.response_type())):
        fixtures = {
            "projects": [{"project": "p", "apiKey": "k", "operations": {GET.name: answers}}]
        }
        project = load_fixtures_from(fixtures)["k"]
        body = project.reply(GET, GET.request_type(**{FIELD.name: " 1 "})).body
        assert projectops.from_json(body, GET.response_type) == expected
        other = project.reply(GET, GET.request_type(**{FIELD.name: "2"})).body
        assert projectops.from_json(other, GET.response_type) == ANY


def load_fixtures_from(data: dict[str, Any]) -> dict[str, MockProject]:
    (decoded,) = decode_fixtures(data)
    return {decoded.api_key: MockProject(decoded.name, decoded.answers)}
