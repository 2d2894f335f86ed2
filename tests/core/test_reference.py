"""`projectops describe` text: every field of both operations, their JSON types, REQUIRED, width."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from functools import cache

import pytest
from google.api import field_behavior_pb2
from google.protobuf import (
    descriptor_pb2,
    descriptor_pool,
    duration_pb2,
    struct_pb2,
    timestamp_pb2,
)
from google.protobuf.descriptor import Descriptor, FieldDescriptor

import projectops
from projectops import reference
from projectops._wire import value_form
from projectops.registry import Operation, operation_of
from projectops.validation import is_required
from tests.synthetic import without_request_fields

OPS = projectops.operations()
# A field's line: its JSON name at the start of an indented line, then ": " and its type.
FIELD_LINE = re.compile(r"^(?P<indent> +)(?P<name>[a-z][A-Za-z0-9]*): (?P<type>.+)$")


def flat(text: str) -> str:
    """`text` with every run of white space as one space (wrapping undone)."""
    return " ".join(text.split())


def field_lines(text: str) -> list[tuple[int, str, str]]:
    """``(indent, json name, first line of type)`` of every field line of `text`."""
    return [
        (len(m["indent"]), m["name"], m["type"])
        for m in map(FIELD_LINE.match, text.splitlines())
        if m
    ]


def field_types(text: str) -> list[tuple[str, str]]:
    """``(json name, whole type)`` of every field line of `text`: a wrapped type goes on in
    lines indented deeper than the field's description (which is one step in)."""
    lines = text.splitlines()
    found = []
    for i, line in enumerate(lines):
        m = FIELD_LINE.match(line)
        if not m:
            continue
        parts = [m["type"]]
        for more in lines[i + 1 :]:
            if not more.strip() or len(more) - len(more.lstrip()) <= len(m["indent"]) + 2:
                break
            parts.append(more.strip())
        found.append((m["name"], " ".join(parts)))
    return found


def tree(message: Descriptor, seen: set[str] | None = None) -> Iterator[FieldDescriptor]:
    """Every field under `message` as a body shows them: each message type's fields once, where
    it is first met (later ones read "fields shown above"), depth first."""
    seen = {message.full_name} if seen is None else seen
    for fd in message.fields:
        yield fd
        nested = value_form(fd).message
        if nested is not None and nested.full_name not in seen:
            seen.add(nested.full_name)
            yield from tree(nested, seen)


def section(text: str, title: str) -> str:
    """The part of `text` from the line starting with `title` to the next unindented line."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i] and not lines[i][0].isspace()),
        len(lines),
    )
    return "\n".join(lines[start:end])


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.tool_name)
def test_every_operation_is_described_from_the_proto(op: Operation) -> None:
    text = reference.describe(op)
    assert text.splitlines()[0] == f"{op.tool_name} - {op.title}"
    assert f"POST {op.path}" in text
    assert f"operation {op.name}" in text
    if op.read_only:
        assert f"read-only, safe to retry ({op.idempotency})" in text
    elif op.idempotent:
        assert f"idempotent, safe to retry ({op.idempotency})" in text
    else:
        assert "may change data; not marked idempotent" in text
    assert flat(op.description) in flat(text)
    assert f"Request body: {op.request_type.DESCRIPTOR.name}" in text
    assert f"Response body: {op.response_type.DESCRIPTOR.name}" in text
    # The tool name, the operation name and the path name the same operation.
    assert reference.describe(op.tool_name) == reference.describe(op.path) == text


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.tool_name)
def test_every_field_of_request_and_response_is_present_with_its_comment(op: Operation) -> None:
    text = reference.describe(op)
    for title, message_type in (
        ("Request body", op.request_type),
        ("Response body", op.response_type),
    ):
        part = section(text, title)
        shown = [name for _, name, _ in field_lines(part)]
        expected = [fd.json_name for fd in tree(message_type.DESCRIPTOR)]
        assert shown == expected, title
        for fd in tree(message_type.DESCRIPTOR):
            assert flat(projectops.description(fd)) in flat(part), fd.full_name


def test_an_operation_without_request_fields_says_the_body_is_empty() -> None:
    text = reference.describe(without_request_fields())
    request = section(text, "Request body")
    assert field_lines(request) == []
    assert "No fields: the body is the empty JSON object {}." in request


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.tool_name)
def test_required_is_shown_for_exactly_the_required_fields(op: Operation) -> None:
    text = reference.describe(op)
    required = {
        fd.json_name
        for message in (op.request_type, op.response_type)
        for fd in tree(message.DESCRIPTOR)
        if is_required(fd)
    }
    # REQUIRED ends the type, which may wrap: look at each field's whole type.
    marked = {name for name, kind in field_types(text) if kind.endswith(", REQUIRED")}
    assert marked == required
    assert flat(text).count(", REQUIRED") == len(required)


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.tool_name)
def test_a_top_level_required_string_reads_string_required(op: Operation) -> None:
    lines = field_lines(section(reference.describe(op), "Request body"))
    for fd in op.request_type.DESCRIPTOR.fields:
        if is_required(fd) and fd.type == fd.TYPE_STRING and not fd.is_repeated:
            assert (2, fd.json_name, "string, REQUIRED") in lines


def test_int64_timestamp_duration_and_enum_wording() -> None:
    text = flat(reference.describe("get-release-details"))
    assert "total: string (int64 as decimal digits) Number of in-scope scenarios" in text
    assert 'createTime: string (RFC 3339 timestamp such as "2026-01-31T09:30:00Z")' in text
    assert 'runDuration: string (duration in seconds such as "3.5s")' in text
    assert (
        "status: string, enum IssueStatus: ISSUE_STATUS_UNSPECIFIED, ACTIVE, IGNORED, FIXED, "
        "DUPLICATE, IN_PROGRESS_BUG, ARCHIVED_BUG, BLOCKED The issue's status." in text
    )
    assert "testCounts: array of object EnvironmentTestCounts" in text
    assert "focusAreas: array of string" in text


@pytest.mark.parametrize("width", [40, 57, 72, 80, 100, 132])
def test_no_line_is_wider_than_width(width: int) -> None:
    texts = [reference.describe(op, width=width) for op in OPS]
    texts.append(reference.index(width=width))
    texts.append(reference.describe(_synthetic_operation(), width=width))
    for text in texts:
        widest = max(text.splitlines(), key=len)
        assert len(widest) <= width, widest
        assert text.endswith("\n") and not text.endswith("\n\n")
    # Wrapping loses nothing; it breaks no word unless a word is wider than its line.
    for op, text in zip(OPS, texts, strict=False):
        wide = reference.describe(op, width=1000)
        assert "".join(text.split()) == "".join(wide.split())
        if width >= 72:
            assert flat(text) == flat(wide)


def test_width_below_the_minimum_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 40"):
        reference.describe(OPS[0], width=39)
    with pytest.raises(ValueError, match="at least 40"):
        reference.index(width=10)


def test_unknown_operation_lists_the_known_ones() -> None:
    with pytest.raises(projectops.UnknownOperationError) as info:
        reference.describe(OPS[0].tool_name + "-")
    assert all(op.name in str(info.value) for op in OPS)


def test_index_lists_every_operation_with_its_summary_in_service_order() -> None:
    text = reference.index()
    assert text.splitlines()[0] == "The Project-Scoped Operations API."
    rows = [line.split(None, 1) for line in text.splitlines() if line.startswith("  ")]
    assert rows == [[op.tool_name, op.title] for op in OPS]
    assert "projectops describe <tool>" in text


# --- a schema with every shape: recursion, maps, well-known types, scalars --------------------


@cache
def _synthetic_operation() -> Operation:
    """An operation of a private pool whose request is recursive and has every JSON shape."""
    pool = descriptor_pool.DescriptorPool()
    for module in (descriptor_pb2, field_behavior_pb2, duration_pb2, struct_pb2, timestamp_pb2):
        pool.AddSerializedFile(module.DESCRIPTOR.serialized_pb)
    T = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(
        name="rt/v1/tree.proto",
        package="rt.v1",
        syntax="proto3",
        dependency=[
            field_behavior_pb2.DESCRIPTOR.name,
            duration_pb2.DESCRIPTOR.name,
            struct_pb2.DESCRIPTOR.name,
            timestamp_pb2.DESCRIPTOR.name,
        ],
    )
    node = file.message_type.add(name="Node")
    name = node.field.add(name="name", number=1, type=T.TYPE_STRING, label=1)
    name.options.Extensions[field_behavior_pb2.field_behavior].append(field_behavior_pb2.REQUIRED)
    node.field.add(name="child", number=2, type=T.TYPE_MESSAGE, type_name=".rt.v1.Node", label=1)
    node.field.add(name="children", number=3, type=T.TYPE_MESSAGE, type_name=".rt.v1.Node", label=3)
    entry = node.nested_type.add(name="ByNameEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=T.TYPE_STRING, label=1)
    entry.field.add(name="value", number=2, type=T.TYPE_MESSAGE, type_name=".rt.v1.Node", label=1)
    node.field.add(
        name="by_name",
        number=4,
        type=T.TYPE_MESSAGE,
        type_name=".rt.v1.Node.ByNameEntry",
        label=3,
    )
    counts = node.nested_type.add(name="CountsEntry")
    counts.options.map_entry = True
    counts.field.add(name="key", number=1, type=T.TYPE_STRING, label=1)
    counts.field.add(name="value", number=2, type=T.TYPE_UINT64, label=1)
    node.field.add(
        name="counts",
        number=5,
        type=T.TYPE_MESSAGE,
        type_name=".rt.v1.Node.CountsEntry",
        label=3,
    )
    scalars = [
        ("timeout", T.TYPE_MESSAGE, ".google.protobuf.Duration"),
        ("seen", T.TYPE_MESSAGE, ".google.protobuf.Timestamp"),
        ("extra", T.TYPE_MESSAGE, ".google.protobuf.Struct"),
        ("blob", T.TYPE_BYTES, ""),
        ("ratio", T.TYPE_DOUBLE, ""),
        ("small", T.TYPE_INT32, ""),
        ("big", T.TYPE_SINT64, ""),
        ("flag", T.TYPE_BOOL, ""),
    ]
    for number, (field, kind, type_name) in enumerate(scalars, start=6):
        added = node.field.add(name=field, number=number, type=kind, label=1)
        if type_name:
            added.type_name = type_name
    request = file.message_type.add(name="WalkRequest")
    request.field.add(name="root", number=1, type=T.TYPE_MESSAGE, type_name=".rt.v1.Node", label=1)
    file.message_type.add(name="WalkResponse").field.add(
        name="visited", number=1, type=T.TYPE_INT64, label=1
    )
    method = file.service.add(name="S").method.add(
        name="Walk", input_type=".rt.v1.WalkRequest", output_type=".rt.v1.WalkResponse"
    )
    method.options.idempotency_level = descriptor_pb2.MethodOptions.IDEMPOTENT
    method.options.deprecated = True
    pool.Add(file)
    rpc = pool.FindServiceByName("rt.v1.S").methods_by_name["Walk"]
    return dataclasses.replace(
        operation_of(rpc), description="Walk a tree. Answers how many nodes it visited."
    )


def test_recursive_messages_are_expanded_once() -> None:
    text = reference.describe(_synthetic_operation())
    request = section(text, "Request body")
    lines = field_lines(request)
    # Node is expanded under `root` only; inside itself it refers back instead of recursing.
    assert [(indent, name) for indent, name, _ in lines][:3] == [
        (2, "root"),
        (4, "name"),
        (4, "child"),
    ]
    assert [name for _, name, _ in lines].count("name") == 1
    types = {name: kind for _, name, kind in lines}
    assert types["root"] == "object rt.v1.Node"
    assert types["name"] == "string, REQUIRED"
    assert types["child"].startswith("object rt.v1.Node (recursive")
    assert flat(request).count("object rt.v1.Node (recursive: its fields are shown above)") == 3


def test_maps_lists_well_known_types_and_scalars_read_as_json() -> None:
    text = flat(reference.describe(_synthetic_operation()))
    assert "children: array of object rt.v1.Node (recursive" in text
    assert "byName: object of string -> object rt.v1.Node (recursive" in text
    # A request body also takes 64-bit integers as JSON numbers; a response is written as text.
    assert (
        "counts: object of string -> string (uint64 as decimal digits; a JSON number is "
        "accepted too)" in text
    )
    assert "big: string (sint64 as decimal digits; a JSON number is accepted too)" in text
    assert "visited: string (int64 as decimal digits)" in text
    assert 'timeout: string (duration in seconds such as "3.5s")' in text
    assert 'seen: string (RFC 3339 timestamp such as "2026-01-31T09:30:00Z")' in text
    assert "extra: object (google.protobuf.Struct)" in text
    assert "blob: string (base64)" in text
    assert "ratio: number (double)" in text
    assert "small: integer (int32)" in text
    assert "flag: boolean" in text


def test_idempotency_and_deprecation_are_stated() -> None:
    op = _synthetic_operation()
    text = reference.describe(op)
    assert "idempotent, safe to retry (IDEMPOTENT)" in text
    assert "DEPRECATED" in text
