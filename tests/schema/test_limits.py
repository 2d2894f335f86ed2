"""scripts/check-proto refuses a schema the features cannot serve, naming the element and the
reason (scripts/schema_limits.py, docs/schema.md "Limits"; issue 40): our schema and the tests'
schema of every kind pass; each limit, planted in a copy of the kinds schema, is named."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2

from projectops.registry import REGISTRY

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
import codegen  # noqa: E402
import schema_limits  # noqa: E402

F = descriptor_pb2.FieldDescriptorProto
KINDS = "tests/kinds/v1/kinds.proto"


@pytest.fixture(scope="module")
def kinds(tmp_path_factory: pytest.TempPathFactory) -> descriptor_pb2.FileDescriptorSet:
    """The kinds schema and its imports, as protoc builds check-proto's image."""
    return codegen._with_imports(REPO, tmp_path_factory.mktemp("image"), files=[KINDS])


def with_edit(
    files: descriptor_pb2.FileDescriptorSet,
    edit: Callable[[descriptor_pb2.FileDescriptorProto], None],
) -> descriptor_pb2.FileDescriptorSet:
    copy = descriptor_pb2.FileDescriptorSet()
    copy.CopyFrom(files)
    edit(next(f for f in copy.file if f.name == KINDS))
    return copy


def message(file: descriptor_pb2.FileDescriptorProto, name: str) -> descriptor_pb2.DescriptorProto:
    return next(m for m in file.message_type if m.name == name)


def test_our_schema_and_the_schema_of_every_kind_are_within_the_limits(
    kinds: descriptor_pb2.FileDescriptorSet, tmp_path: Path
) -> None:
    assert schema_limits.findings(kinds, "tests.kinds") == []
    ours = codegen._with_imports(REPO / "proto", tmp_path)
    assert schema_limits.findings(ours, "projectops") == []


def _streaming(file: descriptor_pb2.FileDescriptorProto) -> None:
    file.service[0].method[0].server_streaming = True


def _same_operation(file: descriptor_pb2.FileDescriptorProto) -> None:
    twin = file.service[0].method.add()
    twin.CopyFrom(file.service[0].method[0])
    twin.name = "GetFLAT"  # get_flat, as GetFlat


def _keyword_field(file: descriptor_pb2.FileDescriptorProto) -> None:
    message(file, "GetMapsRequest").field[0].name = "from"


def _request_field(file: descriptor_pb2.FileDescriptorProto) -> None:
    message(file, "GetMapsRequest").field[0].name = "request"


def _any(file: descriptor_pb2.FileDescriptorProto) -> None:
    file.dependency.append("google/protobuf/any.proto")
    field = message(file, "Item").field.add(name="payload", number=99, json_name="payload")
    field.type, field.label, field.type_name = (
        F.TYPE_MESSAGE,
        F.LABEL_OPTIONAL,
        ".google.protobuf.Any",
    )


def _required_cycle(file: descriptor_pb2.FileDescriptorProto) -> None:
    node = message(file, "Node")
    required = next(f for f in message(file, "Flat").field if f.name == "name").options
    next(f for f in node.field if f.name == "next").options.CopyFrom(required)


LIMITS = {
    "streaming": (_streaming, "tests.kinds.v1.KindsService.GetFlat: a streaming rpc"),
    "one operation name": (_same_operation, "its operation name get_flat is"),
    "a Python keyword": (_keyword_field, "tests.kinds.v1.GetMapsRequest.from: a request field"),
    "request": (_request_field, "a request field named 'request'"),
    "Any": (_any, "tests.kinds.v1.Item.payload: a google.protobuf.Any"),
    "REQUIRED cycle": (_required_cycle, "tests.kinds.v1.Node.next: REQUIRED message fields"),
}


@pytest.mark.parametrize("name", LIMITS)
def test_each_limit_is_named_with_its_element_and_reason(
    name: str, kinds: descriptor_pb2.FileDescriptorSet
) -> None:
    edit, expected = LIMITS[name]
    if name == "Any":  # any.proto joins the image before the file that imports it
        from google.protobuf import any_pb2

        kinds = descriptor_pb2.FileDescriptorSet(
            file=[_file_proto(any_pb2.DESCRIPTOR), *kinds.file]
        )
    found = schema_limits.findings(with_edit(kinds, edit), "tests.kinds")
    assert len(found) == 1 and expected in found[0], found


def test_a_tool_name_of_the_clis_own_commands_is_refused(
    kinds: descriptor_pb2.FileDescriptorSet,
) -> None:
    own = schema_limits.cli_commands()
    assert {"describe", "schema", "operations", "openapi", "completion"} <= own
    assert not own & {op.tool_name for op in REGISTRY.operations()}

    def rename(file: descriptor_pb2.FileDescriptorProto) -> None:
        file.service[0].method[0].name = "Describe"

    found = schema_limits.findings(with_edit(kinds, rename), "tests.kinds")
    assert found == [
        "tests.kinds.v1.KindsService.Describe: its tool name describe is a command of the CLI"
    ]


def _file_proto(descriptor: object) -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto()
    descriptor.CopyToProto(proto)  # type: ignore[attr-defined]
    return proto
