"""The shape of a protobuf field, as the protobuf JSON mapping defines it, and the one tree walk.

This is the one table of "what a value of this field looks like in JSON": the codec uses its
`expected` sentences in error messages, the JSON Schema generator uses its `schema` fragments.
Messages other than the well-known types are left to the caller (they recurse).

It is also the one place that branches on a field's shape (map, list or single value) and formats
field paths (``summary.testCounts[0].total``, ``labels["k"]``): the codec's error locator,
validation, the mock server's matcher and the JSON Schema builder all walk through
:func:`shape` and :func:`elements`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal

from google.protobuf.descriptor import Descriptor, FieldDescriptor

__all__ = ["Shape", "ValueForm", "elements", "is_map", "join", "shape", "value_form"]

_INT64_PATTERN = r"^-?[0-9]+$"
_UINT64_PATTERN = r"^[0-9]+$"
_INT_TYPES_64 = {
    FieldDescriptor.TYPE_INT64: (_INT64_PATTERN, "a 64-bit integer"),
    FieldDescriptor.TYPE_SINT64: (_INT64_PATTERN, "a 64-bit integer"),
    FieldDescriptor.TYPE_SFIXED64: (_INT64_PATTERN, "a 64-bit integer"),
    FieldDescriptor.TYPE_UINT64: (_UINT64_PATTERN, "an unsigned 64-bit integer"),
    FieldDescriptor.TYPE_FIXED64: (_UINT64_PATTERN, "an unsigned 64-bit integer"),
}
_INT_TYPES_32 = {
    FieldDescriptor.TYPE_INT32: ((-(2**31), 2**31 - 1), "a 32-bit integer"),
    FieldDescriptor.TYPE_SINT32: ((-(2**31), 2**31 - 1), "a 32-bit integer"),
    FieldDescriptor.TYPE_SFIXED32: ((-(2**31), 2**31 - 1), "a 32-bit integer"),
    FieldDescriptor.TYPE_UINT32: ((0, 2**32 - 1), "an unsigned 32-bit integer"),
    FieldDescriptor.TYPE_FIXED32: ((0, 2**32 - 1), "an unsigned 32-bit integer"),
}

# Well-known types with a special JSON form (protobuf JSON mapping, "JSON Mapping" table).
_WELL_KNOWN: dict[str, tuple[dict[str, Any], str]] = {
    "google.protobuf.Timestamp": (
        # The pattern too: format is only an annotation unless a validator opts in.
        {
            "type": "string",
            "format": "date-time",
            "pattern": r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?"
            r"(Z|[+-][0-9]{2}:[0-9]{2})$",
        },
        'an RFC 3339 timestamp string such as "2026-01-31T09:30:00Z"',
    ),
    "google.protobuf.Duration": (
        {"type": "string", "pattern": r"^-?[0-9]+(\.[0-9]{1,9})?s$"},
        'a duration string in seconds such as "3.5s"',
    ),
    "google.protobuf.FieldMask": (
        {"type": "string"},
        'a field mask string such as "summary,detailedResults"',
    ),
    "google.protobuf.Struct": ({"type": "object"}, "a JSON object"),
    "google.protobuf.ListValue": ({"type": "array"}, "a JSON array"),
    "google.protobuf.Value": ({}, "any JSON value"),
    "google.protobuf.Empty": ({"type": "object", "additionalProperties": False}, "{}"),
    "google.protobuf.StringValue": ({"type": "string"}, "a string"),
    "google.protobuf.BoolValue": ({"type": "boolean"}, "true or false"),
    "google.protobuf.DoubleValue": ({"type": "number"}, "a number"),
    "google.protobuf.FloatValue": ({"type": "number"}, "a number"),
    "google.protobuf.BytesValue": (
        {"type": "string", "contentEncoding": "base64"},
        "a base64 string",
    ),
    "google.protobuf.Int32Value": ({"type": "integer"}, "a 32-bit integer"),
    "google.protobuf.UInt32Value": (
        {"type": "integer", "minimum": 0},
        "an unsigned 32-bit integer",
    ),
    "google.protobuf.Int64Value": (
        {"type": "string", "pattern": _INT64_PATTERN},
        "a 64-bit integer",
    ),
    "google.protobuf.UInt64Value": (
        {"type": "string", "pattern": _UINT64_PATTERN},
        "an unsigned 64-bit integer",
    ),
}


@dataclass(frozen=True)
class ValueForm:
    """The JSON form of one value of a field (one element, for a repeated field).

    Attributes:
        expected: what a value must be, as an English phrase for error messages.
        schema: the JSON Schema (2020-12) fragment of the value on output; empty for messages
            that are not well-known types (the caller refers to their definition).
        input_schema: the fragment accepted on input (64-bit integers also as numbers).
        message: the message descriptor when the value is a message without a special form.
    """

    expected: str
    schema: dict[str, Any] = field(default_factory=dict)
    input_schema: dict[str, Any] = field(default_factory=dict)
    message: Descriptor | None = None


def is_map(fd: FieldDescriptor) -> bool:
    """Whether `fd` is a map field (a repeated synthetic `*Entry` message)."""
    return fd.message_type is not None and fd.message_type.GetOptions().map_entry


#: How a field holds its values: a map, a list (repeated), or one value.
Shape = Literal["map", "list", "single"]


def shape(fd: FieldDescriptor) -> Shape:
    """Whether `fd` holds a map, a list (repeated) or a single value."""
    if is_map(fd):
        return "map"
    return "list" if fd.is_repeated else "single"


def join(path: str, name: str) -> str:
    """The path of field `name` under `path` (``""`` is the top level): ``a.b``."""
    return f"{path}.{name}" if path else name


def elements(fd: FieldDescriptor, value: Any, path: str) -> Iterator[tuple[str, Any, Any]]:
    """``(path, key, element)`` for each value that `fd` holds in `value`.

    `value` is the field's value as a message holds it (map, repeated container or value) or as
    JSON holds it (object, list or value; the caller has checked that a map is a ``Mapping`` and
    a list a ``list``). `path` is the field's own path. Maps yield ``path["key"]`` (the key as a
    JSON string) and the key as given; lists ``path[i]`` and the index; a single value `path`
    itself and ``None``.
    """
    kind = shape(fd)
    if kind == "map":
        for key, item in value.items():
            # Map keys are JSON strings, whatever the key type ("7", "true").
            text = key if isinstance(key, str) else json.dumps(key)
            yield f"{path}[{json.dumps(text, ensure_ascii=False)}]", key, item
    elif kind == "list":
        for i, item in enumerate(value):
            yield f"{path}[{i}]", i, item
    else:
        yield path, None, value


@cache
def value_form(fd: FieldDescriptor) -> ValueForm:
    """The JSON form of one value of `fd` (for a map field: of one map value).

    Cached per descriptor; callers copy the schema dicts before changing them.
    """
    if is_map(fd):
        fd = fd.message_type.fields_by_name["value"]  # type: ignore[union-attr]  # is_map
    kind = fd.type
    if fd.message_type is not None:
        known = _WELL_KNOWN.get(fd.message_type.full_name)
        if known is not None:
            schema, expected = known
            return ValueForm(expected, schema, schema)
        return ValueForm("a JSON object", message=fd.message_type)
    if fd.enum_type is not None:
        names = [v.name for v in fd.enum_type.values]
        shown = ", ".join(names[1:] if len(names) > 1 else names)
        schema = {"type": "string", "enum": names}
        return ValueForm(f"one of the names {shown}", schema, schema)
    if kind in _INT_TYPES_64:
        pattern, what = _INT_TYPES_64[kind]
        out = {"type": "string", "pattern": pattern}
        minimum = {"minimum": 0} if pattern == _UINT64_PATTERN else {}
        inp = {"type": ["string", "integer"], "pattern": pattern, **minimum}
        return ValueForm(f"{what} (a string of digits or a whole number)", out, inp)
    if kind in _INT_TYPES_32:
        (low, high), what = _INT_TYPES_32[kind]
        schema = {"type": "integer", "minimum": low, "maximum": high}
        return ValueForm(what, schema, schema)
    if kind in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        # "NaN", "Infinity" and "-Infinity" travel as strings.
        schema = {"anyOf": [{"type": "number"}, {"enum": ["NaN", "Infinity", "-Infinity"]}]}
        return ValueForm("a number", schema, schema)
    if kind == FieldDescriptor.TYPE_BOOL:
        return ValueForm("true or false", {"type": "boolean"}, {"type": "boolean"})
    if kind == FieldDescriptor.TYPE_BYTES:
        schema = {"type": "string", "contentEncoding": "base64"}
        return ValueForm("a base64 string", schema, schema)
    return ValueForm("a string", {"type": "string"}, {"type": "string"})
