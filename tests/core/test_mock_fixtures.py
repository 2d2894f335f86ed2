"""The fixtures format has one decoder, in the core (``projectops.fixtures``): typed
messages in the file's order, and the OpenAPI document's examples are what it decodes (the
mock server's side: tests/server/test_fixtures_decoder.py)."""

from __future__ import annotations

import json

import pytest

import projectops
from projectops import fixtures as mock_fixtures
from projectops import openapi
from projectops.fixtures import FixtureError, decode_fixtures, default_fixtures
from projectops.v1 import operations_pb2 as ops

GET = projectops.operation("get_release_details")
LIST = projectops.operation("list_rum_environments")

TWO_ANSWERS = {
    "projects": [
        {
            "project": "b",
            "apiKey": "key-b",
            "operations": {
                "get_release_details": [
                    {"request": {"version": " 2.0 "}, "response": {}},
                    {"request": {"version": "1.0"}, "response": {"summary": {}}},
                ],
                "list_rum_environments": [{"response": {}}],
            },
        },
        {"project": "a", "apiKey": "key-a"},
    ]
}


def test_decoded_projects_keep_the_files_order_and_typed_messages() -> None:
    projects = decode_fixtures(json.dumps(TWO_ANSWERS))
    assert [(p.name, p.api_key) for p in projects] == [("b", "key-b"), ("a", "key-a")]
    first = projects[0]
    assert list(first.answers) == ["get_release_details", "list_rum_environments"]
    gets = first.answers["get_release_details"]
    assert [a.request for a in gets] == [
        ops.GetReleaseDetailsRequest(version=" 2.0 "),
        ops.GetReleaseDetailsRequest(version="1.0"),
    ]
    assert isinstance(gets[1].response, ops.GetReleaseDetailsResponse)
    assert gets[1].response.HasField("summary") and not gets[0].response.HasField("summary")
    # The match key trims strings: the request " 2.0 " is matched by "2.0".
    assert gets[0].key == mock_fixtures.request_key(ops.GetReleaseDetailsRequest(version="2.0"))
    (listed,) = first.answers["list_rum_environments"]
    assert listed.request == ops.ListRumEnvironmentsRequest() and listed.key == "{}"
    assert projects[1].answers == {}
    assert "key-b" not in repr(projects)  # keys stay out of reprs (and so out of logs)
    # A parsed object decodes the same as its text.
    assert decode_fixtures(TWO_ANSWERS) == projects


def test_a_64_bit_integer_written_as_a_number_stays_exact() -> None:
    text = (
        '{"projects": [{"project": "a", "apiKey": "k", "operations": {"list_rum_environments": '
        '[{"response": {"environments": [{"sessionCount": 9007199254740993}]}}]}}]}'
    )
    (project,) = decode_fixtures(text)
    (answer,) = project.answers["list_rum_environments"]
    assert answer.response.environments[0].session_count == 9007199254740993


def test_the_openapi_examples_are_the_decoded_default_fixtures() -> None:
    doc = openapi.document()
    decoded = default_fixtures()
    for op in (GET, LIST):
        post = doc["paths"][op.path]["post"]
        requests = post["requestBody"]["content"]["application/json"]["examples"]
        responses = post["responses"]["200"]["content"]["application/json"]["examples"]
        expected = [
            (project.name, answer)
            for project in decoded
            for answer in project.answers.get(op.name, ())
        ]
        assert [example["value"] for example in requests.values()] == [
            projectops.to_dict(answer.request) for _, answer in expected
        ]
        assert [example["value"] for example in responses.values()] == [
            projectops.to_dict(answer.response) for _, answer in expected
        ]
        assert list(requests) == [name for name, _ in expected]


def test_broken_default_fixtures_name_themselves(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mock_fixtures, "_DEFAULT", ("py.typed",))
    with pytest.raises(FixtureError, match=r"^default fixtures: not valid JSON"):
        default_fixtures()
