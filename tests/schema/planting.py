"""A copy of the repository with one more rpc in the proto: what a new engineer's first edit makes.

Used by tests/schema/test_adding_an_operation.py, and runnable by hand to see which tests would
turn red (the in-process suite of the copy, its `projectops` imported from the copy)::

    .venv/bin/python -m tests.schema.planting /tmp/plant [ListReleases|EchoGreeting [INDEX]] \
        [-- pytest arguments]
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from projectops.rules import NOT_BLANK_RULE_ID
from projectops.validation import NOT_BLANK_EXPRESSION

REPO = Path(__file__).resolve().parents[2]
PROTO = Path("proto/projectops/v1/operations.proto")

#: How a REQUIRED string restates REQUIRED for protovalidate (docs/contract.md §4.1, §4.2;
#: ``scripts/check-proto`` refuses a REQUIRED field without it), as operations.proto writes it.
_EXPRESSION = NOT_BLANK_EXPRESSION.replace("\\", "\\\\")  # as a proto string literal
_HALF = _EXPRESSION.index("\\\\u2000")  # two lines, as buf format leaves them
REQUIRED_STRING_RULES = f"""(buf.validate.field).required = true,
    (buf.validate.field).cel = {{
      id: "{NOT_BLANK_RULE_ID}"
      message: "is required"
      expression:
        "{_EXPRESSION[:_HALF]}"
        "{_EXPRESSION[_HALF:]}"
    }}"""


@dataclass(frozen=True)
class Plant:
    """An rpc a new engineer could add: its name, its operation's name, its text in the
    service (comment, rpc, options) and its messages' text (appended to the file)."""

    rpc: str
    operation: str
    rpc_text: str
    messages_text: str


def _rpc_text(rpc: str, operation: str, comment: str) -> str:
    return f"""
  // {comment}
  rpc {rpc}({rpc}Request) returns ({rpc}Response) {{
    option idempotency_level = NO_SIDE_EFFECTS;
    option (google.api.http) = {{
      post: "/api/mcp/{operation}"
      body: "*"
    }};
  }}
"""


#: Read-only, its request an optional field with a rule then a REQUIRED one with a rule, its
#: response a list of a message another rpc already uses.
LIST_RELEASES = Plant(
    "ListReleases",
    "list_releases",
    _rpc_text(
        "ListReleases",
        "list_releases",
        "List the releases of the project, most recently created first.",
    ),
    """
// Request of [ListReleases][projectops.v1.OperationsService.ListReleases]: an optional field with
// a rule, then a REQUIRED one with a rule.
message ListReleasesRequest {
  // Only the releases whose version label starts with this, at most 64 characters; empty: every
  // release.
  string version_prefix = 1 [(buf.validate.field).string.max_len = 64];
  // How many releases to list at most, from 1 to 100. Required.
  int32 page_size = 2 [
    (google.api.field_behavior) = REQUIRED,
    (buf.validate.field).required = true,
    (buf.validate.field).int32 = {
      gte: 1
      lte: 100
    }
  ];
}

// Response of [ListReleases][projectops.v1.OperationsService.ListReleases].
message ListReleasesResponse {
  // The project's releases, most recently created first.
  repeated Release releases = 1;
}
""",
)

#: What a new user writes following docs/schema.md: a REQUIRED request string with a maximum
#: length, a flat response whose one field is REQUIRED and never empty.
ECHO_GREETING = Plant(
    "EchoGreeting",
    "echo_greeting",
    _rpc_text("EchoGreeting", "echo_greeting", "Greet someone by name."),
    f"""
// Request of [EchoGreeting][projectops.v1.OperationsService.EchoGreeting].
message EchoGreetingRequest {{
  // Who to greet, at most 64 characters. Required.
  string name = 1 [
    (google.api.field_behavior) = REQUIRED,
    {REQUIRED_STRING_RULES},
    (buf.validate.field).string.max_len = 64
  ];
}}

// Response of [EchoGreeting][projectops.v1.OperationsService.EchoGreeting].
message EchoGreetingResponse {{
  // The greeting. Never empty.
  string greeting = 1 [
    (google.api.field_behavior) = REQUIRED,
    {REQUIRED_STRING_RULES},
    (buf.validate.field).string.min_len = 1
  ];
}}
""",
)

PLANTS = (LIST_RELEASES, ECHO_GREETING)
#: The planting test's default: the rpc the issue-25 test planted.
RPC = LIST_RELEASES.rpc
OPERATION = LIST_RELEASES.operation

#: The test modules whose slow tests go over the registry's operations: the planting test runs
#: their slow tests in the copy too (besides the whole in-process suite).
SLOW_OVER_OPERATIONS = (
    "tests/adversarial/test_client_cli.py",
    "tests/adversarial/test_client_mcp.py",
    "tests/adversarial/test_conformance_proxy.py",
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


def rpc_count(root: Path) -> int:
    """How many rpcs the service of `root`'s operations.proto has."""
    return len(_rpc_starts((root / PROTO).read_text(encoding="utf-8")))


def _rpc_starts(text: str) -> list[int]:
    """Where each rpc of the service starts (its leading comment, if any), in file order."""
    start = text.index("\nservice ")
    end = text.index("\n}\n", start)
    found = re.finditer(r"\n((?:  //[^\n]*\n)*)  rpc ", text[start:end])
    return [start + m.start() + 1 for m in found]


def plant(root: Path, what: Plant = LIST_RELEASES, at: int | None = None) -> None:
    """Add `what`'s rpc to the service of `root`'s operations.proto and its messages at the end.

    Args:
        root: a copy of the repository.
        what: the rpc to plant.
        at: its index among the service's rpcs (0: first); ``None`` (the default): last.
    """
    path = root / PROTO
    text = path.read_text(encoding="utf-8")
    starts = _rpc_starts(text)
    if at is None or at >= len(starts):
        where = text.index("\n}\n", text.index("\nservice ")) + 1  # the closing brace
        rpc = "\n" + what.rpc_text.strip("\n") + "\n"
    else:
        where = starts[at]
        rpc = what.rpc_text.strip("\n") + "\n\n"
    path.write_text(text[:where] + rpc + text[where:] + what.messages_text, encoding="utf-8")


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


def planted_copy(dest: Path, what: Plant = LIST_RELEASES, at: int | None = None) -> Path:
    """A copy of the repository in `dest` with `what` planted (at index `at` of the service,
    ``None``: last; see :func:`plant`) and the bindings regenerated.

    Raises:
        AssertionError: scripts/generate failed (its output in the message).
    """
    copy_repository(dest)
    plant(dest, what, at)
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
    # planting.py DEST [PLANT [INDEX]] -- [pytest arguments]: PLANT an rpc name of PLANTS
    # (default ListReleases), INDEX its place in the service (default: last).
    args = sys.argv[1:]
    split = args.index("--") if "--" in args else len(args)
    where, pytest_args = args[:split], args[split + 1 :]
    destination = Path(where[0])
    chosen = next(p for p in PLANTS if p.rpc == (where[1:] or [RPC])[0])
    index = int(where[2]) if len(where) > 2 else None
    if destination.exists():
        shutil.rmtree(destination)
    planted_copy(destination, chosen, index)
    done = pytest_in(destination, *(pytest_args or ["-q", "-m", "not slow", "-n", "2"]))
    sys.stdout.write(done.stdout + done.stderr)
    sys.exit(done.returncode)
