"""Requests carrying a huge value where an error will quote it, against the real mock server: no
400 or 404 body echoes more than a short prefix of it."""

from __future__ import annotations

import json
import time

import httpx2
import pytest

from projectops.conventions import API_KEY_HEADER, MAX_BODY_BYTES
from tests.adversarial.servers import mock_server

BIG = MAX_BODY_BYTES - 64  # characters: the JSON around it keeps the body under the limit
GET = "/api/mcp/get_release_details"
#: The longest error body accepted (the adapter cuts any text of an error to 1,000 characters).
MAX_BODY = 2_500

# (name, path, raw body, status, code)
CASES: list[tuple[str, str, bytes, int, str]] = [
    (
        "near-limit string as the version",
        GET,
        json.dumps({"version": "v" * BIG}).encode(),
        400,
        "invalid_argument",  # the version's maximum length (docs/contract.md §4.6)
    ),
    (
        "near-limit number where a string goes",
        GET,
        b'{"version": 1' + b"0" * BIG + b"}",
        400,
        "invalid_argument",
    ),
    (
        "near-limit string in an array",
        GET,
        json.dumps({"version": ["v" * BIG]}).encode(),
        400,
        "invalid_argument",
    ),
    (
        "near-limit string in an object",
        GET,
        json.dumps({"version": {"k": "v" * BIG}}).encode(),
        400,
        "invalid_argument",
    ),
    ("near-limit of broken JSON", GET, b'{"version": "' + b"v" * BIG, 400, "invalid_argument"),
    # Python's int() stops at 4,300 digits; under that the codec quotes the number whole and
    # the adapter's cut to 1,000 characters is what bounds the body.
    ("4,000-digit number", GET, b'{"version": 1' + b"0" * 4000 + b"}", 400, "invalid_argument"),
    (
        "12 kB path (the request head may hold 16 KiB)",
        "/api/mcp/" + "p" * 12_000,
        b"{}",
        404,
        "not_found",
    ),
]


@pytest.fixture(scope="module")
def base_url() -> object:
    with mock_server() as server:
        yield server.base_url


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "path", "body", "status", "code"), CASES, ids=[c[0] for c in CASES]
)
def test_an_error_quotes_only_a_short_prefix_of_a_request_value(
    base_url: str, name: str, path: str, body: bytes, status: int, code: str
) -> None:
    start = time.monotonic()
    answer = httpx2.post(
        base_url + path, content=body, headers={API_KEY_HEADER: "demo-key"}, timeout=20
    )
    seconds = time.monotonic() - start
    print(f"{name}: {answer.status_code} in {seconds * 1000:.0f} ms, {len(answer.content)} bytes")
    assert (answer.status_code, answer.json()["code"]) == (status, code), answer.text[:300]
    assert len(answer.content) <= MAX_BODY, answer.text[:300]
