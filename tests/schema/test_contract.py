"""The contract check (projectops.contract, run by scripts/check-proto) fails every change that
breaks a released client and passes every compatible one.

Each case plants a change in a scratch copy of proto/, builds its image with grpcio-tools' protoc
in-process and compares it with the released baseline (or with a planted baseline, for request
trees richer than the released one). A few cases run the real scripts/check-proto.
"""

from __future__ import annotations

import itertools
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from projectops import contract
from projectops.rules import NOT_BLANK_RULE_ID

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
import protolib  # noqa: E402
from check_proto import accepted_findings, required_drift  # noqa: E402
from codegen import KINDS_PROTO  # noqa: E402

from tests.schema.planting import REQUIRED_STRING_RULES  # noqa: E402

RELEASED = (REPO / "proto" / "released.binpb").read_bytes()
ACCEPTED = accepted_findings(REPO)
OPS = "operations.proto"
RELEASE = "release.proto"
RUM = "rum_environment.proto"
GET = "projectops.v1.OperationsService.GetReleaseDetails"
_OPS_TEXT = (REPO / "proto" / "projectops" / "v1" / OPS).read_text(encoding="utf-8")


def _field_text(declaration: str) -> str:
    """The lines of operations.proto that declare a field, from `declaration` to its ``];``."""
    start = _OPS_TEXT.index(declaration)
    return _OPS_TEXT[start : _OPS_TEXT.index("];\n", start) + 3]


VERSION_FIELD = _field_text("  string version = 1 [")
SUMMARY_FIELD = _field_text("  ReleaseSummary summary = 1 [")
VERSION_RULE = "(buf.validate.field).string.max_len = 128"
SESSION_COUNT = "int64 session_count = 4 [(buf.validate.field).int64.gte = 0];"
REQUIRED = "[(google.api.field_behavior) = REQUIRED]"
#: A REQUIRED string as scripts/check-proto accepts it (restated for protovalidate), top-level.
REQUIRED_STRING = (
    f"[\n    (google.api.field_behavior) = REQUIRED,\n    {REQUIRED_STRING_RULES}\n  ]"
)

Edit = tuple[str, str, str]
_counter = itertools.count()


def image(tmp_path: Path, *edits: Edit) -> bytes:
    """The image of a copy of proto/ with each (file, old, new) replacement applied once."""
    root = tmp_path / f"proto-{next(_counter)}"
    shutil.copytree(REPO / "proto", root, ignore=shutil.ignore_patterns("*.binpb"))
    for name, old, new in edits:
        path = root / "projectops" / "v1" / name
        text = path.read_text()
        assert text.count(old) == 1, (name, old)
        path.write_text(text.replace(old, new))
    out = tmp_path / f"{root.name}.binpb"
    protolib.build_image(root, out)
    return out.read_bytes()


def findings(tmp_path: Path, *edits: Edit) -> list[str]:
    return released_check(image(tmp_path, *edits))


def released_check(current: bytes) -> list[str]:
    """The findings against the released baseline that scripts/check-proto fails on: those the
    exceptions file does not accept (tests/schema/test_contract_rules.py checks that file)."""
    return [f for f in contract.check(RELEASED, current) if f not in ACCEPTED]


def test_the_working_tree_keeps_the_released_contract(tmp_path: Path) -> None:
    current = tmp_path / "current.binpb"
    protolib.build_image(REPO / "proto", current)
    assert released_check(current.read_bytes()) == []


def test_a_set_without_its_imports_is_refused() -> None:
    shipped = (REPO / "src" / "projectops" / "v1" / "projectops.binpb").read_bytes()
    with pytest.raises(ValueError, match=r"lacks (google|buf)/.*--include_imports"):
        contract.check(RELEASED, shipped)


def test_operations_follow_the_registry() -> None:
    """Every released operation is in the registry at its released path (newer ones may be)."""
    import projectops

    pool = contract.load(RELEASED)
    ops = contract.operations(pool, ["projectops/v1/operations.proto"])
    released = {op.name: op.http.path for op in ops.values()}
    assert (
        released
        and released.items() <= {op.name: op.path for op in projectops.operations()}.items()
    )
    (get,) = [op for op in ops.values() if op.name == "get_release_details"]
    assert get.http == contract.HttpBinding("POST", "/api/mcp/get_release_details", "*")
    assert get.full_name == GET


def test_the_private_pools_never_touch_the_runtime_pool(tmp_path: Path) -> None:
    from google.protobuf import descriptor_pool

    planted = image(
        tmp_path,
        (RUM, SESSION_COUNT, SESSION_COUNT + "\n  int64 brand_new_count = 5;"),
    )
    assert released_check(planted) == []
    rum = descriptor_pool.Default().FindMessageTypeByName("projectops.v1.RumEnvironment")
    assert "brand_new_count" not in rum.fields_by_name


# --- failures ---------------------------------------------------------------------------------


def test_moving_a_path_fails(tmp_path: Path) -> None:
    got = findings(
        tmp_path, (OPS, 'post: "/api/mcp/get_release_details"', 'post: "/api/mcp/release_details"')
    )
    assert got == [
        f"{GET}: HTTP path of operation get_release_details changed from "
        "'/api/mcp/get_release_details' to '/api/mcp/release_details'"
    ]


def test_changing_the_method_fails(tmp_path: Path) -> None:
    got = findings(
        tmp_path,
        (OPS, 'post: "/api/mcp/get_release_details"', 'put: "/api/mcp/get_release_details"'),
    )
    assert got == [
        f"{GET}: HTTP method of operation get_release_details changed from 'POST' to 'PUT'"
    ]


def test_changing_the_body_fails(tmp_path: Path) -> None:
    old = 'post: "/api/mcp/get_release_details"\n      body: "*"'
    got = findings(tmp_path, (OPS, old, 'post: "/api/mcp/get_release_details"'))
    assert got == [f"{GET}: HTTP body of operation get_release_details changed from '*' to ''"]


def test_dropping_the_http_option_fails_naming_each_part(tmp_path: Path) -> None:
    old = (
        '    option (google.api.http) = {\n      post: "/api/mcp/get_release_details"\n'
        '      body: "*"\n    };\n'
    )
    got = findings(tmp_path, (OPS, old, ""))
    assert len(got) == 3 and all(line.startswith(f"{GET}: HTTP ") for line in got)


def test_removing_an_operation_fails(tmp_path: Path) -> None:
    rpc = OPS, "rpc GetReleaseDetails(GetReleaseDetailsRequest) returns (GetReleaseDetailsResponse)"
    old = rpc[1] + (
        " {\n    option idempotency_level = NO_SIDE_EFFECTS;\n"
        '    option (google.api.http) = {\n      post: "/api/mcp/get_release_details"'
        '\n      body: "*"\n    };\n  }\n'
    )
    assert findings(tmp_path, (OPS, old, "")) == [
        f"{GET}: released operation get_release_details was removed "
        "(was POST /api/mcp/get_release_details)"
    ]


def test_a_new_required_request_field_fails(tmp_path: Path) -> None:
    got = findings(
        tmp_path, (OPS, VERSION_FIELD, f"{VERSION_FIELD}  string environment = 2 {REQUIRED};\n")
    )
    assert got == [
        "projectops.v1.GetReleaseDetailsRequest.environment: request of operation "
        "get_release_details gained a REQUIRED field at environment (a new field; released "
        "clients do not send it)"
    ]


# A baseline whose request has an optional field of every shape, over a recursive message.
RICH: tuple[Edit, ...] = (
    (
        OPS,
        VERSION_FIELD,
        VERSION_FIELD + "  string label = 2;\n  Filter single = 3;\n"
        "  repeated Filter many = 4;\n  map<string, Filter> keyed = 5;\n}\n\n"
        "message Filter {\n  string name = 1;\n  Filter child = 2;\n  Leaf leaf = 3;\n}\n\n"
        "message Leaf {\n  string note = 1;\n",
    ),
)


@pytest.mark.parametrize("shape", ["single", "many", "keyed"])
def test_newly_required_fields_fail_anywhere_in_the_request_tree(
    tmp_path: Path, shape: str
) -> None:
    """Through a message field, a repeated one or a map value, and past a recursive field."""
    others = {
        "single": "  Filter single = 3;\n",
        "many": "  repeated Filter many = 4;\n",
        "keyed": "  map<string, Filter> keyed = 5;\n",
    }
    removed = [(OPS, line, "") for name, line in others.items() if name != shape]
    released = image(tmp_path, *RICH, *removed)
    current = image(
        tmp_path, *RICH, *removed, (OPS, "string note = 1;", f"string note = 1 {REQUIRED};")
    )
    where = {"single": "single", "many": "many", "keyed": "keyed.value"}[shape]
    assert contract.check(released, current) == [
        "projectops.v1.Leaf.note: request of operation get_release_details gained a REQUIRED "
        f"field at {where}.leaf.note (was optional; released clients do not send it)"
    ]


def test_an_existing_field_newly_required_fails(tmp_path: Path) -> None:
    released = image(tmp_path, *RICH)
    current = image(
        tmp_path,
        *RICH,
        (OPS, "string label = 2;", f"string label = 2 {REQUIRED};"),
        (OPS, "Filter child = 2;", f"Filter child = 2 {REQUIRED};"),
    )
    assert contract.check(released, current) == [
        "projectops.v1.GetReleaseDetailsRequest.label: request of operation get_release_details "
        "gained a REQUIRED field at label (was optional; released clients do not send it)",
        "projectops.v1.Filter.child: request of operation get_release_details gained a REQUIRED "
        "field at single.child (was optional; released clients do not send it)",
    ]


def test_a_response_losing_a_field_fails(tmp_path: Path) -> None:
    got = findings(tmp_path, (RUM, f"  {SESSION_COUNT}\n", "  reserved 4;\n"))
    assert got == [
        "projectops.v1.RumEnvironment.session_count: response of operation "
        "list_rum_environments lost field environments.session_count (number 4; was int64, "
        "now absent)"
    ]


def test_a_response_losing_an_enum_value_fails(tmp_path: Path) -> None:
    got = findings(
        tmp_path,
        (RELEASE, "  // The scenario was skipped on purpose.\n  SKIPPED = 3;\n", "  reserved 3;\n"),
    )
    assert got == [
        "projectops.v1.TestStatus.SKIPPED: response of operation get_release_details lost enum "
        "value SKIPPED of projectops.v1.TestStatus at detailed_results.scenarios.results.status "
        "(was 3, now absent)"
    ]


# --- passes -----------------------------------------------------------------------------------


NEW_RPC = (
    "  // Count things.\n  rpc CountThings(CountThingsRequest) returns (CountThingsResponse) {\n"
    '    option (google.api.http) = {\n      post: "/api/mcp/count_things"\n      body: "*"\n'
    "    };\n  }\n}\n\n// Request of CountThings.\nmessage CountThingsRequest {\n"
    f"  // What to count.\n  string kind = 1 {REQUIRED_STRING};\n}}\n\n"
    "// Response of CountThings.\nmessage CountThingsResponse {\n  // How many.\n"
    "  int64 count = 1;\n}\n"
)
# The end of the service's last rpc, whichever it is, and the service's closing brace.
ADD_RPC: Edit = (
    OPS,
    '      body: "*"\n    };\n  }\n}\n',
    '      body: "*"\n    };\n  }\n' + NEW_RPC,
)
OPTIONAL_FIELD: Edit = (
    OPS,
    VERSION_FIELD,
    VERSION_FIELD + "  // Only this environment's counts. Empty for all.\n"
    "  string environment = 2;\n",
)


@pytest.mark.parametrize(
    "edits",
    [
        pytest.param([ADD_RPC], id="new operation"),
        pytest.param([OPTIONAL_FIELD], id="new optional request field"),
        pytest.param(
            [
                (
                    RUM,
                    SESSION_COUNT,
                    SESSION_COUNT + "\n  int64 page_view_count = 5;",
                )
            ],
            id="new response field",
        ),
        pytest.param(
            [(RELEASE, "  NOT_RUN = 4;\n", "  NOT_RUN = 4;\n  // Blocked.\n  BLOCKED_RUN = 5;\n")],
            id="new enum value",
        ),
        pytest.param(
            [(OPS, VERSION_FIELD, f"  string version = 1 [{VERSION_RULE}];\n")],
            id="REQUIRED dropped",
        ),
        pytest.param([(RUM, "Never empty.", "Not empty, ever.")], id="comment edit"),
    ],
)
def test_compatible_changes_pass(tmp_path: Path, edits: list[Edit]) -> None:
    assert findings(tmp_path, *edits) == []


def test_required_fields_below_a_new_optional_field_pass(tmp_path: Path) -> None:
    """A released client never sends the new field, so nothing below it can be missing."""
    released = image(tmp_path, *RICH)
    current = image(
        tmp_path,
        *RICH,
        (OPS, "  string label = 2;\n", "  string label = 2;\n  Leaf extra = 6;\n"),
        (OPS, "message Leaf {\n", f"message Leaf {{\n  string tag = 2 {REQUIRED};\n"),
    )
    # Leaf.tag is new and REQUIRED, reachable through released fields (single.leaf): that fails;
    # through the new field `extra` only it would not. Both paths exist here, so one finding.
    assert contract.check(released, current) == [
        "projectops.v1.Leaf.tag: request of operation get_release_details gained a REQUIRED "
        "field at single.leaf.tag (a new field; released clients do not send it)"
    ]
    only_new = image(
        tmp_path,
        *RICH,
        (OPS, "  string label = 2;\n", "  string label = 2;\n  Extra extra = 6;\n"),
        (
            OPS,
            "message Leaf {\n",
            f"message Extra {{\n  string tag = 1 {REQUIRED};\n}}\n\nmessage Leaf {{\n",
        ),
    )
    assert contract.check(released, only_new) == []


# --- through scripts/check-proto --------------------------------------------------------------


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "proto", tmp_path / "proto")
    shutil.copy(REPO / "buf.yaml", tmp_path / "buf.yaml")
    return tmp_path


def check_proto(
    root: Path, *edits: Edit, args: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    for name, old, new in edits:
        path = root / "proto" / "projectops" / "v1" / name
        text = path.read_text()
        assert text.count(old) == 1
        path.write_text(text.replace(old, new))
    return subprocess.run(
        [sys.executable, str(REPO / "scripts" / "check-proto"), "--root", str(root), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def contract_lines(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in result.stdout.splitlines() if line.startswith("contract: ")]


@pytest.mark.slow
def test_check_proto_fails_a_moved_path_with_one_line(copy: Path) -> None:
    result = check_proto(
        copy, (OPS, 'post: "/api/mcp/get_release_details"', 'post: "/api/mcp/release_details"')
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert contract_lines(result) == [
        f"contract: {GET}: HTTP path of operation get_release_details changed from "
        "'/api/mcp/get_release_details' to '/api/mcp/release_details'"
    ]
    assert "schema gates failed: contract" in result.stderr  # buf itself saw nothing


@pytest.mark.slow
def test_check_proto_fails_a_new_required_request_field_with_one_line(copy: Path) -> None:
    result = check_proto(
        copy,
        (
            OPS,
            VERSION_FIELD,
            VERSION_FIELD + "  // Only this environment's counts.\n"
            f"  string environment = 2 {REQUIRED_STRING};\n",
        ),
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert contract_lines(result) == [
        "contract: projectops.v1.GetReleaseDetailsRequest.environment: request of operation "
        "get_release_details gained a REQUIRED field at environment (a new field; released "
        "clients do not send it)"
    ]
    assert "schema gates failed: contract" in result.stderr


@pytest.mark.slow
def test_check_proto_fails_a_tightened_request_rule_and_a_stale_exception(copy: Path) -> None:
    tightened = check_proto(copy, (OPS, MAX_LEN, MAX_LEN.replace("128", "64")))
    assert tightened.returncode == 1, tightened.stdout + tightened.stderr
    # Against the baseline the rule was unset: 64 is the finding, and the accepted one (unset
    # -> 128) no longer occurs, which fails too.
    assert contract_lines(tightened) == [
        "contract: projectops.v1.GetReleaseDetailsRequest.version: request of operation "
        "get_release_details tightened rule string.max_len at version (was unset, now 64)",
        *(
            f"contract: proto/contract-exceptions.toml accepts a finding that no longer occurs: {f}"
            for f in ACCEPTED
        ),
    ]
    assert "schema gates failed: contract" in tightened.stderr


def test_every_accepted_finding_occurs_and_has_a_reason(tmp_path: Path) -> None:
    found = contract.check(RELEASED, image(tmp_path))
    assert all(finding in found and reason.strip() for finding, reason in ACCEPTED.items())


@pytest.mark.slow
def test_check_proto_passes_a_new_operation_and_an_optional_field(copy: Path) -> None:
    result = check_proto(copy, ADD_RPC, OPTIONAL_FIELD)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "contract" in result.stdout and contract_lines(result) == []


@pytest.mark.slow
def test_check_proto_against_a_ref_compares_the_contract_too(copy: Path) -> None:
    """An operation added after the released baseline is guarded against the ref that has it."""
    git = ["git", "-C", str(copy), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q"], check=True)
    assert check_proto(copy, ADD_RPC).returncode == 0
    subprocess.run([*git, "add", "proto"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "count_things"], check=True)
    move = (OPS, 'post: "/api/mcp/count_things"', 'post: "/api/mcp/count"')
    moved = check_proto(copy, move, args=("--against-ref", "HEAD"))
    assert moved.returncode == 1, moved.stdout + moved.stderr
    assert contract_lines(moved) == [
        "contract: projectops.v1.OperationsService.CountThings: HTTP path of operation "
        "count_things changed from '/api/mcp/count_things' to '/api/mcp/count'"
    ]
    # Against the released baseline, which lacks the operation, the same tree passes.
    assert check_proto(copy).returncode == 0


# --- protovalidate rules of released fields (docs/contract.md §7.3) ------------------------------

MAX_LEN = "(buf.validate.field).string.max_len = 128"
GET_OP = "get_release_details"


def rule_findings(tmp_path: Path, *edits: Edit) -> list[str]:
    """The findings of the tree with `edits` against the tree as it is (with its rules)."""
    return contract.check(image(tmp_path), image(tmp_path, *edits))


def test_a_tightened_request_rule_fails(tmp_path: Path) -> None:
    got = rule_findings(tmp_path, (OPS, MAX_LEN, MAX_LEN.replace("128", "64")))
    assert got == [
        "projectops.v1.GetReleaseDetailsRequest.version: request of operation get_release_details "
        "tightened rule string.max_len at version (was 128, now 64)"
    ]


def test_a_new_request_rule_fails(tmp_path: Path) -> None:
    got = rule_findings(
        tmp_path,
        (OPS, MAX_LEN, MAX_LEN + ',\n    (buf.validate.field).string.pattern = "^[0-9.]+$"'),
    )
    assert got == [
        "projectops.v1.GetReleaseDetailsRequest.version: request of operation get_release_details "
        "tightened rule string.pattern at version (was unset, now '^[0-9.]+$')"
    ]


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param((OPS, MAX_LEN, MAX_LEN.replace("128", "256")), id="bound loosened"),
        pytest.param((OPS, ",\n    " + MAX_LEN, ""), id="rule dropped"),
    ],
)
def test_a_loosened_request_rule_passes(tmp_path: Path, edit: Edit) -> None:
    assert rule_findings(tmp_path, edit) == []


def test_a_loosened_response_rule_fails(tmp_path: Path) -> None:
    got = rule_findings(
        tmp_path,
        (RUM, "int64 session_count = 4 [(buf.validate.field).int64.gte = 0];", SESSION_PLAIN),
        (OPS, SUMMARY_FIELD, "  ReleaseSummary summary = 1;\n"),
    )
    assert sorted(got) == [
        "projectops.v1.GetReleaseDetailsResponse.summary: response of operation "
        "get_release_details no longer promises summary (its REQUIRED lost "
        "google.api.field_behavior, required; released clients and their engines rely on it)",
        "projectops.v1.RumEnvironment.session_count: response of operation "
        "list_rum_environments loosened rule int64.gte at environments.session_count "
        "(was 0, now unset)",
    ]


def test_a_tightened_response_rule_and_a_message_rule_pass_or_fail_by_side(
    tmp_path: Path,
) -> None:
    stricter = (
        RUM,
        "int64 session_count = 4 [(buf.validate.field).int64.gte = 0];",
        "int64 session_count = 4 [(buf.validate.field).int64.gte = 1];",
    )
    assert rule_findings(tmp_path, stricter) == []
    cel = 'expression: "this.high_or_critical_finding_count <= this.finding_count"'
    changed = (RELEASE, cel, cel.replace("<=", "<"))
    assert rule_findings(tmp_path, changed) == [
        "projectops.v1.SecurityScanSummary: response of operation get_release_details loosened "
        "rule cel[security_scan_summary.high_or_critical_within_findings] at "
        "summary.security_scans (was 'this.high_or_critical_finding_count <= "
        "this.finding_count', now 'this.high_or_critical_finding_count < this.finding_count')"
    ]


SESSION_PLAIN = "int64 session_count = 4;"


# --- REQUIRED, declared for every engine -------------------------------------------------------

NOT_BLANK = VERSION_FIELD[
    VERSION_FIELD.index("    (buf.validate.field).cel") : VERSION_FIELD.index("    },\n") + 7
]


def test_every_required_field_restates_it_for_protovalidate(tmp_path: Path) -> None:
    assert required_drift(image(tmp_path)) == []


def test_every_required_field_of_the_tests_schema_restates_it_for_protovalidate(
    tmp_path: Path,
) -> None:
    # scripts/check-proto looks at proto/ only: the schema of every kind the tests serve is held
    # to the same rule here (protovalidate-es found 14 of its REQUIRED fields not required).
    kinds = tmp_path / "kinds.binpb"
    protolib.protoc(REPO, ["--include_imports", f"--descriptor_set_out={kinds}"], [KINDS_PROTO])
    assert required_drift(kinds.read_bytes(), prefix=KINDS_PROTO.rsplit("/", 1)[0]) == []


def test_required_declared_once_is_drift(tmp_path: Path) -> None:
    one_sided = image(
        tmp_path,
        (
            OPS,
            SUMMARY_FIELD,
            SUMMARY_FIELD.replace(",\n    (buf.validate.field).required = true", ""),
        ),
        (OPS, VERSION_FIELD, VERSION_FIELD.replace(NOT_BLANK, "")),
        (RUM, SESSION_COUNT, SESSION_COUNT.replace("int64.gte = 0", "required = true")),
    )
    assert sorted(required_drift(one_sided)) == [
        "projectops.v1.GetReleaseDetailsRequest.version: REQUIRED (google.api.field_behavior), "
        f"but its buf.validate cel[{NOT_BLANK_RULE_ID}] not as REQUIRED needs (docs/schema.md, "
        "'Adding an operation')",
        "projectops.v1.GetReleaseDetailsResponse.summary: REQUIRED (google.api.field_behavior), "
        "but its buf.validate required not as REQUIRED needs (docs/schema.md, 'Adding an "
        "operation')",
        "projectops.v1.RumEnvironment.session_count: not REQUIRED, yet declares required",
    ]


@pytest.mark.parametrize(
    ("dropped", "lost"),
    [
        ("    (google.api.field_behavior) = REQUIRED,\n", "google.api.field_behavior"),
        (",\n    (buf.validate.field).required = true", "required"),
    ],
    ids=["field_behavior", "buf.validate"],
)
def test_a_response_dropping_either_declaration_of_required_fails(
    tmp_path: Path, dropped: str, lost: str
) -> None:
    field = SUMMARY_FIELD.replace(dropped, "")
    assert rule_findings(tmp_path, (OPS, SUMMARY_FIELD, field)) == [
        "projectops.v1.GetReleaseDetailsResponse.summary: response of operation "
        f"get_release_details no longer promises summary (its REQUIRED lost {lost}; released "
        "clients and their engines rely on it)"
    ]


def test_a_request_dropping_either_declaration_of_required_fails_the_gate(tmp_path: Path) -> None:
    """Dropping both makes a request looser, which a released client cannot notice; dropping
    one is drift, which scripts/check-proto fails whatever the release."""
    for dropped in ("    (google.api.field_behavior) = REQUIRED,\n", NOT_BLANK):
        current = image(tmp_path, (OPS, VERSION_FIELD, VERSION_FIELD.replace(dropped, "")))
        assert [f.split(":")[0] for f in required_drift(current)] == [
            "projectops.v1.GetReleaseDetailsRequest.version"
        ]


@pytest.mark.slow
def test_check_proto_fails_required_declared_once_with_one_line(copy: Path) -> None:
    once = "  ReleaseSummary summary = 1 [(google.api.field_behavior) = REQUIRED];\n"
    result = check_proto(copy, (OPS, SUMMARY_FIELD, once))
    assert result.returncode == 1, result.stdout + result.stderr
    assert contract_lines(result) == [
        "contract: projectops.v1.GetReleaseDetailsResponse.summary: REQUIRED "
        "(google.api.field_behavior), but its buf.validate required not as REQUIRED needs "
        "(docs/schema.md, 'Adding an operation')"
    ]
    assert "schema gates failed: contract" in result.stderr
