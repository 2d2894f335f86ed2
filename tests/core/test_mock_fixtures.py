"""The fixtures format has one decoder, in the core (``projectops.fixtures``): typed
messages in the file's order, and the OpenAPI document's examples are what it decodes (the
mock server's side: tests/server/test_fixtures_decoder.py)."""

from __future__ import annotations

import json

import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor

import projectops
from projectops import fixtures as mock_fixtures
from projectops import openapi
from projectops.fixtures import FixtureError, decode_fixtures, default_fixtures
from projectops.registry import Operation
from tests.synthetic import with_required_string, without_request_fields

OPS = projectops.operations()
# Picked by property: an operation with a REQUIRED string field, and one whose request is empty.
GET, REQUIRED = with_required_string(
    lambda op: any(
        fd.message_type and not fd.is_repeated for fd in op.response_type.DESCRIPTOR.fields
    )
)
FIELD = REQUIRED.name
LIST = without_request_fields()
# A message field of GET's response, set in one response and not in the other.
PART = next(
    fd for fd in GET.response_type.DESCRIPTOR.fields if fd.message_type and not fd.is_repeated
)

TWO_ANSWERS = {
    "projects": [
        {
            "project": "b",
            "apiKey": "key-b",
            "operations": {
                GET.name: [
                    {"request": {FIELD: " 2.0 "}, "response": {}},
                    {"request": {FIELD: "1.0"}, "response": {PART.json_name: {}}},
                ],
                LIST.name: [{"response": {}}],
            },
        },
        {"project": "a", "apiKey": "key-a"},
    ]
}


def test_decoded_projects_keep_the_files_order_and_typed_messages() -> None:
    projects = decode_fixtures(json.dumps(TWO_ANSWERS))
    assert [(p.name, p.api_key) for p in projects] == [("b", "key-b"), ("a", "key-a")]
    first = projects[0]
    assert list(first.answers) == sorted([GET.name, LIST.name])  # operations by name
    gets = first.answers[GET.name]
    assert [a.request for a in gets] == [
        GET.request_type(**{FIELD: " 2.0 "}),
        GET.request_type(**{FIELD: "1.0"}),
    ]
    assert isinstance(gets[1].response, GET.response_type)
    assert gets[1].response.HasField(PART.name) and not gets[0].response.HasField(PART.name)
    # The match key trims strings: the request " 2.0 " is matched by "2.0".
    assert gets[0].key == mock_fixtures.request_key(GET.request_type(**{FIELD: "2.0"}))
    (listed,) = first.answers[LIST.name]
    assert listed.request == LIST.request_type() and listed.key == "{}"
    assert projects[1].answers == {}
    assert "key-b" not in repr(projects)  # keys stay out of reprs (and so out of logs)
    # A parsed object decodes the same as its text.
    assert decode_fixtures(TWO_ANSWERS) == projects


def _int64_path(message: Descriptor, seen: frozenset[str] = frozenset()) -> list[FieldDescriptor]:
    """The fields down to an int64 field under `message` (a repeated one holds one element);
    empty if there is none."""
    for fd in message.fields:
        if fd.type == fd.TYPE_INT64 and not fd.is_repeated:
            return [fd]
        nested = fd.message_type
        if (
            nested is not None
            and nested.full_name not in seen
            and not nested.GetOptions().map_entry
            and nested.file.package != "google.protobuf"  # JSON strings, not objects
        ):
            below = _int64_path(nested, seen | {message.full_name})
            if below:
                return [fd, *below]
    return []


def test_a_64_bit_integer_written_as_a_number_stays_exact() -> None:
    op, path = next((op, p) for op in OPS if (p := _int64_path(op.response_type.DESCRIPTOR)))
    big = 9007199254740993  # 2**53 + 1: a float would round it
    response: object = big
    for fd in reversed(path):
        response = {fd.json_name: [response] if fd.is_repeated else response}
    text = json.dumps(
        {
            "projects": [
                {"project": "a", "apiKey": "k", "operations": {op.name: [{"response": response}]}}
            ]
        }
    )
    assert str(big) in text  # written as a JSON number, not a string
    (project,) = decode_fixtures(text)
    (answer,) = project.answers[op.name]
    got: object = answer.response
    for fd in path:
        got = getattr(got, fd.name)
        if fd.is_repeated:
            got = got[0]  # type: ignore[index]
    assert got == big


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_the_openapi_examples_are_the_decoded_default_fixtures(op: Operation) -> None:
    post = openapi.document()["paths"][op.path]["post"]
    # An operation the default fixtures do not answer has no examples.
    requests = post["requestBody"]["content"]["application/json"].get("examples", {})
    responses = post["responses"]["200"]["content"]["application/json"].get("examples", {})
    expected = [
        (project.name, answer)
        for project in default_fixtures()
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
