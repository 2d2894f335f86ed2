"""The registry is derived from the proto service and holds every path to the naming rule."""

import re

import pytest

import projectops
from projectops.registry import SERVICE
from tests.synthetic import rpc_with


def test_every_rpc_is_an_operation_in_service_order() -> None:
    assert [op.method.name for op in projectops.operations()] == [m.name for m in SERVICE.methods]
    assert [op.name for op in projectops.operations()] == [
        "list_rum_environments",
        "get_release_details",
    ]


@pytest.mark.parametrize("op", projectops.operations(), ids=lambda op: op.name)
def test_path_tool_name_and_message_names_follow_the_rules(op: projectops.Operation) -> None:
    rpc = op.method.name
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", rpc).lower()
    # docs/contract.md §8: the path of the google.api.http option is /api/mcp/<rpc in snake_case>.
    assert op.path == f"/api/mcp/{snake}" == projectops.operation_path(op.name)
    assert op.tool_name == snake.replace("_", "-")
    assert op.request_type.DESCRIPTOR.name == f"{rpc}Request"
    assert op.response_type.DESCRIPTOR.name == f"{rpc}Response"
    assert op.description and op.summary and op.description.startswith(op.summary)


@pytest.mark.parametrize(
    "key", ["get_release_details", "get-release-details", "/api/mcp/get_release_details"]
)
def test_lookup_by_name_tool_name_or_path(key: str) -> None:
    op = projectops.operation(key)
    assert op.name == "get_release_details"
    assert projectops.operation(op) is op
    from projectops.v1.operations_pb2 import GetReleaseDetailsRequest, GetReleaseDetailsResponse

    assert op.request_type is GetReleaseDetailsRequest
    assert op.response_type is GetReleaseDetailsResponse


@pytest.mark.parametrize("key", ["get_release", "", "/api/mcp/", "GetReleaseDetails"])
def test_unknown_operation_lists_known_names(key: str) -> None:
    with pytest.raises(projectops.UnknownOperationError) as info:
        projectops.operation(key)
    assert isinstance(info.value, LookupError)
    assert "list_rum_environments" in str(info.value)
    assert "get_release_details" in str(info.value)


def test_description_is_the_rpc_comment() -> None:
    op = projectops.operation("list_rum_environments")
    assert op.description.startswith("List the RUM environments of the project")
    assert "\n" not in op.summary


@pytest.mark.parametrize("op", projectops.operations(), ids=lambda op: op.name)
def test_both_operations_are_reads_by_the_proto(op: projectops.Operation) -> None:
    # operations.proto marks both rpcs `option idempotency_level = NO_SIDE_EFFECTS;`.
    assert op.idempotency == "NO_SIDE_EFFECTS"
    assert op.read_only and op.idempotent
    assert not op.deprecated
    assert op.title == op.summary and op.description.startswith(op.title)
    assert op.title.endswith(".") and "\n" not in op.title


@pytest.mark.parametrize(
    ("level", "deprecated", "read_only", "idempotent"),
    [
        ("IDEMPOTENCY_UNKNOWN", False, False, False),
        ("IDEMPOTENT", True, False, True),
        ("NO_SIDE_EFFECTS", False, True, True),
    ],
)
def test_behaviour_facts_come_from_the_rpc_options(
    level: str, deprecated: bool, read_only: bool, idempotent: bool
) -> None:
    op = rpc_with(level, deprecated)
    assert op.idempotency == level
    assert (op.read_only, op.idempotent, op.deprecated) == (read_only, idempotent, deprecated)
