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


def _at_most(limit: int) -> str:
    """Regex alternatives matching the decimal numbers 1..`limit` (no leading zero): shorter
    numbers, then one alternative per digit of `limit` that is the first to be smaller."""
    digits = str(limit)
    size = len(digits)
    parts = ["[1-9]" + (f"[0-9]{{0,{size - 2}}}" if size > 2 else "[0-9]?" * (size - 1))]
    for i, digit in enumerate(digits):
        low, high = (1 if i == 0 else 0), int(digit) - 1
        if high < low:
            continue
        rest = size - i - 1
        parts.append(
            digits[:i]
            + (str(low) if high == low else f"[{low}-{high}]")
            + (f"[0-9]{{{rest}}}" if rest else "")
        )
    parts.append(digits)
    return "|".join(parts)


# Exact text patterns of what the codec reads, so that no schema accepts what the codec refuses:
# integers in range, without leading zeros (the codec's own output form). `$(?!\n)` because
# Python's `$` (jsonschema's `re.search`) also matches before a final newline; ECMA-262's
# does not, and the lookahead is a no-op there.
_END = r"$(?!\n)"
_INT64_PATTERN = f"^(?:0|{_at_most(2**63 - 1)}|-(?:{_at_most(2**63)})){_END}"
_UINT64_PATTERN = f"^(?:0|{_at_most(2**64 - 1)}){_END}"
_INT64_RANGE = {"minimum": -(2**63), "maximum": 2**63 - 1}
_UINT64_RANGE = {"minimum": 0, "maximum": 2**64 - 1}
_YEAR = "(?:[1-9][0-9]{3}|0[1-9][0-9]{2}|00[1-9][0-9]|000[1-9])"  # 0001..9999
_LEAP_YEAR = "(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)"
_DATE = (
    f"(?:{_YEAR}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])"
    "|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))"
    f"|{_LEAP_YEAR}-02-29)"
)
#: RFC 3339 as the codec reads it: real dates (leap years too), hours 00..23, no leap second,
#: 1 to 9 fractional digits, `Z` or an offset up to 23:59. The lookahead keeps times that an
#: offset would move outside 0001-01-01T00:00:00Z .. 9999-12-31T23:59:59Z: on those two days,
#: only offsets towards the inside (a subset of what the codec takes, never more).
_TIMESTAMP_PATTERN = (
    r"^(?!0001-01-01T[^Z]*\+|9999-12-31T[^Z]*-)"
    f"{_DATE}T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
    r"(?:\.[0-9]{1,9})?(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])" + _END
)
#: Whole seconds up to 315,576,000,000 (about 10,000 years) either way, 1 to 9 fractional
#: digits below that bound (the codec refuses going past it).
_DURATION_PATTERN = (
    f"^-?(?:(?:0|{_at_most(315_576_000_000 - 1)})" + r"(?:\.[0-9]{1,9})?|315576000000)s" + _END
)
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
        {"type": "string", "format": "date-time", "pattern": _TIMESTAMP_PATTERN},
        'an RFC 3339 timestamp string such as "2026-01-31T09:30:00Z"',
    ),
    "google.protobuf.Duration": (
        {"type": "string", "pattern": _DURATION_PATTERN},
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
        bounds = _UINT64_RANGE if pattern == _UINT64_PATTERN else _INT64_RANGE
        inp = {"type": ["string", "integer"], "pattern": pattern, **bounds}
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
