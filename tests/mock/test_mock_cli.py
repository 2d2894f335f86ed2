"""``projectops mock-server`` as a program: fixtures files, exit codes, signals, its output."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor

import projectops
from projectops.cli import main
from projectops.conventions import API_KEY_HEADER
from projectops.mock import generate
from tests.synthetic import with_required_string, without_request_fields

#: An operation whose request has a REQUIRED string field, and one whose request is empty.
GET, FIELD = with_required_string()
LIST = without_request_fields()
LISTENING = re.compile(r"^projectops mock server listening on (http://127\.0\.0\.1:(\d+))$")
AT = f"projects[0].operations.{GET.name}[0]"


def release_answer(**response: Any) -> dict[str, Any]:
    return {"request": {FIELD.json_name: "1.0.0"}, "response": response}


def fixtures(operations: dict[str, Any] | None = None, **project: Any) -> dict[str, Any]:
    entry = {
        "project": "p",
        "apiKey": "p-key",
        "operations": {GET.name: [release_answer()]} if operations is None else operations,
    }
    entry.update(project)
    return {"projects": [entry]}


def path_to(wanted: Callable[[FieldDescriptor], bool]) -> list[FieldDescriptor] | None:
    """The fields from GET's response down to the first field `wanted` accepts, or None."""

    def walk(descriptor: Descriptor, seen: frozenset[str]) -> list[FieldDescriptor] | None:
        for fd in descriptor.fields:
            if wanted(fd):
                return [fd]
        for fd in descriptor.fields:
            kind = fd.message_type
            if kind is None or kind.full_name.startswith("google.") or kind.full_name in seen:
                continue
            if not kind.GetOptions().map_entry:
                rest = walk(kind, seen | {descriptor.full_name})
                if rest:
                    return [fd, *rest]
        return None

    return walk(GET.response_type.DESCRIPTOR, frozenset())


def response_setting(fields: list[FieldDescriptor], leaf: Any) -> tuple[dict[str, Any], str]:
    """The response JSON that sets `leaf` at `fields` (a list holds one element), and its path."""
    value = leaf
    for fd in reversed(fields):
        value = {fd.json_name: [value] if fd.is_repeated else value}
    path = ".".join(f"{fd.json_name}[0]" if fd.is_repeated else fd.json_name for fd in fields)
    return value, path


INT64 = path_to(lambda fd: fd.cpp_type in (fd.CPPTYPE_INT64, fd.CPPTYPE_UINT64))
ENUM = path_to(lambda fd: fd.enum_type is not None and len(fd.enum_type.values) > 1)
RESPONSE_FIELDS = [fd.json_name for fd in GET.response_type.DESCRIPTOR.fields]


def schema_cases() -> list[tuple[str, Any, str]]:
    """Bad responses that only the response's schema tells apart, where it has such fields."""
    cases = [
        (
            "response-unknown-field",
            fixtures({GET.name: [release_answer(unknownField={})]}),
            f"{AT}.response.unknownField: expected a known field of "
            f"{GET.response_type.DESCRIPTOR.name} ({', '.join(RESPONSE_FIELDS)}), "
            "got an unknown field",
        )
    ]
    if INT64:
        response, path = response_setting(INT64, "many")
        cases.append(
            (
                "response-bad-int64",
                fixtures({GET.name: [release_answer(**response)]}),
                f"{AT}.response.{path}: expected a 64-bit integer (a string of digits or a "
                'whole number), got the string "many"',
            )
        )
    if ENUM:
        response, path = response_setting(ENUM, "NO_SUCH_NAME")
        cases.append(
            (
                "response-unknown-enum",
                fixtures({GET.name: [release_answer(**response)]}),
                f"{AT}.response.{path}: expected one of the names ",
            )
        )
    return cases


BAD_FIXTURES: list[tuple[str, Any, str]] = [
    ("not-json", "{oops", "not valid JSON: Expecting property name enclosed in double quotes"),
    ("top-not-object", [], "the top level: expected a JSON object, got an array"),
    ("no-projects", {}, "projects: is required"),
    ("projects-not-list", {"projects": {}}, "projects: expected a JSON array"),
    ("empty-projects", {"projects": []}, "projects: is required"),
    (
        "unknown-top-key",
        {"projects": [], "extra": 1},
        "extra: expected a known field of MockFixtures (projects), got an unknown field",
    ),
    (
        "unknown-project-key",
        fixtures(bogus=1),
        "projects[0].bogus: expected a known field of MockProject (project, apiKey, operations), "
        "got an unknown field",
    ),
    (
        "project-not-object",
        {"projects": ["p"]},
        'projects[0]: expected a JSON object, got the string "p"',
    ),
    ("project-missing-key", {"projects": [{"project": "p"}]}, "projects[0].apiKey: is required"),
    ("project-missing-name", fixtures(project=""), "projects[0].project: is required"),
    ("blank-key", fixtures(apiKey="  "), "projects[0].apiKey: is required"),
    (
        "key-not-string",
        fixtures(apiKey=7),
        "projects[0].apiKey: expected a string, got the number 7",
    ),
    (
        "unknown-operation",
        fixtures({GET.tool_name: []}),
        f"projects[0].operations.{GET.tool_name}: unknown operation '{GET.tool_name}'; "
        "known operations: " + ", ".join(op.name for op in projectops.operations()),
    ),
    (
        "answers-not-list",
        fixtures({LIST.name: {}}),
        f'projects[0].operations["{LIST.name}"]: expected a JSON array, got an object',
    ),
    (
        "answer-not-object",
        fixtures({LIST.name: [7]}),
        f"projects[0].operations.{LIST.name}[0]: expected a JSON object, got the number 7",
    ),
    (
        "answer-without-response",
        fixtures({LIST.name: [{"request": {}}]}),
        f"projects[0].operations.{LIST.name}[0].response: is required",
    ),
    (
        "unknown-answer-key",
        fixtures({LIST.name: [{"response": {}, "reply": {}}]}),
        f"projects[0].operations.{LIST.name}[0].reply: expected a known field of "
        "MockAnswer (request, response, error, delay, partial), got an unknown field",
    ),
    *schema_cases(),
    (
        "request-blank-field",
        fixtures({GET.name: [{"request": {FIELD.json_name: " "}, "response": {}}]}),
        f"{AT}.request.{FIELD.json_name}: is required",
    ),
    (
        "request-not-object",
        fixtures({GET.name: [{"request": [], "response": {}}]}),
        f"{AT}.request: expected a JSON object, got an array",
    ),
    (
        "duplicate-request",
        fixtures(
            {GET.name: [release_answer(), {"request": {FIELD.json_name: " 1.0.0"}, "response": {}}]}
        ),
        f"projects[0].operations.{GET.name}[1].request: the same request as {AT}",
    ),
    (
        "duplicate-key",
        {"projects": [fixtures()["projects"][0], {"project": "q", "apiKey": "p-key"}]},
        "projects[1].apiKey: duplicate of projects[0].apiKey",
    ),
    (
        "duplicate-project",
        {"projects": [fixtures()["projects"][0], {"project": "p", "apiKey": "q-key"}]},
        "projects[1].project: duplicate of projects[0].project",
    ),
]


@pytest.mark.parametrize(
    ("content", "message"),
    [(c, m) for _, c, m in BAD_FIXTURES],
    ids=[name for name, _, _ in BAD_FIXTURES],
)
def test_bad_fixtures_exit_2_with_one_line_naming_file_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: Any, message: str
) -> None:
    path = tmp_path / "fixtures.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    assert main(["mock-server", "--port", "0", "--fixtures", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith(f"error: {path}: {message}"), err
    assert "p-key" not in err


def test_unreadable_fixtures_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing.json"
    assert main(["mock-server", "--fixtures", str(missing)]) == 2
    assert (
        capsys.readouterr().err
        == f"error: {missing}: cannot read the file: No such file or directory\n"
    )


@pytest.mark.slow
def test_bad_fixtures_stop_the_real_program_before_it_listens(tmp_path: Path) -> None:
    path = tmp_path / "fixtures.json"
    secret = "fixture-secret-key-1234"
    bad = fixtures({GET.name: [{"request": {FIELD.json_name: 1.5}, "response": {}}]}, apiKey=secret)
    path.write_text(json.dumps(bad))
    done = subprocess.run(
        [sys.executable, "-m", "projectops", "mock-server", "--port", "0", "--fixtures", str(path)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith(f"error: {path}: {AT}.request.{FIELD.json_name}: expected a")
    assert done.stderr.endswith(", got the number 1.5\n")
    assert done.stderr.count("\n") == 1
    assert secret not in done.stderr


@pytest.mark.slow
def test_custom_fixtures_are_served_and_matched_after_trimming(
    tmp_path: Path, start_mock_server: Any
) -> None:
    path = tmp_path / "fixtures.json"
    response = generate(GET.response_type, "custom")
    answer = {"request": {FIELD.json_name: " 2.0 "}, "response": projectops.to_dict(response)}
    path.write_text(json.dumps(fixtures({GET.name: [answer]})))
    # --no-generate: an operation the file does not mention is not answered with a made-up one.
    server = start_mock_server(path, ["--no-generate"])
    headers = {API_KEY_HEADER: "p-key"}
    with httpx2.Client(base_url=server.base_url) as client:
        found = client.post(GET.path, json={FIELD.json_name: "2.0"}, headers=headers)
        assert found.status_code == 200
        assert projectops.from_json(found.content, GET.response_type, strict=True) == response
        # An operation the project lists no response for answers no request.
        none = client.post(LIST.path, content=b"", headers=headers)
        assert none.status_code == 400
        assert (
            none.json()["message"] == f"project p has no {LIST.name} answer for the empty request"
        )
        # The default fixtures are not loaded beside a file.
        assert (
            client.post(LIST.path, json={}, headers={API_KEY_HEADER: "demo-key"}).status_code == 401
        )


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_stop_signals_exit_0_and_output_only_the_listening_line(
    start_mock_server: Any, sig: signal.Signals
) -> None:
    server = start_mock_server()
    with httpx2.Client(base_url=server.base_url) as client:
        for key in ("demo-key", "other-key", "guessed-key-5555"):
            client.post(GET.path, json={FIELD.json_name: "1.0.0"}, headers={API_KEY_HEADER: key})
            client.post(GET.path, content=b"[", headers={API_KEY_HEADER: key})
    server.process.send_signal(sig)
    assert server.process.wait(10) == 0
    assert server.stdout() == ""
    assert server.stderr() == f"projectops mock server listening on {server.base_url}\n"


@pytest.mark.slow
def test_access_log_never_shows_an_api_key(start_mock_server: Any) -> None:
    server = start_mock_server(extra_args=["--access-log"])
    keys = ["demo-key", "other-key", "guessed-key-5555"]
    with httpx2.Client(base_url=server.base_url) as client:
        for key in keys:
            client.post(GET.path, json={FIELD.json_name: "1.0.0"}, headers={API_KEY_HEADER: key})
            client.post(LIST.path + "?key=" + "q", headers={API_KEY_HEADER: key})
    assert server.stop() == 0
    output = server.stdout() + server.stderr()
    assert f"POST {GET.path}" in output  # the log is on
    assert not [key for key in keys if key in output]


@pytest.mark.slow
def test_port_0_picks_a_free_port_and_prints_it(tmp_path: Path) -> None:
    err_path = tmp_path / "stderr"
    with err_path.open("wb") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "projectops", "mock-server", "--port", "0"],
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    try:
        deadline = time.monotonic() + 20
        while not err_path.read_text().endswith("\n") and time.monotonic() < deadline:
            assert process.poll() is None, err_path.read_text()
            time.sleep(0.05)
        match = LISTENING.match(err_path.read_text().strip())
        assert match, err_path.read_text()
        assert int(match.group(2)) > 0
        response = httpx2.post(
            match.group(1) + LIST.path, json={}, headers={API_KEY_HEADER: "demo-key"}
        )
        assert response.status_code == 200
    finally:
        process.terminate()
        assert process.wait(10) == 0


def test_a_port_in_use_exits_2_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["mock-server", "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: cannot listen on 127.0.0.1:{port}: ")
    assert err.count("\n") == 1


@pytest.mark.parametrize("port", ["-1", "65536", "http"])
def test_bad_port_is_a_usage_error(capsys: pytest.CaptureFixture[str], port: str) -> None:
    assert main(["mock-server", "--port", port]) == 2
    assert "expected a TCP port from 0 to 65535" in capsys.readouterr().err


def test_help_derives_its_defaults_from_the_conventions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mock-server", "--help"]) == 0
    out = capsys.readouterr().out
    host_port = projectops.DEFAULT_BASE_URL.removeprefix("http://").split(":")
    assert f"(default: {host_port[0]})" in out
    assert f"(default: {host_port[1]})" in out


def test_help_shows_the_limits_defaults_stated_once(capsys: pytest.CaptureFixture[str]) -> None:
    from projectops.program.commands import DEFAULT_BACKLOG, DEFAULT_DRAIN_TIMEOUT

    assert main(["mock-server", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for flag, value in [
        ("--timeout-keep-alive", "uvicorn's"),
        ("--backlog", DEFAULT_BACKLOG),
        ("--h11-max-incomplete-event-size", "uvicorn's"),
        ("--drain-timeout", DEFAULT_DRAIN_TIMEOUT),
    ]:
        help_text = out.rsplit(f"{flag} ", 1)[1].split(" --", 1)[0]  # its entry in the list
        assert f"default: {value})" in help_text, (flag, help_text)
