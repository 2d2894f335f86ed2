"""mypy --strict accepts typed use of the generated bindings and rejects misuse.

The accepting side is ``tests/typing/*_usage.py`` (checked by ``scripts/test``'s mypy step and
here); the rejecting side is a module of mistakes, each of which must be an error on its line.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

MISTAKES = """
from projectops.client import OperationsServiceClient
from projectops.server import OperationsServiceHandler, RequestContext, create_app
from projectops.v1 import operations_pb2 as ops

client = OperationsServiceClient(base_url="http://127.0.0.1:1", api_key="k")
client.get_release_details(versoin="1.0.0")  # E: misspelt keyword
client.get_release_details(version=100)  # E: wrong type
client.get_release_details(ops.ListRumEnvironmentsRequest())  # E: wrong request message
wrong: ops.ListRumEnvironmentsResponse = client.get_release_details(version="1")  # E: result
client.list_rum_environments(version="1")  # E: a field the request does not have


class BadService(OperationsServiceHandler):
    def list_rum_environments(
        self, request: ops.GetReleaseDetailsRequest, context: RequestContext[str]  # E: request
    ) -> ops.ListRumEnvironmentsResponse:
        return ops.ListRumEnvironmentsResponse()

    def get_release_details(  # E: response
        self, request: ops.GetReleaseDetailsRequest, context: RequestContext[str]
    ) -> ops.ListRumEnvironmentsResponse:
        return ops.ListRumEnvironmentsResponse()


class Duck:
    def get_release_details(
        self, request: ops.GetReleaseDetailsRequest, context: RequestContext[str]
    ) -> ops.GetReleaseDetailsResponse:
        return ops.GetReleaseDetailsResponse()


create_app(Duck(), authenticate=lambda key: key)  # E: a handler must derive from the base
"""


def _mypy(*paths: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-error-summary",
            "--hide-error-context",
            "--config-file",
            str(REPO / "pyproject.toml"),
            *paths,
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        # This checkout's package, also where site-packages holds another (a copy of the repo).
        env={**os.environ, "MYPYPATH": str(REPO / "src")},
        timeout=300,
        check=False,
    )


@pytest.mark.slow
def test_mypy_accepts_typed_use_and_rejects_each_mistake_on_its_line(tmp_path: Path) -> None:
    bad = tmp_path / "mistakes.py"
    bad.write_text(MISTAKES)
    # One run checks both (mypy's start-up is most of its time here).
    done = _mypy("tests/typing/bindings_usage.py", str(bad))
    assert "bindings_usage.py" not in done.stdout, done.stdout
    flagged = {int(m.group(1)) for m in re.finditer(r"mistakes\.py:(\d+): error", done.stdout)}
    expected = {i for i, line in enumerate(MISTAKES.splitlines(), 1) if "# E:" in line}
    assert expected <= flagged, done.stdout
    assert flagged <= expected | {i + 1 for i in expected}, done.stdout  # nothing else is off
