"""``codec.iter_json`` writes exactly ``to_json``'s text, and ``from_json`` refuses a body whose
decoding would cost more memory than it may (many JSON objects per byte)."""

from __future__ import annotations

import json

import pytest
from google.protobuf.message import Message
from hypothesis import given
from hypothesis import strategies as st

from projectops import InvalidArgument, codec
from projectops.v1 import operations_pb2 as ops
from tests.core.test_codec_differential import ALL_TYPES, SETTINGS, any_message
from tests.golden import GOLDEN

INDENTS = [None, 0, 2, 4]


def joined(message: Message, indent: int | None) -> str:
    return "".join(codec.iter_json(message, indent=indent))


@SETTINGS
@given(any_message(ALL_TYPES), st.sampled_from(INDENTS))
def test_iter_json_is_to_json_in_pieces(message: Message, indent: int | None) -> None:
    try:
        expected = codec.to_json(message, indent=indent)
    except Exception as exc:
        with pytest.raises(type(exc)):
            joined(message, indent)
        return
    assert joined(message, indent) == expected


@pytest.mark.parametrize("indent", INDENTS)
def test_iter_json_of_the_golden_responses_and_long_lists(indent: int | None) -> None:
    details = codec.from_json(
        (GOLDEN / "get_release_details.response.json").read_text(), ops.GetReleaseDetailsResponse
    )
    details.summary.release.focus_areas.extend(f"area \u00e9\n{i}" for i in range(700))
    details.detailed_results.issues.extend([details.detailed_results.issues[0]] * 600)
    environments = ops.ListRumEnvironmentsResponse()
    for i in range(1000):  # several batches, the last one partial
        environments.environments.add(environment=f"env-{i}").first_seen_time.FromSeconds(i)
    for message in (details, environments, ops.ListRumEnvironmentsResponse()):
        assert joined(message, indent) == codec.to_json(message, indent=indent)


def test_iter_json_yields_bounded_pieces() -> None:
    message = ops.ListRumEnvironmentsResponse()
    for i in range(20_000):
        message.environments.add(environment=f"env-{i}")
    pieces = list(codec.iter_json(message, indent=2))
    assert len(pieces) > 10
    assert max(len(piece) for piece in pieces) < 200_000


def test_a_body_of_empty_objects_is_refused_before_it_is_parsed() -> None:
    body = b'{"environments":[' + b",".join([b"{}"] * 1_000_000) + b"]}"
    with pytest.raises(InvalidArgument) as caught:
        codec.from_json(body, ops.ListRumEnvironmentsResponse)
    message = caught.value.message
    assert "1,000,001 JSON objects" in message
    assert "what decoding may cost" in message
    assert f"{len(body):,} bytes" in message
    # The same refusal for text.
    with pytest.raises(InvalidArgument, match="what decoding may cost"):
        codec.from_json(body.decode(), ops.ListRumEnvironmentsResponse)


def test_what_decoding_may_cost_leaves_real_payloads_alone() -> None:
    # Under the floor: any small body, however dense.
    small = '{"environments":[' + ",".join(["{}"] * 50_000) + "]}"
    assert len(codec.from_json(small, ops.ListRumEnvironmentsResponse).environments) == 50_000
    # Above the floor the cap is per byte, so 2 MB payloads meet the same cap as larger ones.
    # A large real payload: the golden response's issues repeated to about 2 MB.
    golden = json.loads((GOLDEN / "get_release_details.response.json").read_text())
    issues = golden["detailedResults"]["issues"]
    golden["detailedResults"]["issues"] = issues * (2_000_000 // len(json.dumps(issues)))
    text = json.dumps(golden)
    assert len(text) * codec.DECODE_BYTES_PER_BYTE > codec.DECODE_BYTES_FLOOR
    decoded = codec.from_json(text, ops.GetReleaseDetailsResponse)
    assert len(decoded.detailed_results.issues) == len(golden["detailedResults"]["issues"])
    # Many short environments (20 bytes each) are still decoded.
    short = '{"environments":[' + ",".join(['{"environment":"a"}'] * 120_000) + "]}"
    assert len(short) * codec.DECODE_BYTES_PER_BYTE > codec.DECODE_BYTES_FLOOR
    assert len(codec.from_json(short, ops.ListRumEnvironmentsResponse).environments) == 120_000
