"""A service whose code fails in the worst ways, served by plain uvicorn on 127.0.0.1 (issue 28):
every ``BaseException`` a handler or interceptor raises is the 500 ``internal`` ``ErrorResponse``,
logged like any other failure, and the server goes on serving (28.1); the log of a failure that
quotes a huge request value stays a few KiB (28.2)."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import httpx2
import pytest
import uvicorn
from google.protobuf.descriptor import FieldDescriptor

import projectops
from projectops import rules
from projectops.codec import to_dict
from projectops.conventions import API_KEY_HEADER
from projectops.program.commands import listen, listen_url
from projectops.server import create_app
from tests.loopback import LOOPBACK
from tests.synthetic import minimal_response, valid_request

KEY = "failures-key-7f3a"
#: Any operation: it is called with a request that keeps every rule, so each call reaches the
#: handler (a request ``{}`` does not when a field is REQUIRED or a rule refuses its default).
OP = projectops.operations()[0]
#: A request of OP that keeps every rule, in the JSON mapping.
REQUEST = to_dict(valid_request(OP))


async def _cancelled_future() -> None:
    future = asyncio.get_running_loop().create_future()
    future.cancel()
    await future


def _raising(kind: Callable[[], BaseException]) -> Callable[[], Any]:
    async def fail() -> None:
        raise kind()

    return fail


FAILURES: dict[str, Callable[[], Any]] = {
    "CancelledError": _raising(asyncio.CancelledError),
    "a cancelled future awaited": _cancelled_future,
    "SystemExit": _raising(SystemExit),
    "KeyboardInterrupt": _raising(KeyboardInterrupt),
    "GeneratorExit": _raising(GeneratorExit),
    "a group holding CancelledError": _raising(
        lambda: BaseExceptionGroup("tasks", [asyncio.CancelledError()])
    ),
}


@contextmanager
def served(app: Any) -> Iterator[str]:
    """`app` under uvicorn's own Server on 127.0.0.1 in a thread (no signal handlers there)."""
    sock = listen(LOOPBACK, 0)
    url = listen_url(sock)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])))
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.01)
        yield url
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def _post(url: str, path: str, body: object) -> httpx2.Response:
    headers = {API_KEY_HEADER: KEY}
    return httpx2.post(url + path, content=json.dumps(body), headers=headers, timeout=10)


def test_every_base_exception_of_the_services_code_is_the_500_error_response(
    caplog: pytest.LogCaptureFixture,
) -> None:
    failing = {"handler": "", "interceptor": ""}

    async def handler(request: Any, context: Any) -> Any:
        if failing["handler"]:
            await FAILURES[failing["handler"]]()
        return minimal_response(OP)

    async def interceptor(request: Any, context: Any, call_next: Any) -> Any:
        if failing["interceptor"]:
            await FAILURES[failing["interceptor"]]()
        return await call_next(request, context)

    service = SimpleNamespace(**{OP.name: handler})
    app = create_app(service, authenticate={KEY: "p"}.get, interceptors=[interceptor])  # type: ignore[arg-type]
    answers = {}
    with caplog.at_level(logging.WARNING), served(app) as url:
        for where in failing:
            for name in FAILURES:
                failing[where] = name
                answers[f"{where}: {name}"] = _post(url, OP.path, REQUEST)
                failing[where] = ""
        still_serving = _post(url, OP.path, REQUEST)
    for case, answer in answers.items():
        assert answer.status_code == 500, (case, answer.text)
        assert answer.headers["content-type"] == "application/json", case
        assert answer.json()["code"] == "internal", case
    assert still_serving.status_code == 200, still_serving.text
    failures = [r for r in caplog.records if r.name == "projectops.server"]
    assert len(failures) == len(answers), [r.getMessage()[:80] for r in failures]
    assert not [r for r in caplog.records if r.name.startswith("uvicorn")], caplog.text


def _string_field(op: projectops.Operation) -> FieldDescriptor | None:
    fields = op.request_type.DESCRIPTOR.fields
    return next((fd for fd in fields if fd.type == fd.TYPE_STRING and not fd.is_repeated), None)


def test_a_failure_quoting_a_huge_request_value_logs_a_few_kib(
    caplog: pytest.LogCaptureFixture,
) -> None:
    op, fd = next((op, fd) for op in projectops.operations() if (fd := _string_field(op)))
    # The longest value the field's rules let through (a longer one is a 400, docs/contract.md
    # §4.6), quoted by the failure as often as it takes to make 200,000 characters.
    kind = rules.rule_kind(fd)
    longest = int(kind[1].max_len) if kind and kind[1].HasField("max_len") else 200_000
    value = "v" * min(longest, 200_000)

    def lookup(request: Any, context: Any) -> Any:
        quoted = getattr(request, fd.name)
        raise KeyError(quoted * (200_000 // len(quoted)))  # a careless `TABLE[every key tried]`

    app = create_app(SimpleNamespace(**{op.name: lookup}), authenticate={KEY: "p"}.get)  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING), served(app) as url:
        answer = _post(url, op.path, {**to_dict(valid_request(op)), fd.json_name: value})
    assert answer.status_code == 500 and answer.json()["code"] == "internal"
    logged = "\n".join(r.getMessage() for r in caplog.records)
    print(f"\nlog of one failure quoting 200,000 characters: {len(logged):,} characters")
    assert "KeyError" in logged and "characters cut" in logged
    assert len(logged.encode()) < 6 * 1024
