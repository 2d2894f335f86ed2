"""The MCP tool server: ``projectops mcp`` (docs/mcp.md; docs/contract.md §1.4, §1.6, §2, §5).

One tool per operation of the registry (a new rpc is a new tool). A call decodes its arguments
strictly into the request message, once, and sends it with the one
:class:`~projectops.client.AsyncClient` the server keeps for its life; every failure is an
``isError`` result of one sentence (:mod:`projectops.client.failures`). The API key never enters
a result or a log line: both are redacted as a second line of defence. Logs go to stderr only.
Large answers are decoded (by the client) and encoded (here) in worker threads, so one call does
not stall the other sessions of ``mcp --http``.
"""

from __future__ import annotations

import logging
import signal
import socket
import sys
import time
from collections.abc import Callable, Mapping
from types import FrameType
from typing import Any

import anyio
import anyio.to_thread
from google.protobuf.message import Message
from mcp import types
from mcp.server import Server, ServerRequestContext
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from starlette.applications import Starlette

import projectops
from projectops import json_schema
from projectops._text import escape
from projectops.client.failures import EXIT_INTERNAL, failure
from projectops.client.http import (
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_RETRIES,
    AsyncClient,
    MissingBaseUrl,
)
from projectops.client.redaction import redact
from projectops.codec import dump, iter_json, to_dict
from projectops.commands import DEFAULT_DRAIN_TIMEOUT, listen, listen_url
from projectops.conventions import API_KEY_ENV, BASE_URL_ENV, DEFAULT_CALL_TIMEOUT, InvalidBaseUrl
from projectops.descriptions import description
from projectops.mcp._stdio import serve_stdio
from projectops.registry import SERVICE, Operation, UnknownOperationError, operation, operations

__all__ = [
    "DEFAULT_MAX_RESULT_BYTES",
    "HTTP_PATH",
    "SERVER_NAME",
    "call_operation_tool",
    "configure_logging",
    "create_server",
    "http_app",
    "operation_tools",
    "run",
    "serve_http",
]

#: The server's name in the MCP ``initialize`` answer (its version is the package's).
SERVER_NAME = "projectops"
#: Path of the Streamable HTTP endpoint.
HTTP_PATH = "/mcp"
#: The largest tool result's JSON text by default, in bytes (``--max-result-bytes``).
DEFAULT_MAX_RESULT_BYTES = 1024 * 1024

_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
_log = logging.getLogger(__name__)


def operation_tools() -> list[types.Tool]:
    """The tools of the registry's operations, in registry order: named by the tool name, the
    rpc comment as title (first sentence) and description, ``inputSchema`` and ``outputSchema``
    from :mod:`projectops.json_schema`, and ``readOnlyHint``/``idempotentHint`` from the rpc's
    ``idempotency_level``."""
    return [
        types.Tool(
            name=op.tool_name,
            title=op.title,
            description=f"Deprecated. {op.description}" if op.deprecated else op.description,
            input_schema=json_schema.input_schema(op),
            output_schema=json_schema.output_schema(op),
            annotations=types.ToolAnnotations(
                title=op.title, read_only_hint=op.read_only, idempotent_hint=op.idempotent
            ),
        )
        for op in operations()
    ]


async def call_operation_tool(
    client: AsyncClient,
    name: str,
    arguments: Mapping[str, Any] | None,
    *,
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
) -> types.CallToolResult:
    """Run the tool `name` with `arguments`: the response as JSON text and as
    ``structuredContent``, or an ``isError`` result of one sentence; a response whose indented
    JSON text would pass `max_result_bytes` is such an error, and nothing of it is sent.

    Raises:
        MCPError: `name` is no operation's tool (``-32602``, as the MCP specification asks).
    """
    try:
        op = operation(name)
    except UnknownOperationError:
        tools = ", ".join(o.tool_name for o in operations())
        raise MCPError(
            code=types.INVALID_PARAMS, message=f"Unknown tool: {name!r}; the tools are {tools}"
        ) from None
    started = time.monotonic()
    try:
        response = await client.call(op, dict(arguments or {}))
    except Exception as exc:
        row = failure(exc)
        if row.exit_code == EXIT_INTERNAL:  # not an error of the call: the log gets it
            _log.exception("tool %s failed unexpectedly", name)
        sentence = redact(row.format(exc, op.tool_name)[1])
        result = types.CallToolResult(content=[types.TextContent(text=sentence)], is_error=True)
        outcome = f"error: {sentence}"
    else:
        result, outcome = await anyio.to_thread.run_sync(_result, op, response, max_result_bytes)
        del response  # the message may be large: not kept while the result is sent
    _log.info("%s: %s (%.0f ms)", name, outcome, (time.monotonic() - started) * 1e3)
    return result


def _result(op: Operation, response: Message, limit: int) -> tuple[types.CallToolResult, str]:
    """The tool result of `response` and the outcome to log (run in a worker thread)."""
    # Counted piece by piece as it is encoded: neither the text nor the dict is built whole
    # to learn that it is too large.
    pieces = iter_json(response, indent=2)
    size = sum(len(p) if p.isascii() else len(p.encode("utf-8", "surrogatepass")) for p in pieces)
    if size > limit:
        sentence = (
            f"The result of {op.tool_name} would be {size:,} bytes of JSON, over the tool "
            f"server's limit of {limit:,} bytes (--max-result-bytes); nothing of it was returned."
        )
        return types.CallToolResult(content=[types.TextContent(text=sentence)], is_error=True), (
            f"error: {sentence}"
        )
    data = to_dict(response)
    text = dump(data, indent=2)
    if redact(text) != text:  # the service echoed the key: redact every string, map keys too
        data = _redact_strings(data)
        # A key that straddles two JSON tokens is caught by redacting the text whole.
        text = redact(dump(data, indent=2))
    return types.CallToolResult(
        content=[types.TextContent(text=text)], structured_content=data
    ), "ok"


def _redact_strings(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact(k): _redact_strings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact_strings(v) for v in value]
    return value


def create_server(
    client: AsyncClient, *, max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES
) -> Server[Any]:
    """The MCP server with one tool per operation, advertising the tools capability only;
    every call sends through `client`. Serve it with :func:`serve_stdio` or :func:`serve_http`.

    Raises:
        TypeError, ValueError: `max_result_bytes` is not an int, or less than 1.
    """
    if isinstance(max_result_bytes, bool) or not isinstance(max_result_bytes, int):
        raise TypeError("max_result_bytes must be an int (bytes)")
    if max_result_bytes < 1:
        raise ValueError(f"max_result_bytes must be at least 1, not {max_result_bytes}")
    tools = operation_tools()
    schemas = {tool.name: tool.input_schema for tool in tools}

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return await call_operation_tool(
            client, params.name, params.arguments, max_result_bytes=max_result_bytes
        )

    return Server(
        SERVER_NAME,
        version=projectops.__version__,
        description=description(SERVICE),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        get_tool_input_schema=schemas.get,
    )


class _RedactingFormatter(logging.Formatter):
    def formatMessage(self, record: logging.LogRecord) -> str:
        # The message may hold text from outside (a tool name, an answer): one line, escaped.
        return escape(super().formatMessage(record))

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


def configure_logging(level: int = logging.INFO) -> None:
    """Log to stderr only, this package at `level` and libraries at WARNING, with the API
    key's value redacted from every line (tracebacks included)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    logging.getLogger("projectops").setLevel(level)


def http_app(server: Server[Any], host: str, port: int) -> Starlette:
    """The Streamable HTTP ASGI app of `server` at :data:`HTTP_PATH`, for ``host:port``; the
    SDK's DNS-rebinding protection answers a ``Host`` other than loopback or `host` (with
    `port`) 421, an ``Origin`` other than ``http://`` of those 403."""
    names = list(_LOOPBACK_NAMES)
    own = f"[{host}]" if ":" in host else host
    if own not in names:
        names.append(own)
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{name}:{port}" for name in names],
        allowed_origins=[f"http://{name}:{port}" for name in names],
    )
    return server.streamable_http_app(
        streamable_http_path=HTTP_PATH, transport_security=security, host=host
    )


def serve_http(
    server: Server[Any], sock: socket.socket, *, drain_timeout: int = DEFAULT_DRAIN_TIMEOUT
) -> None:
    """Serve `server` over Streamable HTTP on the listening socket `sock` (from
    :func:`projectops.commands.listen`), at :data:`HTTP_PATH`, until SIGINT/SIGTERM.

    A stop signal is uvicorn's graceful stop: `sock` closes at once (new connections are
    refused), the calls in flight (POST) get up to `drain_timeout` whole seconds to send their
    answers, then the event streams (GET) end and whatever still runs is cancelled. This then
    returns (the process exits 0); a second SIGINT stops waiting.
    """
    import uvicorn  # part of the mcp extra; only the HTTP transport needs it
    from sse_starlette.sse import AppStatus  # the SDK's event streams

    # sse-starlette ends every event stream, a POST's answer included, the moment uvicorn
    # starts to stop: _Drain ends them once the POSTs in flight are done instead.
    AppStatus.disable_automatic_graceful_drain()  # type: ignore[no-untyped-call]
    host, port = sock.getsockname()[:2]
    drain = _Drain(http_app(server, host, port), end_streams=_end_event_streams)

    class DrainingServer(uvicorn.Server):
        # Overrides uvicorn's handler (and sse-starlette's patch of it): no re-raise of the
        # signal after the stop, and the event streams end once no POST is in flight.
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            if self.should_exit and sig == signal.SIGINT:
                self.force_exit = True
            self.should_exit = True
            drain.stop()

    # log_config=None: uvicorn's loggers go through configure_logging's redacting handler.
    config = uvicorn.Config(
        drain,
        log_level="warning",
        log_config=None,
        lifespan="on",
        timeout_graceful_shutdown=drain_timeout,
    )
    try:
        DrainingServer(config).run(sockets=[sock])
    finally:
        sock.close()


def _end_event_streams() -> None:
    from sse_starlette.sse import AppStatus

    AppStatus.should_exit = True


class _Drain:
    """ASGI wrapper counting the requests in flight other than event streams (GET); once
    :meth:`stop` was called and none is left, it calls `end_streams`.

    Called on the event loop's thread, and :meth:`stop` from a signal handler on the same
    thread: plain attributes suffice.
    """

    def __init__(self, app: Any, *, end_streams: Callable[[], None]) -> None:
        self._app, self._end_streams = app, end_streams
        self._calls = 0
        self._stopping = False

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("method") == "GET":
            await self._app(scope, receive, send)
            return
        self._calls += 1
        try:
            await self._app(scope, receive, send)
        finally:
            self._calls -= 1
            self._end_if_drained()

    def stop(self) -> None:
        """The server stops: end the event streams now if no call is in flight, else once
        the last one is done."""
        self._stopping = True
        self._end_if_drained()

    def _end_if_drained(self) -> None:
        if self._stopping and self._calls == 0:
            self._end_streams()


def run(
    *,
    http: bool,
    host: str,
    port: int,
    base_url: str | None = None,
    timeout: float | None = DEFAULT_CALL_TIMEOUT,
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    retries: int = DEFAULT_RETRIES,
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
    drain_timeout: int = DEFAULT_DRAIN_TIMEOUT,
) -> int:
    """``projectops mcp``: serve the tools over stdio, or over Streamable HTTP on
    `host`:`port` if `http`; 0 once the transport ends (stdin closed, SIGINT, SIGTERM). The other
    arguments are the flags of docs/mcp.md, each checked before anything is served.

    Raises:
        MissingBaseUrl: neither `base_url` nor ``SERVICE_BACKEND_URL``.
        projectops.InvalidBaseUrl: not an absolute http(s) URL (the message names its source).
        ValueError: a limit is not positive, or the environment's proxy is unusable.
        projectops.commands.CannotListen: with `http`, `host`:`port` cannot be bound.
    """
    configure_logging()
    try:
        client = AsyncClient(
            base_url, timeout=timeout, max_response_bytes=max_response_bytes, retries=retries
        )
    except MissingBaseUrl:
        raise  # its message names SERVICE_BACKEND_URL; the failure table adds the mock server
    except InvalidBaseUrl as exc:
        raise InvalidBaseUrl(f"{exc} (set by --base-url or {BASE_URL_ENV})") from None
    server = create_server(client, max_result_bytes=max_result_bytes)
    sock = listen(host, port) if http else None  # a busy port is one line, before anything else
    where = f"{listen_url(sock)}{HTTP_PATH}" if sock is not None else "stdio"
    _log.info("serving %d tools on %s; service at %s", len(operations()), where, client.base_url)
    if not client.has_api_key:
        _log.warning(
            "%s is not set: tool calls will fail until it holds the project's API key", API_KEY_ENV
        )
    if sock is not None:
        serve_http(server, sock, drain_timeout=drain_timeout)
    else:
        anyio.run(serve_stdio, server)
    return 0
