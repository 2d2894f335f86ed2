"""The MCP tool server of the API: ``projectops mcp`` (docs/contract.md §1.6, §1.4, §2 and §5).

One tool per operation of the registry, named by its tool name (``get-release-details``), with
the rpc's proto comment as description, the JSON Schema of the request message as
``inputSchema`` and that of the response message as ``outputSchema``
(:mod:`projectops.json_schema`). Nothing is listed by hand: a new rpc in the proto is a new tool.

A tool call decodes its arguments strictly into the request message and validates it (REQUIRED
fields included), once, then sends the request with the one
:class:`~projectops.client.AsyncClient` the server keeps for its life (it read
``SERVICE_BACKEND_URL`` and ``SERVICE_API_KEY`` at start). The response comes back twice: as
JSON text content and as ``structuredContent``. Every failure is a tool result with
``isError: true`` and one sentence (:mod:`projectops.client.failures`); a missing API key fails
calls, never the start or ``tools/list``.

Transports: stdio (:func:`serve_stdio`, the default of ``projectops mcp``) and Streamable HTTP at
``http://<host>:<port>/mcp`` (:func:`serve_http`; the CLI binds 127.0.0.1 by default), with the
SDK's DNS-rebinding protection on (a foreign ``Host`` gets 421, a foreign ``Origin`` 403).

The API key is never put in a result or a log line: results are built from messages that do
not hold it, and as a second line of defence every result text and every log line this process
writes has the key's value replaced by ``***``. Logs go to stderr only (stdout is the stdio
transport).

Needs the ``mcp`` extra (``mcp``, ``jsonschema``, ``uvicorn``); the ``projectops`` CLI imports
this module only when ``projectops mcp`` runs.
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
from projectops.registry import SERVICE, UnknownOperationError, operation, operations

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
#: The largest tool result's JSON text by default, in bytes (1 MiB; ``--max-result-bytes``).
DEFAULT_MAX_RESULT_BYTES = 1024 * 1024

_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
_log = logging.getLogger(__name__)


def operation_tools() -> list[types.Tool]:
    """The MCP tools of the registry's operations, in registry order.

    Each is named by the operation's tool name, titled by the first sentence of its rpc
    comment, described by the whole comment (led by "Deprecated." for an rpc with the
    ``deprecated`` option), and carries ``inputSchema`` =
    :func:`projectops.json_schema.input_schema` and ``outputSchema`` =
    :func:`projectops.json_schema.output_schema` (object schemas at the top level, as MCP
    requires). Its annotations (MCP 2025-06-18, "Tool annotations") come from the rpc's
    ``idempotency_level``: ``NO_SIDE_EFFECTS`` gives ``readOnlyHint`` and ``idempotentHint``,
    ``IDEMPOTENT`` gives ``idempotentHint``; unknown leaves both false.
    """
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
    """Run the tool `name` of an operation with `arguments`; the tool result.

    The arguments are decoded strictly into the request message and validated, once, by
    :meth:`AsyncClient.call` (the codec is the validator; the input schema describes the same
    rules); the response comes back as JSON text content and as ``structuredContent``, both
    with ``SERVICE_API_KEY``'s value replaced by ``***`` wherever a string holds it. Every
    failure is an ``isError`` result with the sentence of :mod:`projectops.client.failures`
    (redacted the same way). A response whose JSON text (indented, UTF-8) would be larger than
    `max_result_bytes` is an ``isError`` result naming that limit and the size, and nothing of
    it is sent: its size is counted as it is encoded, piece by piece, before anything is held.

    Raises:
        MCPError: `name` is no operation's tool (``-32602``, a protocol error as the MCP
            specification asks).
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
        _, sentence = row.format(exc, op.tool_name)
        result = types.CallToolResult(
            content=[types.TextContent(text=redact(sentence))], is_error=True
        )
        outcome = f"error: {redact(sentence)}"
    else:
        size = _json_size(response)
        if size > max_result_bytes:
            sentence = (
                f"The result of {op.tool_name} would be {size:,} bytes of JSON, over the tool "
                f"server's limit of {max_result_bytes:,} bytes (--max-result-bytes); nothing "
                "of it was returned."
            )
            result = types.CallToolResult(content=[types.TextContent(text=sentence)], is_error=True)
            outcome = f"error: {sentence}"
        else:
            data, text = _without_key(to_dict(response))
            result = types.CallToolResult(
                content=[types.TextContent(text=text)], structured_content=data
            )
            outcome = "ok"
        del response  # the message may be large: not kept while the result is sent
    _log.info("%s: %s (%.0f ms)", name, outcome, (time.monotonic() - started) * 1e3)
    return result


def _json_size(message: Message) -> int:
    """The UTF-8 size of `message`'s indented JSON text, counted piece by piece as it is
    encoded (a response of many small elements is many times its answer's size as text, and
    more again as Python objects: neither is built whole to learn it)."""
    size = 0
    for piece in iter_json(message, indent=2):
        size += len(piece) if piece.isascii() else len(piece.encode("utf-8", "surrogatepass"))
    return size


def _without_key(data: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """A successful result as ``(structuredContent, text)``, with the API key redacted from
    every string of it, map keys included: a service that echoes the key in a response field
    must not hand it to the agent. One pass over the JSON text tells whether there is
    anything to redact (every spelling of the key in a string is one in its JSON text too);
    only then is the data walked."""
    text = dump(data, indent=2)
    if redact(text) == text:
        return data, text
    clean = _redact_strings(data)
    # The walk misses only a key that straddles two JSON tokens: the text is redacted whole.
    return clean, redact(dump(clean, indent=2))


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
    """The low-level MCP server with one tool per operation (module docstring).

    Args:
        client: the HTTP client every tool call sends through, for the life of the server
            (its base URL and API key are read once, when it is made).
        max_result_bytes: the largest JSON text of a tool's response, in bytes (UTF-8,
            indented); a larger one is an ``isError`` result naming the limit and the size.

    Raises:
        ValueError: `max_result_bytes` is less than 1.
        TypeError: `max_result_bytes` is not an int.

    Returns:
        A :class:`mcp.server.Server` advertising the tools capability only; serve it with
        :func:`serve_stdio` or :func:`serve_http`.
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
    """The Streamable HTTP ASGI app of `server` at :data:`HTTP_PATH`, for ``host:port``.

    DNS-rebinding protection (the SDK's) accepts only ``Host`` headers naming a loopback
    address or `host`, with `port`, and only ``Origin`` headers ``http://`` of those (or none):
    others get 421 and 403.
    """
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
    """``projectops mcp``: serve the tools over stdio, or over Streamable HTTP if `http`.

    Args:
        http: serve Streamable HTTP on `host`:`port` instead of stdio.
        host, port: the HTTP address (the CLI's default is 127.0.0.1:8765).
        base_url: the service's base URL; None reads ``SERVICE_BACKEND_URL`` (no default:
            without either, ``MissingBaseUrl``).
        timeout: seconds each tool call's HTTP request may take as a whole.
        max_response_bytes: the largest answer body a tool call reads, in bytes.
        retries: extra attempts of a tool call's request when no answer came or the answer is
            429, 502, 503 or 504, for a read-only or idempotent operation; 0: none.
        max_result_bytes: the largest JSON text of a tool's response, in bytes (UTF-8,
            indented); a larger one is an ``isError`` result naming the limit and the size.
        drain_timeout: with `http`, whole seconds a stop signal lets requests in flight
            finish (:func:`serve_http`).

    Returns:
        0 when the transport ends normally (stdin closed, SIGINT, SIGTERM).

    Raises:
        MissingBaseUrl: (a ValueError) neither `base_url` nor ``SERVICE_BACKEND_URL``; the
            CLI reports it in one line that also names ``projectops mock-server``, exit 2.
        projectops.InvalidBaseUrl: (a ValueError) the base URL is not an absolute http(s) URL;
            the message says it was set by ``--base-url`` or ``SERVICE_BACKEND_URL``.
        ValueError: `timeout`, `max_response_bytes` or `max_result_bytes` is not positive, or
            the environment's
            proxy for the base URL cannot be used (``InvalidProxy``). All are checked before
            serving.
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
