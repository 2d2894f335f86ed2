"""Every element of the schema is documented, and the shipped comments match the generated code."""

from collections.abc import Iterator

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor, FileDescriptor

import projectops
from projectops.descriptions import AnyDescriptor, description
from projectops.v1 import error_pb2, operations_pb2, release_pb2, rum_environment_pb2

FILES: list[FileDescriptor] = [
    operations_pb2.DESCRIPTOR,
    release_pb2.DESCRIPTOR,
    rum_environment_pb2.DESCRIPTOR,
    error_pb2.DESCRIPTOR,
]


def _messages(d: Descriptor) -> Iterator[AnyDescriptor]:
    yield d
    yield from d.fields
    for nested in d.nested_types:
        yield from _messages(nested)


def _elements() -> Iterator[AnyDescriptor]:
    for f in FILES:
        for message in f.message_types_by_name.values():
            yield from _messages(message)
        for enum in f.enum_types_by_name.values():
            yield enum
            yield from enum.values
        for service in f.services_by_name.values():
            yield service
            yield from service.methods


def test_every_element_has_a_description() -> None:
    undocumented = [e.full_name for e in _elements() if not description(e)]
    assert undocumented == []


def test_cross_references_read_as_text() -> None:
    text = description(operations_pb2.GetReleaseDetailsRequest.DESCRIPTOR)
    assert text == "Request of GetReleaseDetails."


def test_shipped_descriptor_set_matches_the_generated_modules() -> None:
    from importlib import resources

    data = resources.files("projectops.v1").joinpath("projectops.binpb").read_bytes()
    shipped = {f.name: f for f in descriptor_pb2.FileDescriptorSet.FromString(data).file}
    for module in FILES:
        generated = descriptor_pb2.FileDescriptorProto.FromString(module.serialized_pb)
        copy = descriptor_pb2.FileDescriptorProto()
        copy.CopyFrom(shipped[module.name])
        copy.ClearField("source_code_info")
        _strip_json_names(copy)  # protoc's python_out drops json_name from the embedded copy
        assert copy == generated, module.name


def _strip_json_names(file: descriptor_pb2.FileDescriptorProto) -> None:
    stack = list(file.message_type)
    while stack:
        message = stack.pop()
        for field in message.field:
            field.ClearField("json_name")
        stack.extend(message.nested_type)


def test_wellknown_types_have_no_description() -> None:
    from google.protobuf import timestamp_pb2

    assert projectops.description(timestamp_pb2.Timestamp.DESCRIPTOR) == ""
