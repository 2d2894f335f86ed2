"""Every element of the schema is documented, and the shipped comments match the generated code."""

import importlib
import re
from collections.abc import Iterator
from importlib import resources

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor, FileDescriptor

import projectops
from projectops.descriptions import AnyDescriptor, description

#: The shipped descriptor set (with comments): every file of proto/, whatever they are.
SHIPPED = descriptor_pb2.FileDescriptorSet.FromString(
    resources.files("projectops.v1").joinpath("projectops.binpb").read_bytes()
)
FILES: list[FileDescriptor] = [
    importlib.import_module(f.name.removesuffix(".proto").replace("/", ".") + "_pb2").DESCRIPTOR
    for f in SHIPPED.file
]


def _messages(d: Descriptor) -> Iterator[AnyDescriptor]:
    yield d
    yield from d.fields
    for nested in d.nested_types:
        if not nested.GetOptions().map_entry:  # made by protoc for a map field: no comment
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
    xref = re.compile(r"\[([^\[\]]+)\]\[[\w.]*\]")
    raw = [
        location.leading_comments
        for file in SHIPPED.file
        for location in file.source_code_info.location
        if xref.search(location.leading_comments)
    ]
    assert raw, "no comment of proto/ holds a [Text][full.name] cross-reference to test with"
    texts = {description(e) for e in _elements()}
    for comment in raw:
        # The comment's words, the reference reduced to its text, are a description.
        words = " ".join(xref.sub(r"\1", comment).replace("//", " ").split())
        assert any(" ".join(text.split()) == words for text in texts), words
    assert not any(xref.search(text) for text in texts)


def test_shipped_descriptor_set_matches_the_generated_modules() -> None:
    shipped = {f.name: f for f in SHIPPED.file}
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
