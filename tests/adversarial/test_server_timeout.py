"""``create_app(handler_timeout=S)`` bounds all the service's code runs for one request (issue 31,
item 5): ``authenticate``, the interceptors and the handler together, plain or ``async def``,
answer 504 ``deadline_exceeded`` once S seconds have passed in them, on a real socket; a stuck
plain ``authenticate`` keeps its thread (and its place in its pool) until it returns, and the
server goes on answering meanwhile."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from projectops.server import create_app
from tests.adversarial.test_server_failures import KEY, OP, REQUEST, _post, served
from tests.synthetic import minimal_response

#: handler_timeout of the apps here, and the most a timed-out answer may take on a busy machine.
LIMIT = 0.3
PROMPT = 10.0
#: How long the stuck parts would run if nothing stopped them.
STUCK = 30.0


def _handler(request: Any, context: Any) -> Any:
    # A response that keeps every rule: an empty one breaks a REQUIRED field's, which is a 500.
    return minimal_response(OP)


def _slow_authenticate_async(release: threading.Event) -> Any:
    async def authenticate(key: str) -> Any:
        await anyio.sleep(STUCK)

    return authenticate


def _slow_authenticate_plain(release: threading.Event) -> Any:
    def authenticate(key: str) -> Any:
        release.wait(STUCK)
        return "p"

    return authenticate


def _shared_time(release: threading.Event) -> Any:
    """An authenticate and an interceptor each taking 60 % of the limit: none alone passes
    it, together they do."""

    async def authenticate(key: str) -> Any:
        await anyio.sleep(LIMIT * 0.6)
        return "p"

    return authenticate


CASES = {
    "an async authenticate": (_slow_authenticate_async, None),
    "a plain authenticate": (_slow_authenticate_plain, None),
    "authenticate and an interceptor together": (_shared_time, LIMIT * 0.6),
    "an interceptor": (None, STUCK),
}


@pytest.mark.parametrize("case", CASES)
def test_handler_timeout_covers_authenticate_and_the_interceptors(case: str) -> None:
    release = threading.Event()
    make_authenticate, interceptor_sleep = CASES[case]
    authenticate = make_authenticate(release) if make_authenticate else {KEY: "p"}.get

    async def interceptor(request: Any, context: Any, call_next: Any) -> Any:
        await anyio.sleep(interceptor_sleep or 0)
        return await call_next(request, context)

    app = create_app(
        SimpleNamespace(**{OP.name: _handler}),  # type: ignore[arg-type]
        authenticate=authenticate,
        handler_timeout=LIMIT,
        interceptors=[interceptor] if interceptor_sleep is not None else [],
    )
    try:
        with served(app) as url:
            started = time.monotonic()
            answer = _post(url, OP.path, REQUEST)
            seconds = time.monotonic() - started
    finally:
        release.set()
    print(f"\nFIGURE handler_timeout {LIMIT} s, {case}: answered in {seconds:.2f} s")
    assert (answer.status_code, answer.json()["code"]) == (504, "deadline_exceeded")
    assert LIMIT <= seconds < PROMPT
    assert OP.name in answer.json()["message"]


def test_a_stuck_plain_authenticate_is_left_in_its_thread_and_others_are_served() -> None:
    release = threading.Event()
    calls = []

    def authenticate(key: str) -> Any:
        calls.append(key)
        if len(calls) == 1:  # the first call is stuck; the next ones answer at once
            release.wait(STUCK)
        return "p"

    app = create_app(
        SimpleNamespace(**{OP.name: _handler}),  # type: ignore[arg-type]
        authenticate=authenticate,
        handler_timeout=LIMIT,
    )
    try:
        with served(app) as url:
            first = _post(url, OP.path, REQUEST)
            second = _post(url, OP.path, REQUEST)
    finally:
        release.set()
    assert (first.status_code, second.status_code) == (504, 200)


def test_an_interceptor_sees_the_handlers_overrun_as_deadline_exceeded(
    caplog: pytest.LogCaptureFixture,
) -> None:
    seen: list[str] = []

    async def slow_handler(request: Any, context: Any) -> Any:
        await anyio.sleep(STUCK)

    async def interceptor(request: Any, context: Any, call_next: Any) -> Any:
        try:
            return await call_next(request, context)
        except BaseException as exc:  # what ServerCallNext raises to it
            seen.append(type(exc).__name__)
            raise

    app = create_app(
        SimpleNamespace(**{OP.name: slow_handler}),  # type: ignore[arg-type]
        authenticate={KEY: "p"}.get,
        handler_timeout=LIMIT,
        interceptors=[interceptor],
    )
    with served(app) as url:
        answer = _post(url, OP.path, REQUEST)
    assert (answer.status_code, answer.json()["code"]) == (504, "deadline_exceeded")
    assert seen == ["DeadlineExceeded"]
    assert "in the handler" in caplog.text and "in an interceptor" not in caplog.text
