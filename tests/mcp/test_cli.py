"""``projectops schema`` and the failures of ``projectops mcp`` before it serves.

In-process through :func:`projectops.cli._main.main`; the program without the ``mcp`` package
(the core-only install) runs as a real subprocess, where ``mcp`` can be made unimportable.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import projectops
from projectops import BASE_URL_ENV, json_schema
from tests.support import RunCli

# Runs the program with the `mcp` package unimportable, as without the `mcp` extra.
WITHOUT_MCP = (
    "import sys; sys.modules['mcp'] = None; from projectops.cli._main import main; "
    "sys.exit(main(sys.argv[1:]))"
)


def without_the_mcp_extra(*args: str) -> subprocess.CompletedProcess[str]:
    """``projectops`` in a subprocess where ``import mcp`` fails."""
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_MCP, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize("output", [False, True], ids=["input", "output"])
@pytest.mark.parametrize("op", projectops.operations(), ids=lambda op: op.tool_name)
def test_schema_prints_the_tools_schema_indented(
    run_cli: RunCli, op: projectops.Operation, output: bool
) -> None:
    done = run_cli("schema", op.tool_name, *(["--output"] if output else []))
    assert (done.returncode, done.stderr) == (0, "")
    expected = json_schema.output_schema(op) if output else json_schema.input_schema(op)
    assert json.loads(done.stdout) == expected
    assert done.stdout == json.dumps(expected, indent=2) + "\n"
    assert expected["type"] == "object"  # the top level is the object schema itself


def test_schema_of_an_unknown_tool_is_a_usage_error(run_cli: RunCli) -> None:
    done = run_cli("schema", "no-such-tool")
    assert (done.returncode, done.stdout) == (2, "")
    assert len(done.stderr.splitlines()) == 1
    assert "no-such-tool" in done.stderr
    assert all(op.tool_name in done.stderr for op in projectops.operations())


@pytest.mark.slow
def test_mcp_without_the_mcp_extra_exits_2_naming_the_extra() -> None:
    done = without_the_mcp_extra("mcp")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines() == [
        "error: projectops mcp needs the 'mcp' extra (mcp is not installed): "
        "pip install 'projectops[mcp]'"
    ]


@pytest.mark.slow
def test_the_rest_of_the_cli_works_without_the_mcp_extra() -> None:
    listing = without_the_mcp_extra("--help")
    assert listing.returncode == 0 and " mcp " in listing.stdout and " schema " in listing.stdout
    done = without_the_mcp_extra("schema", "get-release-details")
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
def test_mcp_with_bad_options_exits_2_with_one_line_before_serving(
    run_cli: RunCli, args: list[str]
) -> None:
    done = run_cli("mcp", *args)
    assert (done.returncode, done.stdout) == (2, "")
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: ")
    if args[0] == "--base-url":
        assert "ftp://example.invalid" in line and BASE_URL_ENV in line
