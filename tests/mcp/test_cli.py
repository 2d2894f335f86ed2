"""``projectops schema`` and the failures of ``projectops mcp`` before it serves (issue 4),
run as real subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import projectops
from projectops import BASE_URL_ENV, json_schema

# Runs the program with the `mcp` package unimportable, as without the `mcp` extra.
WITHOUT_MCP = (
    "import sys; sys.modules['mcp'] = None; from projectops.__main__ import main; "
    "sys.exit(main(sys.argv[1:]))"
)


def projectops_cli(*args: str, without_mcp: bool = False) -> subprocess.CompletedProcess[str]:
    program = ["-c", WITHOUT_MCP] if without_mcp else ["-m", "projectops"]
    return subprocess.run(
        [sys.executable, *program, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize("output", [False, True], ids=["input", "output"])
@pytest.mark.parametrize("op", projectops.operations(), ids=lambda op: op.tool_name)
def test_schema_prints_the_tools_schema_indented(op: projectops.Operation, output: bool) -> None:
    done = projectops_cli("schema", op.tool_name, *(["--output"] if output else []))
    assert (done.returncode, done.stderr) == (0, "")
    expected = json_schema.output_schema(op) if output else json_schema.input_schema(op)
    assert json.loads(done.stdout) == expected
    assert done.stdout == json.dumps(expected, indent=2) + "\n"
    assert expected["type"] == "object"  # the top level is the object schema itself


def test_schema_of_an_unknown_tool_is_a_usage_error() -> None:
    done = projectops_cli("schema", "no-such-tool")
    assert (done.returncode, done.stdout) == (2, "")
    assert len(done.stderr.splitlines()) == 1
    assert "no-such-tool" in done.stderr and "get-release-details" in done.stderr


def test_mcp_without_the_mcp_extra_exits_2_naming_the_extra() -> None:
    done = projectops_cli("mcp", without_mcp=True)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines() == [
        "error: projectops mcp needs the 'mcp' extra (mcp is not installed): "
        "pip install 'projectops[mcp]'"
    ]


def test_the_rest_of_the_cli_works_without_the_mcp_extra() -> None:
    listing = projectops_cli("--help", without_mcp=True)
    assert listing.returncode == 0 and " mcp " in listing.stdout and " schema " in listing.stdout
    done = projectops_cli("schema", "get-release-details", without_mcp=True)
    assert done.returncode == 0
    assert json.loads(done.stdout) == json_schema.input_schema("get-release-details")


@pytest.mark.parametrize(
    "args",
    [
        ["--base-url", "ftp://example.invalid"],
        ["--http", "--port", "0"],
        ["--http", "--port", "http"],
    ],
    ids=["base-url", "port-0", "port-text"],
)
def test_mcp_with_bad_options_exits_2_with_one_line_before_serving(args: list[str]) -> None:
    done = projectops_cli("mcp", *args)
    assert (done.returncode, done.stdout) == (2, "")
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: ")
    if args[0] == "--base-url":
        assert "ftp://example.invalid" in line and BASE_URL_ENV in line
