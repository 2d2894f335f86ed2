"""The fast path's Timestamp and Duration text (``projectops._fastcodec._timefmt``) against
protobuf's own ``FromJsonString``/``ToJsonString``, which ``json_format`` calls."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import duration_pb2, timestamp_pb2
from hypothesis import given
from hypothesis import strategies as st

from projectops._fastcodec import _timefmt
from projectops._fastcodec._timefmt import (
    format_duration,
    format_timestamp,
    parse_duration,
    parse_timestamp,
)
from tests.core.test_codec_differential import (
    DURATION_INPUTS,
    SETTINGS,
    TIMESTAMP_INPUTS,
    WKTS_TYPE,
    check_decode,
)

SECONDS = st.integers(_timefmt.TIMESTAMP_SECONDS_MIN, _timefmt.TIMESTAMP_SECONDS_MAX)
NANOS = st.one_of(
    st.integers(0, 999_999_999),
    st.sampled_from([0, 1, 500_000_000, 123_000_000, 123_456_000, 999_999_999]),
)


def reference(cls: Any, text: str) -> dict[str, int] | None:
    """What FromJsonString reads `text` as, or None if it refuses."""
    message = cls()
    try:
        message.FromJsonString(text)
    except Exception:
        return None
    return {"seconds": message.seconds, "nanos": message.nanos}


def agreed(parse: Any, cls: Any, text: str) -> dict[str, int] | None:
    """`parse`'s reading of `text`, asserted to be FromJsonString's; None when `parse` refuses
    (ValueError), which it must for every text FromJsonString refuses. A text it refuses that
    FromJsonString reads is left to json_format by the decoder."""
    expected = reference(cls, text)
    try:
        result = parse(text)
    except ValueError:
        return None
    got = {"seconds": result["seconds"], "nanos": result.get("nanos", 0)}
    assert expected is not None, f"read {text!r}, which FromJsonString refuses"
    assert got == expected
    return got


@pytest.mark.parametrize("value", TIMESTAMP_INPUTS + DURATION_INPUTS + [None, {}])
@pytest.mark.parametrize("field", ["timestamp", "duration", "repeatedTimestamp"])
def test_timestamp_and_duration_forms(field: str, value: Any) -> None:
    result = check_decode(
        {field: [value] if field.startswith("repeated") else value}, WKTS_TYPE, False
    )
    if field != "duration" and value in ("2026-11-20T21:10:00Z", "2026-11-20T21:10:00.5Z"):
        assert isinstance(result, WKTS_TYPE)
    if field == "duration" and value in ("1.5s", "-0.5s", "-315576000000.999999999s"):
        assert isinstance(result, WKTS_TYPE)


@pytest.mark.parametrize("text", [v for v in TIMESTAMP_INPUTS if isinstance(v, str)])
def test_parse_timestamp_reads_what_from_json_string_reads(text: str) -> None:
    # Twice: the second read of a UTC hour is served from the cache.
    first = agreed(parse_timestamp, timestamp_pb2.Timestamp, text)
    assert agreed(parse_timestamp, timestamp_pb2.Timestamp, text) == first


@pytest.mark.parametrize("text", [v for v in DURATION_INPUTS if isinstance(v, str)])
def test_parse_duration_reads_what_from_json_string_reads(text: str) -> None:
    # Twice, and after the same fraction beyond the range: a fraction read once is served
    # from the cache, which must not let a text past the checks the first read made.
    first = agreed(parse_duration, duration_pb2.Duration, text)
    assert agreed(parse_duration, duration_pb2.Duration, text) == first
    fraction = text.partition(".")[2]
    for other in (f"315576000001.{fraction}", f"-1.{fraction}", f"1.{fraction}"):
        assert agreed(parse_duration, duration_pb2.Duration, other) == reference(
            duration_pb2.Duration, other
        )


@SETTINGS
@given(SECONDS, NANOS, st.sampled_from(["Z", "+00:00", "+05:30", "-11:59"]))
def test_timestamps_written_by_protobuf_read_back(seconds: int, nanos: int, offset: str) -> None:
    text = timestamp_pb2.Timestamp(seconds=seconds, nanos=nanos).ToJsonString()
    got = agreed(parse_timestamp, timestamp_pb2.Timestamp, text[:-1] + offset)
    if offset == "Z":  # the form protobuf writes is always read here, never left to json_format
        assert got == {"seconds": seconds, "nanos": nanos}


@SETTINGS
@given(SECONDS, NANOS)
def test_format_timestamp_is_to_json_string(seconds: int, nanos: int) -> None:
    message = timestamp_pb2.Timestamp(seconds=seconds, nanos=nanos)
    assert format_timestamp(message) == message.ToJsonString()
    assert format_timestamp(message) == message.ToJsonString()  # the cached hour


@SETTINGS
@given(
    st.integers(-_timefmt.DURATION_SECONDS_MAX, _timefmt.DURATION_SECONDS_MAX),
    st.integers(0, 999_999_999) | st.sampled_from([0, 1, 250_000_000, 999_999_000]),
)
def test_format_duration_is_to_json_string(seconds: int, magnitude: int) -> None:
    nanos = -magnitude if seconds < 0 else magnitude  # seconds and nanos share their sign
    message = duration_pb2.Duration(seconds=seconds, nanos=nanos)
    text = format_duration(message)
    assert text == message.ToJsonString()
    assert duration_pb2.Duration(**parse_duration(text)) == message


@pytest.mark.parametrize(
    ("seconds", "nanos"),
    [(_timefmt.TIMESTAMP_SECONDS_MAX + 1, 0), (_timefmt.TIMESTAMP_SECONDS_MIN - 1, 0), (0, -1)],
)
def test_format_timestamp_refuses_what_to_json_string_refuses(seconds: int, nanos: int) -> None:
    message = timestamp_pb2.Timestamp(seconds=seconds, nanos=nanos)
    with pytest.raises(ValueError):
        message.ToJsonString()
    with pytest.raises(ValueError):
        format_timestamp(message)


@pytest.mark.parametrize(
    ("seconds", "nanos"),
    [(_timefmt.DURATION_SECONDS_MAX + 1, 0), (1, -1), (-1, 5), (0, 1_000_000_000)],
)
def test_format_duration_refuses_what_to_json_string_refuses(seconds: int, nanos: int) -> None:
    message = duration_pb2.Duration(seconds=seconds, nanos=nanos)
    with pytest.raises(ValueError):
        message.ToJsonString()
    with pytest.raises(ValueError):
        format_duration(message)


def test_the_caches_stay_bounded_whatever_the_hours() -> None:
    # Every distinct hour read or written is cached: a peer sending times spread over
    # centuries must not grow the process without end.
    for hour in range(_timefmt.CACHE_SIZE + 10):
        seconds = hour * 3600
        text = format_timestamp(timestamp_pb2.Timestamp(seconds=seconds))
        assert parse_timestamp(text) == {"seconds": seconds}
    assert len(_timefmt._HOUR_SECONDS) <= _timefmt.CACHE_SIZE
    assert len(_timefmt._HOUR_TEXT) <= _timefmt.CACHE_SIZE
    for nanos in range(0, 10 * _timefmt.CACHE_SIZE, 9):  # as many distinct fractions
        read = duration_pb2.Duration(**parse_duration(f"1.{nanos:09d}s"))
        assert read == duration_pb2.Duration(seconds=1, nanos=nanos)
    assert len(_timefmt._NANOS) <= _timefmt.CACHE_SIZE
