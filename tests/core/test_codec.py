"""The JSON codec against golden fixtures and the rules of the protobuf JSON mapping."""

import gc
import json
from typing import Any

import pytest

import projectops
from projectops.v1.operations_pb2 import (
    GetReleaseDetailsRequest,
    GetReleaseDetailsResponse,
)
from tests import golden
from tests.golden import GOLDEN

CASES = {stem: golden.message_type(stem) for stem in golden.stems()}


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden_fixture_round_trips_to_the_exact_json(case: str) -> None:
    text = (GOLDEN / f"{case}.json").read_text()
    message = projectops.from_json(text, CASES[case], strict=True)
    assert json.loads(projectops.to_json(message)) == json.loads(text)
    assert json.loads(projectops.to_json(message, indent=2)) == json.loads(text)
    assert projectops.from_json(projectops.to_json(message), CASES[case]) == message


def test_golden_response_decodes_to_typed_values() -> None:
    text = (GOLDEN / "get_release_details.response.json").read_text()
    response = projectops.from_json(text, GetReleaseDetailsResponse)
    assert response.summary.release.version == "1.4.0"
    issue = response.detailed_results.issues[0]
    assert issue.issue_id == 2**53 + 1  # exact beyond 2**53
    from projectops.v1 import release_pb2

    assert issue.status == release_pb2.ACTIVE
    assert response.summary.security_scans[1].end_time.ToJsonString() == "2026-11-19T09:47:30Z"
    assert response.detailed_results.scenarios[0].results[0].run_duration.ToMilliseconds() == 42500


def test_output_keys_follow_the_proto_field_order() -> None:
    text = (GOLDEN / "get_release_details.response.json").read_text()
    data = projectops.to_dict(projectops.from_json(text, GetReleaseDetailsResponse))
    issue = data["detailedResults"]["issues"][3]  # most of its fields are defaults
    descriptor = GetReleaseDetailsResponse.DESCRIPTOR.fields_by_name["detailed_results"]
    fields = descriptor.message_type.fields_by_name["issues"].message_type.fields
    assert list(issue) == [fd.json_name for fd in fields]
    assert list(data["summary"]) == ["release", "testCounts", "openIssues", "securityScans"]


def test_output_mapping_rules() -> None:
    response = projectops.from_json(
        {"detailed_results": {"issues": [{"issue_id": "18446744073709551", "status": "ACTIVE"}]}},
        GetReleaseDetailsResponse,
    )
    issue = projectops.to_dict(response)["detailedResults"]["issues"][0]
    assert issue["issueId"] == "18446744073709551"  # int64 as a JSON string
    assert issue["status"] == "ACTIVE"  # enum as its name
    assert issue["occurrenceCount"] == "0"  # fields without presence are always written
    assert issue["severity"] == "ISSUE_SEVERITY_UNSPECIFIED"
    assert "createTime" not in issue  # message fields have presence: absent when unset
    assert "detailed_results" not in projectops.to_json(response)


@pytest.mark.parametrize(
    ("payload", "issue_id"),
    [
        ({"issueId": 9007199254740993}, 9007199254740993),  # a JSON number beyond 2**53, exact
        ({"issueId": "9007199254740993"}, 9007199254740993),
        ({"issue_id": "-5"}, -5),  # proto name accepted on input
        ({"issueId": 1e3}, 1000),
        ({"issueId": "9223372036854775807"}, 2**63 - 1),
    ],
)
def test_int64_input_forms(payload: dict[str, Any], issue_id: int) -> None:
    text = json.dumps({"detailedResults": {"issues": [payload]}})
    response = projectops.from_json(text, GetReleaseDetailsResponse)
    assert response.detailed_results.issues[0].issue_id == issue_id


def test_int64_number_beyond_2_53_survives_text_input() -> None:
    # As JSON text, not a Python dict: the parser must not go through a float.
    text = '{"detailedResults": {"issues": [{"issueId": 9007199254740993}]}}'
    response = projectops.from_json(text.encode(), GetReleaseDetailsResponse)
    assert response.detailed_results.issues[0].issue_id == 9007199254740993


@pytest.mark.parametrize(
    ("data", "path", "expected"),
    [
        ({"version": 123}, "version", "expected a string, got the number 123"),
        ({"version": ["1.0"]}, "version", "expected a string, got an array"),
        ("[]", "", "expected a JSON object, got an array"),
        ('"1.0.0"', "", "expected a JSON object"),
        ("12", "", "expected a JSON object"),
    ],
)
def test_request_type_errors_name_the_field(data: Any, path: str, expected: str) -> None:
    with pytest.raises(projectops.InvalidArgument) as info:
        projectops.from_json(data, GetReleaseDetailsRequest)
    assert expected in info.value.message
    assert [v.field for v in info.value.violations] == [path]
    assert info.value.code == "invalid_argument"
    assert info.value.http_status is None  # found locally: no HTTP answer was involved


@pytest.mark.parametrize(
    ("data", "path", "expected"),
    [
        ({"summary": 5}, "summary", "expected a JSON object, got the number 5"),
        ({"summary": {"testCounts": {}}}, "summary.testCounts", "expected a JSON array"),
        (
            {"summary": {"testCounts": [{"total": "abc"}]}},
            "summary.testCounts[0].total",
            "expected a 64-bit integer",
        ),
        (
            {"summary": {"testCounts": [{"total": 1.5}]}},
            "summary.testCounts[0].total",
            "got the number 1.5",
        ),
        (
            {"detailedResults": {"issues": [{}, {"createTime": "yesterday"}]}},
            "detailedResults.issues[1].createTime",
            "expected an RFC 3339 timestamp",
        ),
        (
            {"detailed_results": {"scenarios": [{"results": [{"runDuration": "5 minutes"}]}]}},
            "detailedResults.scenarios[0].results[0].runDuration",
            "expected a duration string",
        ),
        (
            {"summary": {"release": {"focusAreas": ["a", 3]}}},
            "summary.release.focusAreas[1]",
            "expected a string",
        ),
        (
            {"summary": {"release": {"version": True}}},
            "summary.release.version",
            "got the boolean true",
        ),
    ],
)
def test_nested_errors_name_the_field_path(data: Any, path: str, expected: str) -> None:
    with pytest.raises(projectops.InvalidArgument) as info:
        projectops.from_json(data, GetReleaseDetailsResponse)
    assert info.value.message.startswith(f"{path}: ")
    assert expected in info.value.message
    assert [v.field for v in info.value.violations] == [path]


@pytest.mark.parametrize(
    "data",
    [b"{", b"\xff\xfe", "not json", '{"version": "1"} trailing'],
)
def test_text_that_is_not_json_is_invalid_argument(data: str | bytes) -> None:
    with pytest.raises(projectops.InvalidArgument):
        projectops.from_json(data, GetReleaseDetailsRequest)


def test_unknown_fields_are_ignored_by_default_and_rejected_when_strict() -> None:
    data = {"version": "1.0.0", "channel": "beta"}
    assert projectops.from_json(data, GetReleaseDetailsRequest).version == "1.0.0"
    with pytest.raises(projectops.InvalidArgument) as info:
        projectops.from_json(data, GetReleaseDetailsRequest, strict=True)
    assert info.value.message.startswith("channel: expected a known field")
    assert "version" in info.value.message


def test_nested_unknown_field_in_strict_mode_names_its_path() -> None:
    with pytest.raises(projectops.InvalidArgument) as info:
        projectops.from_json(
            {"summary": {"release": {"tag": "x"}}}, GetReleaseDetailsResponse, strict=True
        )
    assert info.value.violations[0].field == "summary.release.tag"


@pytest.mark.parametrize(
    ("status", "strict", "outcome"),
    [
        ("ACTIVE", False, "ACTIVE"),
        ("ACTIVE", True, "ACTIVE"),
        (1, False, "ACTIVE"),  # integer enum values are accepted unless strict
        (1, True, None),
        ("RESOLVED", False, "ISSUE_STATUS_UNSPECIFIED"),  # unknown name: forward compatible
        ("RESOLVED", True, None),
    ],
)
def test_enum_input(status: Any, strict: bool, outcome: str | None) -> None:
    data = {"detailedResults": {"issues": [{"status": status}]}}
    if outcome is None:
        with pytest.raises(projectops.InvalidArgument) as info:
            projectops.from_json(data, GetReleaseDetailsResponse, strict=strict)
        assert info.value.violations[0].field == "detailedResults.issues[0].status"
        assert "ACTIVE, IGNORED, FIXED" in info.value.message
        return
    response = projectops.from_json(data, GetReleaseDetailsResponse, strict=strict)
    assert projectops.to_dict(response)["detailedResults"]["issues"][0]["status"] == outcome


def test_null_reads_as_the_default() -> None:
    request = projectops.from_json({"version": None}, GetReleaseDetailsRequest, strict=True)
    assert request.version == ""


@pytest.mark.parametrize(
    "body",
    [
        '{"version": ' + "9" * 4000 + "}",
        '{"' + "k" * 100_000 + '": "1.0.0"}',
        '{"version": "1.0.0", "x' + "\\ud800" * 10 + "y" * 100_000 + '": 1}',
    ],
    ids=["long-number", "long-unknown-key", "long-key-with-surrogate"],
)
def test_errors_never_echo_a_long_value(body: str) -> None:
    with pytest.raises(projectops.InvalidArgument) as caught:
        projectops.from_json(body, GetReleaseDetailsRequest, strict=True)
    text = projectops.codec.error_body(caught.value)
    assert len(text) < 600, text


@pytest.mark.parametrize("enabled", [True, False], ids=["collector on", "collector off"])
def test_the_garbage_collector_is_as_the_program_left_it(enabled: bool) -> None:
    # from_json and to_json pause the cyclic collector while they run (codec._collector_paused).
    text = (GOLDEN / "get_release_details.response.json").read_text()
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        message = projectops.from_json(text, GetReleaseDetailsResponse)
        assert gc.isenabled() is enabled
        assert json.loads(projectops.to_json(message, indent=2)) == json.loads(text)
        assert gc.isenabled() is enabled
        with pytest.raises(projectops.InvalidArgument):
            projectops.from_json('{"summary": 1}', GetReleaseDetailsResponse)
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
