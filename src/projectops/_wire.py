"""The JSON form of a protobuf field (docs/contract.md §3) and the one walk over field values.

Each field's :class:`ValueForm` gives the codec its error sentences and the JSON Schema builder its
fragments; :func:`shape` and :func:`elements` are the one branch on map/list/single and the one
format of field paths (§4.4), for the codec, validation, the mock matcher and the schemas.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal, cast

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor

__all__ = [
    "FLOAT_MAX",
    "FLOAT_TYPES",
    "NONZERO_INT32_PATTERN",
    "Shape",
    "ValueForm",
    "elements",
    "is_map",
    "join",
    "map_key_names",
    "scalar_type",
    "shape",
    "value_field",
    "value_form",
]


def _at_most(limit: int) -> str:
    """Regex alternatives matching the decimal numbers 1..`limit` (no leading zero): shorter
    numbers, then one alternative per digit of `limit` that is the first to be smaller."""
    digits = str(limit)
    size = len(digits)
    parts = []
    if size > 1:  # the shorter numbers: a first digit, then up to size - 2 more
        parts.append(f"[1-9][0-9]{{0,{size - 2}}}")
    for i, digit in enumerate(digits):
        low = int(i == 0)  # no leading zero
        high = int(digit) - 1
        if high < low:
            continue
        smaller = f"[{low}-{high}]"
        if high == low:
            smaller = str(low)
        rest = size - i - 1
        tail = ""
        if rest:
            tail = f"[0-9]{{{rest}}}"
        parts.append(digits[:i] + smaller + tail)
    parts.append(digits)
    return "|".join(parts)


# Patterns no wider than what the codec reads: integers in range, without leading zeros.
# `$(?!\n)`: Python's `$` also matches before a final newline; ECMA-262's does not.
_END = r"$(?!\n)"
_INT64_PATTERN = f"^(?:0|{_at_most(2**63 - 1)}|-(?:{_at_most(2**63)})){_END}"
_UINT64_PATTERN = f"^(?:0|{_at_most(2**64 - 1)}){_END}"
#: A signed 64-bit integer that is not negative, in its JSON string form: what a
#: protovalidate rule ``int64.gte = 0`` leaves of ``_INT64_PATTERN``.
NON_NEGATIVE_INT64_PATTERN = f"^(?:0|{_at_most(2**63 - 1)}){_END}"
#: The largest finite 32-bit float: json_format refuses a float field's number beyond it.
FLOAT_MAX = float.fromhex("0x1.fffffep+127")
#: A 32-bit integer other than 0 in its JSON string form: an enum's number that the lenient codec
#: reads from a string (§3.3).
NONZERO_INT32_PATTERN = f"^-?(?:{_at_most(2**31 - 1)}){_END}"
_INT64_RANGE = {"minimum": -(2**63), "maximum": 2**63 - 1}
_UINT64_RANGE = {"minimum": 0, "maximum": 2**64 - 1}
_YEAR = "(?:[1-9][0-9]{3}|0[1-9][0-9]{2}|00[1-9][0-9]|000[1-9])"  # 0001..9999
_LEAP_YEAR = "(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)"
_DATE = (
    f"(?:{_YEAR}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])"
    "|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))"
    f"|{_LEAP_YEAR}-02-29)"
)
# RFC 3339 as the codec reads it (real dates, no leap second); the lookahead refuses offsets
# that would move the first or last day out of 0001-01-01T00:00:00Z .. 9999-12-31T23:59:59Z.
_TIMESTAMP_PATTERN = (
    r"^(?!0001-01-01T[^Z]*\+|9999-12-31T[^Z]*-)"
    f"{_DATE}T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
    r"(?:\.[0-9]{1,9})?(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])" + _END
)
# Up to 315,576,000,000 seconds (about 10,000 years) either way.
_DURATION_PATTERN = (
    f"^-?(?:(?:0|{_at_most(315_576_000_000 - 1)})" + r"(?:\.[0-9]{1,9})?|315576000000)s" + _END
)
_T = FieldDescriptor
_SIGNED_64 = (_INT64_PATTERN, "a 64-bit integer")
_UNSIGNED_64 = (_UINT64_PATTERN, "an unsigned 64-bit integer")
INT_TYPES_64 = {
    _T.TYPE_INT64: _SIGNED_64,
    _T.TYPE_SINT64: _SIGNED_64,
    _T.TYPE_SFIXED64: _SIGNED_64,
    _T.TYPE_UINT64: _UNSIGNED_64,
    _T.TYPE_FIXED64: _UNSIGNED_64,
}
#: The floating-point types: json_format reads a boolean for them (true as 1.0), §3 does not.
FLOAT_TYPES = (_T.TYPE_FLOAT, _T.TYPE_DOUBLE)
_SIGNED_32 = ((-(2**31), 2**31 - 1), "a 32-bit integer")
_UNSIGNED_32 = ((0, 2**32 - 1), "an unsigned 32-bit integer")
INT_TYPES_32 = {
    _T.TYPE_INT32: _SIGNED_32,
    _T.TYPE_SINT32: _SIGNED_32,
    _T.TYPE_SFIXED32: _SIGNED_32,
    _T.TYPE_UINT32: _UNSIGNED_32,
    _T.TYPE_FIXED32: _UNSIGNED_32,
}
_INT32_KEY = f"^(?:0|{_at_most(2**31 - 1)}|-(?:{_at_most(2**31)})){_END}"
_UINT32_KEY = f"^(?:0|{_at_most(2**32 - 1)}){_END}"
# A map key is a JSON object's name, so an integer or bool key is a string of that form (§3.1).
_MAP_KEY_NAMES: dict[int, dict[str, Any]] = {
    **{t: {"pattern": pattern} for t, (pattern, _) in INT_TYPES_64.items()},
    **{t: {"pattern": _INT32_KEY} for t, (bounds, _) in INT_TYPES_32.items() if bounds[0] < 0},
    **{t: {"pattern": _UINT32_KEY} for t, (bounds, _) in INT_TYPES_32.items() if bounds[0] == 0},
    _T.TYPE_BOOL: {"enum": ["true", "false"]},
}


def map_key_names(fd: FieldDescriptor) -> dict[str, Any] | None:
    """The JSON Schema of the names of a map field's JSON object, or ``None`` for string keys.

    Args:
        fd: a map field.

    Returns:
        ``{"pattern": ...}`` for integer keys, ``{"enum": ["true", "false"]}`` for bool keys
        (docs/contract.md §3.1), else ``None``.
    """
    key = cast(Descriptor, fd.message_type).fields_by_name["key"]
    return _MAP_KEY_NAMES.get(key.type)


_BASE64 = "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?" + _END
_WRAPPERS = "google/protobuf/wrappers.proto"  # Int32Value...: JSON is the value's own form
# Well-known types with a special JSON form (the "JSON Mapping" table of protobuf). The Timestamp
# pattern too: "format" alone is only an annotation.
_WELL_KNOWN: dict[str, tuple[dict[str, Any], str]] = {
    "google.protobuf.Timestamp": (
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
}


@dataclass(frozen=True)
class ValueForm:
    """The JSON form of one value of a field (one element, for a repeated field): `expected`,
    an English phrase for error messages; the JSON Schema fragment on output (`schema`) and on
    input (`input_schema`), both empty for a `message` without a special form."""

    expected: str
    schema: dict[str, Any] = field(default_factory=dict)
    input_schema: dict[str, Any] = field(default_factory=dict)
    message: Descriptor | None = None


def is_map(fd: FieldDescriptor) -> bool:
    """Whether `fd` is a map field (a repeated synthetic `*Entry` message)."""
    entry = fd.message_type
    return entry is not None and entry.GetOptions().map_entry


Shape = Literal["map", "list", "single"]


def shape(fd: FieldDescriptor) -> Shape:
    """Whether `fd` holds a map, a list (repeated) or a single value."""
    if is_map(fd):
        return "map"
    if fd.is_repeated:
        return "list"
    return "single"


def scalar_type(fd: FieldDescriptor) -> str:
    """The type of `fd` as a ``.proto`` file names a scalar: ``int64``, ``string``, ``bytes``
    (``message`` and ``enum`` for the others, which have names of their own)."""
    types = descriptor_pb2.FieldDescriptorProto.Type
    name = types.Name(fd.type)  # type: ignore[arg-type]
    return name.removeprefix("TYPE_").lower()


def join(path: str, name: str) -> str:
    """The path of field `name` under `path` (``""`` is the top level): ``a.b``."""
    if not path:
        return name
    return f"{path}.{name}"


def elements(
    fd: FieldDescriptor,
    value: Any,
    path: str,
) -> Iterator[tuple[str, Any, Any]]:
    """``(path, key, element)`` for each value that `fd` holds in `value` (as a message or as
    JSON holds it; a map already checked to be a ``Mapping``, a list a ``list``) under the
    field's `path`: ``path["key"]`` and the key, ``path[i]`` and i, or `path` and ``None``."""
    kind = shape(fd)
    if kind == "map":
        for key, item in value.items():
            # Map keys are JSON strings, whatever the key type ("7", "true").
            text = key
            if not isinstance(key, str):
                text = json.dumps(key)
            quoted = json.dumps(text, ensure_ascii=False)
            yield f"{path}[{quoted}]", key, item
    elif kind == "list":
        for i, item in enumerate(value):
            yield f"{path}[{i}]", i, item
    else:
        yield path, None, value


def value_field(fd: FieldDescriptor) -> FieldDescriptor:
    """The field that holds one value of `fd`: a map's value field, a wrapper's ``value`` field
    (a wrapper has its value's JSON form), else `fd` itself."""
    if is_map(fd):
        fd = fd.message_type.fields_by_name["value"]  # type: ignore[union-attr]  # is_map
    if fd.message_type is not None and fd.message_type.file.name == _WRAPPERS:
        return fd.message_type.fields_by_name["value"]
    return fd


@cache
def value_form(fd: FieldDescriptor) -> ValueForm:
    """The JSON form of one value of `fd` (of a map value); cached: copy its schemas to change."""
    fd = value_field(fd)
    kind = fd.type
    if fd.message_type is not None:
        known = _WELL_KNOWN.get(fd.message_type.full_name)
        if known is not None:
            schema, expected = known
            return ValueForm(expected, schema, schema)
        return ValueForm("a JSON object", message=fd.message_type)
    if fd.enum_type is not None:
        names = [v.name for v in fd.enum_type.values]
        # The first name is the zero, UNSPECIFIED: not one to suggest, unless it is the only one.
        shown = ", ".join(names[1:] or names)
        schema = {"type": "string", "enum": names}
        return ValueForm(f"one of the names {shown}", schema, schema)
    if kind in INT_TYPES_64:
        pattern, what = INT_TYPES_64[kind]
        out = {"type": "string", "pattern": pattern}
        bounds = _INT64_RANGE
        if pattern == _UINT64_PATTERN:
            bounds = _UINT64_RANGE
        inp = {"type": ["string", "integer"], "pattern": pattern, **bounds}
        return ValueForm(f"{what} (a string of digits or a whole number)", out, inp)
    if kind in INT_TYPES_32:
        (low, high), what = INT_TYPES_32[kind]
        schema = {"type": "integer", "minimum": low, "maximum": high}
        return ValueForm(what, schema, schema)
    if kind in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        # "NaN", "Infinity" and "-Infinity" travel as strings.
        words = {"enum": ["NaN", "Infinity", "-Infinity"]}
        number: dict[str, Any] = {"type": "number"}
        what = "a number"
        if kind == FieldDescriptor.TYPE_FLOAT:  # json_format refuses what 32 bits cannot hold
            number.update(minimum=-FLOAT_MAX, maximum=FLOAT_MAX)
            what = f"a number from {-FLOAT_MAX!r} to {FLOAT_MAX!r}"
        schema = {"anyOf": [number, words]}
        return ValueForm(what, schema, schema)
    if kind == FieldDescriptor.TYPE_BOOL:
        return ValueForm("true or false", {"type": "boolean"}, {"type": "boolean"})
    if kind == FieldDescriptor.TYPE_BYTES:
        # contentEncoding is an annotation no validator checks: the pattern of padded base64
        # (what the codec writes; it reads more) keeps a schema-valid string decodable.
        schema = {"type": "string", "contentEncoding": "base64", "pattern": _BASE64}
        return ValueForm("a base64 string", schema, schema)
    return ValueForm("a string", {"type": "string"}, {"type": "string"})
