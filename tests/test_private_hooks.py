"""Every private part of a dependency we lean on (ARCHITECTURE.md, "Private parts we lean on")
still exists and is still called, so an upstream change fails here instead of silently removing
a protection.

The mock server's hooks are checked by serving in-process (uvicorn in a thread of this process,
on 127.0.0.1) and asserting what only our override produces: a JSON 400 for malformed HTTP
(``send_400_response``), a 431 for an over-long head already whole in the buffer
(``h11.Connection.next_event``), a connection closed when idle after its answer
(``on_response_complete``), a 408 for a body that stops coming (uvicorn's request cycle), and a
connection counted by the listener (``socket._accept`` under asyncio's selector loop).
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import h11
import pytest
import uvicorn

from projectops.commands import listen
from projectops.server._listener import GuardedListener
from projectops.server._protocol import _QUOTED_BYTES, SheddingH11Protocol, _Connection
from projectops.server._uvicorn import CleanExitServer, LimitedConfig
from tests.loopback import LOOPBACK

# Generous on a busy 2-core machine; the deadlines under test are 0.5 s.
BOUND = 5.0
REQUEST_TIMEOUT = 0.5
HEAD_LIMIT = 1024


async def _app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Reads the whole body, answers 200 ``ok``."""
    if scope["type"] != "http":
        return
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        if not message.get("more_body"):
            break
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]}
    )
    await send({"type": "http.response.body", "body": b"ok"})


class Served:
    def __init__(self, port: int, listener: GuardedListener, config: LimitedConfig) -> None:
        self.port, self.listener, self.config = port, listener, config

    def connect(self) -> socket.socket:
        conn = socket.create_connection((LOOPBACK, self.port), timeout=BOUND)
        conn.settimeout(BOUND)
        return conn


@contextmanager
def serving() -> Iterator[Served]:
    """uvicorn's own ``Server.serve`` with :class:`LimitedConfig` on a :class:`GuardedListener`,
    in a thread of this process (off the main thread uvicorn installs no signal handlers)."""
    sock = listen(LOOPBACK, 0)
    listener = GuardedListener.wrap(sock, 100)
    config = LimitedConfig(
        _app,
        request_timeout=REQUEST_TIMEOUT,
        timeout_keep_alive=60,  # only our deadline may close an idle connection here
        h11_max_incomplete_event_size=HEAD_LIMIT,
        log_level="critical",
        log_config=None,
        lifespan="off",
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[listener])))
    thread.start()
    try:
        deadline = time.monotonic() + BOUND
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "server did not start"
            time.sleep(0.01)
        yield Served(listener.getsockname()[1], listener, config)
    finally:
        server.should_exit = True
        thread.join(BOUND)
        listener.close()
        assert not thread.is_alive()


def _read_until_closed(conn: socket.socket) -> tuple[bytes, float]:
    """Everything the server sends until it closes; and how long that took, in seconds."""
    start = time.monotonic()
    data = b""
    while time.monotonic() - start < BOUND:
        try:
            chunk = conn.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        data += chunk
    else:
        pytest.fail(f"connection still open after {BOUND} s; received {data[:200]!r}")
    return data, time.monotonic() - start


def _request(extra: bytes = b"", body: bytes = b"") -> bytes:
    return (
        b"POST / HTTP/1.1\r\nHost: t\r\n" + extra + b"Content-Length: %d\r\n\r\n" % len(body) + body
    )


# uvicorn: H11Protocol and its request cycle, Config, Server, supervisor


def test_uvicorn_serves_with_our_protocol_on_our_listener() -> None:
    with serving() as served, served.connect() as conn:
        assert served.config.http_protocol_class is SheddingH11Protocol
        assert served.config.loop == "asyncio"  # uvloop would accept past GuardedListener
        conn.sendall(_request())
        assert conn.recv(65536).startswith(b"HTTP/1.1 200")
        # Only GuardedListener.accept (socket._accept, called by asyncio's selector loop)
        # counts connections.
        assert served.listener.open_connections == 1


def test_send_400_response_override_answers_malformed_http_with_an_error_response() -> None:
    with serving() as served, served.connect() as conn:
        conn.sendall(b"POST / HTTP/1.1\r\nHost: t\r\nno colon here\r\n\r\n")
        answer, _ = _read_until_closed(conn)
    assert answer.startswith(b"HTTP/1.1 400")
    assert b"content-type: application/json" in answer.lower()
    assert b'"code": "invalid_argument"' in answer or b'"code":"invalid_argument"' in answer


def test_next_event_override_refuses_a_long_head_already_whole_in_the_buffer() -> None:
    # The long head waits behind a pipelined request: h11 alone would parse it at any size.
    long_head = _request(b"X-Pad: " + b"a" * (4 * HEAD_LIMIT) + b"\r\n")
    with serving() as served, served.connect() as conn:
        conn.sendall(_request() + long_head)
        answer, _ = _read_until_closed(conn)
    assert answer.startswith(b"HTTP/1.1 200")
    assert b"HTTP/1.1 431" in answer
    assert b"resource_exhausted" in answer


def test_on_response_complete_override_arms_the_deadline_for_the_next_request() -> None:
    with serving() as served, served.connect() as conn:
        conn.sendall(_request())
        answer = b""
        while not answer.endswith(b"\r\n\r\nok"):
            chunk = conn.recv(65536)
            assert chunk, answer
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 200")
        # Idle after the answer: our deadline (0.5 s) closes it, not keep-alive (60 s).
        rest, waited = _read_until_closed(conn)
    assert rest == b""
    assert waited < BOUND


def test_the_request_cycle_is_told_when_a_body_stops_coming() -> None:
    with serving() as served, served.connect() as conn:
        conn.sendall(_request(body=b"0123456789")[:-7])  # 3 of 10 body bytes
        answer, _ = _read_until_closed(conn)
    assert answer.startswith(b"HTTP/1.1 408")
    assert b"deadline_exceeded" in answer


def test_uvicorn_attributes_we_read_or_override_exist() -> None:
    from uvicorn.protocols.http.h11_impl import H11Protocol
    from uvicorn.supervisors import Multiprocess

    params = list(inspect.signature(H11Protocol.__init__).parameters)
    assert params[:4] == ["self", "config", "server_state", "app_state"]
    for name in ("send_400_response", "on_response_complete", "data_received"):
        assert callable(getattr(H11Protocol, name)), name
    assert list(inspect.signature(H11Protocol.send_400_response).parameters) == ["self", "msg"]
    # CleanExitServer overrides handle_exit, which uvicorn installs as the signal handler.
    # (sse-starlette, under mcp, replaces uvicorn.Server.handle_exit when imported: read the
    # module's source, not the attribute.)
    assert "signal.signal(sig, self.handle_exit)" in inspect.getsource(uvicorn.server)
    assert "handle_exit" in CleanExitServer.__dict__
    server = CleanExitServer(uvicorn.Config(_app))
    assert (server.should_exit, server.force_exit, server.started) == (False, False, False)
    assert {"config", "sockets"} <= set(inspect.signature(Multiprocess).parameters)
    # _uvicorn.supervisor's parent closes its listening sockets (`self.sockets`) in its
    # `terminate_all`, which `run` calls once a stop signal came.
    assert "self.sockets = sockets" in inspect.getsource(Multiprocess.__init__)
    assert "self.terminate_all()" in inspect.getsource(Multiprocess.run)
    assert "stream" in uvicorn.config.LOGGING_CONFIG["handlers"]["access"]


# h11


def test_h11_connection_parts_we_use() -> None:
    conn = _Connection(h11.SERVER, HEAD_LIMIT)  # h11.Connection(role, max_incomplete_event_size)
    assert conn.their_state is h11.IDLE
    conn.receive_data(b"GET / HTTP/1.1\r\nHost: t\r\nX-Key: secret\x00\r\n\r\n")
    assert conn.trailing_data[0]
    with pytest.raises(h11.RemoteProtocolError) as caught:
        conn.next_event()
    assert conn.last_error is caught.value
    assert caught.value.error_status_hint == 400
    # h11 quotes the offending bytes after a ": b'" (or bytearray) prefix: we keep its words.
    assert "secret" not in _QUOTED_BYTES.split(str(caught.value))[0]
    hinted = h11.RemoteProtocolError("x", error_status_hint=431)
    assert hinted.error_status_hint == 431


# socket and asyncio


def test_socket_accept_returns_a_descriptor_and_an_address() -> None:
    with (
        socket.create_server((LOOPBACK, 0)) as server,
        socket.create_connection(server.getsockname(), timeout=BOUND),
    ):
        fd, address = server._accept()  # type: ignore[attr-defined]
        socket.socket(fileno=fd).close()
    assert isinstance(fd, int) and address[0] == LOOPBACK


# mcp


def test_mcp_stream_protocols_and_stdio_server() -> None:
    pytest.importorskip("mcp")
    from mcp.server.stdio import stdio_server
    from mcp.shared._stream_protocols import ReadStream, WriteStream

    assert ReadStream is not None and WriteStream is not None
    assert {"stdin", "stdout"} <= set(inspect.signature(stdio_server).parameters)


def test_sse_starlette_drain_switches_of_mcp_http() -> None:
    """serve_http turns sse-starlette's automatic drain off and ends the streams itself by
    setting AppStatus.should_exit; both must still exist and still be what the streams read."""
    sse = pytest.importorskip("sse_starlette.sse")
    status = sse.AppStatus
    assert callable(status.disable_automatic_graceful_drain)
    assert isinstance(status.should_exit, bool)
    assert "should_exit" in inspect.getsource(sse.EventSourceResponse)
    assert "disable_automatic_graceful_drain" in inspect.getsource(status)


def test_opentelemetry_unset_meter_provider_is_still_recognised() -> None:
    """projectops.telemetry skips measurements cheaply while the global meter provider is the
    API's unset proxy, a private class; if it is renamed, measurements still go (and drop)."""
    metrics = pytest.importorskip("opentelemetry.metrics")
    from projectops import telemetry

    assert isinstance(metrics.get_meter_provider(), telemetry._providers().idle_meters[1:])


# argparse (projectops.cli._main)


def test_argparse_check_value_override_suggests_the_closest_choice() -> None:
    from projectops.cli._main import _Parser
    from projectops.client.failures import UsageError

    parser = _Parser(prog="p")
    parser.add_argument("--colour", choices=["red", "green"])
    sub = parser.add_subparsers(dest="command")
    assert isinstance(sub, argparse._SubParsersAction)
    sub.add_parser("alpha")
    with pytest.raises(UsageError, match="did you mean 'alpha'"):
        parser.parse_args(["alpah"])
    with pytest.raises(UsageError, match="did you mean 'green'"):
        parser.parse_args(["--colour", "gren", "alpha"])
    assert "--colour" in parser._option_string_actions


def test_argparse_fill_text_override_keeps_paragraphs() -> None:
    from projectops.cli._main import _Formatter

    parser = argparse.ArgumentParser(
        prog="p", description="First paragraph.\n\nSecond paragraph.", formatter_class=_Formatter
    )
    assert "First paragraph.\n\nSecond paragraph." in parser.format_help()
