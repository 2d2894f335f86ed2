"""Results as data (issue 41, item 2): a problem travels from the judge to the runner and the
proxy as a record (field path, what, rule), said once at the edge; the catalogue's tables are
keyed by check id."""

from __future__ import annotations

from typing import cast

import pytest
from google.protobuf.descriptor import Descriptor

import projectops
from projectops.codec import from_json
from projectops.conformance import _catalogue
from projectops.conformance._catalogue import DECODES, Problem, judge_response
from projectops.conformance._proxy import find_violations
from projectops.errors import InvalidArgument


def _operation() -> projectops.Operation:
    return next(iter(projectops.operations()))


# Not JSON, not UTF-8, not an object, an unknown field: each the codec's own words.
_UNDECODED = [b"{", b"\xff", b"[]", b"null", b'{"conformanceUnknownField": 1}']


@pytest.mark.parametrize("body", _UNDECODED)
def test_a_decoding_problem_says_just_what_the_codec_said(body: bytes) -> None:
    op = _operation()
    with pytest.raises(InvalidArgument) as caught:
        from_json(body, op.response_type, strict=True)
    verdict = judge_response(op.response_type, 200, body)
    [problem] = verdict.problems[DECODES]
    assert problem.text() == f"not a {op.response_type.__name__}: {caught.value.message}"


@pytest.mark.parametrize("body", _UNDECODED)
def test_the_proxy_reads_a_problem_by_its_fields(body: bytes) -> None:
    op = _operation()
    [problem] = judge_response(op.response_type, 200, body).problems[DECODES]
    found, message = find_violations(op, "answer", body)
    assert message is None
    [violation] = [v for v in found if v.check == DECODES]
    assert violation.field == (problem.path or "")
    assert violation.detail == problem.what
    assert not violation.detail.startswith("not a ")


def test_a_path_with_a_colon_and_a_space_stays_one_field() -> None:
    """A map key may hold ``": "``: the record keeps the path whole, where splitting the text
    of the problem again would have had to guess where it ends."""
    problem = Problem('labels["a: b"]', "expected a string, got a number")
    assert problem.text() == 'labels["a: b"]: expected a string, got a number'
    assert Problem("", "is required").text() == "the body: is required"
    assert Problem(None, "not an ErrorResponse").text() == "not an ErrorResponse"


def test_the_json_checks_are_the_catalogues_json_checks_in_its_order() -> None:
    listed = tuple(check for check in _catalogue.CHECKS if check.startswith("json."))
    assert listed == _catalogue.JSON_CHECKS


def test_a_mapping_problem_names_its_field_by_path() -> None:
    for op in projectops.operations():
        descriptor = cast(Descriptor, op.response_type.DESCRIPTOR)
        for fd in descriptor.fields:
            if fd.name != fd.json_name:
                found = _catalogue.mapping_problems({fd.name: None}, descriptor, set())
                [problem] = found[_catalogue.CAMEL_CASE]
                assert problem.path == fd.name
                assert problem.what == f"written {fd.name!r}, not {fd.json_name!r}"
                return
    pytest.skip("no response field has a JSON name other than its proto name")


@pytest.mark.parametrize("body", [b"[]", b"null", b"\xff"])
def test_a_request_that_does_not_decode_is_drift_at_the_codecs_path(body: bytes) -> None:
    op = _operation()
    with pytest.raises(InvalidArgument) as caught:
        from_json(body, op.request_type)
    [expected] = caught.value.violations
    found, message = find_violations(op, "request", body)
    assert message is None
    assert [(v.check, v.field, v.detail) for v in found] == [
        ("request.decodes", expected.field, expected.description)
    ]
