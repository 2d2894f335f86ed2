"""The tests' schema of every kind (tests/kinds/v1/kinds.proto) holds what it promises, and
scripts/generate makes its bindings: a request field of a well-known type included (issue 40)."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Iterator
from pathlib import Path

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from projectops.registry import Registry
from projectops.validation import is_required
from tests.kinds.v1 import kinds_client, kinds_handler, kinds_pb2

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
import bindings  # noqa: E402
import codegen  # noqa: E402

F = FieldDescriptor
WELL_KNOWN = {
    "google.protobuf.Timestamp",
    "google.protobuf.Duration",
    "google.protobuf.Struct",
    "google.protobuf.Value",
    "google.protobuf.ListValue",
    "google.protobuf.FieldMask",
    "google.protobuf.Empty",
    *(
        f"google.protobuf.{kind}Value"
        for kind in ("Double", "Float", "Int64", "UInt64", "Int32", "UInt32", "Bool", "String")
    ),
    "google.protobuf.BytesValue",
}


def fields() -> Iterator[FieldDescriptor]:
    """Every field of every message of the schema, map entries' keys and values included."""

    def walk(descriptor: Descriptor) -> Iterator[FieldDescriptor]:
        yield from descriptor.fields
        for nested in descriptor.nested_types:
            yield from walk(nested)

    for descriptor in kinds_pb2.DESCRIPTOR.message_types_by_name.values():
        yield from walk(descriptor)


def is_map(fd: FieldDescriptor) -> bool:
    return fd.message_type is not None and fd.message_type.GetOptions().map_entry


def test_the_schema_holds_every_kind_of_the_json_mapping() -> None:
    every = list(fields())
    singular = {fd.type for fd in every if not fd.is_repeated}
    scalar_types = {getattr(F, name) for name in dir(F) if name.startswith("TYPE_")}
    assert scalar_types - {F.TYPE_GROUP} <= singular
    repeated = {fd.cpp_type for fd in every if fd.is_repeated and not is_map(fd)}
    assert {F.CPPTYPE_INT64, F.CPPTYPE_STRING, F.CPPTYPE_ENUM, F.CPPTYPE_MESSAGE} <= repeated
    maps = [fd.message_type for fd in every if is_map(fd)]
    keys = {entry.fields_by_name["key"].type for entry in maps}
    assert {F.TYPE_STRING, F.TYPE_INT32, F.TYPE_INT64, F.TYPE_UINT32, F.TYPE_BOOL} <= keys
    values = {entry.fields_by_name["value"].cpp_type for entry in maps}
    assert {F.CPPTYPE_STRING, F.CPPTYPE_ENUM, F.CPPTYPE_MESSAGE, F.CPPTYPE_DOUBLE} <= values
    assert WELL_KNOWN <= {fd.message_type.full_name for fd in every if fd.message_type}
    assert any(fd.containing_oneof and len(fd.containing_oneof.fields) > 1 for fd in every)
    # proto3 `optional`: a oneof of one.
    assert any(fd.containing_oneof and len(fd.containing_oneof.fields) == 1 for fd in every)
    node = kinds_pb2.Node.DESCRIPTOR
    assert node.fields_by_name["next"].message_type is node  # recursive


def test_required_sits_on_each_kind_where_it_means_something() -> None:
    required = [fd for fd in fields() if is_required(fd)]
    kinds = {
        ("map" if is_map(fd) else "repeated" if fd.is_repeated else fd.type) for fd in required
    }
    assert {
        F.TYPE_INT32,
        F.TYPE_BOOL,
        F.TYPE_STRING,
        F.TYPE_BYTES,
        F.TYPE_ENUM,
        F.TYPE_MESSAGE,
        "repeated",
        "map",
    } <= kinds


def test_the_service_has_rpcs_of_every_shape() -> None:
    ops = kinds_client.REGISTRY.operations()
    requests = [op.request_type.DESCRIPTOR for op in ops]
    responses = [op.response_type.DESCRIPTOR for op in ops]
    assert any(not d.fields for d in requests)  # an empty request
    assert any(all(fd.message_type is None for fd in d.fields) for d in responses)  # flat
    assert any(fd.is_repeated and not is_map(fd) for d in responses for fd in d.fields)  # a list
    assert any(is_map(fd) for d in responses for fd in d.fields)  # maps
    assert all(op.path == f"/api/mcp/{op.name}" for op in ops)  # our convention


def test_a_registry_is_built_from_any_service_and_looks_its_operations_up() -> None:
    service = kinds_pb2.DESCRIPTOR.services_by_name["KindsService"]
    registry = Registry(service)
    names = [op.name for op in registry.operations()]
    assert names == ["get_flat", "echo_scalars", "list_items", "get_maps"]
    for op in registry.operations():
        assert registry.operation(op.tool_name) == registry.operation(op.path) == op
    # The generated client's registry is built the same way.
    assert [op.name for op in kinds_client.REGISTRY.operations()] == names


def test_a_request_field_of_a_well_known_type_is_typed_by_its_module(tmp_path: Path) -> None:
    """scripts/bindings.py read only the generated files and failed with
    ``KeyError: '.google.protobuf.Duration'`` on such a field (issue 40)."""
    window = inspect.signature(kinds_client.KindsServiceClient.list_items).parameters["window"]
    assert window.annotation == "duration_pb2.Duration | None"
    assert kinds_client.duration_pb2.Duration is kinds_pb2.ListItemsRequest().window.__class__
    files = codegen._with_imports(REPO, tmp_path, files=[codegen.KINDS_PROTO])
    text = bindings.render_client(files, codegen.KINDS_PACKAGE, own_registry=True)
    assert "from google.protobuf import duration_pb2, " in text


def test_the_handler_base_has_one_method_per_rpc() -> None:
    names = {op.name for op in kinds_client.REGISTRY.operations()}
    methods = {n for n in vars(kinds_handler.KindsServiceHandler) if not n.startswith("_")}
    assert methods == names
