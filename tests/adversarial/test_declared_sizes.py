"""A ``Content-Length`` of thousands of digits (Python refuses to convert more than 4,300, with
``ValueError``) is a declared size like any other for :func:`projectops.server.read_body`, the
reader of ``create_app`` and of the proxy: over the limit it is 413 before anything is read (not
a 500 with a traceback); under it, leading zeros and all, the body is read.
"""

from __future__ import annotations

import anyio
import pytest

import projectops
from projectops.server import read_body

MANY = 5_000


def _receive(body: bytes):  # type: ignore[no-untyped-def]
    async def receive() -> dict[str, object]:
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


@pytest.mark.parametrize("declared", ["9" * MANY, b"9" * MANY, "0" * MANY + "12"])
def test_a_content_length_of_thousands_of_digits_over_the_limit_is_413(
    declared: str | bytes,
) -> None:
    async def read() -> bytes:
        return await read_body(_receive(b"{}"), max_request_bytes=10, content_length=declared)

    with pytest.raises(projectops.ResourceExhausted):
        anyio.run(read)


def test_a_content_length_of_leading_zeros_under_the_limit_is_read() -> None:
    async def read() -> bytes:
        return await read_body(
            _receive(b"{}"), max_request_bytes=10, content_length="0" * MANY + "2"
        )

    assert anyio.run(read) == b"{}"
