"""``from_json(strict=True)`` takes a 32-bit integer as a JSON number only, as the input schemas
say (``"type": "integer"``, whose ``minimum`` and ``maximum`` bind numbers only): json_format
also reads ``"5"`` for one, which lenient decoding keeps doing. Every 32-bit kind, as a field, a
list's element, a map's value and an Int32Value or UInt32Value, on each path of the codec (a
type's first small body by json_format, the fast path, with orjson or without), field named."""

from __future__ import annotations

from typing import Any
from unittest import mock

import jsonschema
import pytest
from google.protobuf.descriptor import FieldDescriptor

import projectops
from projectops import codec, json_schema
from projectops._wire import INT_TYPES_32, is_map, value_form
from tests.core.test_codec_differential import MAPS_TYPE, SCALARS_TYPE, WKTS_TYPE

FIELDS = [  # what the input schemas take as a JSON integer only
    (message_type, fd)
    for message_type in (SCALARS_TYPE, MAPS_TYPE, WKTS_TYPE)
    for fd in message_type.DESCRIPTOR.fields
    if value_form(fd).input_schema.get("type") == "integer"
]


def body(fd: FieldDescriptor, value: Any) -> dict[str, Any]:
    if is_map(fd):
        return {fd.json_name: {"1": value}}
    return {fd.json_name: [value] if fd.is_repeated else value}


def outcomes(data: dict[str, Any], message_type: Any, *, strict: bool) -> list[Any]:
    """The decoded message or the error's text and fields, by each path."""
    found = []
    for warm, library in ((False, None), (True, None), (True, "orjson")):
        with (
            mock.patch.object(codec, "_warm", lambda *_, warm=warm: warm),
            mock.patch.object(codec, "_orjson", codec._orjson if library else lambda: None),
        ):
            try:
                text = projectops.codec.dump(data)
                found.append(projectops.from_json(text, message_type, strict=strict))
            except projectops.InvalidArgument as exc:
                found.append((exc.message, [v.field for v in exc.violations]))
    return found


def test_the_schemas_have_32_bit_integers_to_test() -> None:
    kinds = {fd.type for _, fd in FIELDS}
    assert kinds >= set(INT_TYPES_32)  # every 32-bit kind as a field
    assert any(is_map(fd) for _, fd in FIELDS)  # a map's values
    assert any(fd.message_type and not is_map(fd) for _, fd in FIELDS)  # Int32Value, UInt32Value


@pytest.mark.parametrize("held", FIELDS, ids=lambda held: held[1].full_name)
# Careless and hostile strings alike: digits int() reads in other scripts, 5,000 digits (over
# int()'s 4,300), a NUL, hexadecimal.
@pytest.mark.parametrize(
    "value", ["5", "-1", " 5", "5.0", "1e2", "\u0665", "9" * 5000, "\x00", "0x10"]
)
def test_strict_refuses_a_string_for_a_32_bit_integer_on_every_path(held: Any, value: str) -> None:
    message_type, fd = held
    data = body(fd, value)
    refused = outcomes(data, message_type, strict=True)
    assert all(isinstance(found, tuple) for found in refused), refused
    assert len({repr(found) for found in refused}) == 1, refused  # the same error on each path
    message, fields = refused[0]
    assert fields and fields[0].startswith(fd.json_name), message
    assert "got the string" in message
    # What strict decoding refuses, the input schema refuses too.
    schema = json_schema.message_schema(message_type, "input", required_values=True)
    assert not jsonschema.Draft202012Validator(schema).is_valid(data)


@pytest.mark.parametrize("held", FIELDS, ids=lambda held: held[1].full_name)
def test_numbers_pass_strict_and_lenient_still_reads_strings(held: Any) -> None:
    message_type, fd = held
    taken = outcomes(body(fd, 5), message_type, strict=True)
    assert len({repr(found) for found in taken}) == 1 and not isinstance(taken[0], tuple)
    lenient = outcomes(body(fd, "5"), message_type, strict=False)
    assert lenient == taken
