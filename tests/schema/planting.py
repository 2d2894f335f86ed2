"""A copy of the repository with one more rpc in the proto: what a new engineer's first edit makes.

Used by tests/schema/test_adding_an_operation.py, and runnable by hand to see which tests would
turn red (the in-process suite of the copy, its `projectops` imported from the copy)::

    .venv/bin/python -m tests.schema.planting /tmp/plant [pytest arguments]
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PROTO = Path("proto/projectops/v1/operations.proto")

#: The planted rpc: read-only, its request a REQUIRED field after an optional one, both with a
#: protovalidate rule, its answer a list of a message another rpc already uses.
RPC = "ListReleases"
OPERATION = "list_releases"
_RPC_TEXT = f"""
  // List the releases of the project, most recently created first.
  rpc {RPC}({RPC}Request) returns ({RPC}Response) {{
    option idempotency_level = NO_SIDE_EFFECTS;
    option (google.api.http) = {{
      post: "/api/mcp/{OPERATION}"
      body: "*"
    }};
  }}
"""
_MESSAGES_TEXT = f"""
// Request of [{RPC}][projectops.v1.OperationsService.{RPC}]: an optional field with a rule, then
// a REQUIRED one with a rule.
message {RPC}Request {{
  // Only the releases whose version label starts with this, at most 64 characters; empty: every
  // release.
  string version_prefix = 1 [(buf.validate.field).string.max_len = 64];
  // How many releases to list at most, from 1 to 100. Required.
  int32 page_size = 2 [
    (google.api.field_behavior) = REQUIRED,
    (buf.validate.field).int32 = {{
      gte: 1
      lte: 100
    }}
  ];
}}

// Response of [{RPC}][projectops.v1.OperationsService.{RPC}].
message {RPC}Response {{
  // The project's releases, most recently created first.
  repeated Release releases = 1;
}}
"""


#: The test modules whose slow tests go over the registry's operations: the planting test runs
#: their slow tests in the copy too (besides the whole in-process suite).
SLOW_OVER_OPERATIONS = (
    "tests/adversarial/test_client_cli.py",
    "tests/adversarial/test_client_mcp.py",
    "tests/adversarial/test_kit_proxy.py",
    "tests/adversarial/test_linear_patterns.py",
    "tests/adversarial/test_server_fixtures.py",
    "tests/cli/test_cli.py",
    "tests/cli/test_cli_commands.py",
    "tests/cli/test_cli_usability.py",
    "tests/conformance/test_conformance.py",
    "tests/conformance/test_judging_large.py",
    "tests/conformance/test_proxy.py",
    "tests/mcp/test_cli.py",
    "tests/mcp/test_http.py",
    "tests/mcp/test_inspector.py",
    "tests/mcp/test_server_inprocess.py",
    "tests/mcp/test_stdio.py",
    "tests/mock/test_mock_cli.py",
    "tests/mock/test_mock_serving.py",
    "tests/openapi/test_openapi_docs_page.py",
    "tests/openapi/test_openapi_schemathesis.py",
    "tests/schema/test_contract.py",
)
#: Modules with slow tests that go over the operations, left out of the copy's run, and why.
SLOW_LEFT_OUT = {
    "tests/schema/test_wheel.py": "builds wheels and venvs (minutes); this test runs mypy",
    "tests/adversarial/test_mcp_http_ground.py": "its slow test is of the start-up lines only",
}


def copy_repository(dest: Path) -> Path:
    """Copy the files git tracks or would track (not ignored) from the work tree to `dest`."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():  # a tracked file deleted in the work tree is skipped
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return dest


def plant(root: Path) -> None:
    """Add the rpc to the service of `root`'s operations.proto, and its messages at the end."""
    path = root / PROTO
    text = path.read_text(encoding="utf-8")
    start = text.index("\nservice ")
    end = text.index("\n}\n", start)  # the service's closing brace
    path.write_text(text[:end] + "\n" + _RPC_TEXT.rstrip("\n") + text[end:] + _MESSAGES_TEXT)


def environment(root: Path) -> dict[str, str]:
    """The environment that makes Python import `root`'s package instead of this checkout's
    (and a pytest started in it unaware of any pytest around it: no ``PYTEST_*``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = os.pathsep.join([str(root / "src"), *filter(None, [env.get("PYTHONPATH")])])
    return env


def generate(root: Path, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """Run `root`'s scripts/generate (with this interpreter, which has the dev tools)."""
    return subprocess.run(
        [sys.executable, str(root / "scripts" / "generate")],
        cwd=root,
        env=environment(root),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def planted_copy(dest: Path) -> Path:
    """A copy of the repository in `dest` with the rpc planted and the bindings regenerated.

    Raises:
        AssertionError: scripts/generate failed (its output in the message).
    """
    copy_repository(dest)
    plant(dest)
    done = generate(dest)
    assert done.returncode == 0, done.stdout + done.stderr
    return dest


def pytest_in(root: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Run pytest on `root`'s tests from `root`, importing `root`'s package."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=root,
        env=environment(root),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


if __name__ == "__main__":
    destination = Path(sys.argv[1])
    if destination.exists():
        shutil.rmtree(destination)
    planted_copy(destination)
    done = pytest_in(destination, *(sys.argv[2:] or ["-q", "-m", "not slow", "-n", "2"]))
    sys.stdout.write(done.stdout + done.stderr)
    sys.exit(done.returncode)
