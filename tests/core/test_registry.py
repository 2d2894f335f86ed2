"""The registry is derived from the proto service and holds every path to the naming rule."""

import importlib
import itertools
import re
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2

import projectops
from projectops.registry import SERVICE
from tests.synthetic import rpc_with

OPS = projectops.operations()
PROTO = Path(__file__).resolve().parents[2] / "proto"


def test_every_rpc_is_an_operation_in_service_order() -> None:
    assert [op.method.name for op in OPS] == [m.name for m in SERVICE.methods]
    assert len({op.name for op in OPS}) == len({op.path for op in OPS}) == len(OPS)


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_path_tool_name_and_message_names_follow_the_rules(op: projectops.Operation) -> None:
    rpc = op.method.name
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", rpc).lower()
    # docs/contract.md §8: the path of the google.api.http option is /api/mcp/<rpc in snake_case>.
    assert op.path == f"/api/mcp/{snake}" == projectops.operation_path(op.name)
    assert op.tool_name == snake.replace("_", "-")
    assert op.request_type.DESCRIPTOR.name == f"{rpc}Request"
    assert op.response_type.DESCRIPTOR.name == f"{rpc}Response"
    assert op.description and op.summary and op.description.startswith(op.summary)


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_lookup_by_name_tool_name_or_path(op: projectops.Operation) -> None:
    for key in (op.name, op.tool_name, op.path, op):
        assert projectops.operation(key) is op
    for cls, message in (
        (op.request_type, op.method.input_type),
        (op.response_type, op.method.output_type),
    ):
        module = message.file.name.removesuffix(".proto").replace("/", ".") + "_pb2"
        assert cls is getattr(importlib.import_module(module), message.name)


@pytest.mark.parametrize(
    "key", ["", "/api/mcp/", OPS[0].method.name, OPS[0].name + "_", OPS[0].name.rsplit("_", 1)[0]]
)
def test_unknown_operation_lists_known_names(key: str) -> None:
    with pytest.raises(projectops.UnknownOperationError) as info:
        projectops.operation(key)
    assert isinstance(info.value, LookupError)
    assert all(op.name in str(info.value) for op in OPS)


def _rpc_comment(rpc: str) -> str:
    """The `//` lines right above `rpc <rpc>(` in proto/, read from the source text itself."""
    for path in sorted(PROTO.rglob("*.proto")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            if line.strip().startswith(f"rpc {rpc}("):
                above = list(
                    itertools.takewhile(lambda x: x.strip().startswith("//"), lines[i - 1 :: -1])
                )
                return " ".join(x.strip().removeprefix("//").strip() for x in reversed(above))
    raise AssertionError(f"no rpc {rpc} in {PROTO}")


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_description_is_the_rpc_comment(op: projectops.Operation) -> None:
    assert " ".join(op.description.split()) == " ".join(_rpc_comment(op.method.name).split())
    assert "\n" not in op.summary


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_behaviour_facts_are_the_rpcs_options(op: projectops.Operation) -> None:
    options = op.method.GetOptions()
    level = descriptor_pb2.MethodOptions.IdempotencyLevel.Name(options.idempotency_level)
    assert op.idempotency == level
    assert op.read_only == (level == "NO_SIDE_EFFECTS")
    assert op.idempotent == (level in ("NO_SIDE_EFFECTS", "IDEMPOTENT"))
    assert op.deprecated == options.deprecated
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
