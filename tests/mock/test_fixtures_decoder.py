"""The mock server reads fixtures through the core's one decoder (``projectops.fixtures``):
it serves what that decodes, and reports its errors word for word."""

from __future__ import annotations

from pathlib import Path

import pytest

import projectops
from projectops.fixtures import FixtureError, decode_fixtures, default_fixtures
from projectops.mock import load_fixtures


def test_the_mock_server_serves_what_the_core_decodes() -> None:
    decoded = default_fixtures()
    served = load_fixtures()
    assert {p.api_key: p.name for p in decoded} == {k: p.name for k, p in served.items()}
    assert {p.name for p in decoded} == {"demo", "other"}
    for project in decoded:
        for op_name, answers in project.answers.items():
            for answer in answers:
                op = projectops.operation(op_name)
                reply = served[project.api_key].reply(op, answer.request)
                assert reply.body == projectops.to_json(answer.response).encode()


BAD = [
    ('{"projects": [{"project": "a"}]}', "projects[0].apiKey: is required"),
    ('{"a": 1, "a": 2}', 'the top level: the key "a" appears twice'),
    (
        '{"projects": [{"project": "a", "apiKey": "k", "operations": {"nope": []}}]}',
        "projects[0].operations.nope: unknown operation 'nope'",
    ),
    (
        '{"projects": [{"project": "a", "apiKey": "k", "operations": {"get_release_details": '
        '[{"request": {"version": "1"}, "response": {}}, '
        '{"request": {"version": " 1"}, "response": {}}]}}]}',
        "projects[0].operations.get_release_details[1].request: the same request as "
        "projects[0].operations.get_release_details[0]",
    ),
]


@pytest.mark.parametrize(("text", "message"), BAD, ids=[m[:30] for _, m in BAD])
def test_the_server_reports_the_cores_errors(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(FixtureError) as core:
        decode_fixtures(text)
    assert str(core.value).startswith(message)
    path = tmp_path / "fixtures.json"
    path.write_text(text)
    with pytest.raises(FixtureError) as served:
        load_fixtures(path)
    assert str(served.value) == f"{path}: {core.value}"
