"""The CLI's derived flags and its extension hook, in-process (`cli.main`).

The two real operations only have a string field, so flags of the other field kinds are checked
on synthetic operations whose requests are other messages of the schema: an enum, a 64-bit
integer, a repeated string, a message field. Requests still go over a real socket to the
recording server, so what is checked is what would be sent.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pytest
from client_support import KEY, Recorder
from google.protobuf.message import Message

import projectops
from projectops import Operation, operation_path
from projectops.client import cli
from projectops.v1 import release_pb2

ISSUES = Operation(name="file_issue", tool_name="file-issue", path=operation_path("file_issue"),
                   request_type=release_pb2.Issue, response_type=release_pb2.Release,
                   description="File an issue.\n\nSecond paragraph.",
                   method=projectops.operation("get_release_details").method)
RELEASES = Operation(name="cut_release", tool_name="cut-release",
                     path=operation_path("cut_release"), request_type=release_pb2.Release,
                     response_type=release_pb2.Release, description="Cut a release.",
                     method=projectops.operation("get_release_details").method)


@pytest.fixture
def synthetic(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI sees the registry's operations plus ISSUES and RELEASES."""
    ops = (*projectops.operations(), ISSUES, RELEASES)
    monkeypatch.setattr(cli, "operations", lambda: ops)
    monkeypatch.setenv("SERVICE_API_KEY", KEY)


@pytest.fixture
def commands(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh registry of extra commands, so registrations do not outlive the test."""
    monkeypatch.setattr(cli, "_COMMANDS", {})


def sent(recorder: Recorder, op: Operation) -> list[Message]:
    """The request messages the recording server received for `op`."""
    return [projectops.from_json(r.body, op.request_type, strict=True) for r in recorder.requests]


@pytest.mark.usefixtures("synthetic")
def test_enum_int64_and_string_flags_become_the_request(
        recorder: Recorder, capsys: pytest.CaptureFixture[str]) -> None:
    big = 2**53 + 1  # exact only if it never becomes a float
    code = cli.main(["file-issue", "--issue-id", str(big), "--status", "ACTIVE", "--title", "x y",
                     "--base-url", recorder.base_url])
    assert code == 0, capsys.readouterr().err
    assert sent(recorder, ISSUES) == [
        release_pb2.Issue(issue_id=big, status=release_pb2.ACTIVE, title="x y")]
    assert json.loads(recorder.requests[0].body)["issueId"] == str(big)
    assert recorder.requests[0].path == ISSUES.path


@pytest.mark.usefixtures("synthetic")
def test_repeated_flags_append_and_json_input_sets_messages(recorder: Recorder) -> None:
    code = cli.main(["cut-release", "--focus-areas", "checkout", "--focus-areas", "search",
                     "--version", "2.0", "--json-input", '{"createTime": "2026-01-31T09:30:00Z"}',
                     "--base-url", recorder.base_url])
    assert code == 0
    expected = release_pb2.Release(version="2.0", focus_areas=["checkout", "search"])
    expected.create_time.FromJsonString("2026-01-31T09:30:00Z")
    assert sent(recorder, RELEASES) == [expected]


@pytest.mark.usefixtures("synthetic")
@pytest.mark.parametrize(("args", "needle"), [
    (["--status", "ISSUE_STATUS_UNSPECIFIED"], "--status"),  # zero value: not a choice
    (["--status", "active"], "--status"),
    (["--issue-id", "12x"], "issueId"),  # judged by the codec, named by its path
    (["--create-time", "2026-01-31T09:30:00Z"], "--create-time"),  # message: no flag
])
def test_bad_flag_values_exit_2_in_one_line(recorder: Recorder, capsys: pytest.CaptureFixture[str],
                                            args: list[str], needle: str) -> None:
    assert cli.main(["file-issue", *args, "--base-url", recorder.base_url]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and needle in err
    assert recorder.requests == []


@pytest.mark.usefixtures("synthetic")
def test_help_lists_enum_choices_and_keeps_paragraphs(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["file-issue", "--help"]) == 0
    out = capsys.readouterr().out
    names = [v.name for v in release_pb2.IssueStatus.DESCRIPTOR.values if v.number]
    assert "{" + ",".join(names) + "}" in out.replace("\n", "").replace(" ", "")
    assert "ISSUE_STATUS_UNSPECIFIED" not in out
    assert "File an issue.\n\nSecond paragraph." in out


@pytest.mark.usefixtures("commands")
def test_added_command_is_listed_parsed_and_run(capsys: pytest.CaptureFixture[str]) -> None:
    seen: list[argparse.Namespace] = []

    def configure(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--name", required=True)

    def run(args: argparse.Namespace) -> int:
        seen.append(args)
        print(f"hello {args.name}")
        return 0

    cli.add_command("hello", "say hello", configure, run)
    assert cli.main(["--help"]) == 0
    assert "say hello" in capsys.readouterr().out
    assert cli.main(["--timeout", "3", "hello", "--name", "x",
                     "--base-url", "http://127.0.0.1:1"]) == 0
    assert capsys.readouterr().out == "hello x\n"
    assert (seen[0].timeout, seen[0].base_url) == (3.0, "http://127.0.0.1:1")
    assert cli.main(["hello"]) == 2  # its own argparse errors are usage errors
    with pytest.raises(ValueError, match="taken"):
        cli.add_command("hello", "again", configure, run)
    with pytest.raises(ValueError, match="taken"):
        cli.add_command(projectops.operations()[0].tool_name, "clash", configure, run)


@pytest.mark.usefixtures("commands")
@pytest.mark.parametrize(("error", "code"), [
    (ValueError("bad value"), 2),
    (projectops.Unavailable("cannot reach http://127.0.0.1:1: refused"), 5),
    (projectops.ApiError.from_response(401, b'{"message": "nope"}'), 3),
    (RuntimeError("boom"), 1),
])
def test_errors_of_added_commands_map_to_exit_codes(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        error: Exception, code: int) -> None:
    monkeypatch.setenv("SERVICE_API_KEY", KEY)

    def run(args: argparse.Namespace) -> int:
        raise error

    cli.add_command("fail", "fails", lambda parser: None, run)
    assert cli.main(["fail"]) == code
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and err.startswith("error: ")


@pytest.mark.usefixtures("commands")
def test_command_modules_register_at_parser_build(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "extra_cli_commands.py").write_text(
        "from projectops.client import cli\n"
        "cli.add_command('extra', 'an extra command', lambda p: None, lambda a: 7)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(cli, "COMMAND_MODULES", ["extra_cli_commands"])
    try:
        assert cli.main(["extra"]) == 7
    finally:
        sys.modules.pop("extra_cli_commands", None)


def test_key_in_any_message_is_redacted(capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERVICE_API_KEY", KEY)
    assert cli.main(["get-release-details", "--json-input", f"@/nonexistent/{KEY}.json"]) == 2
    err = capsys.readouterr().err
    assert KEY not in err and "/nonexistent/***.json" in err
