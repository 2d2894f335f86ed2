"""Two inputs json_format takes or names badly, refused with the field named on every path of the
codec (a type's first small body by json_format, the fast path, with orjson or without), in both
modes: a boolean for a float or a double (json_format read ``true`` as 1.0; the JSON mapping and
the schemas take a number), as a field, a list's element, a map's value and a FloatValue or
DoubleValue; and a oneof set twice (json_format's sentence named the oneof, and no field)."""

from __future__ import annotations

from typing import Any

import pytest

from projectops._wire import FLOAT_TYPES, value_field
from tests.adversarial.test_codec_strict_int32 import body, outcomes
from tests.core.test_codec_differential import MAPS_TYPE, SCALARS_TYPE, WKTS_TYPE

FLOATS = [
    (message_type, fd)
    for message_type in (SCALARS_TYPE, MAPS_TYPE, WKTS_TYPE)
    for fd in message_type.DESCRIPTOR.fields
    if value_field(fd).type in FLOAT_TYPES
]


def test_the_schemas_have_floats_to_test() -> None:
    assert {value_field(fd).type for _, fd in FLOATS} == set(FLOAT_TYPES)
    assert any(fd.message_type for _, fd in FLOATS)  # a map's values, or a wrapper


@pytest.mark.parametrize("held", FLOATS, ids=lambda held: held[1].full_name)
@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("value", [True, False])
def test_a_boolean_for_a_float_is_refused_on_every_path(
    held: tuple[Any, Any], strict: bool, value: bool
) -> None:
    message_type, fd = held
    for outcome in outcomes(body(fd, value), message_type, strict=strict):
        assert isinstance(outcome, tuple), outcome  # refused, not read as a number
        message, fields = outcome
        assert "got the boolean" in message and len(fields) == 1
        assert fields[0].startswith(fd.json_name)


ONEOFS = [
    (message_type, oneof)
    for message_type in (SCALARS_TYPE, MAPS_TYPE, WKTS_TYPE)
    for oneof in message_type.DESCRIPTOR.oneofs
    if len(oneof.fields) > 1
]


def test_the_schemas_have_a_oneof_to_test() -> None:
    assert ONEOFS


@pytest.mark.parametrize("held", ONEOFS, ids=lambda held: held[1].full_name)
@pytest.mark.parametrize("strict", [False, True])
def test_a_oneof_set_twice_names_the_second_member_on_every_path(
    held: tuple[Any, Any], strict: bool
) -> None:
    message_type, oneof = held
    first, second = oneof.fields[:2]
    data = {first.json_name: None, second.json_name: None}
    for fd in (first, second):  # a value each takes, found by decoding it alone
        data[fd.json_name] = next(
            v
            for v in ("1", 1, "x", {}, "RED", "AAAA")
            if not isinstance(outcomes({fd.json_name: v}, message_type, strict=strict)[0], tuple)
        )
    for outcome in outcomes(data, message_type, strict=strict):
        assert isinstance(outcome, tuple), outcome
        message, fields = outcome
        assert fields == [second.json_name] and first.json_name in message
