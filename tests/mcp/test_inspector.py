"""The MCP Inspector's CLI (``@modelcontextprotocol/inspector``, pinned) as the MCP host: it
runs ``projectops mcp`` over stdio from an ``mcpServers`` configuration shaped as the README
shows, and calls tools/list and tools/call against the mock server (issue 4)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from projectops import API_KEY_ENV, BASE_URL_ENV, json_schema, operations
from tests.mcp.support import (
    DEMO_KEY,
    WITH_REQUIRED,
    NpmTools,
    demo_arguments,
    demo_response,
    required_fields,
)

pytestmark = pytest.mark.slow

#: The Inspector CLI's exit code when the tool result has ``isError: true``.
EXIT_TOOL_ERROR = 5
#: Where ``pip install`` put the ``projectops`` console script.
SCRIPTS = Path(sys.executable).parent


def readme_config() -> dict[str, Any]:
    """The ``mcpServers`` configuration exactly as README.md shows it."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    found = re.search(r"```json\n(\{\s*\"mcpServers\".*?)```", readme, re.S)
    assert found, "README.md shows no mcpServers configuration"
    config: dict[str, Any] = json.loads(found.group(1))
    return config


def inspector(
    tools: NpmTools, mock_server: Any, tmp_path: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    """``inspector --cli --config mcp.json --server projectops <args> --format json``."""
    assert (SCRIPTS / "projectops").is_file(), f"no projectops console script in {SCRIPTS}"
    config = readme_config()
    server = config["mcpServers"]["projectops"]
    assert set(server["env"]) == {API_KEY_ENV, BASE_URL_ENV}
    server["env"] = {API_KEY_ENV: DEMO_KEY, BASE_URL_ENV: mock_server.base_url}
    if "PYTHONPATH" in os.environ:  # the package of a planted copy (tests/schema/planting.py)
        server["env"]["PYTHONPATH"] = os.environ["PYTHONPATH"]
    config_path = tmp_path / "mcp.json"
    config_path.write_text(json.dumps(config), encoding="utf-8")
    command = [
        str(tools.node),
        str(tools.inspector),
        "--cli",
        "--config",
        str(config_path),
        "--server",
        "projectops",
        *args,
        "--format",
        "json",
    ]
    # The host finds `projectops` on PATH. The Inspector keeps state under HOME (a private one
    # here) and would ask the OS keychain for secrets: memory only, as it has none to keep.
    env = {
        "PATH": os.pathsep.join([str(SCRIPTS), os.environ.get("PATH", os.defpath)]),
        "HOME": str(tmp_path),
        "MCP_INSPECTOR_SECRET_STORE": "memory",
    }
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
    )


def _as_javascript_reads(value: Any) -> Any:
    """`value` (JSON) with each integer past 2**53 a float: JavaScript's number, as the
    Inspector reads and writes a 64-bit bound (9223372036854775807 comes back ...6000)."""
    if isinstance(value, dict):
        return {key: _as_javascript_reads(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_as_javascript_reads(item) for item in value]
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 2**53:
        return float(value)
    return value


def test_tools_list(npm_tools: NpmTools, mock_server: Any, tmp_path: Path) -> None:
    # --strict: exit 6 if a tool schema has an error-severity portability problem.
    done = inspector(npm_tools, mock_server, tmp_path, "--method", "tools/list", "--strict")
    assert done.returncode == 0, done.stderr
    tools = json.loads(done.stdout)["result"]["tools"]
    assert [tool["name"] for tool in tools] == [op.tool_name for op in operations()]
    for tool, op in zip(tools, operations(), strict=True):
        for given, schema in (
            (tool["inputSchema"], json_schema.input_schema(op)),
            (tool["outputSchema"], json_schema.output_schema(op)),
        ):
            assert _as_javascript_reads(given) == _as_javascript_reads(schema)


def test_tools_call(npm_tools: NpmTools, mock_server: Any, tmp_path: Path) -> None:
    done = inspector(
        npm_tools,
        mock_server,
        tmp_path,
        "--method",
        "tools/call",
        "--tool-name",
        WITH_REQUIRED.tool_name,
        "--tool-args-json",
        json.dumps(demo_arguments(WITH_REQUIRED)),
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)["result"]
    assert result.get("isError", False) is False
    assert result["structuredContent"] == demo_response(WITH_REQUIRED)
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]


def test_tools_call_error_result(npm_tools: NpmTools, mock_server: Any, tmp_path: Path) -> None:
    done = inspector(
        npm_tools,
        mock_server,
        tmp_path,
        "--method",
        "tools/call",
        "--tool-name",
        WITH_REQUIRED.tool_name,
        "--tool-args-json",
        json.dumps({required_fields(WITH_REQUIRED)[0]: "9.9.9"}),
    )
    assert done.returncode == EXIT_TOOL_ERROR, done.stderr
    result = json.loads(done.stdout)["result"]
    assert result["isError"] is True
    assert result["content"][0]["text"].startswith(
        "The service rejected the request (400 failed_precondition): "
    )
