"""The mock server over real sockets: ``python -m projectops mock-server`` as a subprocess."""

from __future__ import annotations

import json
from collections.abc import Iterator
from importlib import resources
from typing import Any

import httpx2
import pytest

import projectops
from projectops.conventions import API_KEY_HEADER, MAX_BODY_BYTES

LIST = projectops.operation("list_rum_environments")
GET = projectops.operation("get_release_details")


def default_fixtures() -> dict[str, Any]:
    text = resources.files("projectops").joinpath("default_fixtures.json").read_text()
    data: dict[str, Any] = json.loads(text)
    return data


def expected(project: str, op: projectops.Operation, request: dict[str, Any]) -> dict[str, Any]:
    """The response the fixtures hold, in the canonical JSON form the server writes."""
    for entry in default_fixtures()["projects"]:
        if entry["project"] == project:
            for answer in entry["operations"][op.name]:
                if answer["request"] == request:
                    return projectops.to_dict(
                        projectops.from_json(answer["response"], op.response_type)
                    )
    raise LookupError(project, op.name, request)


@pytest.fixture(scope="module")
def client(mock_server: Any) -> Iterator[httpx2.Client]:
    with httpx2.Client(base_url=mock_server.base_url, timeout=10) as c:
        yield c


def post(
    client: httpx2.Client,
    op_or_path: projectops.Operation | str,
    body: Any = None,
    *,
    key: str | None = "demo-key",
    headers: dict[str, str] | None = None,
    content: bytes | None = None,
) -> httpx2.Response:
    path = op_or_path.path if isinstance(op_or_path, projectops.Operation) else op_or_path
    all_headers = {"Content-Type": "application/json", **(headers or {})}
    if key is not None:
        all_headers[API_KEY_HEADER] = key
    if content is None:
        content = b"" if body is None else json.dumps(body).encode()
    return client.post(path, content=content, headers=all_headers)


def error_of(response: httpx2.Response, status: int, code: str) -> str:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["code"] == code
    assert set(body) == {"code", "message", "violations"}
    message: str = body["message"]
    return message


@pytest.mark.slow
def test_list_rum_environments_end_to_end(client: httpx2.Client) -> None:
    response = post(client, LIST, {})
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json() == expected("demo", LIST, {})
    assert response.json()["environments"][0] == {
        "environment": "production",
        "firstSeenTime": "2024-03-02T09:15:00Z",
        "lastSeenTime": "2025-11-20T18:42:07Z",
        "sessionCount": "184233",
    }


@pytest.mark.slow
def test_get_release_details_end_to_end(client: httpx2.Client) -> None:
    response = post(client, GET, {"version": "1.0.0"})
    assert response.status_code == 200
    body = response.json()
    assert body == expected("demo", GET, {"version": "1.0.0"})
    # What the wire form promises: int64 as exact strings, enum names, RFC 3339, durations.
    issues = body["detailedResults"]["issues"]
    assert issues[0]["issueId"] == "9007199254740993"
    assert [i["status"] for i in issues].count("ACTIVE") == 2
    result = body["detailedResults"]["scenarios"][0]["results"][0]
    assert result == {
        "environment": "QA",
        "platform": "WEB_EXECUTION_PLATFORM",
        "status": "PASSED",
        "runTime": "2025-11-18T09:00:12Z",
        "runDuration": "42.500s",
    }
    assert body["summary"]["release"]["gitSha"] == "5bef4b1ccf3ccfda900b4b4eb43a9adf333c7b10"
    assert [s["status"] for s in body["summary"]["securityScans"]] == ["IN_PROGRESS", "COMPLETED"]


@pytest.mark.slow
def test_empty_body_equals_the_empty_object(client: httpx2.Client) -> None:
    assert post(client, LIST).json() == post(client, LIST, {}).json()


@pytest.mark.slow
def test_version_with_surrounding_spaces_matches(client: httpx2.Client) -> None:
    assert post(client, GET, {"version": "  1.0.0\t"}).json() == expected(
        "demo", GET, {"version": "1.0.0"}
    )


@pytest.mark.slow
def test_the_other_project_has_other_data(client: httpx2.Client) -> None:
    other = post(client, LIST, {}, key="other-key").json()
    assert other == expected("other", LIST, {})
    assert other != post(client, LIST, {}).json()
    assert [e["environment"] for e in other["environments"]] == ["staging", "prod-eu"]
    release = post(client, GET, {"version": "2.3.1"}, key="other-key").json()
    assert release["summary"]["release"]["previousVersion"] == "2.3.0"
    message = error_of(
        post(client, GET, {"version": "1.0.0"}, key="other-key"), 400, "failed_precondition"
    )
    assert message == 'project other has no get_release_details answer for version "1.0.0"'


@pytest.mark.slow
def test_project_id_header_naming_another_project_changes_nothing(client: httpx2.Client) -> None:
    plain = post(client, GET, {"version": "1.0.0"})
    for header in ("Project-Id", "Organization-Id"):
        crossed = post(client, GET, {"version": "1.0.0"}, headers={header: "other"})
        assert crossed.status_code == 200
        assert crossed.json() == plain.json()
    error_of(
        post(client, GET, {"version": "2.3.1"}, headers={"Project-Id": "other"}),
        400,
        "failed_precondition",
    )


@pytest.mark.slow
def test_unknown_release_is_400_failed_precondition(client: httpx2.Client) -> None:
    message = error_of(post(client, GET, {"version": "9.9.9"}), 400, "failed_precondition")
    assert message == 'project demo has no get_release_details answer for version "9.9.9"'


@pytest.mark.slow
@pytest.mark.parametrize("key", [None, "wrong-key", ""])
def test_missing_or_wrong_key_is_401(client: httpx2.Client, key: str | None) -> None:
    error_of(post(client, GET, {"version": "1.0.0"}, key=key), 401, "unauthenticated")
    error_of(post(client, LIST, {}, key=key), 401, "unauthenticated")


@pytest.mark.slow
def test_no_key_and_a_bad_body_is_401(client: httpx2.Client) -> None:
    error_of(post(client, GET, content=b"{not json", key=None), 401, "unauthenticated")
    error_of(post(client, GET, content=b"[]", key="wrong-key"), 401, "unauthenticated")


@pytest.mark.slow
def test_two_key_headers_are_401(client: httpx2.Client) -> None:
    headers = [(API_KEY_HEADER, "demo-key"), (API_KEY_HEADER, "other-key")]
    response = client.post(LIST.path, content=b"{}", headers=headers)
    message = error_of(response, 401, "unauthenticated")
    assert "demo-key" not in message and "other-key" not in message


@pytest.mark.slow
@pytest.mark.parametrize(
    ("body", "field", "text"),
    [
        (b"{}", "version", "version: is required"),
        (b'{"version": "   "}', "version", "version: is required"),
        (b'{"version": 5}', "version", "version: expected a string, got the number 5"),
        (b"[]", "", "the body: expected a JSON object, got an array"),
        (b'"x"', "", 'the body: expected a JSON object, got the string "x"'),
        (b"{not json", "", "the body is not valid JSON"),
    ],
)
def test_bad_requests_are_400_naming_the_field(
    client: httpx2.Client, body: bytes, field: str, text: str
) -> None:
    response = post(client, GET, content=body)
    message = error_of(response, 400, "invalid_argument")
    assert message.startswith(text)
    assert [v["field"] for v in response.json()["violations"]] == [field]


@pytest.mark.slow
@pytest.mark.parametrize("key", ["demo-key", None])
def test_unknown_operation_is_404_without_needing_a_key(
    client: httpx2.Client, key: str | None
) -> None:
    message = error_of(post(client, "/api/mcp/delete_everything", {}, key=key), 404, "not_found")
    assert "/api/mcp/delete_everything" in message
    error_of(post(client, "/api/mcp/no_such_op", content=b"[]", key=None), 404, "not_found")


@pytest.mark.slow
def test_a_percent_encoded_operation_path_is_404(client: httpx2.Client) -> None:
    error_of(post(client, "/api/mcp%2flist_rum_environments", {}), 404, "not_found")


@pytest.mark.slow
def test_get_is_405_with_allow_post(client: httpx2.Client) -> None:
    response = client.get(GET.path, headers={API_KEY_HEADER: "demo-key"})
    error_of(response, 405, "unimplemented")
    assert response.headers["allow"] == "POST"


@pytest.mark.slow
def test_body_over_one_mebibyte_is_413(client: httpx2.Client) -> None:
    big = {"version": "1.0.0", "padding": "x" * MAX_BODY_BYTES}
    error_of(post(client, GET, big), 413, "resource_exhausted")

    def chunks() -> Iterator[bytes]:  # chunked transfer: no Content-Length to trust
        yield b'{"version": "1.0.0", "padding": "'
        for _ in range(20):
            yield b"x" * 65536
        yield b'"}'

    response = client.post(GET.path, content=chunks(), headers={API_KEY_HEADER: "demo-key"})
    error_of(response, 413, "resource_exhausted")
    # The server is still fine afterwards.
    assert post(client, LIST, {}).status_code == 200
