"""The `projectops` CLI as a user runs it, in-process and as a subprocess, on 127.0.0.1.

Contract under test: stdout is the response JSON and nothing else (empty on failure); stderr
is one ``error: ...`` line per failure, never a traceback and never the API key; exit codes
0 success, 2 usage or local input (nothing sent), 3 answer 401, 4 answer 400, 5 no response or
any other status.
"""

from __future__ import annotations

import json
import re
import subprocess
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

import projectops
from projectops.client import Client
from projectops.descriptions import description
from tests.support import DEMO_KEY, KEY, OTHER_KEY, Recorder, RunCli
from tests.synthetic import (
    has_fixtures,
    known_request,
    with_required_string,
    without_request_fields,
)

# An operation with a REQUIRED string field that the bundled fixtures answer (the mock refuses
# other requests of it: failed_precondition), that field, and its value in a fixture's request.
GET, FIELD = with_required_string(has_fixtures)
KNOWN = getattr(known_request(GET), FIELD.name)
LIST = without_request_fields(has_fixtures)  # a request of {} the default fixtures answer
FLAG = "--" + FIELD.name.replace("_", "-")


def assert_failed(proc: subprocess.CompletedProcess[str], code: int, *needles: str) -> str:
    """Exit `code`, nothing on stdout, one error line on stderr holding every needle."""
    assert proc.returncode == code, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    for needle in needles:
        assert needle in lines[0]
    assert_no_key(proc)
    return lines[0]


def assert_no_key(proc: subprocess.CompletedProcess[str], *keys: str) -> None:
    for key in (KEY, DEMO_KEY, OTHER_KEY, *keys):
        assert key not in proc.stdout and key not in proc.stderr
    assert "Traceback" not in proc.stderr


# --- success ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_an_operation_without_fields_prints_the_response_json(
    run_cli_process: RunCli, mock_server: Any
) -> None:
    run_cli = run_cli_process  # the real entry point, end to end
    demo = run_cli(LIST.tool_name, key=DEMO_KEY, base_url=mock_server.base_url)
    other = run_cli(LIST.tool_name, key=OTHER_KEY, base_url=mock_server.base_url)
    for proc in (demo, other):
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == ""
        assert_no_key(proc)
        # Exactly the response type's JSON: a strict decode rejects anything else.
        projectops.from_json(proc.stdout, LIST.response_type, strict=True)
    names = {
        p: [e["environment"] for e in json.loads(proc.stdout)["environments"]]
        for p, proc in (("demo", demo), ("other", other))
    }
    assert {"production", "QA"} <= set(names["demo"])
    assert names["other"] and not set(names["other"]) & set(names["demo"])  # own environments
    first = json.loads(demo.stdout)["environments"][0]
    assert isinstance(first["sessionCount"], str)  # int64 as a JSON string, exact


@pytest.mark.slow
def test_an_operation_with_a_flag_prints_its_answer(run_cli: RunCli, mock_server: Any) -> None:
    proc = run_cli(GET.tool_name, FLAG, KNOWN, key=DEMO_KEY, base_url=mock_server.base_url)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    response = projectops.from_json(proc.stdout, GET.response_type, strict=True)
    # The service's response to the one asked for (the mock's is the same for the same request:
    # a fixture's, or one generated from the request), and nothing else.
    with Client(mock_server.base_url, DEMO_KEY) as client:
        assert response == client.call(GET, {FIELD.json_name: KNOWN})
    assert proc.stdout == projectops.to_json(response, indent=2) + "\n"


@pytest.mark.slow
def test_distinctive_key_is_never_shown(
    run_cli: RunCli, start_mock_server: Any, tmp_path: Path
) -> None:
    fixtures = json.loads(
        resources.files("projectops").joinpath("default_fixtures.json").read_text(encoding="utf-8")
    )
    fixtures["projects"][0]["apiKey"] = KEY
    path = tmp_path / "fixtures.json"
    path.write_text(json.dumps(fixtures), encoding="utf-8")
    server = start_mock_server(path)

    ok = run_cli(GET.tool_name, FLAG, KNOWN, base_url=server.base_url)
    assert ok.returncode == 0, ok.stderr
    assert_no_key(ok)
    assert_failed(run_cli(GET.tool_name, FLAG, "9.9.9", base_url=server.base_url), 4)
    assert_failed(run_cli(LIST.tool_name, key=KEY + "x", base_url=server.base_url), 3)
    assert_no_key(run_cli(LIST.tool_name, key=KEY + "x", base_url=server.base_url), KEY + "x")


def test_operations_lists_every_operation(run_cli: RunCli) -> None:
    proc = run_cli("operations", key=None)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == len(projectops.operations())
    for op, line in zip(projectops.operations(), lines, strict=True):
        assert line.split()[:2] == [op.tool_name, op.path]
        assert line.endswith(op.summary)


def test_subcommand_help_shows_the_proto_comments(run_cli: RunCli) -> None:
    proc = run_cli(GET.tool_name, "--help", key=None)
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())  # argparse re-wraps lines
    assert f"{FLAG} {FIELD.name.upper()}" in text
    field_comment = description(FIELD)
    assert " ".join(field_comment.split()) in text
    assert " ".join(GET.description.split()) in text


def test_top_level_help_lists_operations_and_mock_server(run_cli: RunCli) -> None:
    proc = run_cli("--help", key=None)
    assert proc.returncode == 0
    for op in projectops.operations():
        assert op.tool_name in proc.stdout
    assert "mock-server" in proc.stdout and "SERVICE_API_KEY" in proc.stdout


def test_a_bare_projectops_prints_its_help(run_cli: RunCli) -> None:
    """As git and gh do: the commands, the two variables and where to read more; exit 0."""
    proc = run_cli(key=None)
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout == run_cli("--help", key=None).stdout
    for name in [op.tool_name for op in projectops.operations()] + ["operations", "mock-server"]:
        assert re.search(rf"^    {re.escape(name)}\b", proc.stdout, re.MULTILINE), name
    for needle in ("SERVICE_API_KEY", "SERVICE_BACKEND_URL", "README.md", "docs/cli.md"):
        assert needle in proc.stdout
    # What a user who installed a wheel (no docs/ in it) can read: the installed docstrings.
    assert "python -m pydoc projectops.client" in proc.stdout


# --- authentication ---------------------------------------------------------------------------


def test_missing_key_exits_2_before_any_request(
    run_cli: RunCli, recorder: Recorder, dead_url: str
) -> None:
    assert_failed(
        run_cli(LIST.tool_name, key=None, base_url=recorder.base_url), 2, "SERVICE_API_KEY"
    )
    assert_failed(
        run_cli(LIST.tool_name, key="  ", base_url=recorder.base_url), 2, "SERVICE_API_KEY"
    )
    assert recorder.requests == []
    # A dead port would give 5 if anything were attempted.
    assert_failed(run_cli(LIST.tool_name, key=None, base_url=dead_url), 2, "SERVICE_API_KEY")


@pytest.mark.slow
def test_wrong_key_exits_3(run_cli: RunCli, mock_server: Any) -> None:
    proc = run_cli(LIST.tool_name, key=KEY, base_url=mock_server.base_url)
    line = assert_failed(proc, 3, "401", "SERVICE_API_KEY")
    assert "missing or invalid" in line


# --- invalid input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        [GET.tool_name],
        [GET.tool_name, FLAG, ""],
        [GET.tool_name, FLAG, "   "],
        [GET.tool_name, "--json-input", json.dumps({FIELD.json_name: " "})],
    ],
)
def test_missing_or_blank_required_field_exits_2_locally(
    run_cli: RunCli, recorder: Recorder, args: list[str]
) -> None:
    assert_failed(run_cli(*args, base_url=recorder.base_url), 2, FIELD.json_name)
    assert recorder.requests == []


@pytest.mark.slow
def test_unknown_release_exits_4_with_status_and_message(run_cli: RunCli, mock_server: Any) -> None:
    proc = run_cli(GET.tool_name, FLAG, "9.9.9", key=OTHER_KEY, base_url=mock_server.base_url)
    line = assert_failed(proc, 4, "400 failed_precondition", "9.9.9")
    assert re.match(r"error: 400 failed_precondition: .*other", line)


@pytest.mark.parametrize(
    ("json_input", "needle"),
    [
        ("{not json", "not valid JSON"),
        ('["1.0.0"]', "JSON object"),
        (json.dumps({FIELD.json_name: KNOWN, "noSuchField": 7}), "noSuchField"),
        (json.dumps({FIELD.json_name: 100}), FIELD.json_name),
        ("@/nonexistent/request.json", "/nonexistent/request.json"),
    ],
)
def test_bad_json_input_exits_2(
    run_cli: RunCli, recorder: Recorder, json_input: str, needle: str
) -> None:
    proc = run_cli(GET.tool_name, "--json-input", json_input, base_url=recorder.base_url)
    assert_failed(proc, 2, needle)
    assert recorder.requests == []


def test_usage_errors_exit_2_in_one_line(run_cli: RunCli) -> None:
    assert_failed(run_cli(GET.tool_name, "--release", "1"), 2, "--release")
    assert_failed(run_cli("no-such-operation"), 2, "no-such-operation")
    assert_failed(run_cli("--timeout", "3"), 2, "a command is required")
    assert_failed(run_cli("--timeout", "-1", LIST.tool_name), 2, "--timeout")
    assert_failed(run_cli("--base-url", "127.0.0.1:8787", LIST.tool_name), 2, "base URL")


# --- --json-input -----------------------------------------------------------------------------


@pytest.mark.slow
def test_json_input_file_wins_over_flags(run_cli: RunCli, mock_server: Any, tmp_path: Path) -> None:
    path = tmp_path / "request.json"
    path.write_text(json.dumps({FIELD.json_name: KNOWN}), encoding="utf-8")
    proc = run_cli(
        GET.tool_name,
        FLAG,
        "9.9.9",
        "--json-input",
        f"@{path}",
        key=DEMO_KEY,
        base_url=mock_server.base_url,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == json.loads(
        run_cli(GET.tool_name, FLAG, KNOWN, key=DEMO_KEY, base_url=mock_server.base_url).stdout
    )


def test_json_input_inline_and_stdin(run_cli: RunCli, recorder: Recorder) -> None:
    name = FIELD.json_name
    inline = run_cli(
        GET.tool_name,
        FLAG,
        "9.9.9",
        "--json-input",
        json.dumps({name: "2.0"}),
        base_url=recorder.base_url,
    )
    piped = run_cli(
        GET.tool_name,
        "--json-input",
        "@-",
        stdin=json.dumps({name: "3.0"}),
        base_url=recorder.base_url,
    )
    flags = run_cli(GET.tool_name, FLAG, "4.0", "--json-input", "{}", base_url=recorder.base_url)
    assert [p.returncode for p in (inline, piped, flags)] == [0, 0, 0]
    assert [json.loads(r.body) for r in recorder.requests] == [
        {name: "2.0"},
        {name: "3.0"},
        {name: "4.0"},
    ]


# --- the HTTP exchange ------------------------------------------------------------------------


def test_exactly_the_spec_headers_are_sent(run_cli: RunCli, recorder: Recorder) -> None:
    recorder.respond(200, "{}")
    proc = run_cli(LIST.tool_name, base_url=recorder.base_url + "/")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == projectops.to_json(LIST.response_type(), indent=2) + "\n"
    (sent,) = recorder.requests
    assert (sent.method, sent.path, sent.body) == ("POST", LIST.path, b"{}")
    assert sent.header("Content-Type") == ["application/json"]
    assert sent.header("Service-Api-Key") == [KEY]
    # Besides those two: what HTTP/1.1 needs, the content negotiation and who is calling.
    assert sent.header_names() == {
        "host",
        "content-length",
        "content-type",
        "service-api-key",
        "accept",
        "accept-encoding",
        "user-agent",
    }
    assert sent.header("Accept") == ["application/json"]
    assert sent.header("Accept-Encoding") == ["identity"]


@pytest.mark.slow
def test_trailing_slashes_of_the_base_url_work(run_cli: RunCli, mock_server: Any) -> None:
    by_flag = run_cli("--base-url", mock_server.base_url + "///", LIST.tool_name, key=DEMO_KEY)
    by_env = run_cli(LIST.tool_name, key=DEMO_KEY, base_url=mock_server.base_url + "/")
    after = run_cli(
        LIST.tool_name,
        "--base-url",
        mock_server.base_url + "/",
        key=DEMO_KEY,
        base_url="http://127.0.0.1:1",
    )  # the flag beats the environment
    for proc in (by_flag, by_env, after):
        assert proc.returncode == 0, proc.stderr
        projectops.from_json(proc.stdout, LIST.response_type, strict=True)


def test_redirect_is_not_followed(run_cli: RunCli, recorder: Recorder) -> None:
    recorder.respond(307, "", {"Location": recorder.base_url + "/elsewhere"})
    assert_failed(run_cli(LIST.tool_name, base_url=recorder.base_url), 5, "307")
    assert len(recorder.requests) == 1


def test_non_json_error_answer_exits_5_with_its_text(run_cli: RunCli, recorder: Recorder) -> None:
    recorder.respond(502, "upstream is down", {"Content-Type": "text/plain"})
    assert_failed(run_cli(LIST.tool_name, base_url=recorder.base_url), 5, "502", "upstream is down")


def test_a_200_that_is_not_the_response_says_so(run_cli: RunCli, recorder: Recorder) -> None:
    """Not "200 internal", which reads as the server's own error: what came, and from where."""
    recorder.respond(200, "<html>maintenance</html>", {"Content-Type": "text/html"})
    line = assert_failed(
        run_cli(LIST.tool_name, base_url=recorder.base_url),
        5,
        "unusable answer: the answer of",
        f"{LIST.path} (HTTP 200) is not a {LIST.response_type.__name__}",
    )
    assert "internal" not in line


def test_network_failure_exits_5_naming_the_base_url(run_cli: RunCli, dead_url: str) -> None:
    assert_failed(run_cli(LIST.tool_name, base_url=dead_url), 5, f"cannot reach {dead_url}")


@pytest.mark.slow
def test_time_out_exits_5(run_cli_process: RunCli, silent_url: str) -> None:
    run_cli = run_cli_process
    assert_failed(run_cli("--timeout", "0.3", LIST.tool_name, base_url=silent_url), 5, silent_url)
