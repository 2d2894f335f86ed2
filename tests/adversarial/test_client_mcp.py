"""The MCP tool server against hostile input on stdio and hostile backends on 127.0.0.1.

Every line an MCP client writes gets a response: a line that is not UTF-8, not JSON, holds a lone
surrogate or nests deeper than the parser allows gets ``-32700`` with ``"id": null``; JSON that is
no JSON-RPC message gets ``-32600``, a request whose ``id`` JSON-RPC does not allow included
(issue 28.3). Tool calls are bounded by ``--timeout`` as a whole and their results carry no
control characters; a large response does not stall the other sessions of ``mcp --http`` (issue
28.8). In-process through :func:`projectops.mcp.serve_stdio`, and as a real ``projectops mcp``
subprocess.
"""

from __future__ import annotations

import io
import json
import logging
import queue
import signal
import subprocess
import sys
import threading
import time
import unicodedata
from typing import Any

import anyio
import pytest

import projectops
from projectops.client import AsyncClient
from tests.adversarial.hostile import answer, hostile_server, trickle_head
from tests.mcp.support import (
    MCP_COMMAND,
    NO_ARGUMENTS,
    demo_response,
    http_server,
    required_fields,
)
from tests.support import KEY, cli_env

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "adversarial", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}

_PING = b'{"jsonrpc": "2.0", "id": 6, "method": "ping", "params": {"x": "%s"}}'

#: Lines that are no JSON text (each answered -32700, id null), by what is wrong with them.
PARSE_ERRORS: dict[str, bytes] = {
    "not json": b"this is not json",
    "truncated": b'{"jsonrpc": "2.0", "id": 5, "method": "ping"',
    "not utf-8": _PING % b"\xff\xfe",
    "raw surrogate": _PING % b"\xed\xa0\x80",  # U+D800 encoded as if it were a character
    "escaped lone surrogate": _PING % b"\\ud800",
    "deep nesting": b'{"jsonrpc": "2.0", "id": 9, "method": "ping", "params": {"x": '
    + b"[" * 100_000
    + b"]" * 100_000
    + b"}}",
    "NUL": b"\x00",
}
#: JSON lines that are no JSON-RPC message (answered -32600), with the id the response carries.
INVALID_REQUESTS: dict[str, tuple[bytes, Any]] = {
    "array": (b"[1, 2, 3]", None),
    "no jsonrpc member": (b'{"id": 11, "method": "ping"}', 11),
    "number": (b"42", None),
}
#: Requests whose id is no string or integer: the SDK's parser takes them for notifications.
ODD_IDS = ["null", "true", "false", "1.5", "1e3", "[1]", '{"obj": 1}']


def _odd_id_line(odd: str) -> bytes:
    return b'{"jsonrpc": "2.0", "id": %s, "method": "ping"}\n' % odd.encode()


def _line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def _by_id(answers: list[dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    return {a.get("id"): a for a in answers}


def controls(text: str) -> list[str]:
    """Characters of `text` a terminal acts on instead of showing (the newline aside)."""
    return [c for c in text if c != "\n" and unicodedata.category(c) in {"Cc", "Cf", "Zl", "Zp"}]


# --- in-process: the transport --------------------------------------------------------------


class _Answers(io.StringIO):
    """stdout that sets `done` once `expected` answer lines have been written."""

    def __init__(self, expected: int) -> None:
        super().__init__()
        self.expected = expected
        self.done = threading.Event()

    def write(self, text: str) -> int:
        written = super().write(text)
        if self.getvalue().count("\n") >= self.expected:
            self.done.set()
        return written


class _HeldStdin(io.BytesIO):
    """stdin whose end comes only once the responses are out (an agent keeps stdin open while
    it waits; at the end of stdin the server may drop requests still in flight)."""

    def __init__(self, data: bytes, answered: threading.Event) -> None:
        super().__init__(data)
        self.answered = answered

    def readline(self, size: int | None = -1) -> bytes:
        line = super().readline(size)
        if not line:
            self.answered.wait(10)
        return line


def serve_lines(data: bytes, answers: int, **options: Any) -> list[dict[str, Any]]:
    """Serve the tool server over :func:`projectops.mcp.serve_stdio` with `data` as stdin,
    ending stdin once `answers` answers were written (or after 10 s); every JSON answer, in
    order."""
    from projectops import mcp

    out = _Answers(answers)
    server = mcp.create_server(AsyncClient("http://127.0.0.1:9", KEY))
    stdin = _HeldStdin(data, out.done)
    anyio.run(lambda: mcp.serve_stdio(server, stdin, anyio.wrap_file(out), **options))
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_every_bad_line_gets_an_error_answer_and_a_log_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    lines = [_line(INITIALIZE), _line(INITIALIZED)]
    lines += [line + b"\n" for line in PARSE_ERRORS.values()]
    lines += [line + b"\n" for line, _ in INVALID_REQUESTS.values()]
    lines += [b"   \n", _line({"jsonrpc": "2.0", "id": 99, "method": "ping"})]
    with caplog.at_level(logging.WARNING, logger="projectops.mcp._stdio"):
        answers = serve_lines(
            b"".join(lines), answers=2 + len(PARSE_ERRORS) + len(INVALID_REQUESTS)
        )

    assert answers[0]["id"] == 1 and "result" in answers[0]  # initialize still works
    errors = [a for a in answers if "error" in a]
    parse_errors = [a for a in errors if a["error"]["code"] == -32700]
    assert len(parse_errors) == len(PARSE_ERRORS)
    assert all(a["id"] is None for a in parse_errors)  # JSON-RPC 2.0: id null
    invalid = [a for a in errors if a["error"]["code"] == -32600]
    assert sorted(map(str, (a["id"] for a in invalid))) == sorted(
        str(expected) for _, expected in INVALID_REQUESTS.values()
    )
    assert answers[-1] == {"jsonrpc": "2.0", "id": 99, "result": {}}  # the server lives on
    rejected = [r for r in caplog.records if "rejected" in r.getMessage()]
    assert len(rejected) == len(PARSE_ERRORS) + len(INVALID_REQUESTS)
    for record in rejected:
        assert not controls(record.getMessage())


def test_a_request_with_an_odd_id_is_answered_invalid_request_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    lines = [_line(INITIALIZE), _line(INITIALIZED)]
    lines += [_odd_id_line(odd) for odd in ODD_IDS]
    lines.append(_line({"jsonrpc": "2.0", "id": 99, "method": "ping"}))
    with caplog.at_level(logging.WARNING, logger="projectops.mcp._stdio"):
        answers = serve_lines(b"".join(lines), answers=2 + len(ODD_IDS))

    odd = answers[1:-1]
    assert [(a["id"], a["error"]["code"]) for a in odd] == [(None, -32600)] * len(ODD_IDS)
    assert all("id must be a string or an integer" in a["error"]["message"] for a in odd)
    assert answers[-1] == {"jsonrpc": "2.0", "id": 99, "result": {}}
    rejected = [r.getMessage() for r in caplog.records if "rejected: -32600" in r.getMessage()]
    assert len(rejected) == len(ODD_IDS)


def test_a_line_over_the_limit_is_answered_and_skipped_without_holding_it() -> None:
    data = b'{"x": "' + b"a" * 5000 + b'"}\n' + _line({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    answers = serve_lines(
        _line(INITIALIZE) + _line(INITIALIZED) + data, answers=3, max_line_bytes=1000
    )
    too_long = answers[1]
    assert too_long["id"] is None and too_long["error"]["code"] == -32700
    assert "longer than 1,000 bytes" in too_long["error"]["message"]
    assert answers[2] == {"jsonrpc": "2.0", "id": 2, "result": {}}


# --- the real tool server -------------------------------------------------------------------


class McpProcess:
    """``python -m projectops mcp`` over stdio: write lines, read answers by id."""

    def __init__(self, *args: str, base_url: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "projectops", *args, "mcp"],
            env=cli_env(KEY, base_url),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            # As a terminal starts it: a test run in the background inherits SIGINT ignored,
            # and a program started so keeps ignoring it (Ctrl-C is not for a background job).
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        self.answers: queue.Queue[dict[str, Any]] = queue.Queue()
        self.stderr = b""
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.answers.put(json.loads(line))

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        self.stderr = self.process.stderr.read()

    def send(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def collect(self, count: int, timeout: float = 20.0) -> list[dict[str, Any]]:
        """The next `count` answers (fails after `timeout` seconds)."""
        deadline = time.monotonic() + timeout
        out: list[dict[str, Any]] = []
        while len(out) < count:
            left = deadline - time.monotonic()
            try:
                out.append(self.answers.get(timeout=max(left, 0.01)))
            except queue.Empty:
                pytest.fail(f"{len(out)} of {count} answers within {timeout} s: {out}")
        return out

    def close(self) -> str:
        """Close stdin, wait for the exit (bounded); stderr's text."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        time.sleep(0.1)
        return self.stderr.decode("utf-8", "replace")


def _call(request_id: int, tool: str) -> bytes:
    params = {"name": tool, "arguments": {}}
    return _line({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})


def test_an_answer_that_would_drive_the_terminal_is_escaped_and_cut(
    caplog: pytest.LogCaptureFixture,
) -> None:
    body = json.dumps({"code": "internal", "message": "\x1b]0;pwned\x07\x1b[2J" + "A" * 5000})

    from mcp import Client

    from projectops.mcp import create_server

    async def call(base_url: str) -> Any:
        server = create_server(AsyncClient(base_url, KEY))
        async with Client(server) as client:  # type: ignore[arg-type]
            return await client.call_tool(NO_ARGUMENTS.tool_name, {})

    with hostile_server(answer(500, body)) as rude, caplog.at_level(logging.INFO):
        result = anyio.run(call, rude.base_url)
    text = result.content[0].text
    assert result.is_error is True
    assert not controls(text) and "\\x1b]0;pwned\\x07" in text and len(text) < 1200
    assert not controls(caplog.text)


@pytest.mark.slow
def test_the_tool_server_answers_bad_lines_and_bounds_each_call() -> None:
    with hostile_server(trickle_head(interval=0.1)) as slow:
        mcp = McpProcess("--timeout", "0.5", base_url=slow.base_url)
        try:
            mcp.send(_line(INITIALIZE))
            mcp.collect(1)
            mcp.send(_line(INITIALIZED))
            bad = [PARSE_ERRORS["not json"], PARSE_ERRORS["not utf-8"]]
            bad += [PARSE_ERRORS["escaped lone surrogate"], PARSE_ERRORS["deep nesting"]]
            mcp.send(b"".join(line + b"\n" for line in bad))
            answered = mcp.collect(len(bad))
            started = time.monotonic()
            mcp.send(_call(2, NO_ARGUMENTS.tool_name))
            (slow_answer,) = mcp.collect(1)
            elapsed = time.monotonic() - started
        finally:
            stderr = mcp.close()

    assert [(a["id"], a["error"]["code"]) for a in answered] == [(None, -32700)] * len(bad)
    assert stderr.count("rejected: -32700") == len(bad)
    assert not controls(stderr)

    print(f"FIGURE mcp tool call against a trickling server: answered after {elapsed:.2f} s")
    result = slow_answer["result"]
    assert slow_answer["id"] == 2 and result["isError"] is True
    assert "no complete answer" in result["content"][0]["text"]
    assert 0.45 <= elapsed < 2.0, elapsed


@pytest.mark.slow
def test_the_tool_server_answers_requests_with_odd_ids() -> None:
    mcp = McpProcess(base_url="http://127.0.0.1:9")
    try:
        mcp.send(_line(INITIALIZE))
        mcp.collect(1)
        mcp.send(_line(INITIALIZED) + b"".join(_odd_id_line(odd) for odd in ODD_IDS))
        answered = mcp.collect(len(ODD_IDS))
        mcp.send(_line({"jsonrpc": "2.0", "id": 7, "method": "ping"}))
        (pong,) = mcp.collect(1)
    finally:
        stderr = mcp.close()
    assert [(a["id"], a["error"]["code"]) for a in answered] == [(None, -32600)] * len(ODD_IDS)
    assert pong == {"jsonrpc": "2.0", "id": 7, "result": {}}
    assert stderr.count("rejected: -32600") == len(ODD_IDS)


@pytest.mark.slow
def test_ctrl_c_stops_the_stdio_server_while_its_stdin_stays_open() -> None:
    mcp = McpProcess(base_url="http://127.0.0.1:9")
    try:
        mcp.send(_line(INITIALIZE))
        mcp.collect(1)
        mcp.process.send_signal(signal.SIGINT)
        started = time.monotonic()
        code = mcp.process.wait(10)  # stdin is still open: nothing else ends the server
        elapsed = time.monotonic() - started
    finally:
        stderr = mcp.close()
    assert code in (0, 130), stderr
    assert elapsed < 3.0


@pytest.mark.slow
def test_requests_written_before_stdin_closes_are_all_answered() -> None:
    """An agent (or a shell pipe) may write its requests and close stdin at once: each still
    gets its one response before the server ends (JSON-RPC 2.0, section 5)."""
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": NO_ARGUMENTS.tool_name, "arguments": {}},
    }
    listing = {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}
    stdin = b"".join(_line(m) for m in (INITIALIZE, INITIALIZED, call, listing))
    done = subprocess.run(
        [sys.executable, "-m", "projectops", "mcp"],
        env=cli_env(KEY, "http://127.0.0.1:9"),  # refuses: the call's response is an error result
        input=stdin,
        capture_output=True,
        timeout=60,
    )
    answers = _by_id([json.loads(line) for line in done.stdout.splitlines()])
    assert done.returncode == 0, done.stderr
    assert set(answers) == {1, 2, 3}
    assert answers[2]["result"]["isError"] is True  # the tool's answer, not "Connection closed"
    assert [tool["name"] for tool in answers[3]["result"]["tools"]] == [
        op.tool_name for op in projectops.operations()
    ]


def _large_answer(size: int) -> tuple[projectops.Operation, bytes]:
    """An operation called without arguments and a response of about `size` bytes: the lists of
    its default fixture's response repeated (elements of the operation's own messages, so the
    decoding is the codec's real work)."""
    for op in projectops.operations():
        answer = {} if required_fields(op) else demo_response(op)
        lists = {k: v for k, v in answer.items() if isinstance(v, list) and v}
        if lists:
            times = size // len(json.dumps(lists)) + 1
            return op, json.dumps({**answer, **{k: v * times for k, v in lists.items()}}).encode()
    pytest.skip("no operation without arguments has a list in its default fixture's answer")


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:ping is removed")  # the SDK's legacy sessions still have it
def test_a_large_answer_leaves_the_other_sessions_of_mcp_http_their_latency(
    tmp_path: Any,
) -> None:
    """Issue 28.8: while one session's call decodes and encodes a 16 MiB answer, another
    session's pings keep being answered (they all waited for the decode when it ran on the
    event loop). Counted, not timed: the pings answered after the backend sent its last byte
    and before the call's result came."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    op, body = _large_answer(16 * 1024 * 1024)
    sent = threading.Event()

    def large(sock: Any, request: Any) -> None:
        answer(200, body)(sock, request)
        sent.set()

    async def scenario(url: str) -> tuple[int, Any]:
        async with (
            streamable_http_client(url) as (read, write),
            ClientSession(read, write) as caller,
            streamable_http_client(url) as (other_read, other_write),
            ClientSession(other_read, other_write) as other,
        ):
            await caller.initialize()
            await other.initialize()
            results: list[Any] = []
            pings = 0

            async def call() -> None:
                results.append(await caller.call_tool(op.tool_name, {}))

            async def ping() -> None:
                nonlocal pings
                while not results:
                    await other.send_ping()
                    pings += bool(sent.is_set() and not results)

            async with anyio.create_task_group() as group:
                group.start_soon(call)
                group.start_soon(ping)
            return pings, results[0]

    env = {"SERVICE_BACKEND_URL": "", "SERVICE_API_KEY": KEY}
    with hostile_server(large) as backend:
        env["SERVICE_BACKEND_URL"] = backend.base_url
        with http_server([*MCP_COMMAND, "--http"], env, tmp_path / "mcp.log") as server:
            pings, result = anyio.run(scenario, server.url)
    print(f"FIGURE pings answered while the tool server worked on a 16 MiB answer: {pings}")
    assert result.is_error is True  # over --max-result-bytes: the response was decoded and sized
    assert "bytes of JSON, over the tool server's limit" in result.content[0].text
    assert pings >= 30  # on the event loop: only those answered while the response was read (7)
