"""Property: whatever a client sends, the adapter answers 200 or an ErrorResponse, never a 500."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import projectops
from projectops.conventions import API_KEY_HEADER
from projectops.mock import create_mock_app, load_fixtures
from projectops.v1.error_pb2 import ErrorResponse
from tests.hypothesis_profiles import examples

APP = create_mock_app(load_fixtures())
OPERATIONS = projectops.operations()
FIELD_NAMES = sorted(
    {fd.json_name for op in OPERATIONS for fd in op.request_type.DESCRIPTOR.fields}
    | {"version", "x"}
)

# Text with unpaired surrogates too: JSON can carry them as "\ud800" escapes.
texts = st.text(max_size=20) | st.text(st.characters(categories=["Cs", "Ll", "Zs"]), max_size=4)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | texts,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(FIELD_NAMES) | texts, children, max_size=4)
    ),
    max_leaves=12,
)
# Bodies near the schema (known field names with any values) and arbitrary JSON.
json_bodies = st.dictionaries(st.sampled_from(FIELD_NAMES), json_values, max_size=3) | json_values
paths = (
    st.sampled_from([op.path for op in OPERATIONS])
    | st.text("abcdefghijklmnopqrstuvwxyz_-/", max_size=12).map(lambda s: "/api/mcp/" + s)
    # Percent-encoded forms of real paths: they decode to an operation's path but are not it.
    | st.sampled_from([op.path.replace("/", "%2f", 3).replace("%2f", "/", 2) for op in OPERATIONS])
)
keys = st.sampled_from(["demo-key", "other-key", "", "nope"])
SETTINGS = settings(
    max_examples=examples(200),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
Post = Callable[[str, bytes, str], httpx2.Response]


@pytest.fixture(scope="module")
def post() -> Iterator[Callable[[str, bytes, str], httpx2.Response]]:
    """post(path, body, key): one request in process, on one loop and client for the module."""
    loop = asyncio.new_event_loop()
    client = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=APP), base_url="http://test")

    def run(path: str, body: bytes, key: str) -> httpx2.Response:
        return loop.run_until_complete(
            client.post(path, content=body, headers={API_KEY_HEADER: key})
        )

    yield run
    loop.run_until_complete(client.aclose())
    loop.close()


def check(response: httpx2.Response, path: str) -> None:
    assert response.status_code != 500, response.text
    assert response.headers["content-type"] == "application/json"
    if response.status_code == 200:
        op = projectops.operation(path)  # 200 only for a real operation ...
        projectops.from_json(response.content, op.response_type, strict=True)  # ... and its type
        return
    error = projectops.from_json(response.content, ErrorResponse, strict=True)
    assert error.message
    assert projectops.HTTP_STATUS_BY_CODE[projectops.Code(error.code)] == response.status_code
    assert response.status_code in (400, 401, 404)


@SETTINGS
@given(path=paths, body=json_bodies, key=keys)
def test_random_json_bodies_never_get_a_500(post: Post, path: str, body: Any, key: str) -> None:
    text = json.dumps(body, allow_nan=True).encode()
    check(post(path, text, key), path)


@SETTINGS
@given(path=paths, body=st.binary(max_size=200), key=keys)
def test_random_bytes_never_get_a_500(post: Post, path: str, body: bytes, key: str) -> None:
    check(post(path, body, key), path)
