"""A copy of the repository with one more rpc in the proto: what a new engineer's first edit makes.

Used by tests/schema/test_adding_an_operation.py, and runnable by hand to see which tests would
turn red (the in-process suite of the copy, its `projectops` imported from the copy)::

    .venv/bin/python -m tests.schema.planting /tmp/plant [RPC [INDEX]] [-- pytest arguments]

RPC: an rpc of PLANTS or COMPOSED (ListReleases, EchoGreeting, EchoKinds, GetKindMaps).
"""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from projectops.conventions import rpc_operation_name
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
    service (comment, rpc, options), its messages' text (appended to the file) and the files
    its messages import besides the file's own imports."""

    rpc: str
    operation: str
    rpc_text: str
    messages_text: str
    imports: tuple[str, ...] = ()


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


# --- rpcs composed from the kinds of the test schema (tests/kinds/v1/kinds.proto) -------------


@dataclass(frozen=True)
class Kind:
    """One field kind of the test schema, as a composed rpc's request or response holds it.

    ``declaration`` is the field's text with ``{name}``, ``{n[0]}`` (its number; a oneof of
    ``numbers`` fields takes ``{n[0]}`` to ``{n[3]}``, say), ``{rpc}`` (the rpc's name: its
    messages are ``{rpc}Flat`` and ``{rpc}Node``, its enum ``{rpc}Color``) and ``{options}``
    (the field's options, with REQUIRED's when ``required``). ``limit``: the reason
    ``scripts/check-proto`` refuses the kind (docs/schema.md, "Limits"), ``None`` when every
    feature serves it.
    """

    name: str
    declaration: str
    rules: tuple[str, ...] = ()
    required: bool = False
    imports: tuple[str, ...] = ()
    numbers: int = 1
    messages: str = ""
    limit: str | None = None


def _kind(name: str, type_: str, *rules: str, required: bool = False, **more: Any) -> Kind:
    """A singular, repeated or map field of `type_` (the proto text before the name)."""
    return Kind(name, f"  {type_} {{name}} = {{n[0]}}{{options}};", rules, required, **more)


_WKT = "google/protobuf/{}.proto"
_V = "(buf.validate.field)"

#: Every kind the features serve: each scalar (REQUIRED where it means something, with a rule
#: of its family), enums, nested and recursive messages, repeated fields, maps keyed by strings,
#: integers and bools, a oneof, proto3 ``optional`` and the well-known types.
SERVED_KINDS = (
    _kind("f_double", "double", f"{_V}.double.gte = 0"),
    _kind("f_float", "float", f"{_V}.float.lt = 1e6"),
    _kind("f_int32", "int32", f"{_V}.int32.gte = 1", f"{_V}.int32.lte = 100", required=True),
    _kind("f_int64", "int64", f"{_V}.int64.gte = 0", required=True),
    _kind("f_uint32", "uint32", f"{_V}.uint32.lte = 1000"),
    _kind("f_uint64", "uint64", required=True),
    _kind("f_sint32", "sint32", f"{_V}.sint32.not_in = 0"),
    _kind("f_sint64", "sint64"),
    _kind("f_fixed32", "fixed32"),
    _kind("f_fixed64", "fixed64", f"{_V}.fixed64.gt = 0"),
    _kind("f_sfixed32", "sfixed32"),
    _kind("f_sfixed64", "sfixed64", f"{_V}.sfixed64.lt = 0"),
    _kind("f_bool", "bool", required=True),
    _kind("f_string", "string", f"{_V}.string.max_len = 64", required=True),
    _kind("f_pattern", "string", f'{_V}.string.pattern = "^[a-z0-9-]*$"'),
    _kind("f_bytes", "bytes", f"{_V}.bytes.max_len = 16", required=True),
    _kind("f_enum", "{rpc}Color", f"{_V}.enum.defined_only = true", required=True),
    _kind("opt_string", "optional string", f"{_V}.string.max_len = 8"),
    _kind("opt_int32", "optional int32"),
    _kind("flat", "{rpc}Flat", required=True),
    _kind("tree", "{rpc}Node"),
    _kind("numbers", "repeated int64", f"{_V}.repeated.max_items = 10"),
    _kind("words", "repeated string", f"{_V}.repeated.unique = true"),
    _kind("colors", "repeated {rpc}Color"),
    _kind("flats", "repeated {rpc}Flat", f"{_V}.repeated.min_items = 1", required=True),
    _kind("blobs", "repeated bytes"),
    _kind("ratios", "repeated double"),
    _kind("by_string", "map<string, int64>", f"{_V}.map.max_pairs = 10"),
    _kind("by_int32", "map<int32, string>"),
    _kind("by_int64", "map<int64, {rpc}Flat>"),
    _kind("by_uint32", "map<uint32, {rpc}Color>"),
    _kind("by_uint64", "map<uint64, bytes>"),
    _kind("by_sint32", "map<sint32, double>"),
    _kind("by_bool", "map<bool, string>"),
    _kind("flats_by_bool", "map<bool, {rpc}Flat>", f"{_V}.map.min_pairs = 1", required=True),
    _kind("nodes", "map<string, {rpc}Node>"),
    _kind("at", "google.protobuf.Timestamp", required=True, imports=(_WKT.format("timestamp"),)),
    _kind(
        "window",
        "google.protobuf.Duration",
        f"{_V}.duration.lte.seconds = 86400",
        imports=(_WKT.format("duration"),),
    ),
    _kind("times", "map<string, google.protobuf.Timestamp>", imports=(_WKT.format("timestamp"),)),
    _kind("attributes", "google.protobuf.Struct", imports=(_WKT.format("struct"),)),
    _kind("value", "google.protobuf.Value", imports=(_WKT.format("struct"),)),
    _kind("values", "google.protobuf.ListValue", imports=(_WKT.format("struct"),)),
    _kind("mask", "google.protobuf.FieldMask", imports=(_WKT.format("field_mask"),)),
    _kind("nothing", "google.protobuf.Empty", imports=(_WKT.format("empty"),)),
    _kind("w_string", "google.protobuf.StringValue", imports=(_WKT.format("wrappers"),)),
    _kind("w_int64", "google.protobuf.Int64Value", imports=(_WKT.format("wrappers"),)),
    _kind("w_uint32", "google.protobuf.UInt32Value", imports=(_WKT.format("wrappers"),)),
    _kind("w_bool", "google.protobuf.BoolValue", imports=(_WKT.format("wrappers"),)),
    _kind("w_bytes", "google.protobuf.BytesValue", imports=(_WKT.format("wrappers"),)),
    _kind("w_double", "google.protobuf.DoubleValue", imports=(_WKT.format("wrappers"),)),
    _kind("w_float", "google.protobuf.FloatValue", imports=(_WKT.format("wrappers"),)),
    _kind("w_uint64", "google.protobuf.UInt64Value", imports=(_WKT.format("wrappers"),)),
    _kind("w_int32", "google.protobuf.Int32Value", imports=(_WKT.format("wrappers"),)),
    Kind(
        "selector",
        """  // How to select: by one of these.
  oneof {name} {{
    // By a tag.
    string {name}_tag = {n[0]} [(buf.validate.field).string.max_len = 32];
    // By a number.
    int64 {name}_number = {n[1]};
    // By a color.
    {rpc}Color {name}_color = {n[2]};
    // By a flat message.
    {rpc}Flat {name}_flat = {n[3]};
  }}""",
        numbers=4,
    ),
)

#: Kinds ``scripts/check-proto`` refuses (scripts/schema_limits.py), each with the reason its
#: line gives.
REFUSED_KINDS = (
    _kind(
        "anything",
        "google.protobuf.Any",
        imports=(_WKT.format("any"),),
        limit="a google.protobuf.Any, whose type the codec cannot resolve",
    ),
    _kind(
        "loop",
        "{rpc}Loop",
        messages="""
// A message that holds itself through a REQUIRED field: no finite one is valid.
message {rpc}Loop {{
  // The next loop. Always set.
  {rpc}Loop again = 1 [
    (google.api.field_behavior) = REQUIRED,
    (buf.validate.field).required = true
  ];
}}
""",
        limit="REQUIRED message fields hold their message again: again",
    ),
)

#: What every composed rpc's kinds may refer to: its enum and its flat and recursive messages
#: (a message rule on the flat one).
_SUPPORT = """
// A color of [{rpc}][projectops.v1.OperationsService.{rpc}]; the zero value is unset.
enum {rpc}Color {{
  // No color given.
  {upper}_COLOR_UNSPECIFIED = 0;
  // Red.
  {upper}_RED = 1;
  // Green.
  {upper}_GREEN = 2;
}}

// A flat message of [{rpc}][projectops.v1.OperationsService.{rpc}].
message {rpc}Flat {{
  option (buf.validate.message).cel = {{
    id: "{lower}.flat.count"
    message: "count must be at most 1000"
    expression: "this.count <= 1000"
  }};

  // A name. Required.
  string name = 1 [
    (google.api.field_behavior) = REQUIRED,
    {required_string}
  ];
  // A count, at least zero.
  int32 count = 2 [(buf.validate.field).int32.gte = 0];
  // A color.
  {rpc}Color color = 3;
}}

// A node of a tree of [{rpc}][projectops.v1.OperationsService.{rpc}]: the recursive message.
message {rpc}Node {{
  // The node's label.
  string label = 1;
  // The node's children.
  repeated {rpc}Node children = 2;
  // The node's only child, when it has one.
  {rpc}Node next = 3;
}}
"""


def _options(kind: Kind) -> str:
    """The options of `kind`'s field as buf format writes them: one inline, more on lines."""
    rules = list(kind.rules)
    if kind.required:
        string = kind.declaration.startswith("  string ")
        restated = REQUIRED_STRING_RULES if string else f"{_V}.required = true"
        rules = ["(google.api.field_behavior) = REQUIRED", restated, *rules]
    if not rules:
        return ""
    if len(rules) == 1:
        return f" [{rules[0]}]"
    return " [\n    " + ",\n    ".join(rules) + "\n  ]"


def _fields(kinds: Sequence[Kind], rpc: str) -> str:
    """The fields of `kinds`, numbered from 1, each after a comment naming its kind."""
    lines = []
    number = 1
    for kind in kinds:
        text = kind.declaration.format(
            name=kind.name, n=range(number, number + kind.numbers), rpc=rpc, options="{options}"
        )
        if kind.numbers == 1:
            required = " Required." if kind.required else ""
            lines.append(f"  // A field of the kind {kind.name}.{required}")
        lines.append(text.replace("{options}", _options(kind)))
        number += kind.numbers
    return "\n".join(lines)


def compose(rpc: str, request: Sequence[Kind], response: Sequence[Kind]) -> Plant:
    """An rpc whose request and response hold fields of the given kinds.

    Args:
        rpc: the rpc's name, CamelCase; its messages are named after it, so two composed rpcs
            of different names can stand in one service.
        request: the kinds of the request's fields, in order; field names must differ.
        response: the kinds of the response's fields, in order.

    Returns:
        The plant; its ``imports`` are the well-known types' files its kinds need.
    """
    operation = rpc_operation_name(rpc)
    upper = operation.upper()
    every = (*request, *response)
    messages = _SUPPORT + "".join(dict.fromkeys(kind.messages for kind in every))
    messages = messages.format(
        rpc=rpc, upper=upper, lower=operation, required_string=REQUIRED_STRING_RULES
    )
    text = f"""
// Request of [{rpc}][projectops.v1.OperationsService.{rpc}], composed of kinds.
message {rpc}Request {{
{_fields(request, rpc)}
}}

// Response of [{rpc}][projectops.v1.OperationsService.{rpc}], composed of kinds.
message {rpc}Response {{
{_fields(response, rpc)}
}}
{messages}"""
    text = text.replace(" {\n\n}", " {}")  # a message without fields, as buf format has it
    imports = tuple(sorted({name for kind in every for name in kind.imports}))
    comment = "An rpc composed of the test schema's kinds."
    return Plant(rpc, operation, _rpc_text(rpc, operation, comment), text, imports)


def random_plant(rng: random.Random) -> tuple[Plant, tuple[Kind, ...]]:
    """A composed rpc of kinds drawn by `rng`: a few served kinds in its request and its
    response each, and one time in four a refused kind among them.

    Returns:
        The plant and the refused kinds it holds (empty: ``scripts/check-proto`` passes it).
    """
    rpc = "Compose" + "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") for _ in range(4)).title()
    request = rng.sample(SERVED_KINDS, rng.randint(0, 6))
    response = rng.sample(SERVED_KINDS, rng.randint(0, 6))
    refused: tuple[Kind, ...] = ()
    if rng.random() < 0.25:
        refused = (rng.choice(REFUSED_KINDS),)
        rng.choice((request, response)).append(refused[0])
    return compose(rpc, request, response), refused


#: The fast suite's composed rpcs: between them every served kind in a request and in a
#: response.
_SCALARS = SERVED_KINDS[: [k.name for k in SERVED_KINDS].index("flat")]
ECHO_KINDS = compose("EchoKinds", _SCALARS, SERVED_KINDS)
GET_KIND_MAPS = compose("GetKindMaps", SERVED_KINDS[len(_SCALARS) :], _SCALARS)
#: A composed rpc of every refused kind (and a served one): scripts/check-proto names each.
GET_REFUSED_KINDS = compose(
    "GetRefusedKinds", (SERVED_KINDS[0], REFUSED_KINDS[0]), REFUSED_KINDS[1:]
)

PLANTS = (LIST_RELEASES, ECHO_GREETING)
COMPOSED = (ECHO_KINDS, GET_KIND_MAPS)
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
    "tests/schema/test_required_in_protovalidate_es.py",
)
#: Modules with slow tests that go over the operations, left out of the copy's run, and why.
SLOW_LEFT_OUT = {
    "tests/schema/test_wheel.py": "builds wheels and venvs (minutes); this test runs mypy",
    "tests/adversarial/test_mcp_http_ground.py": "its slow test is of the start-up lines only",
    "tests/schema/test_adding_an_operation.py": "its slow test is the planted run itself",
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
    text = _with_imports(path.read_text(encoding="utf-8"), what.imports)
    starts = _rpc_starts(text)
    if at is None or at >= len(starts):
        where = text.index("\n}\n", text.index("\nservice ")) + 1  # the closing brace
        rpc = "\n" + what.rpc_text.strip("\n") + "\n"
    else:
        where = starts[at]
        rpc = what.rpc_text.strip("\n") + "\n\n"
    path.write_text(text[:where] + rpc + text[where:] + what.messages_text, encoding="utf-8")


def _with_imports(text: str, files: Sequence[str]) -> str:
    """`text` with an import of each of `files` it lacks, the imports sorted as buf format
    leaves them."""
    lines = text.split("\n")
    imports = [i for i, line in enumerate(lines) if line.startswith("import ")]
    every = {lines[i] for i in imports} | {f'import "{name}";' for name in files}
    lines[imports[0] : imports[-1] + 1] = sorted(every)
    return "\n".join(lines)


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
    chosen = next(p for p in (*PLANTS, *COMPOSED) if p.rpc == (where[1:] or [RPC])[0])
    index = int(where[2]) if len(where) > 2 else None
    if destination.exists():
        shutil.rmtree(destination)
    planted_copy(destination, chosen, index)
    done = pytest_in(destination, *(pytest_args or ["-q", "-m", "not slow", "-n", "2"]))
    sys.stdout.write(done.stdout + done.stderr)
    sys.exit(done.returncode)
