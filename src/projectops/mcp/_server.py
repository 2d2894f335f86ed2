"""The MCP tool server, ``projectops mcp`` (docs/mcp.md): one tool per operation of the registry,
each call sent with the server's one :class:`~projectops.client.AsyncClient`; every failure is an
``isError`` result of one sentence (:mod:`projectops.program.failures`)."""

from __future__ import annotations

import hmac
import logging
import os
import socket
import sys
import time
from collections.abc import Mapping
from typing import Any

import anyio
import anyio.to_thread
from google.protobuf.message import Message
from mcp import types
from mcp.server import Server, ServerRequestContext
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from sse_starlette.sse import AppStatus  # the event streams of the SDK's HTTP transport
from starlette.applications import Starlette

import projectops
from projectops import json_schema
from projectops._text import outside_text
from projectops.client import DEFAULT_RETRIES, AsyncClient, MissingBaseUrl
from projectops.client.redaction import redact, redact_values
from projectops.codec import dump, iter_json, to_dict
from projectops.conventions import (
    API_KEY_ENV,
    BASE_URL_ENV,
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_MAX_RESPONSE_BYTES,
    InvalidBaseUrl,
    shown_url,
)
from projectops.descriptions import description
from projectops.mcp._limits import DEFAULT_MAX_SESSIONS, DEFAULT_SESSION_IDLE_TIMEOUT, TOKEN_ENV
from projectops.mcp._stdio import serve_stdio
from projectops.program.commands import (
    DEFAULT_DRAIN_TIMEOUT,
    is_loopback,
    listen,
    listen_url,
    serve_app,
)
from projectops.program.failures import EXIT_INTERNAL, failure
from projectops.registry import REGISTRY, Operation, Registry, operations

#: The largest tool result's JSON text by default, in bytes (``--max-result-bytes``).
DEFAULT_MAX_RESULT_BYTES = 1024 * 1024

SERVER_NAME = "projectops"  # the name in the initialize response
HTTP_PATH = "/mcp"  # the path of the MCP endpoint over HTTP
_log = logging.getLogger(__name__)
_LOOPBACK_ONLY = f"without a bearer token ({TOKEN_ENV}) the server listens on loopback only"
# Characters of an unknown tool's name quoted in the error.
_NAME_CHARS = 100


def operation_tools(registry: Registry = REGISTRY) -> list[types.Tool]:
    """The MCP tools of the registry's operations (docs/mcp.md): one per operation, named by its
    tool name (docs/contract.md §1.6), described by its proto comment, with its JSON Schemas as
    input and output schemas and its idempotency as hints.

    Args:
        registry: the operations served; :data:`projectops.registry.REGISTRY` by default.

    Returns:
        The tools, in the registry's order.
    """
    return [_tool(op) for op in registry.operations()]


def _tool(op: Operation) -> types.Tool:
    """The MCP tool of one operation."""
    text = op.description
    if op.deprecated:
        text = f"Deprecated. {op.description}"
    return types.Tool(
        name=op.tool_name,
        title=op.title,
        description=text,
        input_schema=json_schema.input_schema(op),
        output_schema=json_schema.output_schema(op),
        annotations=types.ToolAnnotations(
            title=op.title, read_only_hint=op.read_only, idempotent_hint=op.idempotent
        ),
    )


async def call_operation_tool(
    client: AsyncClient,
    name: str,
    arguments: Mapping[str, Any] | None,
    *,
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
    registry: Registry = REGISTRY,
) -> types.CallToolResult:
    """Run one tool call: the operation's call through `client` (docs/mcp.md).

    Args:
        client: the client calls are sent through (its base URL, key, time-out and retries).
        name: the tool's name, as ``tools/list`` shows it.
        arguments: the call's arguments, the request as a JSON object; ``None``: ``{}``.
        max_result_bytes: the largest result's JSON text, in bytes; a larger one is an
            ``isError`` result. 1 MiB (:data:`DEFAULT_MAX_RESULT_BYTES`) by default.
        registry: the operations served; :data:`projectops.registry.REGISTRY` by default.

    Returns:
        The response as JSON text and ``structuredContent``; or an ``isError`` result of one
        sentence for a failed call (the API's error, no response, invalid arguments) or a result
        over `max_result_bytes`.

    Raises:
        mcp.shared.exceptions.MCPError: ``-32602`` (invalid params) when `name` is no tool.
    """
    # Only the names tools/list shows, not the registry's other keys.
    by_tool_name = {o.tool_name: o for o in registry.operations()}
    op = by_tool_name.get(name)
    if op is None:
        tools = ", ".join(by_tool_name)
        # The name is the host's text: escaped and cut (docs/contract.md §6, §9.3).
        shown = outside_text(name, _NAME_CHARS)
        raise MCPError(
            code=types.INVALID_PARAMS, message=f"Unknown tool: '{shown}'; the tools are {tools}"
        ) from None
    started = time.monotonic()
    try:
        response = await client.call(op, dict(arguments or {}))
    except Exception as exc:
        row = failure(exc)
        if row.exit_code == EXIT_INTERNAL:  # not an error of the call: the log gets it
            _log.exception("tool %s failed unexpectedly", name)
        # The client put outside text into `exc` redacted: the sentence is never rewritten.
        _, sentence = row.format(exc, name)
        result, outcome = _failed(sentence)
    else:
        result, outcome = await anyio.to_thread.run_sync(_result, op, response, max_result_bytes)
        del response  # the message may be large: not kept while the result is sent
    elapsed_ms = (time.monotonic() - started) * 1e3
    _log.info("%s: %s (%.0f ms)", name, outcome, elapsed_ms)
    return result


def _result(
    op: Operation,
    response: Message,
    limit: int,
) -> tuple[types.CallToolResult, str]:
    """The tool result of `response` and the outcome to log (in a worker thread); its size is
    counted as it is encoded, and the text kept only while it is within `limit`."""
    pieces: list[str] = []
    size = 0
    for piece in iter_json(response, indent=2):
        size += len(piece.encode("utf-8", "surrogatepass"))
        if size <= limit:
            pieces.append(piece)
    if size > limit:
        return _failed(
            f"The result of {op.tool_name} would be {size:,} bytes of JSON, over the tool "
            f"server's limit of {limit:,} bytes (--max-result-bytes); nothing of it was returned."
        )
    data = to_dict(response)
    text = "".join(pieces)
    if redact(text) != text:  # the service echoed the key: redact every string, map keys too
        data = redact_values(data)
        # A key that straddles two JSON tokens is caught by redacting the text whole.
        text = redact(dump(data, indent=2))
    result = types.CallToolResult(content=[types.TextContent(text=text)], structured_content=data)
    return result, "ok"


def _failed(sentence: str) -> tuple[types.CallToolResult, str]:
    text = types.TextContent(text=sentence)
    return types.CallToolResult(content=[text], is_error=True), f"error: {sentence}"


def create_server(
    client: AsyncClient,
    *,
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
    registry: Registry = REGISTRY,
) -> Server[Any]:
    """The MCP server of :func:`operation_tools`, with the tools capability only.

    Args:
        client: the async client every call is sent through; the caller closes it.
        max_result_bytes: as for :func:`call_operation_tool`.
        registry: the operations served as tools; :data:`projectops.registry.REGISTRY` by
            default.

    Returns:
        A low-level ``mcp.server.Server``, for :func:`serve_stdio` or :func:`serve_http`.

    Raises:
        TypeError: `max_result_bytes` is not an int.
        ValueError: `max_result_bytes` is below 1.
    """
    if isinstance(max_result_bytes, bool) or not isinstance(max_result_bytes, int):
        raise TypeError("max_result_bytes must be an int (bytes)")
    if max_result_bytes < 1:
        raise ValueError(f"max_result_bytes must be at least 1, not {max_result_bytes}")
    tools = operation_tools(registry)
    schemas = {tool.name: tool.input_schema for tool in tools}

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return await call_operation_tool(
            client,
            params.name,
            params.arguments,
            max_result_bytes=max_result_bytes,
            registry=registry,
        )

    return Server(
        SERVER_NAME,
        version=projectops.__version__,
        description=description(registry.service),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        get_tool_input_schema=schemas.get,
    )


class _SafeFormatter(logging.Formatter):
    """The key redacted from outside text only (a library's message, exception text: ours quote
    outside text redacted on entry, docs/contract.md §9); every line escaped, the whole cut (§6)."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        if record.name != "projectops" and not record.name.startswith("projectops."):
            record.message = redact(record.message)
        return super().formatMessage(record)

    def formatException(self, ei: Any) -> str:
        return redact(super().formatException(ei))

    def format(self, record: logging.LogRecord) -> str:
        lines = super().format(record).split("\n")
        text = "\n".join(outside_text(line) for line in lines)
        if len(text) <= 4000:
            return text
        return f"{text[:2000]}\n... [cut] ...\n{text[-2000:]}"


def configure_logging(level: int = logging.INFO) -> None:
    """Log to stderr only (stdout is the stdio transport's), escaped: this package at `level`,
    libraries at WARNING.

    Args:
        level: the level of this package's loggers; ``logging.INFO`` by default.
    """
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_SafeFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    logging.getLogger("projectops").setLevel(level)


class _BearerToken:
    """The one bearer token ``mcp --http`` takes (the SDK's ``TokenVerifier``), compared in
    constant time: how long a refusal takes says nothing of how much of a guess was right."""

    def __init__(self, token: str) -> None:
        self._token = token.encode("utf-8")

    async def verify_token(self, token: str) -> AccessToken | None:
        if not hmac.compare_digest(token.encode("utf-8"), self._token):
            return None
        return AccessToken(token=token, client_id=SERVER_NAME, scopes=[])


def http_app(
    server: Server[Any],
    sock: socket.socket,
    *,
    token: str | None = None,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    session_idle_timeout: float = DEFAULT_SESSION_IDLE_TIMEOUT,
) -> Starlette:
    """The Streamable HTTP app of `server` at ``/mcp`` for `sock`'s address (docs/mcp.md); run
    it with its lifespan (the SDK's session manager runs there).

    A request with a foreign ``Host`` gets 421, a foreign ``Origin`` 403 (DNS rebinding); with
    `token`, one without ``Authorization: Bearer <token>`` gets 401 (the SDK's bearer check).

    Args:
        server: the server from :func:`create_server`.
        sock: the bound socket it will serve (its address and port are the allowed ``Host``).
        token: the bearer token every request must carry; ``None`` (the default): none, and then
            `sock` must be on a loopback address.
        max_sessions: sessions open at once at most (the SDK's ``max_sessions``); one more
            ``initialize`` gets 503; :data:`DEFAULT_MAX_SESSIONS` by default.
        session_idle_timeout: seconds a session with no request in flight and no open stream
            lives on (the SDK's ``session_idle_timeout``); then its id answers 404;
            :data:`DEFAULT_SESSION_IDLE_TIMEOUT` by default.

    Returns:
        The SDK's Starlette app.

    Raises:
        ValueError: no `token` and `sock` is not on a loopback address, or a bound that is not
            positive.
    """
    host, port = sock.getsockname()[:2]
    if token is None and not is_loopback(host):
        raise ValueError(_LOOPBACK_ONLY)
    shown_host = host
    if ":" in host:  # an IPv6 address, bracketed in a Host header
        shown_host = f"[{host}]"
    names = ["127.0.0.1", "localhost", "[::1]", shown_host]
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{name}:{port}" for name in names],
        allowed_origins=[f"http://{name}:{port}" for name in names],
    )
    verifier = None
    auth = None
    if token is not None:
        verifier = _BearerToken(token)
        # The SDK checks bearer tokens for a resource server; the token's issuer is this server
        # itself (its operator set the token), and no OAuth metadata route is served.
        issuer = {"issuer_url": listen_url(sock), "resource_server_url": None}
        auth = AuthSettings.model_validate(issuer)
    return server.streamable_http_app(
        streamable_http_path=HTTP_PATH,
        transport_security=security,
        host=host,
        auth=auth,
        token_verifier=verifier,
        max_sessions=max_sessions,
        session_idle_timeout=session_idle_timeout,
    )


def serve_http(
    server: Server[Any],
    sock: socket.socket,
    *,
    drain_timeout: int = DEFAULT_DRAIN_TIMEOUT,
    token: str | None = None,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    session_idle_timeout: float = DEFAULT_SESSION_IDLE_TIMEOUT,
) -> None:
    """Serve :func:`http_app` until SIGINT or SIGTERM (docs/mcp.md). On the signal the calls
    in flight are answered before the event streams end.

    Args:
        server: the server from :func:`create_server`.
        sock: a bound, listening socket (:func:`projectops.program.commands.listen`); closed after.
        drain_timeout: seconds the calls in flight may take after the signal; 10 by default.
        token: the bearer token, as :func:`http_app` takes it; ``None`` (the default): none.
        max_sessions: as :func:`http_app` takes it.
        session_idle_timeout: as :func:`http_app` takes it.

    Raises:
        ValueError: see :func:`http_app`.
    """
    # sse-starlette would end every event stream, a POST's answer included, the moment uvicorn
    # starts to stop: _Drain ends them once the POSTs in flight are done instead.
    AppStatus.disable_automatic_graceful_drain()  # type: ignore[no-untyped-call]
    app = http_app(
        server,
        sock,
        token=token,
        max_sessions=max_sessions,
        session_idle_timeout=session_idle_timeout,
    )
    drain = _Drain(app)
    # uvicorn's loggers go through configure_logging's redacting handler (log_config=None).
    serve_app(drain, sock, drain_timeout=drain_timeout, on_stop=drain.stop, lifespan="on")


class _Drain:
    """Ends the event streams once :meth:`stop` was called and no POST is in flight (on the
    event loop's thread only)."""

    def __init__(self, app: Any) -> None:
        self._app = app
        self._calls = 0
        self._stopping = False

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        counted = int(scope["type"] == "http" and scope.get("method") != "GET")
        self._calls += counted
        try:
            await self._app(scope, receive, send)
        finally:
            self._calls -= counted
            if self._stopping:
                self.stop()

    def stop(self) -> None:
        self._stopping = True
        if self._calls == 0:
            AppStatus.should_exit = True


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
    token: str | None = None,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    session_idle_timeout: float = DEFAULT_SESSION_IDLE_TIMEOUT,
) -> int:
    """``projectops mcp`` (docs/mcp.md): serve the tools over stdio, or over Streamable HTTP on
    `host`:`port`. Every argument is checked before anything is served.

    Args:
        http: serve Streamable HTTP instead of stdio.
        host: the host to listen on, with `http`.
        port: the port to listen on, with `http`; 0: any free one.
        base_url: the API's root URL; ``None`` (the default): ``SERVICE_BACKEND_URL``.
        timeout: seconds one call may take as a whole; 30 by default; ``None``: no limit.
        max_response_bytes: the largest answer body read, in bytes; 32 MiB by default.
        retries: extra attempts of a retryable call (docs/contract.md §1.5); 2 by default.
        max_result_bytes: the largest tool result, in bytes; 1 MiB by default.
        drain_timeout: seconds the calls in flight may take after SIGTERM, with `http`; 10 by
            default.
        token: with `http`, the bearer token every request must carry; ``None`` (the default):
            none, and `host` must be a loopback address (said in the log at start).
        max_sessions: with `http`, sessions open at once at most (:func:`http_app`).
        session_idle_timeout: with `http`, seconds an idle session lives (:func:`http_app`).

    Returns:
        0, once the transport ends (stdin closed, or the signal).

    Raises:
        MissingBaseUrl: neither `base_url` nor ``SERVICE_BACKEND_URL``.
        projectops.InvalidBaseUrl: not an absolute http(s) URL (the message names its source).
        ValueError: a limit is not positive, the environment's proxy is unusable, or no
            `token` with a `host` that is not a loopback address.
        projectops.program.commands.CannotListen: with `http`, `host`:`port` cannot be bound.
    """
    configure_logging()
    if http and token is None and not is_loopback(host):
        raise ValueError(_LOOPBACK_ONLY)
    try:
        client = AsyncClient(
            base_url, timeout=timeout, max_response_bytes=max_response_bytes, retries=retries
        )
    except MissingBaseUrl:
        raise  # its message names SERVICE_BACKEND_URL; the failure table adds the mock server
    except InvalidBaseUrl as exc:
        raise InvalidBaseUrl(f"{exc} (set by --base-url or {BASE_URL_ENV})") from None
    server = create_server(client, max_result_bytes=max_result_bytes)
    sock = None
    where = "stdio"
    if http:
        sock = listen(host, port)  # a busy port is one line, before anything else
        where = f"{listen_url(sock)}{HTTP_PATH}"
    _log.info(
        "serving %d tools on %s; service at %s",
        len(operations()),
        where,
        shown_url(client.base_url),
    )
    if not client.has_api_key:
        state = "is empty" if API_KEY_ENV in os.environ else "is not set"
        _log.warning("%s %s: tool calls will fail until it holds the API key", API_KEY_ENV, state)
    if sock is None:
        anyio.run(serve_stdio, server)
        return 0
    if token is None:
        _log.warning(
            "no bearer token (%s, --bearer-token): serving on loopback only, where any local "
            "process may call the tools with this server's key",
            TOKEN_ENV,
        )
    else:
        _log.info("every request must carry the bearer token (Authorization: Bearer ...)")
    serve_http(
        server,
        sock,
        drain_timeout=drain_timeout,
        token=token,
        max_sessions=max_sessions,
        session_idle_timeout=session_idle_timeout,
    )
    return 0
