"""The proto comments of the schema at run time (the CLI help, MCP tool and JSON Schema
descriptions), read once from the descriptor set with source info that ``scripts/generate``
ships as ``projectops/v1/projectops.binpb``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from importlib import resources

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import (
    Descriptor,
    EnumDescriptor,
    EnumValueDescriptor,
    FieldDescriptor,
    MethodDescriptor,
    ServiceDescriptor,
)

__all__ = ["comments", "description", "summary"]

AnyDescriptor = (
    Descriptor
    | FieldDescriptor
    | EnumDescriptor
    | EnumValueDescriptor
    | MethodDescriptor
    | ServiceDescriptor
)

# FileDescriptorProto / DescriptorProto / ... field numbers used in SourceCodeInfo paths.
_FILE_MESSAGE = 4
_FILE_ENUM = 5
_FILE_SERVICE = 6
_MSG_FIELD = 2
_MSG_NESTED = 3
_MSG_ENUM = 4
_ENUM_VALUE = 2
_SERVICE_METHOD = 2

# `[Text][full.name]` cross-references (AIP-192) read as their text. The text holds no
# bracket, so each "[" is read up to the next bracket only: "[" * n costs n steps, not n**2.
_XREF = re.compile(r"\[([^\[\]]++)\]\[[\w.]*+\]")


def description(element: AnyDescriptor) -> str:
    """The leading proto comment of a schema element, as plain text (docs/contract.md §8.6).

    Args:
        element: a descriptor of this package's schema: a message, field, enum, enum value,
            service or rpc.

    Returns:
        The comment, paragraphs apart by a blank line and cross-references reduced to their
        text; ``""`` for an element outside this package's schema or without a comment.
    """
    return _comments().get(_full_name(element), "")


def summary(element: AnyDescriptor) -> str:
    """The first sentence of :func:`description`, for one-line listings.

    Args:
        element: as for :func:`description`.

    Returns:
        The sentence, or ``""`` without a comment.
    """
    text = description(element).split("\n\n", 1)[0]
    match = re.match(r"(.+?\.)(\s|$)", text)
    if match is None:
        return text
    return match.group(1)


def _full_name(element: AnyDescriptor) -> str:
    if isinstance(element, EnumValueDescriptor):
        # Enum values have no full_name in upb; protobuf scopes them beside their enum.
        enum = element.type
        scope = enum.file.package
        if enum.containing_type:
            scope = enum.containing_type.full_name
        return f"{scope}.{element.name}"
    return element.full_name


@cache
def _comments() -> dict[str, str]:
    data = resources.files("projectops.v1").joinpath("projectops.binpb").read_bytes()
    return comments(descriptor_pb2.FileDescriptorSet.FromString(data))


def comments(files: descriptor_pb2.FileDescriptorSet) -> dict[str, str]:
    """The cleaned leading comments of a descriptor set (docs/contract.md §8.6).

    Args:
        files: a ``FileDescriptorSet`` built with ``--include_source_info`` (as
            ``projectops.binpb`` is).

    Returns:
        Full name (``projectops.v1.GetReleaseDetailsRequest.version``) -> comment, for every
        element of `files` that has one.
    """
    out: dict[str, str] = {}
    for file in files.file:
        by_path = {
            tuple(loc.path): loc.leading_comments
            for loc in file.source_code_info.location
            if loc.leading_comments
        }
        for name, path in _elements(file):
            comment = by_path.get(path)
            if comment:
                out[name] = _clean(comment)
    return out


def _elements(file: descriptor_pb2.FileDescriptorProto) -> Iterator[tuple[str, tuple[int, ...]]]:
    pkg = file.package
    for i, msg in enumerate(file.message_type):
        yield from _message_elements(msg, pkg, (_FILE_MESSAGE, i))
    for i, enum in enumerate(file.enum_type):
        yield from _enum_elements(enum, pkg, (_FILE_ENUM, i))
    for i, service in enumerate(file.service):
        name = f"{pkg}.{service.name}"
        yield name, (_FILE_SERVICE, i)
        for j, method in enumerate(service.method):
            yield f"{name}.{method.name}", (_FILE_SERVICE, i, _SERVICE_METHOD, j)


def _message_elements(
    msg: descriptor_pb2.DescriptorProto,
    scope: str,
    path: tuple[int, ...],
) -> Iterator[tuple[str, tuple[int, ...]]]:
    name = f"{scope}.{msg.name}"
    yield name, path
    for i, field in enumerate(msg.field):
        yield f"{name}.{field.name}", (*path, _MSG_FIELD, i)
    for i, nested in enumerate(msg.nested_type):
        yield from _message_elements(nested, name, (*path, _MSG_NESTED, i))
    for i, enum in enumerate(msg.enum_type):
        yield from _enum_elements(enum, name, (*path, _MSG_ENUM, i))


def _enum_elements(
    enum: descriptor_pb2.EnumDescriptorProto,
    scope: str,
    path: tuple[int, ...],
) -> Iterator[tuple[str, tuple[int, ...]]]:
    name = f"{scope}.{enum.name}"
    yield name, path
    for i, value in enumerate(enum.value):
        # Enum values are scoped beside their enum, as protobuf names them.
        yield f"{scope}.{value.name}", (*path, _ENUM_VALUE, i)


def _clean(comment: str) -> str:
    paragraphs: list[str] = []
    current: list[str] = []
    for line in comment.splitlines():
        stripped = line.strip()
        if stripped:
            current.append(stripped)
        elif current:
            paragraphs.append(" ".join(current))
            current = []
    if current:
        paragraphs.append(" ".join(current))
    return _XREF.sub(r"\1", "\n\n".join(paragraphs))
