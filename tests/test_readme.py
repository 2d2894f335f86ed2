"""The README's examples run as written, from the repository root, and its error table agrees
with the server's."""

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

import projectops
from projectops.openapi import ERROR_CASES
from tests.readme_examples import REPO, readme_block, run_against


@pytest.mark.slow
def test_python_example_of_the_readme_runs() -> None:
    readme = (REPO / "README.md").read_text()
    example = re.search(r"## The Python API\n\n```python\n(.*?)```", readme, re.S)
    assert example
    result = subprocess.run(
        [sys.executable, "-c", example.group(1)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "error"},
        check=False,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:2] == ["1.4.0", "9007199254740993"]
    assert lines[-1] == "None invalid_argument version: is required"


@pytest.mark.slow
def test_typed_client_example_of_the_readme_runs_against_the_mock_server(mock_server: Any) -> None:
    result = run_against(readme_block("From Python, the typed client"), mock_server.base_url)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["1.0.0"]


def test_server_adapter_example_of_the_readme_serves_as_documented() -> None:
    namespace: dict[str, Any] = {}
    exec(readme_block("A server package gets the whole HTTP surface"), namespace)
    client = TestClient(namespace["app"])
    get = client.post(
        "/api/mcp/get_release_details",
        json={"version": " 9.9 "},
        headers={"Service-Api-Key": "k-1"},
    )
    assert (get.status_code, get.json()["code"]) == (400, "failed_precondition")
    assert get.json()["message"] == "no release '9.9' in demo"
    listed = client.post(
        "/api/mcp/list_rum_environments", json={}, headers={"Service-Api-Key": "k-1"}
    )
    assert (listed.status_code, listed.json()["code"]) == (501, "unimplemented")
    denied = client.post(
        "/api/mcp/get_release_details", json={}, headers={"Service-Api-Key": "nope"}
    )
    assert denied.status_code == 401


@pytest.mark.slow
def test_cli_section_of_the_readme_runs_as_written_against_the_mock_server(
    mock_server: Any, tmp_path: Path
) -> None:
    """Each line of the CLI section's first sh block, in bash with -e and pipefail; only the
    mock server's address is that of the test's server instead of the default port."""
    readme = (REPO / "README.md").read_text()
    start = readme.index("## The command-line client")
    found = re.search(r"```sh\n(.*?)```", readme[start:], re.S)
    assert found
    script = found.group(1).replace("http://127.0.0.1:8787", mock_server.base_url)
    assert "projectops describe" in script and "--dry-run" in script
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", script],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "openapi.json").read_text().startswith("{")
    notices = [line for line in result.stderr.splitlines() if line.startswith("notice: ")]
    assert notices == [
        "notice: --version is also set by --json-input; the --json-input value is used"
    ]


def _error_table_rows() -> list[tuple[str, str, str]]:
    """(situation, status cell, code cell) of each row of the README's error table."""
    readme = (REPO / "README.md").read_text()
    start = readme.index("| situation | status | code |")
    rows = []
    for line in readme[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        situation, status, code = (cell.strip() for cell in line.strip("|").split(" | ", 2))
        rows.append((situation, status, code))
    return rows


def test_the_readme_error_table_agrees_with_the_servers_table() -> None:
    """Every error answer of the document's table (``openapi.ERROR_CASES``) is a row of the
    README's table with its status and code, and a row whose code the app answers with its own
    status (not marked outside the table) has ``HTTP_STATUS_BY_CODE``'s status for it."""
    rows = _error_table_rows()
    pairs = set()
    for situation, status_cell, code_cell in rows:
        status = int(re.match(r"\d{3}", status_cell).group())  # type: ignore[union-attr]
        code = re.match(r"`(\w+)`", code_cell)
        if code is None:
            continue  # uvicorn's own answer: no code
        pairs.add((status, code.group(1)))
        if "outside the table" not in code_cell:
            assert projectops.HTTP_STATUS_BY_CODE[projectops.Code(code.group(1))] == status, (
                situation
            )
    assert {(case.http_status, case.code) for case in ERROR_CASES} <= pairs
