"""orjson under the codec (the extra ``fast``): the same JSON text out, the same messages and the
same errors in, as with the json module alone (docs/contract.md §3).

Each test runs the public codec by its three paths and compares: with orjson, without it (what
an install without the extra runs), and the path of a type's first small body in a process
(json_format, no orjson: ``codec._warm``). Skipped where orjson is not
installed: the dependency floors' environment, where the json module is the codec's alone.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from functools import partial
from typing import Any
from unittest import mock

import pytest
from google.protobuf import (
    any_pb2,
    struct_pb2,
    type_pb2,
    wrappers_pb2,
)
from google.protobuf.message import Message
from hypothesis import given
from hypothesis import strategies as st

import projectops
from projectops import codec
from projectops.v1 import error_pb2
from tests.core.test_codec_differential import (
    ALL_TYPES,
    SCALARS_TYPE,
    SETTINGS,
    WKTS_TYPE,
    any_message,
    json_inputs,
)
from tests.golden import GOLDEN, stems
from tests.synthetic import HOST, NODE, ORJSON_POOL

orjson = pytest.importorskip("orjson")


def both(call: Callable[[], Any]) -> tuple[Any, Any]:
    """`call`'s outcome by the codec's paths, which must agree: its value, or the error's type
    and text. Returned: (with orjson, without); a type's first small body, which takes neither
    orjson nor the compiled fast path (codec._warm), must give the same as both."""

    def outcome() -> Any:
        try:
            return call()
        except projectops.InvalidArgument as exc:
            return ("InvalidArgument", str(exc), exc.violations)
        except Exception as exc:  # to_json of a Timestamp beyond RFC 3339
            return (type(exc).__name__, str(exc))

    with mock.patch.object(codec, "_warm", lambda *_: False):
        cold = outcome()
    with mock.patch.object(codec, "_warm", lambda *_: True):
        with_orjson = outcome()
        with mock.patch.object(codec, "_orjson", lambda: None):
            without = outcome()
    assert cold == without
    return with_orjson, without


def typed(value: Any) -> Any:
    """`value` with every number tagged by its type: 1 and 1.0 differ, as they do in JSON."""
    if isinstance(value, dict):
        return [(key, typed(item)) for key, item in value.items()]
    if isinstance(value, list):
        return [typed(item) for item in value]
    if isinstance(value, float) and math.isnan(value):
        return ("nan",)
    return (type(value).__name__, value)


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()  # unbounded: beyond 64 bits too
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@SETTINGS
@given(JSON_VALUES, st.booleans())
def test_orjson_reads_what_json_loads_reads_but_integers_beyond_64_bits(
    value: Any, ascii_only: bool
) -> None:
    """What codec._from_json relies on: orjson's values are json.loads' values, except an
    integer outside [-2**63, 2**64), which orjson reads as the float that integer rounds to."""
    text = json.dumps(value, ensure_ascii=ascii_only)
    expected = json.loads(text)
    try:
        read = orjson.loads(text)
    except orjson.JSONDecodeError:
        return  # the codec then reads the text with json.loads

    def rounded(item: Any) -> Any:
        if isinstance(item, dict):
            return {key: rounded(inner) for key, inner in item.items()}
        if isinstance(item, list):
            return [rounded(inner) for inner in item]
        if type(item) is int and not -(2**63) <= item < 2**64:
            return float(item)
        return item

    assert typed(read) == typed(rounded(expected))


@SETTINGS
@given(any_message(ALL_TYPES))
def test_to_json_writes_the_same_text(message: Message) -> None:
    for indent in (None, 2, 4):
        with_orjson, without = both(partial(projectops.to_json, message, indent=indent))
        assert with_orjson == without


def test_floats_are_written_as_json_writes_them() -> None:
    """orjson writes 1e-05 as 0.00001: a message that can hold a float is json's to write."""
    cls = next(
        cls
        for cls in ALL_TYPES
        if any(fd.type == fd.TYPE_DOUBLE and not fd.message_type for fd in cls.DESCRIPTOR.fields)
    )
    double = next(fd for fd in cls.DESCRIPTOR.fields if fd.type == fd.TYPE_DOUBLE)
    for number in (1e-05, 1e-07, 1e16, 1 / 3):
        message = cls()
        if double.is_repeated:
            getattr(message, double.name).append(number)
        else:
            setattr(message, double.name, number)
        with_orjson, without = both(partial(projectops.to_json, message))
        assert with_orjson == without


@pytest.mark.parametrize("stem", stems())
def test_golden_payloads_read_and_write_the_same(stem: str) -> None:
    text = (GOLDEN / f"{stem}.json").read_text()
    operation = next((op for op in projectops.operations() if stem.startswith(op.name)), None)
    if operation is None:
        message_type: type[Message] = error_pb2.ErrorResponse
    elif stem.endswith(".request"):
        message_type = operation.request_type
    else:
        message_type = operation.response_type
    for data in (text, text.encode()):
        read, read_without = both(partial(projectops.from_json, data, message_type))
        assert read == read_without
        assert both(partial(projectops.to_json, read)) == (projectops.to_json(read),) * 2


@SETTINGS
@given(
    st.sampled_from(ALL_TYPES).flatmap(
        lambda cls: st.tuples(st.just(cls), json_inputs(cls.DESCRIPTOR))
    ),
    st.booleans(),
    st.sampled_from(["ascii", "utf-8 text", "utf-8 bytes"]),
)
def test_from_json_reads_odd_input_to_the_same_message_or_error(
    case: tuple[type[Message], Any], strict: bool, form: str
) -> None:
    cls, data = case
    try:
        text = json.dumps(data, ensure_ascii=form == "ascii")
    except (TypeError, ValueError):
        return  # not JSON text (a key that is not a string)
    body: str | bytes = text.encode("utf-8", "surrogatepass") if form == "utf-8 bytes" else text
    with_orjson, without = both(partial(projectops.from_json, body, cls, strict=strict))
    assert with_orjson == without
    # A message, or a 400's InvalidArgument: never another exception (a 500).
    assert isinstance(with_orjson, Message) or with_orjson[0] == "InvalidArgument", with_orjson


@pytest.mark.parametrize(
    "number",
    [
        "-9223372036854775809",  # orjson: -9.223372036854776e18, which rounds into int64's range
        "18446744073709551616",
        "1" + "0" * 400,  # orjson: infinity, refused
        "1e3",  # json_format reads it as 1000
        "5.0",
        "NaN",  # json.loads' extension, orjson refuses it
    ],
)
def test_numbers_orjson_reads_otherwise_are_judged_as_before(number: str) -> None:
    for text in (f'{{"count": {number}}}', f'{{"children": [{{}}, {{"count": {number}}}]}}'):
        with_orjson, without = both(partial(projectops.from_json, text, NODE))
        assert with_orjson == without


def test_floats_json_format_writes_are_written_as_json_writes_them() -> None:
    """Inside an Any, a Value or an extension: json_format writes them, the plans do not see."""
    packed_double, packed_value = any_pb2.Any(), any_pb2.Any()
    packed_double.Pack(wrappers_pb2.DoubleValue(value=1e-05))
    packed_value.Pack(struct_pb2.Value(number_value=1e-05))
    host = HOST(label="x")
    host.Extensions[ORJSON_POOL.FindExtensionByName("oj.ratio")] = 1e-05
    for message in (packed_double, packed_value, host):
        with_orjson, without = both(partial(projectops.to_json, message))
        assert with_orjson == without
        assert "1e-05" in with_orjson


def test_nesting_deeper_than_orjson_takes_is_written_as_json_writes_it() -> None:
    root = NODE(label="root")
    node = root
    for _ in range(300):  # orjson stops at 254 levels
        node = node.child
        node.label = "x"
    with_orjson, without = both(partial(projectops.to_json, root))
    assert with_orjson == without
    assert with_orjson.count('"child"') == 300


@pytest.mark.parametrize(
    ("message_type", "text"),
    [
        # orjson: -9.223372036854776e18, which json_format would read as -2**63, in range
        (WKTS_TYPE, '{"int64Value": -9223372036854775809}'),
        (WKTS_TYPE, '{"repeatedInt64Value": [-9223372036854775809]}'),
        (
            type_pb2.Option,
            '{"value": {"@type": "type.googleapis.com/google.protobuf.Int64Value", '
            '"value": -9223372036854775809}}',
        ),
        # float() of it overflows in json_format: a 400, not an OverflowError
        (SCALARS_TYPE, '{"doubleField": 1' + "0" * 400 + "}"),
    ],
)
def test_integers_beyond_64_bits_in_well_known_types_are_refused_alike(
    message_type: type[Message], text: str
) -> None:
    with_orjson, without = both(partial(projectops.from_json, text, message_type))
    assert with_orjson == without
    assert with_orjson[0] == "InvalidArgument", with_orjson
