"""A large response is decoded and encoded off the event loop (issue 28.8): while one session's
tool call works on it, another session on the same loop is answered.

Instrumented, not timed: every function handed to a worker thread is held there until the
other session's ping has been answered. Were the decode or the encode done on the event loop,
the ping could not be answered first.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread
import httpx2
import pytest

import projectops
from projectops.client import AsyncClient
from projectops.validation import is_required
from tests.mcp.support import text_of

#: A response well past the size the client decodes in a worker thread (unknown fields are
#: ignored: a newer service may add them).
LARGE = {"addedByANewerService": "x" * 1_000_000}


def _takes_large(op: projectops.Operation) -> bool:
    """Whether `op` needs no argument and LARGE is a response of it: no REQUIRED field on either
    side (the SDK checks structured content against the tool's outputSchema)."""
    fields = [*op.request_type.DESCRIPTOR.fields, *op.response_type.DESCRIPTOR.fields]
    return not any(is_required(field) for field in fields)


OPS = [op for op in projectops.operations() if _takes_large(op)]


@pytest.mark.filterwarnings("ignore:ping is removed")  # the SDK's legacy mode still has it
@pytest.mark.parametrize("op", OPS[:1], ids=lambda op: op.tool_name)
def test_a_large_answer_leaves_the_loop_to_the_other_sessions(
    op: projectops.Operation, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp import Client

    from projectops.mcp import _server as mcp_server

    order: list[str] = []
    in_worker, pinged = threading.Event(), threading.Event()
    real_run_sync = anyio.to_thread.run_sync

    async def held_run_sync(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        def held(*inner: Any) -> Any:
            order.append("worker")
            in_worker.set()
            order.append("released" if pinged.wait(10) else "never released")
            return function(*inner)

        return await real_run_sync(held, *args, **kwargs)

    real_result = mcp_server._result

    def encode(*args: Any) -> Any:
        order.append("encode")
        return real_result(*args)

    monkeypatch.setattr(anyio.to_thread, "run_sync", held_run_sync)
    monkeypatch.setattr(mcp_server, "_result", encode)
    transport = httpx2.MockTransport(lambda request: httpx2.Response(200, json=LARGE))
    server = mcp_server.create_server(AsyncClient("http://service.test", "k", transport=transport))

    async def caller(client: Client) -> None:
        result = await client.call_tool(op.tool_name, {})
        assert result.is_error is False, text_of(result)
        order.append("result")

    async def pinger(client: Client) -> None:
        while not in_worker.is_set():
            await anyio.sleep(0.005)
        await client.send_ping()
        order.append("ping")
        pinged.set()

    async def scenario() -> None:
        async with Client(server) as one, Client(server, mode="legacy") as other:  # type: ignore[arg-type]
            async with anyio.create_task_group() as group:
                group.start_soon(caller, one)
                group.start_soon(pinger, other)

    anyio.run(scenario)
    # The client's decode, then the tool server's encode, each in a worker thread.
    assert order == ["worker", "ping", "released", "worker", "released", "encode", "result"]
