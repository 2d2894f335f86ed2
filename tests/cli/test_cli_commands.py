"""The CLI's derived flags, its composition and its failure table, in-process (`main`).

Flags of every field kind are checked on synthetic operations whose requests are messages of the
schema: an enum, a 64-bit integer, a repeated string, a message field. Requests still go over a
real socket to the recording server, so what is checked is what would be sent.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from typing import Any

import pytest
from google.protobuf.message import Message

import projectops
from projectops import Operation, mock, operation_path
from projectops.cli._main import _commands, main
from projectops.client import (
    InvalidRequest,
    InvalidResponse,
    MissingApiKey,
    ResponseTimedOut,
    ServiceUnreachable,
    error_from_response,
)
from projectops.program.commands import Command
from projectops.program.failures import failure
from projectops.registry import REGISTRY
from projectops.v1 import release_pb2
from tests.support import DEMO_KEY, KEY, Recorder, cli_env
from tests.synthetic import (
    has_fixtures,
    known_request,
    with_required_string,
    without_request_fields,
)

ISSUES = Operation(
    name="file_issue",
    tool_name="file-issue",
    path=operation_path("file_issue"),
    request_type=release_pb2.Issue,
    response_type=release_pb2.Release,
    description="File an issue.\n\nSecond paragraph.",
    method=projectops.operations()[0].method,
)
RELEASES = Operation(
    name="cut_release",
    tool_name="cut-release",
    path=operation_path("cut_release"),
    request_type=release_pb2.Release,
    response_type=release_pb2.Release,
    description="Cut a release.",
    method=projectops.operations()[0].method,
)


@pytest.fixture
def synthetic(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI sees the registry's operations plus ISSUES and RELEASES."""
    ops = (*projectops.operations(), ISSUES, RELEASES)
    monkeypatch.setattr(REGISTRY, "operations", lambda: ops)
    monkeypatch.setenv("SERVICE_API_KEY", KEY)


def sent(recorder: Recorder, op: Operation) -> list[Message]:
    """The request messages the recording server received for `op`."""
    return [projectops.from_json(r.body, op.request_type, strict=True) for r in recorder.requests]


@pytest.mark.usefixtures("synthetic")
def test_enum_int64_and_string_flags_become_the_request(
    recorder: Recorder, capsys: pytest.CaptureFixture[str]
) -> None:
    big = 2**53 + 1  # exact only if it never becomes a float
    code = main(
        [
            "file-issue",
            "--issue-id",
            str(big),
            "--status",
            "ACTIVE",
            "--title",
            "x y",
            "--base-url",
            recorder.base_url,
        ]
    )
    assert code == 0, capsys.readouterr().err
    assert sent(recorder, ISSUES) == [
        release_pb2.Issue(issue_id=big, status=release_pb2.ACTIVE, title="x y")
    ]
    assert json.loads(recorder.requests[0].body)["issueId"] == str(big)
    assert recorder.requests[0].path == ISSUES.path


@pytest.mark.usefixtures("synthetic")
def test_repeated_flags_append_and_json_input_sets_messages(recorder: Recorder) -> None:
    code = main(
        [
            "cut-release",
            "--focus-areas",
            "checkout",
            "--focus-areas",
            "search",
            "--version",
            "2.0",
            "--json-input",
            '{"createTime": "2026-01-31T09:30:00Z"}',
            "--base-url",
            recorder.base_url,
        ]
    )
    assert code == 0
    expected = release_pb2.Release(version="2.0", focus_areas=["checkout", "search"])
    expected.create_time.FromJsonString("2026-01-31T09:30:00Z")
    assert sent(recorder, RELEASES) == [expected]


@pytest.mark.usefixtures("synthetic")
@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--status", "ISSUE_STATUS_UNSPECIFIED"], "--status"),  # zero value: not a choice
        (["--status", "active"], "--status"),
        (["--issue-id", "12x"], "issueId"),  # judged by the codec, named by its path
        (["--create-time", "2026-01-31T09:30:00Z"], "--create-time"),  # message: no flag
    ],
)
def test_bad_flag_values_exit_2_in_one_line(
    recorder: Recorder, capsys: pytest.CaptureFixture[str], args: list[str], needle: str
) -> None:
    assert main(["file-issue", *args, "--base-url", recorder.base_url]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and needle in err
    assert recorder.requests == []


@pytest.mark.usefixtures("synthetic")
def test_help_lists_enum_choices_and_keeps_paragraphs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["file-issue", "--help"]) == 0
    out = capsys.readouterr().out
    names = [v.name for v in release_pb2.IssueStatus.DESCRIPTOR.values if v.number]
    assert "{" + ",".join(names) + "}" in out.replace("\n", "").replace(" ", "")
    assert "ISSUE_STATUS_UNSPECIFIED" not in out
    assert "File an issue.\n\nSecond paragraph." in out


def test_program_is_composed_of_the_features_commands(capsys: pytest.CaptureFixture[str]) -> None:
    names = [c.name for c in _commands(None, [], REGISTRY)]
    assert len(names) == len(set(names))
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in names:
        assert name in out
    assert {"schema", "mcp", "conformance", "proxy", "mock-server"} <= set(names)


def test_a_parser_for_one_of_the_programs_own_commands_holds_it_alone() -> None:
    every = [c.name for c in _commands(None, [], REGISTRY)]
    tool = projectops.operations()[0].tool_name
    for argv in ([tool], ["--timeout", "5", tool, "--help"], ["--base-url=http://x", "describe"]):
        named = next(arg for arg in argv[::-1] if arg in every)
        assert [c.name for c in _commands(None, argv, REGISTRY)] == [named]
    # A feature's command, help before the command, an option's value that names a command,
    # or no command: every command, so that argparse finds and lists the right one.
    for argv in (["mcp"], ["--help", tool], ["--base-url", tool, "mcp"], ["-x", tool], []):
        assert [c.name for c in _commands(None, argv, REGISTRY)] == every


@pytest.mark.slow
def test_core_only_commands_import_neither_httpx_nor_the_server_stack() -> None:
    code = (
        "import sys; from projectops.cli._main import main; "
        "import projectops; tool = projectops.operations()[0].tool_name; "
        "rc = main(['operations']) + main(['schema', tool]); "
        "bad = [m for m in ('httpx2', 'httpcore2', 'starlette', 'uvicorn', 'mcp') "
        "if m in sys.modules]; "
        "print(bad, file=sys.stderr); sys.exit(rc or bool(bad))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip() == "[]"


# What one operation's call never needs, modules and packages: the serving stack, an event
# loop, the features' own machinery, what only an error or another command uses.
NOT_ON_A_CALLS_PATH = (
    "asyncio",  # the sync client starts no event loop
    "starlette",
    "uvicorn",
    "mcp",
    "protovalidate",  # the server's validation: 0.5-1 s to import
    "projectops.server",
    "projectops.mcp._server",
    "projectops.mock._app",
    "projectops.conformance._runner",
    "projectops.conformance._proxy",
    "projectops.conformance._command",  # the other commands' parsers are not built
    "projectops.conformance._report",
    "projectops.mcp._command",
    "projectops.mock._command",
    "projectops.json_schema",
    "projectops.openapi",
    "orjson",  # repaid from a type's second body on (codec._warm): a call reads one response
    "difflib",  # "did you mean", after a mistake only
    "xml",  # the conformance runner's JUnit report
)


# Run in a fresh interpreter: argv[1:] are the calls, each a JSON array of arguments; prints a
# JSON array of what it found wrong, then the names of every module loaded.
_CALLS_IN_A_FRESH_INTERPRETER = """
import contextlib, io, json, sys
import projectops
wrong = ["import projectops loaded protobuf"] if "google.protobuf" in sys.modules else []
from projectops import _text
from projectops.cli import main
if _text._unsafe.cache_info().currsize:
    wrong.append("importing the program built the escape table")
for args in sys.argv[1:]:
    with contextlib.redirect_stdout(io.StringIO()):
        if main(json.loads(args)) != 0:
            wrong.append(f"{args} failed")
print(json.dumps([*wrong, sorted(sys.modules)]))
"""


@pytest.mark.slow
def test_an_operations_call_imports_only_what_it_needs(mock_server: Any) -> None:
    get, field = with_required_string(has_fixtures)  # and a value the mock answers
    flag = "--" + field.name.replace("_", "-")
    known = getattr(known_request(get), field.name)
    calls = [[without_request_fields().tool_name], [get.tool_name, flag, known]]
    proc = subprocess.run(
        [sys.executable, "-c", _CALLS_IN_A_FRESH_INTERPRETER, *map(json.dumps, calls)],
        env=cli_env(DEMO_KEY, mock_server.base_url),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    *wrong, modules = json.loads(proc.stdout)
    assert wrong == []
    assert "projectops.client._transport" in modules  # the calls were made
    inside = [m for m in modules for p in NOT_ON_A_CALLS_PATH if f"{m}.".startswith(f"{p}.")]
    assert inside == []


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (ValueError("bad value"), 2),
        (InvalidRequest("version: is required"), 2),
        (MissingApiKey("no usable API key"), 2),
        (ServiceUnreachable("cannot reach http://127.0.0.1:1: refused"), 5),
        (ResponseTimedOut("no answer within 3 s"), 5),
        (error_from_response(401, b'{"message": "nope"}'), 3),
        (error_from_response(400, b'{"code": "failed_precondition", "message": "no"}'), 4),
        (error_from_response(400, b"<html>bad</html>"), 4),
        (error_from_response(503, b""), 5),
        (InvalidResponse("not a response", http_status=200), 5),
        (RuntimeError("boom"), 1),
    ],
)
def test_errors_map_to_exit_codes_through_one_table(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, error: Exception, code: int
) -> None:
    def run(args: argparse.Namespace) -> int:
        raise error

    failing = Command("fail", "fails", lambda parser: None, run)
    monkeypatch.setattr(mock, "commands", lambda: [failing])
    assert main(["fail"]) == code
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and err.startswith("error: ")
    assert failure(error).exit_code == code


def test_key_in_any_message_is_redacted(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SERVICE_API_KEY", KEY)
    tool = projectops.operations()[0].tool_name
    assert main([tool, "--json-input", f"@/nonexistent/{KEY}.json"]) == 2
    err = capsys.readouterr().err
    assert KEY not in err and "/nonexistent/***.json" in err
