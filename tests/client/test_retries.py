"""Retries of both clients against real servers on 127.0.0.1: which failures are retried, the
waits (Retry-After honoured), the one deadline over all attempts, and ``--retries`` of the CLI
and the tool server. Plus the policy itself (:func:`may_retry`, :func:`retry_delay`) for an
operation with side effects, which the API does not have today.
"""

from __future__ import annotations

import asyncio
import dataclasses
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

import projectops
from projectops.client import (
    AsyncClient,
    CallContext,
    Client,
    ResponseTimedOut,
    ServiceUnreachable,
)
from projectops.client._retry import MAX_RETRY_AFTER, may_retry, retry_delay
from projectops.registry import Operation, operation
from projectops.v1.operations_pb2 import ListRumEnvironmentsResponse
from tests.client.backoff import shorten_backoff
from tests.loopback import LOOPBACK, raw_listener
from tests.support import KEY, RunCli

LIST = operation("list_rum_environments")
OK_BODY = b'{"environments": [{"environment": "prod"}]}'
#: What a server may answer: ``"close"`` (hang up without a response) or (status, headers, body).
Answer = str | tuple[int, dict[str, str], bytes]
UNAVAILABLE: Answer = (503, {}, b'{"code": "unavailable", "message": "busy"}')
OK: Answer = (200, {}, OK_BODY)


class Scripted:
    """A server on 127.0.0.1 that gives its responses in order, the last one for ever after, and
    counts the requests it got."""

    def __init__(self, answers: list[Answer]) -> None:
        self.answers = answers
        self.calls = 0
        self.lock = threading.Lock()
        self.base_url = ""

    def next_answer(self) -> Answer:
        with self.lock:
            answer = self.answers[min(self.calls, len(self.answers) - 1)]
            self.calls += 1
            return answer


@pytest.fixture(autouse=True)
def short_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """Backoff waits of a few milliseconds, so a test of how many attempts are made does not
    sleep up to 1.75 s; a ``Retry-After`` is still honoured in full."""
    shorten_backoff(monkeypatch)


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[ThreadingHTTPServer] = []

    def start(answers: list[Answer]) -> Scripted:
        script = Scripted(answers)

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                answer = script.next_answer()
                if answer == "close":
                    self.close_connection = True  # no status line: no response came
                    return
                assert not isinstance(answer, str)
                status, headers, body = answer
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        server = ThreadingHTTPServer((LOOPBACK, 0), Handler)
        server.daemon_threads = True
        servers.append(server)
        script.base_url = f"http://{LOOPBACK}:{server.server_address[1]}"
        threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True).start()
        return script

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture(params=["sync", "async"])
def call(request: pytest.FixtureRequest) -> Any:
    """``call(base_url, op=LIST, **client_kwargs) -> (result or exception, attempts, seconds)``."""

    def run(base_url: str, op: Any = LIST, **kwargs: Any) -> tuple[Any, int, float]:
        contexts: list[CallContext] = []
        start = time.monotonic()
        if request.param == "sync":

            def record(req: Any, context: CallContext, call_next: Any) -> Any:
                contexts.append(context)
                return call_next(req, context)

            try:
                with Client(base_url, KEY, interceptors=[record], **kwargs) as client:
                    result: Any = client.call(op)
            except projectops.ApiError as exc:
                result = exc
        else:

            async def arecord(req: Any, context: CallContext, call_next: Any) -> Any:
                contexts.append(context)
                return await call_next(req, context)

            async def go() -> Any:
                async with AsyncClient(base_url, KEY, interceptors=[arecord], **kwargs) as client:
                    return await client.call(op)

            try:
                result = asyncio.run(go())
            except projectops.ApiError as exc:
                result = exc
        return result, contexts[0].attempts, time.monotonic() - start

    return run


@pytest.mark.parametrize("failure", ["close", UNAVAILABLE, (429, {}, b""), (502, {}, b"")])
def test_a_read_only_call_is_retried_until_it_succeeds(
    call: Any, serve: Any, failure: Answer
) -> None:
    server = serve([failure, failure, OK])
    result, attempts, _ = call(server.base_url)
    assert isinstance(result, ListRumEnvironmentsResponse)
    assert result.environments[0].environment == "prod"
    assert server.calls == attempts == 3


def test_retries_are_counted_after_the_first_attempt(call: Any, serve: Any) -> None:
    server = serve([UNAVAILABLE] * 3 + [OK])
    result, attempts, _ = call(server.base_url)  # default: 2 retries, one short
    assert isinstance(result, projectops.Unavailable) and result.http_status == 503
    assert server.calls == attempts == 3
    server.calls = 0
    result, attempts, _ = call(server.base_url, retries=3)
    assert isinstance(result, ListRumEnvironmentsResponse) and server.calls == 4


def test_retry_after_in_seconds_is_honoured(call: Any, serve: Any) -> None:
    server = serve([(503, {"Retry-After": "1"}, b""), OK])
    result, attempts, seconds = call(server.base_url)
    assert isinstance(result, ListRumEnvironmentsResponse) and attempts == 2
    assert 0.9 <= seconds < 10  # the backoff alone would wait at most 0.25 s


def test_an_always_unavailable_service_ends_within_the_time_out_with_its_answer(
    call: Any, serve: Any
) -> None:
    # Retried at once, then asked to wait 1 s of the 1 s time-out: that wait is not taken.
    busy = b'{"code": "unavailable", "message": "busy"}'
    server = serve([(503, {"Retry-After": "0"}, busy), (503, {"Retry-After": "1"}, busy)])
    result, attempts, seconds = call(server.base_url, timeout=1.0, retries=100)
    assert type(result) is projectops.Unavailable and result.http_status == 503
    assert result.message == "busy"
    assert attempts == server.calls == 2
    assert seconds < 1.0 + 3  # a wait that would cross the deadline is not taken


def test_no_answer_ever_ends_as_the_time_out(call: Any, serve: Any) -> None:
    server = serve(["close"])
    result, attempts, seconds = call(server.base_url, timeout=0.5, retries=1000)
    assert isinstance(result, ResponseTimedOut) and result.http_status is None
    # The attempt under way when the time is up may be cut before the server counted it.
    assert server.calls >= 2 and server.calls <= attempts <= server.calls + 1
    assert seconds < 0.5 + 3


@pytest.mark.parametrize(
    "answer",
    [
        (400, {}, b'{"code": "invalid_argument", "message": "version: is required"}'),
        (401, {}, b'{"code": "unauthenticated", "message": "bad key"}'),
        (404, {}, b""),
        (500, {}, b'{"code": "internal", "message": "boom"}'),
        (501, {}, b'{"code": "unimplemented", "message": "no"}'),
        (408, {}, b'{"code": "deadline_exceeded", "message": "slow request"}'),
    ],
)
def test_other_answers_are_never_retried(call: Any, serve: Any, answer: Answer) -> None:
    server = serve([answer, OK])
    result, attempts, _ = call(server.base_url)
    assert isinstance(result, projectops.ApiError)
    assert server.calls == attempts == 1


def test_a_refused_connection_is_retried(call: Any, dead_url: str) -> None:
    result, attempts, _ = call(dead_url)
    assert isinstance(result, ServiceUnreachable) and attempts == 3


def test_retries_zero_turns_retries_off(call: Any, serve: Any, dead_url: str) -> None:
    server = serve(["close", OK])
    result, attempts, _ = call(server.base_url, retries=0)
    assert isinstance(result, ServiceUnreachable) and server.calls == attempts == 1
    result, attempts, _ = call(dead_url, retries=0)
    assert isinstance(result, ServiceUnreachable) and attempts == 1


@dataclasses.dataclass(frozen=True)
class _SideEffects(Operation):
    """An operation whose rpc has no idempotency_level (IDEMPOTENCY_UNKNOWN)."""

    @property
    def idempotency(self) -> str:
        return "IDEMPOTENCY_UNKNOWN"


SIDE_EFFECTS = _SideEffects(**{f.name: getattr(LIST, f.name) for f in dataclasses.fields(LIST)})


def test_an_operation_with_side_effects_is_never_retried(
    call: Any, serve: Any, dead_url: str
) -> None:
    assert not SIDE_EFFECTS.idempotent and LIST.read_only and LIST.idempotent
    for status in (None, 429, 502, 503, 504):
        assert not may_retry(SIDE_EFFECTS, status)
        assert may_retry(LIST, status)
    for status in (400, 401, 404, 408, 409, 413, 500, 501):
        assert not may_retry(LIST, status)
    server = serve([UNAVAILABLE, OK])
    result, attempts, _ = call(server.base_url, op=SIDE_EFFECTS)
    assert isinstance(result, projectops.Unavailable) and server.calls == attempts == 1
    result, attempts, _ = call(dead_url, op=SIDE_EFFECTS)
    assert isinstance(result, ServiceUnreachable) and attempts == 1


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("3", 3.0),
        (" 2 ", 2.0),
        ("0", 0.0),
        ("99999", MAX_RETRY_AFTER),  # capped
        ("999999999999999999999999", None),  # too many digits: ignored
        ("Wed, 21 Oct 2015 07:28:00 GMT", None),  # an HTTP date: ignored
        ("-1", None),
        ("1.5", None),
        ("\u0661", None),  # ARABIC-INDIC DIGIT ONE: a digit, not ASCII
        ("", None),
        ("x" * 10_000, None),
    ],
)
def test_retry_after_is_read_as_seconds_only(header: str, seconds: float | None) -> None:
    if seconds is not None:
        assert retry_delay(0, header) == seconds
    else:
        assert retry_delay(0, header, rand=lambda: 1.0) == 0.25  # the backoff instead


def test_backoff_is_exponential_with_full_jitter_and_capped() -> None:
    assert [retry_delay(n, rand=lambda: 1.0) for n in range(7)] == [
        0.25,
        0.5,
        1.0,
        2.0,
        4.0,
        8.0,
        8.0,
    ]
    assert retry_delay(3, rand=lambda: 0.0) == 0.0
    assert retry_delay(10_000, rand=lambda: 0.5) == 4.0  # no overflow


@pytest.mark.parametrize(
    ("value", "error"), [(-1, ValueError), (1.5, TypeError), (True, TypeError)]
)
def test_retries_must_be_a_non_negative_int(value: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match="retries"):
        Client("http://127.0.0.1:1", retries=value)
    with pytest.raises(error, match="retries"):
        AsyncClient("http://127.0.0.1:1", retries=value)


# --- the CLI and the tool server -------------------------------------------------------------


def test_cli_retries_flag(run_cli: RunCli, serve: Any) -> None:
    server = serve([UNAVAILABLE, OK])
    proc = run_cli(LIST.tool_name, "--retries", "0", base_url=server.base_url)
    assert proc.returncode == 5 and server.calls == 1
    assert proc.stderr.startswith("error: 503 unavailable: busy")
    server.calls = 0
    proc = run_cli(LIST.tool_name, "--retries", "1", base_url=server.base_url)
    assert proc.returncode == 0 and server.calls == 2 and '"prod"' in proc.stdout
    server.calls = 0
    proc = run_cli(LIST.tool_name, base_url=server.base_url)  # the default retries
    assert proc.returncode == 0 and server.calls == 2
    # Before the command, like --timeout; the command's own flag wins.
    server.calls = 0
    proc = run_cli("--retries", "0", LIST.tool_name, base_url=server.base_url)
    assert proc.returncode == 5 and server.calls == 1
    server.calls = 0
    proc = run_cli("--retries", "0", LIST.tool_name, "--retries", "1", base_url=server.base_url)
    assert proc.returncode == 0 and server.calls == 2


@pytest.mark.parametrize(
    ("command", "why"),
    [("operations", "it does not call the service"), ("conformance", "it retries no call")],
)
def test_retries_for_a_command_that_does_not_retry_is_refused(
    run_cli: RunCli, command: str, why: str
) -> None:
    proc = run_cli("--retries", "1", command, base_url="http://127.0.0.1:1")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == f"error: --retries does nothing for '{command}': {why}\n"
    proc = run_cli(command, "--retries", "1", base_url="http://127.0.0.1:1")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith(f"error: --retries does nothing for '{command}': {why} (see ")


@pytest.mark.parametrize("value", ["-1", "x", "1.5"])
def test_cli_retries_flag_refuses_what_is_no_count(run_cli: RunCli, value: str) -> None:
    proc = run_cli(LIST.tool_name, "--retries", value, base_url="http://127.0.0.1:1")
    assert proc.returncode == 2 and "--retries" in proc.stderr and proc.stdout == ""


# --- a caller's transport keeps the whole-call time-out --------------------------------------


@pytest.fixture
def trickling_url() -> Iterator[str]:
    """A server that sends its status line a byte every 0.1 s, for at most 20 s."""
    stop = threading.Event()

    def trickle(conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)
            end = time.monotonic() + 20
            for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 1000:
                if stop.is_set() or time.monotonic() > end:
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    return
                time.sleep(0.1)

    def start(conn: socket.socket) -> None:
        threading.Thread(target=trickle, args=(conn,), daemon=True).start()

    try:
        with raw_listener(start) as base_url:
            yield base_url
    finally:
        stop.set()


def test_a_callers_transport_keeps_the_whole_call_time_out(trickling_url: str) -> None:
    import httpx2

    start = time.monotonic()
    # Each byte comes within any read time-out: only a bound on the whole call ends it.
    with Client(trickling_url, KEY, timeout=0.5, transport=httpx2.HTTPTransport()) as client:
        with pytest.raises(ResponseTimedOut):
            client.call(LIST)
    assert time.monotonic() - start < 0.5 + 3
