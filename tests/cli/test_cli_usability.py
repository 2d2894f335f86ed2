"""What users of gh, stripe or grpcurl expect of a CLI: a reference per operation, output that
fits a pipe, a dry run, shell completion, help with mistakes, and base-URL and server-address
mistakes explained. In-process (``run_cli``) unless the real entry point matters."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import projectops
from projectops import operations
from tests.support import DEMO_KEY, KEY, Recorder, RunCli
from tests.synthetic import has_fixtures, reaches, with_required_string, without_request_fields

# An operation with a REQUIRED string field (and that field), answered by the default fixtures,
# whose response holds an int64 and a Timestamp (what `describe` explains).
GET, FIELD = with_required_string(
    lambda op: (
        has_fixtures(op)
        and reaches(op.response_type.DESCRIPTOR, lambda fd: fd.type == fd.TYPE_INT64)
        and reaches(
            op.response_type.DESCRIPTOR,
            lambda fd: (
                fd.message_type is not None
                and fd.message_type.full_name == "google.protobuf.Timestamp"
            ),
        )
    )
)
LIST = without_request_fields()  # an operation whose request is {}
FLAG = "--" + FIELD.name.replace("_", "-")
TYPO = FLAG[:-2] + FLAG[-1] + FLAG[-2]  # two letters swapped
LOOPBACK = "127.0.0.1"


# --- describe ---------------------------------------------------------------------------------


def test_describe_shows_path_fields_types_and_required_within_100_columns(run_cli: RunCli) -> None:
    proc = run_cli("describe", GET.tool_name)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert f"POST {GET.path}" in text and GET.summary in text
    assert f"{FIELD.json_name}: string, REQUIRED" in text
    # Every top-level field of the request and response is listed by its JSON name.
    for message in (GET.request_type, GET.response_type):
        for fd in message.DESCRIPTOR.fields:
            assert f"{fd.json_name}:" in text
    assert "int64 as decimal digits" in text and "RFC 3339" in text
    assert max(len(line) for line in text.splitlines()) <= 100


def test_describe_without_a_tool_lists_the_operations(run_cli: RunCli) -> None:
    proc = run_cli("describe")
    assert proc.returncode == 0
    shown = " ".join(proc.stdout.split())  # a long summary is wrapped to the terminal's width
    for op in operations():
        assert op.tool_name in shown and " ".join(op.summary.split()) in shown


# --- output that fits the pipe ----------------------------------------------------------------


@pytest.mark.slow
def test_compact_prints_the_same_json_on_one_line(run_cli: RunCli, mock_server: Any) -> None:
    args = (GET.tool_name, FLAG, "1.0.0")
    pretty = run_cli(*args, key=DEMO_KEY, base_url=mock_server.base_url)
    compact = run_cli(*args, "--compact", key=DEMO_KEY, base_url=mock_server.base_url)
    assert pretty.returncode == compact.returncode == 0
    assert compact.stdout.count("\n") == 1 and pretty.stdout.count("\n") > 10
    assert json.loads(compact.stdout) == json.loads(pretty.stdout)


def test_operations_json_is_for_scripts(run_cli: RunCli) -> None:
    proc = run_cli("operations", "--json")
    listing = json.loads(proc.stdout)
    assert [row["toolName"] for row in listing] == [op.tool_name for op in operations()]
    assert [row["path"] for row in listing] == [op.path for op in operations()]
    assert all(row["readOnly"] is True for row in listing)


@pytest.mark.slow
def test_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    # The real entry point: `projectops describe ... | head -1` (bash's pipe, our stdout).
    exe = Path(sys.executable).with_name("projectops")
    proc = subprocess.run(
        ["bash", "-c", f"set -o pipefail; '{exe}' describe {GET.tool_name} | head -1"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout.startswith(GET.tool_name)


# --- dry run ----------------------------------------------------------------------------------


def test_dry_run_prints_the_request_and_sends_nothing(run_cli: RunCli, recorder: Recorder) -> None:
    proc = run_cli(GET.tool_name, FLAG, "1.0.0", "--dry-run", base_url=recorder.base_url)
    assert proc.returncode == 0, proc.stderr
    assert recorder.requests == []
    head, _, body = proc.stdout.partition("\n\n")
    lines = head.splitlines()
    assert lines[0] == f"POST {recorder.base_url}{GET.path} HTTP/1.1"
    assert "Service-Api-Key: ***" in lines and "Content-Type: application/json" in lines
    assert json.loads(body) == {FIELD.json_name: "1.0.0"}
    assert KEY not in proc.stdout + proc.stderr


def test_empty_backend_url_counts_as_unset(run_cli: RunCli) -> None:
    proc = run_cli(LIST.tool_name, "--dry-run", base_url="")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "SERVICE_BACKEND_URL" in proc.stderr
    assert "projectops mock-server" in proc.stderr


# --- completion -------------------------------------------------------------------------------


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_prints_the_script_of_each_shell(run_cli: RunCli, shell: str) -> None:
    proc = run_cli("completion", shell)
    assert proc.returncode == 0 and "projectops" in proc.stdout and "_ARGCOMPLETE" in proc.stdout


def _bash_complete(line: str) -> list[str]:
    """What Tab offers after `line` in a real bash with ``projectops completion bash`` loaded."""
    words = line.split(" ")
    script = (
        'source <(projectops completion bash); COMP_LINE="$LINE"; COMP_POINT=${#COMP_LINE}; '
        'read -ra COMP_WORDS <<< "$LINE"; [[ "$LINE" == *" " ]] && COMP_WORDS+=(""); '
        f"COMP_CWORD={len(words) - 1}; _python_argcomplete projectops; "
        'printf "%s\\n" "${COMPREPLY[@]}"'
    )
    env = {**os.environ, "LINE": line}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    proc = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return [word.strip() for word in proc.stdout.splitlines() if word.strip()]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_bash_completes_commands_flags_and_choices() -> None:
    assert _bash_complete(f"projectops {GET.tool_name[:-1]}") == [GET.tool_name]
    assert FLAG in _bash_complete(f"projectops {GET.tool_name} --")
    offered = _bash_complete("projectops schema ")
    assert {op.tool_name for op in operations()} <= set(offered)
    assert _bash_complete("projectops openapi --format ") == ["json", "yaml"]


# --- mistakes get help ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            [GET.tool_name[:-1]],
            f"unknown command '{GET.tool_name[:-1]}'; did you mean '{GET.tool_name}'? "
            f"(see 'projectops {GET.tool_name} --help')",
        ),
        (
            [GET.tool_name, TYPO, "1.0.0"],
            f"unknown option {TYPO}; did you mean {FLAG}? "
            f"(see 'projectops {GET.tool_name} --help')",
        ),
        (
            ["schema", GET.tool_name[:-1]],
            f"argument TOOL: invalid choice: '{GET.tool_name[:-1]}'; did you mean "
            f"'{GET.tool_name}'?",
        ),
        (
            ["schema", GET.tool_name, "--base-url", "http://x"],
            "--base-url does nothing for 'schema': it does not call the service",
        ),
        (
            ["--timeout", "3", "operations"],
            "--timeout does nothing for 'operations': it does not call the service",
        ),
        (["mcp", "--port", "9000"], "--port applies only with --http (stdio has no address)"),
        # A flag that is no typo of another gets no suggestion (--version is not --verbose).
        (["--verbose"], "unknown option --verbose (see 'projectops --help')"),
        (["--verison"], "unknown option --verison; did you mean --version? (see 'projectops"),
        (
            [GET.tool_name, "--verbose"],
            f"unknown option --verbose (see 'projectops {GET.tool_name} --help')",
        ),
        (["-V", "extra"], None),
        # An option of the command given before it: said so, not "did you mean" the same option.
        (
            ["--compact", LIST.tool_name],
            f"--compact is an option of 'projectops {LIST.tool_name}': put it after the command",
        ),
        # No option is taken by its first letters: `--json` is not `--json-input`.
        ([LIST.tool_name, "--json"], f"unknown option --json (see 'projectops {LIST.tool_name}"),
        ([GET.tool_name, FLAG[:-1], "1.0.0"], f"unknown option {FLAG[:-1]}; did you mean {FLAG}?"),
        (["--base", "http://x", "operations"], "unknown command 'http://x'"),
    ],
)
def test_mistakes_get_one_line_with_help(
    run_cli: RunCli, args: list[str], line: str | None
) -> None:
    proc = run_cli(*args)
    if line is None:  # -V is --version
        assert proc.returncode == 0 and proc.stdout.strip().endswith(projectops.__version__)
        return
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: ")
    assert line in proc.stderr


def test_an_empty_key_is_reported_as_empty_not_as_unset(run_cli: RunCli) -> None:
    proc = run_cli(LIST.tool_name, key="", base_url="http://127.0.0.1:1")
    assert proc.returncode == 2 and proc.stdout == ""
    assert "no usable API key: SERVICE_API_KEY is empty;" in proc.stderr


def test_connection_options_are_offered_only_where_they_apply(run_cli: RunCli) -> None:
    assert "--base-url" not in run_cli("schema", "--help").stdout
    assert "--timeout" not in run_cli("operations", "--help").stdout
    assert "--base-url" in run_cli(LIST.tool_name, "--help").stdout


def test_json_input_errors_use_json_words(run_cli: RunCli) -> None:
    proc = run_cli(GET.tool_name, "--json-input", '["1.0.0"]')
    assert proc.returncode == 2
    assert "--json-input: expected a JSON object, got an array" in proc.stderr


def test_a_value_set_by_flag_and_json_input_keeps_the_json_one_with_a_notice(
    run_cli: RunCli, recorder: Recorder
) -> None:
    proc = run_cli(
        GET.tool_name,
        FLAG,
        "1.0.0",
        "--json-input",
        json.dumps({FIELD.json_name: "2.0.0"}),
        base_url=recorder.base_url,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(recorder.requests[0].body) == {FIELD.json_name: "2.0.0"}
    assert proc.stderr == (
        f"notice: {FLAG} is also set by --json-input; the --json-input value is used\n"
    )


# --- base URL and server address mistakes ----------------------------------------------------


def test_a_base_url_ending_in_the_path_prefix_gets_a_hint(
    run_cli: RunCli, recorder: Recorder
) -> None:
    proc = run_cli(LIST.tool_name, "--dry-run", "--base-url", recorder.base_url + "/api/mcp/")
    assert proc.returncode == 0
    assert proc.stderr.startswith("hint: the base URL is the service's root, without /api/mcp")
    assert f"did you mean {recorder.base_url}?" in proc.stderr


@pytest.fixture
def busy_port() -> Any:
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        sock.listen(1)
        yield sock.getsockname()[1]


@pytest.mark.parametrize(
    "command",
    [["mcp", "--http", "--host", "0.0.0.0"], ["mock-server", "--host", "0.0.0.0"]],
    ids=["mcp", "mock-server"],
)
def test_a_busy_port_is_one_line_and_the_same_exit_code_and_every_interface_is_warned(
    run_cli: RunCli, busy_port: int, command: list[str]
) -> None:
    pytest.importorskip("mcp" if command[0] == "mcp" else "uvicorn")  # its extra
    # mcp --http listens beyond loopback only with a bearer token.
    token = ["--bearer-token", "a-token-of-24-characters"] if command[0] == "mcp" else []
    proc = run_cli(*command, *token, "--port", str(busy_port), base_url="http://127.0.0.1:1")
    assert proc.returncode == 2, proc.stderr
    warning, error = proc.stderr.splitlines()
    assert warning.startswith("warning: --host 0.0.0.0 listens on every network interface")
    assert error.startswith(f"error: cannot listen on 0.0.0.0:{busy_port}: ")


# --- openapi ----------------------------------------------------------------------------------


def test_openapi_prints_a_valid_document_for_the_given_server(run_cli: RunCli) -> None:
    validate = pytest.importorskip("openapi_spec_validator").validate

    proc = run_cli("openapi", "--base-url", "https://ops.example/")
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    validate(document)
    assert document["servers"] == [{"url": "https://ops.example"}]
    assert {path for path in document["paths"]} == {op.path for op in operations()}
    assert yaml_document(run_cli) == document


def yaml_document(run_cli: RunCli) -> Any:
    yaml = pytest.importorskip("yaml")  # openapi --format yaml needs PyYAML

    proc = run_cli("openapi", "--format", "yaml", "--base-url", "https://ops.example")
    assert proc.returncode == 0, proc.stderr
    return yaml.safe_load(proc.stdout)


def test_openapi_rejects_a_bad_server_url_in_one_line(run_cli: RunCli) -> None:
    proc = run_cli("openapi", "--base-url", "ops.example")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "absolute http(s) URL" in proc.stderr


def test_json_input_from_a_fifo_is_refused_at_once(run_cli: RunCli, tmp_path: Path) -> None:
    fifo = tmp_path / "request.fifo"
    os.mkfifo(fifo)  # nobody ever writes: opening it must not wait for a writer
    proc = run_cli(GET.tool_name, "--json-input", f"@{fifo}")
    assert proc.returncode == 2
    assert proc.stderr == f"error: --json-input file {fifo} is not a regular file\n"


@pytest.mark.slow
def test_a_time_out_far_beyond_the_os_limits_still_works(run_cli: RunCli, mock_server: Any) -> None:
    proc = run_cli(LIST.tool_name, "--timeout", "1e12", key=DEMO_KEY, base_url=mock_server.base_url)
    assert proc.returncode == 0, proc.stderr


def test_openapi_refuses_a_server_url_with_a_password_without_printing_it(
    run_cli: RunCli,
) -> None:
    proc = run_cli("openapi", "--base-url", "http://user:s3cret@ops.example")
    assert proc.returncode == 2 and "s3cret" not in proc.stderr + proc.stdout
    assert "must not hold a user name or password" in proc.stderr


def test_no_parser_takes_an_option_by_its_first_letters() -> None:
    """allow_abbrev=False on the program's parser and on each command's: an abbreviation would
    be read as an option the user did not type (`--json` as `--json-input`)."""
    from projectops.cli import build_parser

    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    parsers = [parser, *commands.choices.values()]
    assert len(parsers) > len(operations()) and not any(p.allow_abbrev for p in parsers)
