"""What the ASGI adapter does with handlers that misbehave, in process (httpx2.ASGITransport).

- A handler (or ``authenticate``) raising a ``BaseException`` that is not an ``Exception`` gets
  the same 500 ``internal`` as an ``Exception``, logged with the key redacted; the process's
  own stop signals (``SystemExit``, ``KeyboardInterrupt``) still go up.
- ``create_app(handler_timeout=S)``: a handler running past S seconds is answered
  ``deadline_exceeded``, async or sync (a sync handler's thread cannot be killed: it keeps its
  place in the thread pool until it returns).
- Sync handlers stuck in every thread of the pool do not hold up the key check of other
  requests (a sync ``authenticate`` runs on a pool of its own) nor async handlers.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any

import anyio
import httpx2
import pytest

import projectops
from projectops.conventions import API_KEY_HEADER
from projectops.server import create_app
from projectops.v1 import operations_pb2 as ops
from tests.synthetic import minimal_response

KEY = "limits-key-5c2e"
LIST = projectops.operation("list_rum_environments")
GET = projectops.operation("get_release_details")
DEADLINE_STATUS = projectops.HTTP_STATUS_BY_CODE[projectops.Code.DEADLINE_EXCEEDED]
# anyio's default thread limiter: the pool sync handlers share.
POOL_THREADS = 40
# Bounds for a busy 2-core machine: each test stops by itself well within them.
PROMPT = 10.0
STUCK_LIMIT = 60.0  # a stuck handler's thread returns by itself after this, whatever happens


class Trouble(BaseException):
    """A ``BaseException`` that is no ``Exception``, as some libraries raise."""


def authenticate(key: str) -> str | None:
    return "project" if key == KEY else None


async def quick_release(request: Any, context: Any) -> ops.GetReleaseDetailsResponse:
    response = minimal_response(projectops.operation("get_release_details"))
    response.summary.release.version = request.version
    return response


def post(
    client: httpx2.AsyncClient, path: str, body: str = "{}", key: str = KEY
) -> Awaitable[httpx2.Response]:
    headers = {"Content-Type": "application/json", API_KEY_HEADER: key}
    return client.post(path, content=body, headers=headers)


def run_against(app: Any, scenario: Callable[[httpx2.AsyncClient], Any]) -> Any:
    async def go() -> Any:
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://test") as client:
            return await scenario(client)

    return anyio.run(go)


def error_of(response: httpx2.Response, code: str) -> dict[str, Any]:
    assert response.headers["content-type"] == "application/json"
    body: dict[str, Any] = response.json()
    assert body["code"] == code
    assert response.status_code == projectops.HTTP_STATUS_BY_CODE[projectops.Code(code)]
    assert body["message"]
    return body


# --- BaseException ---------------------------------------------------------------------------


def _raise_trouble(*args: Any) -> Any:
    raise Trouble(f"lost the connection pool; key {KEY} was in use")


async def _araise_trouble(*args: Any) -> Any:
    _raise_trouble()


@pytest.mark.parametrize(
    ("where", "function"),
    [
        ("handler", _raise_trouble),
        ("handler", _araise_trouble),
        ("authenticate", _raise_trouble),
        ("authenticate", _araise_trouble),
    ],
    ids=["sync-handler", "async-handler", "sync-authenticate", "async-authenticate"],
)
def test_a_base_exception_is_500_internal_and_logged_redacted(
    where: str, function: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    if where == "handler":
        app = create_app(SimpleNamespace(list_rum_environments=function), authenticate=authenticate)
    else:
        app = create_app(SimpleNamespace(), authenticate=function)
    with caplog.at_level(logging.ERROR, logger="projectops.server"):
        response = run_against(app, lambda client: post(client, LIST.path))
    body = error_of(response, "internal")
    assert "Trouble" not in body["message"] and KEY not in response.text
    assert "Trouble: lost the connection pool" in caplog.text  # the traceback is logged
    assert KEY not in caplog.text


@pytest.mark.parametrize("stop", [SystemExit, KeyboardInterrupt])
def test_a_stop_signal_a_plain_handler_raises_is_its_failure(stop: type[BaseException]) -> None:
    # Only a cancellation from outside goes on up (issue 28.1; tests/adversarial).
    def handler(request: Any, context: Any) -> Any:
        raise stop()

    app = create_app(SimpleNamespace(list_rum_environments=handler), authenticate=authenticate)
    error_of(run_against(app, lambda client: post(client, LIST.path)), "internal")


# --- handler_timeout -------------------------------------------------------------------------


def test_an_async_handler_past_the_time_out_is_deadline_exceeded() -> None:
    async def slow(request: Any, context: Any) -> Any:
        await anyio.sleep(STUCK_LIMIT)

    app = create_app(
        SimpleNamespace(list_rum_environments=slow), authenticate=authenticate, handler_timeout=0.2
    )
    started = time.monotonic()
    response = run_against(app, lambda client: post(client, LIST.path))
    assert time.monotonic() - started < PROMPT
    assert response.status_code == DEADLINE_STATUS == 504
    body = error_of(response, "deadline_exceeded")
    assert body["violations"] == []
    assert LIST.name in body["message"]


def test_a_sync_handler_past_the_time_out_is_answered_and_keeps_its_thread() -> None:
    release = threading.Event()
    returned = threading.Event()

    def stuck(request: Any, context: Any) -> Any:
        try:
            release.wait(STUCK_LIMIT)
            return ops.ListRumEnvironmentsResponse()
        finally:
            returned.set()

    app = create_app(
        SimpleNamespace(list_rum_environments=stuck), authenticate=authenticate, handler_timeout=0.2
    )

    async def scenario(client: httpx2.AsyncClient) -> tuple[httpx2.Response, int, int]:
        pool = anyio.to_thread.current_default_thread_limiter()
        try:
            with anyio.fail_after(PROMPT):
                response = await post(client, LIST.path)
            held = pool.borrowed_tokens  # the stuck thread still counts against the pool
        finally:
            release.set()
        with anyio.fail_after(PROMPT):
            while not returned.is_set() or pool.borrowed_tokens:
                await anyio.sleep(0.01)
        return response, held, pool.borrowed_tokens

    response, held, after = run_against(app, scenario)
    error_of(response, "deadline_exceeded")
    assert (held, after) == (1, 0)


def test_a_quick_handler_is_unaffected_by_the_time_out() -> None:
    app = create_app(
        SimpleNamespace(
            get_release_details=quick_release,
            list_rum_environments=lambda r, c: ops.ListRumEnvironmentsResponse(),
        ),
        authenticate=authenticate,
        handler_timeout=30,
    )

    async def scenario(client: httpx2.AsyncClient) -> list[int]:
        first = await post(client, GET.path, '{"version": "1.0.0"}')
        second = await post(client, LIST.path)
        return [first.status_code, second.status_code]

    assert run_against(app, scenario) == [200, 200]


@pytest.mark.parametrize("bad", [0, -1, math.nan, True, "5"])
def test_a_bad_handler_timeout_is_refused(bad: Any) -> None:
    with pytest.raises((ValueError, TypeError), match="handler_timeout"):
        create_app(SimpleNamespace(), authenticate=authenticate, handler_timeout=bad)


# --- starvation ------------------------------------------------------------------------------


@pytest.mark.parametrize("handler_timeout", [None, 30.0])
def test_stuck_sync_handlers_do_not_starve_authentication_or_async_handlers(
    handler_timeout: float | None,
) -> None:
    release = threading.Event()
    lock = threading.Lock()
    entered = [0]

    def stuck(request: Any, context: Any) -> Any:
        with lock:
            entered[0] += 1
        release.wait(STUCK_LIMIT)
        return ops.ListRumEnvironmentsResponse()

    app = create_app(
        SimpleNamespace(list_rum_environments=stuck, get_release_details=quick_release),
        authenticate=authenticate,  # sync: it runs in a thread too
        handler_timeout=handler_timeout,
    )
    stuck_requests = POOL_THREADS + 5

    async def scenario(client: httpx2.AsyncClient) -> dict[str, Any]:
        answers: list[int] = []

        async def stuck_request() -> None:
            answers.append((await post(client, LIST.path)).status_code)

        seen: dict[str, Any] = {}
        async with anyio.create_task_group() as group:
            for _ in range(stuck_requests):
                group.start_soon(stuck_request)
            try:
                with anyio.fail_after(PROMPT):
                    while entered[0] < POOL_THREADS:  # every thread of the pool is stuck
                        await anyio.sleep(0.01)
                started = time.monotonic()
                with anyio.fail_after(PROMPT):
                    seen["bad key"] = await post(client, LIST.path, key="not-a-key")
                    seen["bad key seconds"] = time.monotonic() - started
                    seen["valid"] = await post(client, GET.path, '{"version": "1.0.0"}')
                    seen["seconds"] = time.monotonic() - started
            finally:
                release.set()  # the stuck threads return; the test stops by itself
        seen["answers"] = answers
        return seen

    seen = run_against(app, scenario)
    error_of(seen["bad key"], "unauthenticated")
    assert seen["valid"].status_code == 200
    assert seen["valid"].json()["summary"]["release"]["version"] == "1.0.0"
    assert seen["seconds"] < PROMPT
    assert seen["answers"] == [200] * stuck_requests
