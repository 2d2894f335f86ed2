"""The JSON Schema's text patterns accept nothing the codec refuses, with the codec as oracle:
64-bit integers (range included, on input also as numbers), timestamps (real dates, hours,
offsets, the 0001..9999 range) and durations, over strings generated near and inside the forms.
And they accept the codec's own output form: every value the codec writes matches."""

from __future__ import annotations

import datetime
import re
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from projectops import InvalidArgument, from_json, to_dict
from projectops.json_schema import message_schema
from projectops.v1.release_pb2 import Issue, ScenarioResult, SecurityScanSummary
from tests.hypothesis_profiles import examples

_SUMMARY_IN = message_schema(SecurityScanSummary, "input")["properties"]
# An int64 field without a protovalidate rule: the codec's form alone (tests/core/test_rules.py
# and test_json_schema.py cover the rules' keywords).
_ISSUE_IN = message_schema(Issue, "input")["properties"]
_RESULT_OUT = message_schema(ScenarioResult, "output")["properties"]
# On input a field without REQUIRED is its form or null (null: the default, docs/contract.md §3).
INT64 = re.compile(_ISSUE_IN["scenarioId"]["anyOf"][0]["pattern"])
TIMESTAMP = re.compile(_SUMMARY_IN["startTime"]["anyOf"][0]["pattern"])
DURATION = re.compile(_RESULT_OUT["runDuration"]["pattern"])


def _accepts(field: str, value: Any, message: Any = SecurityScanSummary) -> bool:
    try:
        from_json({field: value}, message, strict=True)
    except InvalidArgument:
        return False
    return True


def _matches(pattern: re.Pattern[str], text: str) -> bool:
    return pattern.search(text) is not None  # JSON Schema's `pattern` is a search


# --- 64-bit integers


@pytest.mark.parametrize(
    "text",
    ["9223372036854775808", "-9223372036854775809", "99999999999999999999", "1" * 40, "5\n"],
)
def test_int64_pattern_refuses_out_of_range(text: str) -> None:
    assert not _matches(INT64, text) or _accepts("scenarioId", text, Issue)
    if text != "5\n":
        assert not _matches(INT64, text)


@pytest.mark.parametrize("value", [0, 1, -1, 2**63 - 1, -(2**63), 10**18, -(10**18)])
def test_int64_pattern_takes_the_codecs_output(value: int) -> None:
    text = to_dict(Issue(scenario_id=value))["scenarioId"]
    assert _matches(INT64, text)


@settings(max_examples=examples(200), deadline=None)
@given(
    st.one_of(
        st.integers(min_value=-(2**66), max_value=2**66).map(str),
        st.from_regex(r"-?[0-9]{1,24}", fullmatch=True),
        st.from_regex(r"-?(?:922337203685477580[0-9]|1844674407370955161[0-9])", fullmatch=True),
    )
)
def test_int64_pattern_matches_only_what_the_codec_takes(text: str) -> None:
    if _matches(INT64, text):
        assert _accepts("scenarioId", text, Issue), text
        assert -(2**63) <= int(text) < 2**63
    elif text == str(int(text)) and text != "-0":  # the canonical form: exactly the range
        assert not _accepts("scenarioId", text, Issue), text


@settings(max_examples=examples(300), deadline=None)
@given(st.integers(min_value=-(2**66), max_value=2**66))
def test_int64_input_schema_as_a_number_matches_the_codec(number: int) -> None:
    schema = _ISSUE_IN["scenarioId"]  # the field's own: the message requires others
    valid = jsonschema.Draft202012Validator(schema).is_valid(number)
    assert valid == _accepts("scenarioId", number, Issue)


@settings(max_examples=examples(300), deadline=None)
@given(st.integers(min_value=-(2**65), max_value=2**66))
def test_uint64_pattern_is_the_unsigned_range(number: int) -> None:
    from projectops._wire import _UINT64_PATTERN

    assert (re.search(_UINT64_PATTERN, str(number)) is not None) == (0 <= number < 2**64)


# --- timestamps


@pytest.mark.parametrize(
    "text",
    [
        "2026-13-01T00:00:00Z",  # month 13
        "2026-01-32T00:00:00Z",  # day 32
        "2026-04-31T00:00:00Z",
        "2026-02-29T00:00:00Z",  # not a leap year
        "1900-02-29T00:00:00Z",
        "2026-01-01T25:00:00Z",  # hour 25
        "2026-01-01T24:00:00Z",
        "2026-01-01T23:60:00Z",
        "2026-01-01T23:59:60Z",
        "0000-01-01T00:00:00Z",
        "0001-01-01T00:00:00+01:00",  # before year 1 in UTC
        "9999-12-31T23:59:59-01:00",  # after 9999 in UTC
        "2026-01-01T00:00:00Z\n",
        "2026-01-01T00:00:00.1234567890Z",
    ],
)
def test_timestamp_pattern_refuses_what_the_codec_refuses(text: str) -> None:
    assert not _accepts("startTime", text)
    assert not _matches(TIMESTAMP, text)


@pytest.mark.parametrize(
    "text", ["2024-02-29T00:00:00Z", "2000-02-29T12:00:00.5+05:30", "0001-01-01T00:00:00Z"]
)
def test_timestamp_pattern_takes_real_dates(text: str) -> None:
    assert _accepts("startTime", text) and _matches(TIMESTAMP, text)


def _two(n: int) -> str:
    return f"{n:02d}"


@settings(max_examples=examples(400), deadline=None)
@given(
    year=st.integers(0, 9999),
    month=st.integers(0, 19),
    day=st.integers(0, 39),
    hour=st.integers(0, 29),
    minute=st.integers(0, 69),
    second=st.integers(0, 69),
    fraction=st.one_of(st.none(), st.from_regex(r"[0-9]{0,11}", fullmatch=True)),
    offset=st.one_of(
        st.just("Z"),
        st.tuples(st.sampled_from("+-"), st.integers(0, 29), st.integers(0, 69)).map(
            lambda o: f"{o[0]}{o[1]:02d}:{o[2]:02d}"
        ),
    ),
    edge=st.sampled_from([None, "0001-01-01", "9999-12-31"]),
)
def test_timestamp_pattern_matches_only_what_the_codec_takes(
    year: int,
    month: int,
    day: int,
    hour: int,
    minute: int,
    second: int,
    fraction: str | None,
    offset: str,
    edge: str | None,
) -> None:
    date = edge or f"{year:04d}-{_two(month)}-{_two(day)}"
    dot = "" if fraction is None else "." + fraction
    text = f"{date}T{_two(hour)}:{_two(minute)}:{_two(second)}{dot}{offset}"
    if _matches(TIMESTAMP, text):
        assert _accepts("startTime", text), text


@settings(max_examples=examples(400), deadline=None)
@given(
    st.datetimes(min_value=datetime.datetime(1, 1, 2), max_value=datetime.datetime(9999, 12, 30)),
    st.integers(-(23 * 60 + 59), 23 * 60 + 59),
)
def test_timestamp_pattern_takes_every_rfc3339_time(when: datetime.datetime, minutes: int) -> None:
    sign = "-" if minutes < 0 else "+"
    text = when.isoformat(timespec="microseconds") + f"{sign}{abs(minutes) // 60:02d}:"
    text += f"{abs(minutes) % 60:02d}"
    assert _matches(TIMESTAMP, text) and _accepts("startTime", text), text
    written = to_dict(from_json({"startTime": text}, SecurityScanSummary))["startTime"]
    assert _matches(TIMESTAMP, written)


# --- durations


@settings(max_examples=examples(200), deadline=None)
@given(
    st.one_of(
        st.from_regex(r"-?[0-9]{1,14}(?:\.[0-9]{0,10})?s", fullmatch=True),
        st.integers(-(2**40), 2**40).map(lambda n: f"{n}s"),
    )
)
def test_duration_pattern_matches_only_what_the_codec_takes(text: str) -> None:
    if _matches(DURATION, text):
        assert _accepts("runDuration", text, ScenarioResult), text


@pytest.mark.parametrize("text", ["315576000001s", "-315576000001s", "1s\n", "99999999999999s"])
def test_duration_pattern_refuses_out_of_range(text: str) -> None:
    assert not _accepts("runDuration", text, ScenarioResult)
    assert not _matches(DURATION, text)
