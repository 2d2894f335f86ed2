"""The fast JSON codec (``projectops._fastcodec``) against ``json_format``, on generated input.

``json_format`` with the codec's options is the reference: ``to_dict`` must return exactly what
``MessageToDict`` returns reordered into proto field order (the same JSON text, key order
included), and ``from_dict`` must build exactly the message ``ParseDict`` builds, or raise
``Unsupported``. Accepting an input the reference rejects is a bug; raising ``Unsupported``
where the reference accepts is allowed (the codec then runs json_format), but never on the
output of ``to_dict`` for the common types.

Two schemas: every message of ``projectops.v1``, and a test-only schema built here from
``FileDescriptorProto`` with what the package does not use yet (every scalar type, maps of
every key type, oneofs, proto3 optional, bytes, floats, recursion, a custom JSON name, a Python
keyword as a field name, every well-known type, proto2 closed enums, defaults and extensions).
"""

from __future__ import annotations

import base64
import copy
import json
import math
import random
from collections.abc import Mapping
from typing import Any

import pytest
from google.protobuf import (
    any_pb2,
    descriptor_pb2,
    descriptor_pool,
    duration_pb2,
    empty_pb2,
    field_mask_pb2,
    json_format,
    message_factory,
    struct_pb2,
    timestamp_pb2,
    wrappers_pb2,
)
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from projectops import InvalidArgument, _fastcodec, codec
from projectops._wire import is_map, value_form
from projectops.v1 import error_pb2, operations_pb2, release_pb2, rum_environment_pb2
from tests import golden
from tests.golden import GOLDEN
from tests.hypothesis_profiles import examples

SETTINGS = settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
OPTIONS_OUT: dict[str, Any] = {
    "preserving_proto_field_name": False,
    "always_print_fields_with_no_presence": True,
    "use_integers_for_enums": False,
}
F = descriptor_pb2.FieldDescriptorProto

# --------------------------------------------------------------------------------------------
# The reference: json_format with the codec's options and rules.


def reference_to_dict(message: Message) -> dict[str, Any]:
    return in_field_order(json_format.MessageToDict(message, **OPTIONS_OUT), message.DESCRIPTOR)


def in_field_order(data: dict[str, Any], descriptor: Descriptor) -> dict[str, Any]:
    # codec.to_dict's reordering, restated so that the reference does not depend on the codec
    out: dict[str, Any] = {}
    for fd in descriptor.fields:
        if fd.json_name not in data:
            continue
        value = data[fd.json_name]
        nested = value_form(fd).message
        if nested is not None:
            if is_map(fd):
                value = {k: in_field_order(v, nested) for k, v in value.items()}
            elif fd.is_repeated:
                value = [in_field_order(v, nested) for v in value]
            else:
                value = in_field_order(value, nested)
        out[fd.json_name] = value
    out.update((k, v) for k, v in data.items() if k not in out)
    return out


def reference_from_dict(data: Any, cls: type[Message], strict: bool) -> Message:
    """json_format.ParseDict, then (strict) the codec's structural walk, which rejects enum
    values that are not strings and message values that are not objects."""
    message = cls()
    json_format.ParseDict(copy.deepcopy(data), message, ignore_unknown_fields=not strict)
    if strict and not strictly_shaped(data, cls.DESCRIPTOR):
        raise ValueError("rejected by the strict walk")
    return message


def strictly_shaped(value: Mapping[str, Any], descriptor: Descriptor) -> bool:
    fields: dict[str, FieldDescriptor] = {}
    for fd in descriptor.fields:
        fields[fd.name] = fd
        fields[fd.json_name] = fd
    for key, item in value.items():
        fd = fields.get(key)
        if fd is None:
            return False
        if item is None:
            continue
        if is_map(fd):
            items = list(item.values()) if isinstance(item, Mapping) else [None]
        elif fd.is_repeated:
            items = item if isinstance(item, list) else [None]
        else:
            items = [item]
        for v in items:
            nested = value_form(fd).message
            if nested is not None:
                if not isinstance(v, Mapping) or not strictly_shaped(v, nested):
                    return False
            elif fd.type == FieldDescriptor.TYPE_ENUM and not isinstance(v, str):
                return False
    return True


def wire(message: Message) -> bytes:
    return message.SerializeToString(deterministic=True)  # NaN-safe equality


UNSUPPORTED = object()  # the reference accepts, the fast path leaves it to json_format
REJECTED = object()  # the reference rejects (and so the fast path refuses)


def check_decode(data: Any, cls: type[Message], strict: bool) -> object:
    """Assert that the fast path agrees with the reference; return its result: the message,
    UNSUPPORTED, or REJECTED when both the reference rejects and the fast path refuses."""
    try:
        expected: Message | None = reference_from_dict(data, cls, strict)
    except Exception:
        expected = None
    before = copy.deepcopy(data)
    try:
        got = _fastcodec.from_dict(data, cls, strict=strict)
    except _fastcodec.Unsupported:
        return UNSUPPORTED if expected is not None else REJECTED
    finally:
        assert repr(data) == repr(before), "from_dict changed its input"
    assert expected is not None, f"fast path accepted what json_format rejects: {data!r}"
    assert type(got) is cls
    assert wire(got) == wire(expected), f"different messages for {data!r}"
    return got


def check_encode(message: Message) -> dict[str, Any] | None:
    try:
        expected = reference_to_dict(message)
    except Exception as exc:
        with pytest.raises(type(exc)):
            _fastcodec.to_dict(message)
        return None
    got = _fastcodec.to_dict(message)
    # Same JSON text: same values, same types (1 vs 1.0 vs true), same key order everywhere.
    assert json.dumps(got) == json.dumps(expected)
    return got


# --------------------------------------------------------------------------------------------
# The test schema, built at test time (no protoc).


def _field(
    message: descriptor_pb2.DescriptorProto,
    name: str,
    number: int,
    kind: int,
    *,
    type_name: str = "",
    label: int = F.LABEL_OPTIONAL,
    **options: Any,
) -> None:
    if type_name:
        options["type_name"] = type_name
    message.field.add(name=name, number=number, type=kind, label=label, **options)


def _map(
    file: descriptor_pb2.FileDescriptorProto,
    message: descriptor_pb2.DescriptorProto,
    name: str,
    number: int,
    key: int,
    value: int,
    value_type: str = "",
) -> None:
    entry_name = "".join(part.capitalize() for part in name.split("_")) + "Entry"
    entry = message.nested_type.add(name=entry_name)
    entry.options.map_entry = True
    _field(entry, "key", 1, key)
    _field(entry, "value", 2, value, type_name=value_type)
    _field(
        message,
        name,
        number,
        F.TYPE_MESSAGE,
        type_name=f".{file.package}.{message.name}.{entry_name}",
        label=F.LABEL_REPEATED,
    )


SCALARS = {
    "int32": F.TYPE_INT32,
    "int64": F.TYPE_INT64,
    "uint32": F.TYPE_UINT32,
    "uint64": F.TYPE_UINT64,
    "sint32": F.TYPE_SINT32,
    "sint64": F.TYPE_SINT64,
    "fixed32": F.TYPE_FIXED32,
    "fixed64": F.TYPE_FIXED64,
    "sfixed32": F.TYPE_SFIXED32,
    "sfixed64": F.TYPE_SFIXED64,
    "bool": F.TYPE_BOOL,
    "string": F.TYPE_STRING,
    "bytes": F.TYPE_BYTES,
    "float": F.TYPE_FLOAT,
    "double": F.TYPE_DOUBLE,
}
WKT_FIELDS = {
    "timestamp": "Timestamp",
    "duration": "Duration",
    "struct": "Struct",
    "list_value": "ListValue",
    "int32_value": "Int32Value",
    "int64_value": "Int64Value",
    "uint32_value": "UInt32Value",
    "uint64_value": "UInt64Value",
    "bool_value": "BoolValue",
    "string_value": "StringValue",
    "bytes_value": "BytesValue",
    "float_value": "FloatValue",
    "double_value": "DoubleValue",
    "field_mask": "FieldMask",
    "empty": "Empty",
}


def build_test_schema() -> descriptor_pool.DescriptorPool:
    pool = descriptor_pool.DescriptorPool()
    for module in (
        any_pb2,
        duration_pb2,
        empty_pb2,
        field_mask_pb2,
        struct_pb2,
        timestamp_pb2,
        wrappers_pb2,
    ):
        pool.AddSerializedFile(module.DESCRIPTOR.serialized_pb)
    file = descriptor_pb2.FileDescriptorProto(
        name="fastcodec_test.proto",
        package="fctest",
        syntax="proto3",
        dependency=[
            module.DESCRIPTOR.name
            for module in (
                any_pb2,
                duration_pb2,
                empty_pb2,
                field_mask_pb2,
                struct_pb2,
                timestamp_pb2,
                wrappers_pb2,
            )
        ],
    )
    color = file.enum_type.add(name="Color")
    for number, name in enumerate(["COLOR_UNSPECIFIED", "RED", "GREEN", "BLUE"]):
        color.value.add(name=name, number=number)

    scalars = file.message_type.add(name="Scalars")
    number = 0
    for name, kind in SCALARS.items():
        number += 1
        _field(scalars, f"{name}_field", number, kind)
        number += 1
        _field(scalars, f"repeated_{name}", number, kind, label=F.LABEL_REPEATED)
    _field(scalars, "color", 40, F.TYPE_ENUM, type_name=".fctest.Color")
    _field(scalars, "colors", 41, F.TYPE_ENUM, type_name=".fctest.Color", label=F.LABEL_REPEATED)
    _field(scalars, "renamed", 42, F.TYPE_STRING, json_name="otherName")
    _field(scalars, "from", 43, F.TYPE_INT32)  # a Python keyword
    scalars.oneof_decl.add(name="choice")
    _field(scalars, "choice_text", 50, F.TYPE_STRING, oneof_index=0)
    _field(scalars, "choice_number", 51, F.TYPE_INT64, oneof_index=0)
    _field(scalars, "choice_color", 52, F.TYPE_ENUM, type_name=".fctest.Color", oneof_index=0)
    _field(scalars, "choice_leaf", 53, F.TYPE_MESSAGE, type_name=".fctest.Leaf", oneof_index=0)
    scalars.oneof_decl.add(name="_maybe_count")
    _field(scalars, "maybe_count", 54, F.TYPE_INT32, oneof_index=1, proto3_optional=True)
    scalars.oneof_decl.add(name="_maybe_name")
    _field(scalars, "maybe_name", 55, F.TYPE_STRING, oneof_index=2, proto3_optional=True)
    # declared out of number order: output follows the declaration
    _field(scalars, "late_first", 61, F.TYPE_STRING)
    scalars.field.insert(0, scalars.field.pop())

    leaf = file.message_type.add(name="Leaf")
    _field(leaf, "name", 1, F.TYPE_STRING)
    _field(leaf, "count", 2, F.TYPE_INT64)
    _field(leaf, "color", 3, F.TYPE_ENUM, type_name=".fctest.Color")

    maps = file.message_type.add(name="Maps")
    _map(file, maps, "string_to_int32", 1, F.TYPE_STRING, F.TYPE_INT32)
    _map(file, maps, "int32_to_string", 2, F.TYPE_INT32, F.TYPE_STRING)
    _map(file, maps, "int64_to_leaf", 3, F.TYPE_INT64, F.TYPE_MESSAGE, ".fctest.Leaf")
    _map(file, maps, "uint32_to_int64", 4, F.TYPE_UINT32, F.TYPE_INT64)
    _map(file, maps, "uint64_to_color", 5, F.TYPE_UINT64, F.TYPE_ENUM, ".fctest.Color")
    _map(file, maps, "sint64_to_bytes", 6, F.TYPE_SINT64, F.TYPE_BYTES)
    _map(file, maps, "bool_to_string", 7, F.TYPE_BOOL, F.TYPE_STRING)
    _map(file, maps, "string_to_leaf", 8, F.TYPE_STRING, F.TYPE_MESSAGE, ".fctest.Leaf")
    _map(file, maps, "string_to_double", 9, F.TYPE_STRING, F.TYPE_DOUBLE)
    _map(file, maps, "fixed32_to_float", 10, F.TYPE_FIXED32, F.TYPE_FLOAT)
    _map(file, maps, "string_to_bool", 11, F.TYPE_STRING, F.TYPE_BOOL)
    _map(
        file,
        maps,
        "string_to_timestamp",
        12,
        F.TYPE_STRING,
        F.TYPE_MESSAGE,
        ".google.protobuf.Timestamp",
    )
    _map(
        file,
        maps,
        "string_to_value",
        13,
        F.TYPE_STRING,
        F.TYPE_MESSAGE,
        ".google.protobuf.Value",
    )

    wkts = file.message_type.add(name="Wkts")
    number = 0
    for name, type_name in WKT_FIELDS.items():
        number += 1
        _field(wkts, name, number, F.TYPE_MESSAGE, type_name=f".google.protobuf.{type_name}")
        number += 1
        _field(
            wkts,
            f"repeated_{name}",
            number,
            F.TYPE_MESSAGE,
            type_name=f".google.protobuf.{type_name}",
            label=F.LABEL_REPEATED,
        )
    _field(
        wkts,
        "values",
        50,
        F.TYPE_MESSAGE,
        type_name=".google.protobuf.Value",
        label=F.LABEL_REPEATED,
    )

    exotic = file.message_type.add(name="Exotic")  # what the fast path leaves to json_format
    _field(exotic, "any", 1, F.TYPE_MESSAGE, type_name=".google.protobuf.Any")
    _field(exotic, "value", 2, F.TYPE_MESSAGE, type_name=".google.protobuf.Value")
    _field(exotic, "null", 3, F.TYPE_ENUM, type_name=".google.protobuf.NullValue")
    _field(
        exotic,
        "anys",
        4,
        F.TYPE_MESSAGE,
        type_name=".google.protobuf.Any",
        label=F.LABEL_REPEATED,
    )

    tree = file.message_type.add(name="Tree")  # recursion, and every other type inside
    _field(tree, "label", 1, F.TYPE_STRING)
    _field(tree, "children", 2, F.TYPE_MESSAGE, type_name=".fctest.Tree", label=F.LABEL_REPEATED)
    _field(tree, "parent", 3, F.TYPE_MESSAGE, type_name=".fctest.Tree")
    _field(tree, "scalars", 4, F.TYPE_MESSAGE, type_name=".fctest.Scalars")
    _field(tree, "maps", 5, F.TYPE_MESSAGE, type_name=".fctest.Maps")
    _field(tree, "wkts", 6, F.TYPE_MESSAGE, type_name=".fctest.Wkts")
    _field(tree, "leaves", 7, F.TYPE_MESSAGE, type_name=".fctest.Leaf", label=F.LABEL_REPEATED)
    pool.Add(file)

    legacy_file = descriptor_pb2.FileDescriptorProto(
        name="fastcodec_legacy.proto", package="fclegacy", syntax="proto2"
    )
    closed = legacy_file.enum_type.add(name="Size")
    for number, name in ((1, "SMALL"), (2, "LARGE"), (5, "HUGE")):
        closed.value.add(name=name, number=number)
    legacy = legacy_file.message_type.add(name="Legacy")
    _field(legacy, "count", 1, F.TYPE_INT32, default_value="7")
    _field(legacy, "size", 2, F.TYPE_ENUM, type_name=".fclegacy.Size")
    _field(legacy, "sizes", 3, F.TYPE_ENUM, type_name=".fclegacy.Size", label=F.LABEL_REPEATED)
    _field(legacy, "title", 4, F.TYPE_STRING, default_value="untitled")
    _field(legacy, "child", 5, F.TYPE_MESSAGE, type_name=".fclegacy.Legacy")
    legacy.extension_range.add(start=100, end=200)
    legacy_file.extension.add(
        name="extra",
        number=100,
        type=F.TYPE_INT32,
        label=F.LABEL_OPTIONAL,
        extendee=".fclegacy.Legacy",
    )
    pool.Add(legacy_file)
    return pool


POOL = build_test_schema()


def schema_class(name: str) -> type[Message]:
    return message_factory.GetMessageClass(POOL.FindMessageTypeByName(name))


PACKAGE_TYPES = [
    getattr(module, name)
    for module in (error_pb2, operations_pb2, release_pb2, rum_environment_pb2)
    for name in module.DESCRIPTOR.message_types_by_name
]
COMMON_TEST_TYPES = [
    schema_class(f"fctest.{n}") for n in ("Scalars", "Leaf", "Maps", "Wkts", "Tree")
] + [schema_class("fclegacy.Legacy")]
EXOTIC = schema_class("fctest.Exotic")
SCALARS_TYPE = schema_class("fctest.Scalars")
MAPS_TYPE = schema_class("fctest.Maps")
WKTS_TYPE = schema_class("fctest.Wkts")
ALL_TYPES = PACKAGE_TYPES + COMMON_TEST_TYPES + [EXOTIC]
EXTRA = POOL.FindExtensionByName("fclegacy.extra")

# --------------------------------------------------------------------------------------------
# Messages of any type, from their descriptors.

INT_RANGES = {
    F.TYPE_INT32: (-(2**31), 2**31 - 1),
    F.TYPE_SINT32: (-(2**31), 2**31 - 1),
    F.TYPE_SFIXED32: (-(2**31), 2**31 - 1),
    F.TYPE_UINT32: (0, 2**32 - 1),
    F.TYPE_FIXED32: (0, 2**32 - 1),
    F.TYPE_INT64: (-(2**63), 2**63 - 1),
    F.TYPE_SINT64: (-(2**63), 2**63 - 1),
    F.TYPE_SFIXED64: (-(2**63), 2**63 - 1),
    F.TYPE_UINT64: (0, 2**64 - 1),
    F.TYPE_FIXED64: (0, 2**64 - 1),
}
JSON_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(-(2**60), 2**60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
NANOS = st.sampled_from([0, 1, 999_999_999, 500_000_000, 123_000_000, 123_456_000, 123_456_789])


def scalar_values(fd: FieldDescriptor) -> st.SearchStrategy[Any]:
    kind = fd.type
    if kind in INT_RANGES:
        low, high = INT_RANGES[kind]
        return st.integers(low, high) | st.sampled_from(
            [low, high, 0, 2**53 + 1 if high > 2**53 else high]
        )
    if kind == F.TYPE_BOOL:
        return st.booleans()
    if kind == F.TYPE_STRING:
        return st.text(max_size=10)
    if kind == F.TYPE_BYTES:
        return st.binary(max_size=10)
    if kind == F.TYPE_FLOAT:
        return st.floats(width=32)
    if kind == F.TYPE_DOUBLE:
        return st.floats()
    if kind == F.TYPE_ENUM:
        numbers = [v.number for v in fd.enum_type.values]
        if fd.enum_type.is_closed:
            return st.sampled_from(numbers)
        return st.sampled_from(numbers) | st.integers(-3, 50)  # open enums keep unknown numbers
    raise AssertionError(fd)


@st.composite
def wkt_messages(draw: st.DrawFn, cls: type[Message]) -> Message:
    name = cls.DESCRIPTOR.full_name
    message: Any = cls()
    if name == "google.protobuf.Timestamp":
        message.seconds = draw(
            st.integers(-62135596800, 253402300799)
            | st.sampled_from([0, -1, 1_700_000_000, 253402300800, -62135596801])  # some invalid
        )
        message.nanos = draw(NANOS)
    elif name == "google.protobuf.Duration":
        seconds = draw(st.integers(-315576000000, 315576000000) | st.sampled_from([0, 1, -1]))
        nanos = draw(NANOS)
        message.seconds = seconds
        message.nanos = -nanos if seconds < 0 or (seconds == 0 and draw(st.booleans())) else nanos
    elif name == "google.protobuf.Struct":
        message.update(draw(st.dictionaries(st.text(max_size=6), JSON_VALUES, max_size=3)))
    elif name == "google.protobuf.ListValue":
        message.extend(draw(st.lists(JSON_VALUES, max_size=3)))
    elif name == "google.protobuf.Value":
        struct = struct_pb2.Struct()
        struct.update({"v": draw(JSON_VALUES)})
        message.ParseFromString(struct.fields["v"].SerializeToString())
    elif name == "google.protobuf.FieldMask":
        message.paths.extend(
            draw(st.lists(st.from_regex(r"[a-z]{1,4}(_[a-z]{1,3})?", fullmatch=True), max_size=3))
        )
    elif name == "google.protobuf.Empty":
        pass
    elif name == "google.protobuf.Any":
        packed = draw(
            st.sampled_from(
                [
                    timestamp_pb2.Timestamp(seconds=5, nanos=1000),
                    duration_pb2.Duration(seconds=-3),
                    wrappers_pb2.Int64Value(value=7),
                    release_pb2.Issue(issue_id=9, title="x", status=release_pb2.ACTIVE),
                    empty_pb2.Empty(),
                ]
            )
        )
        if draw(st.booleans()):
            message.Pack(packed)
    else:  # a wrapper
        value_fd = cls.DESCRIPTOR.fields_by_name["value"]
        message.value = draw(scalar_values(value_fd))
    return message


def message_class(descriptor: Descriptor) -> type[Message]:
    return message_factory.GetMessageClass(descriptor)


@st.composite
def messages(
    draw: st.DrawFn, cls: type[Message], depth: int = 0, extensions: bool = True
) -> Message:
    descriptor = cls.DESCRIPTOR
    if descriptor.file.name.startswith("google/protobuf/"):
        return draw(wkt_messages(cls))
    message: Any = cls()
    for fd in descriptor.fields:
        if not draw(st.booleans()):
            continue
        nested_type = fd.message_type
        if nested_type is not None and not is_map(fd) and depth >= 3:
            continue
        if is_map(fd):
            key_fd = nested_type.fields_by_name["key"]
            value_fd = nested_type.fields_by_name["value"]
            entries = draw(
                st.dictionaries(scalar_values(key_fd), field_values(value_fd, depth), max_size=3)
            )
            target = getattr(message, fd.name)
            for key, value in entries.items():
                if value_fd.message_type is not None:
                    target[key].CopyFrom(value)
                else:
                    target[key] = value
        elif fd.is_repeated:
            values = draw(st.lists(field_values(fd, depth), max_size=3))
            target = getattr(message, fd.name)
            if nested_type is not None:
                for value in values:
                    target.add().CopyFrom(value)
            else:
                target.extend(values)
        elif nested_type is not None:
            getattr(message, fd.name).CopyFrom(draw(field_values(fd, depth)))
        else:
            setattr(message, fd.name, draw(field_values(fd, depth)))
    if extensions and descriptor.full_name == "fclegacy.Legacy" and draw(st.booleans()):
        message.Extensions[EXTRA] = draw(st.integers(-5, 5))
    return message


def field_values(fd: FieldDescriptor, depth: int) -> st.SearchStrategy[Any]:
    if fd.message_type is not None:
        return messages(message_class(fd.message_type), depth + 1, extensions=False)
    return scalar_values(fd)


def any_message(types: list[type[Message]], extensions: bool = True) -> st.SearchStrategy[Message]:
    return st.sampled_from(types).flatmap(lambda cls: messages(cls, extensions=extensions))


# --------------------------------------------------------------------------------------------
# JSON input around a message type: valid values, values of the wrong form, edge cases.

# fmt: off
BOUNDARY_INTS = [
    0, 1, -1, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**32 - 1, 2**32, 2**53 + 1,
    2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64 - 1, 2**64, 10**30,
]
INTEGER_INPUTS = [
    *BOUNDARY_INTS,
    *(str(n) for n in BOUNDARY_INTS),
    1.0, -0.0, 1.5, 1e3, 1e20, 2.0**63, 2.0**64, math.nan, math.inf,
    "1e3", "1.0", "1.5", " 1", "1 ", "+1", "0x10", "007", "-0", "", "-", "\uff11", "\u0663",
    "1_000", "99999999999999999999999", "-007", "9" * 5000, True, False,
]
FLOAT_INPUTS = [
    0, 1, -1, 0.0, -0.0, 1.5, 0.1, 3.4028234663852886e38, 3.4028235e38, 3.5e38, 1e39, -1e39,
    1e308, 5e-324, 1e-50, 2**1000, 10**400, 16777217, math.nan, math.inf, -math.inf,
    "NaN", "Infinity", "-Infinity", "nan", "inf", "-inf", "1.5", "-2.5e3", "1e39", "1e400",
    " 1.5", "1_0", "0x1p3", "", "1.", ".5", "00.5", True,
]
BOOL_INPUTS = [True, False, "true", "false", 0, 1, "True"]
STRING_INPUTS = [
    "", "abc", "\u00e9t\u00e9", "\ud800", "a\udc00b", "\U0001f600", "\ud83d\ude00", 1, True,
]
BYTES_INPUTS = [
    "", "AAEC", "AAE", "AA==", "AA", "-_-_", "+/+/", "A", "A===", "!!!", "AA=A", "YQ", "YWJj",
    "YW Jj", "\u00e9", "AA\n", "=", "YQ==YQ==", 1,
]
TIMESTAMP_INPUTS = [
    "1970-01-01T00:00:00Z", "2026-11-20T21:10:00Z", "2026-11-20T21:10:00.5Z",
    "2026-11-20T21:10:00.123Z", "2026-11-20T21:10:00.123456Z", "2026-11-20T21:10:00.123456789Z",
    "2026-11-20T21:10:00.1234567891Z", "2026-11-20T21:10:00.000Z", "2026-11-20T21:10:00+01:00",
    "2026-11-20T21:10:00-05:30", "2026-11-20T21:10:00.25+00:00", "2026-11-20t21:10:00Z",
    "2026-11-20T21:10:00z", "2026-11-20 21:10:00Z", "2026-11-20T21:10:00", "2026-02-30T00:00:00Z",
    "2024-02-29T00:00:00Z", "2026-11-20T24:00:00Z", "2026-11-20T23:60:00Z",
    "2026-11-20T23:59:60Z", "0001-01-01T00:00:00Z", "0000-01-01T00:00:00Z",
    "9999-12-31T23:59:59Z", "9999-12-31T23:59:59.999999999Z", "9999-12-31T23:59:59-01:00",
    "0001-01-01T00:00:00+01:00", "2026-1-2T3:4:5Z", "2026-11-20T21:10:00.Z",
    "2026-11-20T21:10:00+0100", "2026-11-20T21:10:00+1:00", "2026-11-20T21:10:00+99:99",
    "20261120T211000Z", "2026-11-20T21:10:00ZZ", "2026-11-20T21:10:00.\u0661Z",
    "\uff12026-11-20T21:10:00Z", "", 0, 1.5,
]
DURATION_INPUTS = [
    "0s", "1s", "-1s", "1.5s", "-0.5s", "0.000000001s", "1.0000000001s", "315576000000s",
    "315576000001s", "-315576000000s", "-315576000000.999999999s", "1", "1.s", ".5s", "+1s",
    " 1s", "1e3s", "1.5S", "s", "", "-0s", "00001s", "1.123456789s", "-1.123456789s",
    "1.000s", "\u0661s", "-", "--1s", 1, 1.5,
]
# fmt: on
ANY_INPUTS = [
    {},
    {"@type": "type.googleapis.com/google.protobuf.Duration", "value": "1.5s"},
    {"@type": "type.googleapis.com/projectops.v1.Issue", "issueId": "5", "status": "ACTIVE"},
    {"@type": "type.googleapis.com/projectops.v1.Issue", "nope": 1},
    {"@type": "type.googleapis.com/google.protobuf.Int32Value", "value": 3},
    {"@type": "bad"},
    {"value": 1},
]
JUNK = [None, [], {}, [None], [1, "a"], {"a": 1}, "x", 0, -1.5, True]
UNKNOWN_KEYS = ["unknownField", "[ext.foo]", "[]", "\u00e9t\u00e9", "\ud800x", "", "@type"]


def valid_leaf_inputs(fd: FieldDescriptor) -> st.SearchStrategy[Any]:
    """Well-formed JSON for one scalar element of `fd`, in the forms json_format accepts."""
    kind = fd.type
    if kind in INT_RANGES:
        low, high = INT_RANGES[kind]
        return st.integers(low, high).flatmap(lambda n: st.sampled_from([n, str(n)]))
    if kind == F.TYPE_FLOAT:
        return st.floats(width=32, allow_nan=False, allow_infinity=False) | st.sampled_from(
            ["NaN", "Infinity", "-Infinity", 1, -3]
        )
    if kind == F.TYPE_DOUBLE:
        return st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(
            ["NaN", "Infinity", "-Infinity", 1, -3]
        )
    if kind == F.TYPE_BOOL:
        return st.booleans()
    if kind == F.TYPE_STRING:
        return st.text(max_size=6)
    if kind == F.TYPE_BYTES:
        return st.tuples(st.binary(max_size=6), st.booleans(), st.booleans()).map(_base64)
    if kind == F.TYPE_ENUM:
        return st.sampled_from([v.name for v in fd.enum_type.values] + ["UNKNOWN_NAME"])
    raise AssertionError(fd)


def _base64(case: tuple[bytes, bool, bool]) -> str:
    data, urlsafe, padded = case
    text = (base64.urlsafe_b64encode if urlsafe else base64.b64encode)(data).decode()
    return text if padded else text.rstrip("=")


def odd_leaf_inputs(fd: FieldDescriptor) -> st.SearchStrategy[Any]:
    """Edge cases and wrong forms for one scalar element of `fd`."""
    kind = fd.type
    if kind in INT_RANGES:
        return st.sampled_from(INTEGER_INPUTS)
    if kind in (F.TYPE_FLOAT, F.TYPE_DOUBLE):
        return st.sampled_from(FLOAT_INPUTS)
    if kind == F.TYPE_BOOL:
        return st.sampled_from(BOOL_INPUTS)
    if kind == F.TYPE_STRING:
        return st.sampled_from(STRING_INPUTS)
    if kind == F.TYPE_BYTES:
        return st.sampled_from(BYTES_INPUTS)
    if kind == F.TYPE_ENUM:
        numbers = [v.number for v in fd.enum_type.values]
        odd = ["", "1", " 1", "red", 0, 1, 99, -1, 2**31, 1.0, True]
        return st.sampled_from(numbers) | st.sampled_from(odd)
    raise AssertionError(fd)


VALID_WKT_INPUTS: dict[str, st.SearchStrategy[Any]] = {
    "google.protobuf.Timestamp": st.tuples(st.integers(-62135596800, 253402300799), NANOS).map(
        lambda sn: timestamp_pb2.Timestamp(seconds=sn[0], nanos=sn[1]).ToJsonString()
    ),
    "google.protobuf.Duration": st.tuples(st.integers(-(10**10), 10**10), NANOS).map(
        lambda sn: duration_pb2.Duration(
            seconds=sn[0], nanos=-sn[1] if sn[0] < 0 else sn[1]
        ).ToJsonString()
    ),
    "google.protobuf.Any": st.sampled_from(ANY_INPUTS[:3]),
    "google.protobuf.FieldMask": st.sampled_from(["", "a", "fooBar,baz.qux"]),
    "google.protobuf.Struct": st.dictionaries(st.text(max_size=4), JSON_VALUES, max_size=3),
    "google.protobuf.ListValue": st.lists(JSON_VALUES, max_size=3),
    "google.protobuf.Value": JSON_VALUES,
    "google.protobuf.Empty": st.just({}),
}
ODD_WKT_INPUTS: dict[str, st.SearchStrategy[Any]] = {
    "google.protobuf.Timestamp": st.sampled_from(TIMESTAMP_INPUTS),
    "google.protobuf.Duration": st.sampled_from(DURATION_INPUTS),
    "google.protobuf.Any": st.sampled_from(ANY_INPUTS),
    "google.protobuf.FieldMask": st.sampled_from(["foo_bar", "a,,b", "A", 1, None]),
    "google.protobuf.Struct": st.sampled_from([[], "x", {"a": math.nan}, 1]),
    "google.protobuf.ListValue": st.sampled_from([{}, "x", [math.inf]]),
    "google.protobuf.Value": st.sampled_from([math.nan, math.inf, [None, {"a": None}]]),
    "google.protobuf.Empty": st.sampled_from([{"a": 1}, [], "", "x"]),
}


@st.composite
def element_inputs(
    draw: st.DrawFn, fd: FieldDescriptor, depth: int, chaos: float, rnd: random.Random
) -> Any:
    """JSON for one element of `fd`: well-formed, or (with probability `chaos`) odd."""
    nested = fd.message_type
    wkt = nested is not None and nested.file.name.startswith("google/protobuf/")
    if nested is not None and not wkt:
        return draw(json_inputs(nested, depth + 1, chaos, rnd))
    if wkt:
        name = nested.full_name
        if name in VALID_WKT_INPUTS:
            valid, odd = VALID_WKT_INPUTS[name], ODD_WKT_INPUTS[name]
        else:  # a wrapper: its value's forms
            value_fd = nested.fields_by_name["value"]
            valid, odd = valid_leaf_inputs(value_fd), odd_leaf_inputs(value_fd)
    else:
        valid, odd = valid_leaf_inputs(fd), odd_leaf_inputs(fd)
    return draw(odd if rnd.random() < chaos else valid)


@st.composite
def json_inputs(
    draw: st.DrawFn,
    descriptor: Descriptor,
    depth: int = 0,
    chaos: float = -1,
    rnd: random.Random | None = None,
) -> Any:
    """A JSON object for `descriptor`, mostly well-formed: each value, key or null is odd with
    probability `chaos` (drawn once for the whole input when not given)."""
    if rnd is None:
        rnd = draw(st.randoms(use_true_random=False))
    if chaos < 0:
        chaos = draw(st.sampled_from([0.3, 0.1, 0.02, 0.0]))
    if rnd.random() < chaos / 4:
        return draw(st.sampled_from(JUNK))
    data: dict[Any, Any] = {}
    oneofs: set[str] = set()
    for fd in descriptor.fields:
        if draw(st.integers(0, 2)) == 0:
            continue
        if fd.message_type is not None and not is_map(fd) and depth >= 3:
            continue
        odd = rnd.random() < chaos
        if fd.containing_oneof is not None:  # a second member only when odd
            if fd.containing_oneof.name in oneofs and not odd:
                continue
            oneofs.add(fd.containing_oneof.name)
        if odd and draw(st.booleans()):
            value: Any = draw(st.sampled_from(JUNK))
        elif is_map(fd):
            value = draw(map_inputs(fd, depth, chaos, rnd))
        elif fd.is_repeated:
            value = draw(st.lists(element_inputs(fd, depth, chaos, rnd), max_size=3))
        else:
            value = draw(element_inputs(fd, depth, chaos, rnd))
        key_choice = draw(st.integers(0, 9)) if odd else draw(st.integers(0, 8))
        if key_choice <= 6:
            data[fd.json_name] = value
        elif key_choice <= 8:
            data[fd.name] = value
        else:  # both names of the field
            data[fd.json_name] = value
            data[fd.name] = draw(st.sampled_from([None, value, copy.deepcopy(value)]))
    if rnd.random() < chaos:
        for key in draw(st.lists(st.sampled_from(UNKNOWN_KEYS), max_size=2)):
            data[key] = draw(st.sampled_from(JUNK))
    return data


@st.composite
def map_inputs(
    draw: st.DrawFn, fd: FieldDescriptor, depth: int, chaos: float, rnd: random.Random
) -> Any:
    key_fd = fd.message_type.fields_by_name["key"]
    value_fd = fd.message_type.fields_by_name["value"]
    if key_fd.type == F.TYPE_BOOL:
        valid_keys = st.sampled_from(["true", "false"])
        odd_keys = st.sampled_from(["True", "1", ""])
    elif key_fd.type == F.TYPE_STRING:
        valid_keys, odd_keys = st.text(max_size=4), st.sampled_from(["\ud800", "a"])
    else:
        low, high = INT_RANGES[key_fd.type]
        valid_keys = st.integers(low, high).map(str)
        odd_keys = st.sampled_from(
            ["01", "-0", "0", "a", "1.0", "1e3", " 1", "+1", str(high + 1), str(low - 1)]
        )
    keys = st.builds(lambda: rnd.random() < chaos).flatmap(
        lambda odd: odd_keys if odd else valid_keys
    )
    return draw(st.dictionaries(keys, element_inputs(value_fd, depth, chaos, rnd), max_size=3))


# --------------------------------------------------------------------------------------------
# The tests.


@SETTINGS
@given(any_message(ALL_TYPES))
def test_to_dict_is_json_format_in_field_order(message: Message) -> None:
    check_encode(message)


@SETTINGS
@given(any_message(PACKAGE_TYPES + COMMON_TEST_TYPES, extensions=False), st.booleans())
def test_from_dict_takes_every_to_dict_output_of_common_types(
    message: Message, strict: bool
) -> None:
    data = check_encode(message)
    if data is None:  # an invalid Timestamp or Duration: no JSON form
        return
    got = check_decode(data, type(message), strict)
    if got is UNSUPPORTED:
        # The one valid output left to json_format: in strict mode, an open enum's unknown
        # number in a map value (the codec's strict rule checks enums outside maps only).
        assert strict and number_in_enum_map(data, message.DESCRIPTOR), data
    elif got is not REJECTED:  # json_format rejects some of its own output (see below)
        assert check_encode(got) == data  # type: ignore[arg-type]  # (map order may differ)


def number_in_enum_map(data: Any, descriptor: Descriptor) -> bool:
    for fd in descriptor.fields:
        value = data.get(fd.json_name) if isinstance(data, dict) else None
        if value is None or fd.message_type is None:
            continue
        if is_map(fd):
            value_fd = fd.message_type.fields_by_name["value"]
            if value_fd.enum_type is not None:
                if any(not isinstance(v, str) for v in value.values()):
                    return True
            elif value_fd.message_type is not None:
                if any(number_in_enum_map(v, value_fd.message_type) for v in value.values()):
                    return True
        elif any(
            number_in_enum_map(v, fd.message_type)
            for v in (value if isinstance(value, list) else [value])
        ):
            return True
    return False


@SETTINGS
@given(any_message([EXOTIC]), st.booleans())
def test_from_dict_agrees_on_exotic_types(message: Message, strict: bool) -> None:
    data = check_encode(message)
    if data is not None:
        check_decode(data, EXOTIC, strict)


@settings(SETTINGS, max_examples=examples(150))
@given(
    st.sampled_from(ALL_TYPES).flatmap(
        lambda cls: st.tuples(st.just(cls), json_inputs(cls.DESCRIPTOR))
    ),
    st.booleans(),
)
def test_from_dict_agrees_with_json_format_on_odd_input(
    case: tuple[type[Message], Any], strict: bool
) -> None:
    cls, data = case
    if isinstance(data, dict):
        result = check_decode(data, cls, strict)
        # pytest --hypothesis-show-statistics shows how often json_format had to decide
        outcome = {id(UNSUPPORTED): "valid, left to json_format", id(REJECTED): "rejected"}
        event(outcome.get(id(result), "accepted by the fast path"))
    else:
        with pytest.raises(_fastcodec.Unsupported):
            _fastcodec.from_dict(data, cls, strict=strict)


def _cases(values: list[Any], field: str) -> list[tuple[str, Any]]:
    return [(field, v) for v in values]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        *_cases(INTEGER_INPUTS, "int32Field"),
        *_cases(INTEGER_INPUTS, "int64Field"),
        *_cases(INTEGER_INPUTS, "uint32Field"),
        *_cases(INTEGER_INPUTS, "uint64Field"),
        *_cases(INTEGER_INPUTS, "repeatedSfixed64"),
        *_cases(FLOAT_INPUTS, "floatField"),
        *_cases(FLOAT_INPUTS, "doubleField"),
        *_cases(FLOAT_INPUTS, "repeatedFloat"),
        *_cases(BOOL_INPUTS, "boolField"),
        *_cases(STRING_INPUTS, "stringField"),
        *_cases(STRING_INPUTS, "repeatedString"),
        *_cases(BYTES_INPUTS, "bytesField"),
        *_cases(["RED", "red", "NOPE", "1", "9", 1, 9, -1, 2**31, 1.0, True, ""], "color"),
        *_cases(["RED", "NOPE", 2, 9], "colors"),
        *_cases(["RED", "NOPE", 2, None], "choiceColor"),
    ],
)
@pytest.mark.parametrize("strict", [False, True])
def test_scalar_edge_cases(field: str, value: Any, strict: bool) -> None:
    is_list = field.startswith("repeated") or field == "colors"
    check_decode({field: [value] if is_list else value}, SCALARS_TYPE, strict)


@pytest.mark.parametrize(
    "data",
    [
        {"choiceText": "a", "choiceNumber": "1"},  # two members of one oneof
        {"choiceText": "a", "choiceNumber": None},
        {"choiceText": None, "choiceNumber": "2"},
        {"choiceColor": "NOPE", "choiceText": "a"},
        {"choice_text": "a", "choiceText": "b"},  # both names of one field
        {"int64_field": "1", "int64Field": None},
        {"repeated_int32": [1], "repeatedInt32": [2]},
        {"otherName": "x"},
        {"renamed": "x"},
        {"from": 5},
        {"maybeCount": 0, "maybeName": ""},
        {"maybeCount": None},
        {"choiceLeaf": {}},
        {"choiceLeaf": {"count": "5"}, "choiceText": None},
        {"lateFirst": "x", "int32Field": 1},
    ],
)
@pytest.mark.parametrize("strict", [False, True])
def test_keys_and_oneofs(data: dict[str, Any], strict: bool) -> None:
    check_decode(data, SCALARS_TYPE, strict)


@pytest.mark.parametrize(
    "data",
    [
        {"int32ToString": {"1": "a", "01": "b"}},
        {"int32ToString": {"-0": "a", "0": "b"}},
        {"int64ToLeaf": {"1": {"name": "a"}, "01": {"count": "2"}}},
        {"boolToString": {"true": "a", "false": "b"}},
        {"boolToString": {"True": "a"}},
        {"uint64ToColor": {"1": "RED", "2": "NOPE", "3": 2}},
        {"uint32ToInt64": {"4294967296": "1"}},
        {"sint64ToBytes": {"-5": "AAE", "6": "!!"}},
        {"stringToValue": {"a": None, "b": [1, {"c": None}]}},
        {"stringToTimestamp": {"a": "2026-11-20T21:10:00Z", "b": None}},
        {"stringToLeaf": {"a": None}},
        {"fixed32ToFloat": {"1": "NaN", "2": 1e39, "3": 0.1}},
        {"stringToInt32": {"\ud800": 1}},
        {"stringToInt32": {"a": "1"}},
    ],
)
@pytest.mark.parametrize("strict", [False, True])
def test_map_edge_cases(data: dict[str, Any], strict: bool) -> None:
    check_decode(data, MAPS_TYPE, strict)


def test_null_value_and_value_fields_are_left_to_json_format() -> None:
    assert check_decode({"value": None}, EXOTIC, False) is UNSUPPORTED
    assert check_decode({"null": None}, EXOTIC, False) is UNSUPPORTED
    check_encode(json_format.ParseDict({"value": {"a": [1, None]}}, EXOTIC()))
    check_encode(EXOTIC(null=0))
    assert isinstance(check_decode({"values": [None, 1, "a"]}, WKTS_TYPE, False), WKTS_TYPE)


def test_extensions_and_closed_enums() -> None:
    legacy = schema_class("fclegacy.Legacy")
    message: Any = legacy(count=3)
    message.Extensions[EXTRA] = 4
    assert "[fclegacy.extra]" in check_encode(message)  # type: ignore[operator]
    for size in ("LARGE", 2, 3, "NOPE"):
        for strict in (False, True):
            check_decode({"size": size, "sizes": [size]}, legacy, strict)
    assert check_decode({"[fclegacy.extra]": 5}, legacy, False) is UNSUPPORTED


def test_depth_limit_is_json_format_s() -> None:
    tree = schema_class("fctest.Tree")
    for depth in (98, 99, 100, 101):
        data: dict[str, Any] = {"label": "leaf", "wkts": {"timestamp": "1970-01-01T00:00:00Z"}}
        for _ in range(depth - 2):
            data = {"parent": data}
        check_decode(data, tree, False)
    data = {"wkts": {"struct": {"a": {"b": {"c": 1}}}}}
    for _ in range(95):
        data = {"parent": data}
    check_decode(data, tree, False)


@pytest.mark.parametrize("strict", [False, True])
def test_golden_payloads_take_the_fast_path(strict: bool) -> None:
    for name in golden.stems():
        cls = golden.message_type(name)
        data = json.loads((GOLDEN / f"{name}.json").read_text())
        message = check_decode(data, cls, strict)
        assert isinstance(message, cls)
        assert check_encode(message) == data  # type: ignore[arg-type]


def test_codec_input_forms_take_the_fast_path() -> None:
    cls = operations_pb2.GetReleaseDetailsResponse
    for issue in (
        {"issueId": 9007199254740993},
        {"issueId": "9007199254740993"},
        {"issue_id": "-5"},
        {"issueId": "9223372036854775807"},
        {"status": 1},
        {"status": "RESOLVED"},
        {"createTime": "2026-11-20T21:11:04.120+02:00"},
    ):
        assert isinstance(check_decode({"detailedResults": {"issues": [issue]}}, cls, False), cls)


def test_a_float_for_an_integer_field_is_json_format_s_to_read() -> None:
    """orjson reads an integer beyond 64 bits as a float that may round into range: the fast path
    takes no float for an integer field, and json_format reads 1e3 as it always did."""
    cls = operations_pb2.GetReleaseDetailsResponse
    for number in (1e3, 5.0, -9.223372036854776e18):
        with pytest.raises(_fastcodec.Unsupported):
            _fastcodec.from_dict(
                {"detailedResults": {"issues": [{"issueId": number}]}}, cls, strict=False
            )
    parsed = json_format.ParseDict({"detailedResults": {"issues": [{"issueId": 1e3}]}}, cls())
    assert parsed.detailed_results.issues[0].issue_id == 1000


def test_null_for_a_repeated_value_field_is_refused_as_json_format_refuses_it() -> None:
    # json_format fails on it (it sets null_value on the list); the fast path leaves it to
    # json_format, and the codec reports the failure as any refused input, never a traceback.
    assert check_decode({"values": None}, WKTS_TYPE, False) is REJECTED
    with pytest.raises(InvalidArgument, match="Wkts"):
        codec.from_json('{"values": null}', WKTS_TYPE)


@pytest.mark.parametrize("strict", [False, True])
def test_a_boolean_for_a_float_is_refused_as_for_an_integer(strict: bool) -> None:
    # json_format reads true as 1.0 for a float or a double (an integer's it refuses); the JSON
    # mapping and the schemas take a number. Schemathesis found the server taking `false` for a
    # FloatValue that its document said is a number.
    from tests.kinds.v1 import kinds_pb2

    cases = [
        (kinds_pb2.Scalars, {"fFloat": True}, "fFloat"),
        (kinds_pb2.Scalars, {"fDouble": False}, "fDouble"),
        (kinds_pb2.Nested, {"ratios": [1.5, True]}, "ratios[1]"),
        (kinds_pb2.Item, {"wFloat": False}, "wFloat"),
        (kinds_pb2.Item, {"wDouble": True}, "wDouble"),
        (kinds_pb2.Maps, {"bySint32": {"1": False}}, 'bySint32["1"]'),
    ]
    for message_type, data, path in cases:
        with pytest.raises(InvalidArgument) as refused:
            codec.from_json(data, message_type, strict=strict)
        assert [v.field for v in refused.value.violations] == [path]
        assert "got the boolean" in refused.value.message
