"""``from_json(strict=True)`` takes enum values by name only: a number, or a string of digits
that json_format would read as one, is refused wherever the enum sits (a field, a list), on the
fast path and on json_format's, with the field path named. Lenient decoding keeps reading them."""

from __future__ import annotations

from typing import Any

import pytest

from projectops import InvalidArgument, from_json
from projectops.v1.release_pb2 import ReleaseSummary, SecurityScanSummary

NUMERIC = ["1", "01", "0", "-0", "99", "3", 1, 3]


@pytest.mark.parametrize("value", NUMERIC)
def test_strict_refuses_a_number_or_digit_string_as_enum(value: Any) -> None:
    with pytest.raises(InvalidArgument) as info:
        from_json({"status": value}, SecurityScanSummary, strict=True)
    assert [v.field for v in info.value.violations] == ["status"]
    assert "one of the names" in info.value.message


@pytest.mark.parametrize("value", NUMERIC)
def test_strict_refuses_it_inside_a_list_of_messages(value: Any) -> None:
    body = {"securityScans": [{"status": "COMPLETED"}, {"status": value}]}
    with pytest.raises(InvalidArgument) as info:
        from_json(body, ReleaseSummary, strict=True)
    assert [v.field for v in info.value.violations] == ["securityScans[1].status"]


@pytest.mark.parametrize("text", [True, False])
def test_strict_refuses_it_in_json_text_too(text: bool) -> None:
    body = '{"status": "1"}' if text else {"status": "1"}
    with pytest.raises(InvalidArgument):
        from_json(body, SecurityScanSummary, strict=True)


def test_names_pass_strict_and_lenient_still_reads_digit_strings() -> None:
    assert from_json({"status": "COMPLETED"}, SecurityScanSummary, strict=True).status == 3
    assert from_json({"status": "3"}, SecurityScanSummary).status == 3
    assert from_json({"status": 3}, SecurityScanSummary).status == 3
