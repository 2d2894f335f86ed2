"""REQUIRED (AIP-203) is enforced on the whole message tree."""

from typing import Any

import pytest
from google.api import field_behavior_pb2
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import Message

import projectops
from projectops.v1.operations_pb2 import GetReleaseDetailsRequest


@pytest.mark.parametrize("version", ["", " ", "\t\n "])
def test_missing_or_blank_version_is_a_violation(version: str) -> None:
    with pytest.raises(projectops.InvalidArgument) as info:
        projectops.validate(GetReleaseDetailsRequest(version=version))
    assert [(v.field, v.description) for v in info.value.violations] == [("version", "is required")]
    assert info.value.message == "version: is required"


def test_a_present_version_passes() -> None:
    projectops.validate(GetReleaseDetailsRequest(version=" 1.0.0 "))


def _nested_types() -> type[Message]:
    """A schema made for this test: REQUIRED fields at several depths and kinds."""
    f = descriptor_pb2.FileDescriptorProto(
        name="validation_test.proto",
        package="vt",
        syntax="proto3",
        dependency=["google/api/field_behavior.proto"],
    )

    def field(
        msg: Any,
        name: str,
        number: int,
        kind: int,
        *,
        repeated: bool = False,
        type_name: str = "",
        required: bool = False,
        optional: bool = False,
    ) -> None:
        fd = msg.field.add(name=name, number=number, type=kind, label=3 if repeated else 1)
        if type_name:
            fd.type_name = type_name
        if optional:
            fd.proto3_optional = True
        if optional:
            msg.oneof_decl.add(name=f"_{name}")
            fd.oneof_index = len(msg.oneof_decl) - 1
        if required:
            fd.options.Extensions[field_behavior_pb2.field_behavior].append(
                field_behavior_pb2.REQUIRED
            )

    T = descriptor_pb2.FieldDescriptorProto
    leaf = f.message_type.add(name="Leaf")
    field(leaf, "display_name", 1, T.TYPE_STRING, required=True)
    field(leaf, "count", 2, T.TYPE_INT64, required=True)
    field(leaf, "limit", 3, T.TYPE_INT64, required=True, optional=True)
    root = f.message_type.add(name="Root")
    field(root, "leaf", 1, T.TYPE_MESSAGE, type_name=".vt.Leaf", required=True)
    field(root, "leaves", 2, T.TYPE_MESSAGE, type_name=".vt.Leaf", repeated=True)
    field(root, "tags", 3, T.TYPE_STRING, repeated=True, required=True)
    # The default pool already holds google/api/field_behavior.proto; the package name is unique.
    pool = descriptor_pool.Default()
    pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("vt.Root"))


Root = _nested_types()


def test_nested_required_fields_are_reported_with_camel_case_paths() -> None:
    message = projectops.from_json(
        {"leaves": [{"displayName": "ok", "count": "1", "limit": "0"}, {"displayName": " "}]},
        Root,
    )
    with pytest.raises(projectops.InvalidArgument) as info:
        projectops.validate(message)
    assert [v.field for v in info.value.violations] == [
        "leaf",
        "leaves[1].displayName",
        "leaves[1].count",
        "leaves[1].limit",
        "tags",
    ]


def test_explicit_presence_counts_a_set_zero_as_present() -> None:
    message = projectops.from_json(
        {"leaf": {"displayName": "x", "count": "3", "limit": "0"}, "tags": ["a"]}, Root
    )
    projectops.validate(message)
