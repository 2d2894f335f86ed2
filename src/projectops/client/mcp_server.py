"""The MCP tool server of the API: ``projectops mcp`` (issue 4; spec 4.1.7, 4.1.8, 5 and 7).

One tool per operation of the registry, named by its tool name (``get-release-details``), with
the rpc's proto comment as description, the JSON Schema of the request message as
``inputSchema`` and that of the response message as ``outputSchema``
(:mod:`projectops.json_schema`). Nothing is listed by hand: a new rpc in the proto is a new tool.

A tool call checks its arguments against the input schema (JSON Schema 2020-12) and decodes them
strictly into the request message (REQUIRED fields included), then sends the request with the
client layer's :class:`~projectops.client.AsyncClient`, which reads ``SERVICE_BACKEND_URL`` and
``SERVICE_API_KEY`` when the call is made. The response comes back twice: as JSON text content
and as ``structuredContent``. Every failure is a tool result with ``isError: true`` and one
sentence (see :func:`failure_text`); a missing API key fails calls, never the start or
``tools/list``.

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
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import anyio
import jsonschema
from google.protobuf.message import Message
from mcp import types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from starlette.applications import Starlette

import projectops
from projectops import (
    API_KEY_ENV,
    BASE_URL_ENV,
    ApiError,
    DeadlineExceeded,
    InvalidArgument,
    Operation,
    Unauthenticated,
    Unavailable,
    json_schema,
    operations,
    to_dict,
)
from projectops.client.http import AsyncClient, MissingApiKey, prepare_request, redact_api_key
from projectops.codec import dump
from projectops.descriptions import description
from projectops.registry import SERVICE

__all__ = [
    "HTTP_PATH",
    "SERVER_NAME",
    "ClientFactory",
    "ExtraTool",
    "ToolHandler",
    "configure_logging",
    "create_server",
    "failure_text",
    "http_app",
    "operation_tools",
    "run",
    "serve_http",
    "serve_stdio",
]

#: The server's name in the MCP ``initialize`` answer (its version is the package's).
SERVER_NAME = "projectops"
#: Path of the Streamable HTTP endpoint.
HTTP_PATH = "/mcp"

#: Makes the HTTP client of one tool call; called once per call, inside the event loop.
ClientFactory = Callable[[], AsyncClient]
#: Handles a call of an extra tool: ``(context, arguments) -> result``.
ToolHandler = Callable[[ServerRequestContext[Any], dict[str, Any]], Awaitable[types.CallToolResult]]

_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ExtraTool:
    """A tool served beside the operations' tools (e.g. test fixtures); not an operation."""

    tool: types.Tool
    handler: ToolHandler


def operation_tools() -> list[types.Tool]:
    """The MCP tools of the registry's operations, in registry order.

    Each is named by the operation's tool name, described by its rpc comment, and carries
    ``inputSchema`` = :func:`projectops.json_schema.input_schema` and ``outputSchema`` =
    :func:`projectops.json_schema.output_schema` (object schemas at the top level, as MCP
    requires).
    """
    return [
        types.Tool(
            name=op.tool_name,
            description=op.description,
            input_schema=json_schema.input_schema(op),
            output_schema=json_schema.output_schema(op),
        )
        for op in operations()
    ]


def create_server(
    client_factory: ClientFactory = AsyncClient, *, extra_tools: Sequence[ExtraTool] = ()
) -> Server[Any]:
    """The low-level MCP server with one tool per operation (module docstring).

    Args:
        client_factory: makes the :class:`~projectops.client.AsyncClient` of each tool call
            (called without arguments, once per call; the default reads
            ``SERVICE_BACKEND_URL`` and ``SERVICE_API_KEY`` then). The server closes it.
        extra_tools: more tools to serve after the operations' (the conformance suite's fixture
            tools in the tests); their handlers get the raw arguments, unchecked.

    Returns:
        A :class:`mcp.server.Server` advertising the tools capability only; serve it with
        :func:`serve_stdio` or :func:`serve_http`.

    Raises:
        ValueError: an extra tool's name is already taken.
    """
    tools = operation_tools()
    ops = {op.tool_name: op for op in operations()}
    validators = {tool.name: jsonschema.Draft202012Validator(tool.input_schema) for tool in tools}
    handlers: dict[str, ToolHandler] = {
        name: partial(_call_operation, op, validators[name], client_factory)
        for name, op in ops.items()
    }
    for extra in extra_tools:
        if extra.tool.name in handlers:
            raise ValueError(f"the tool name {extra.tool.name!r} is taken")
        tools.append(extra.tool)
        handlers[extra.tool.name] = extra.handler
    schemas = {tool.name: tool.input_schema for tool in tools}

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        handler = handlers.get(params.name)
        if handler is None:  # a protocol error, not a tool result (MCP spec, tools: errors)
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"Unknown tool: {params.name!r}; the tools are {', '.join(handlers)}",
            )
        started = time.monotonic()
        try:
            result = await handler(ctx, dict(params.arguments or {}))
        except Exception:  # never a JSON-RPC error with a traceback: the log gets it
            _log.exception("tool %s failed unexpectedly", params.name)
            result = _error_result(
                f"The tool server failed unexpectedly while running "
                f"{params.name}; its log (stderr) has the details."
            )
        texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
        outcome = f"error: {' '.join(texts)}" if result.is_error else "ok"
        _log.info("%s: %s (%.0f ms)", params.name, outcome, (time.monotonic() - started) * 1e3)
        return result

    return Server(
        SERVER_NAME,
        version=projectops.__version__,
        description=description(SERVICE),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        get_tool_input_schema=schemas.get,
    )


async def _call_operation(
    op: Operation,
    validator: jsonschema.Draft202012Validator,
    client_factory: ClientFactory,
    ctx: ServerRequestContext[Any],
    arguments: dict[str, Any],
) -> types.CallToolResult:
    """Run one operation's tool: check, send, and shape the answer as a tool result."""
    try:
        request = _request(op, validator, arguments)
    except InvalidArgument as exc:
        return _error_result(_sentence(f"Invalid arguments for {op.tool_name}: {exc.message}"))
    try:
        client = client_factory()
    except ValueError as exc:  # the base URL is not usable
        return _error_result(
            _sentence(f"The service's base URL is not usable: {exc}; {BASE_URL_ENV} sets it")
        )
    try:
        async with client:
            response = await client.call(op, request)
    except ApiError as exc:
        return _error_result(failure_text(exc))
    data = to_dict(response)
    return types.CallToolResult(
        content=[types.TextContent(text=dump(data, indent=2))], structured_content=data
    )


def _request(
    op: Operation, validator: jsonschema.Draft202012Validator, arguments: Mapping[str, Any]
) -> Message:
    """The request message of a tool call's arguments.

    Raises:
        InvalidArgument: the arguments break the input schema, or the strict decoding and the
            REQUIRED check (which also catch what a schema cannot: a blank required string);
            the message starts with the field path.
    """
    problem = _schema_problem(validator, arguments)
    if problem is not None:
        raise InvalidArgument(problem)
    return prepare_request(op, arguments)


def _schema_problem(
    validator: jsonschema.Draft202012Validator, arguments: Mapping[str, Any]
) -> str | None:
    """``"<field path>: <problem>"`` for each schema violation (``; ``-joined), or None.

    Unknown fields come first: a misspelt field also makes the right one missing.
    """
    problems: list[str] = []
    for error in sorted(validator.iter_errors(arguments), key=jsonschema.exceptions.relevance):
        path: list[str | int] = list(error.absolute_path)
        instance = error.instance if isinstance(error.instance, Mapping) else {}
        if error.validator == "additionalProperties":
            known = list(error.schema.get("properties", {}))
            fields = f"(fields: {', '.join(known)})" if known else "(this takes no fields)"
            problems[:0] = [
                f"{_field_path([*path, name])}: is not a known field {fields}"
                for name in instance
                if name not in known
            ]
        elif error.validator == "required":
            problems += [
                f"{_field_path([*path, name])}: is required"
                for name in error.validator_value
                if name not in instance
            ]
        else:
            problems.append(f"{_field_path(path)}: {error.message}")
    return "; ".join(problems) or None


def _field_path(parts: Sequence[str | int]) -> str:
    """``summary.testCounts[0].total`` style; ``arguments`` for the whole object."""
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text or "arguments"


def failure_text(exc: ApiError) -> str:
    """The one sentence of the ``isError`` result of a call that failed with `exc`.

    - no usable key, or 401: the key is missing or invalid, and ``SERVICE_API_KEY`` sets it;
    - 400: the server's code, message and field violations;
    - no answer (network, time-out): the client's message, which names the base URL, and
      ``SERVICE_BACKEND_URL``;
    - any other status: the status, code and message.

    The API key's value is replaced by ``***`` if any message quotes it.
    """
    if isinstance(exc, MissingApiKey):
        text = (
            f"The API key is missing or invalid: set {API_KEY_ENV} to the project's API "
            "key; it is not set, or not usable as a header value, so nothing was sent"
        )
    elif isinstance(exc, Unauthenticated) or exc.http_status == 401:
        text = (
            f"The API key is missing or invalid: set {API_KEY_ENV} to the project's API "
            f"key; the service answered 401 {exc.code}: {_message(exc)}"
        )
    elif isinstance(exc, Unavailable | DeadlineExceeded):
        text = f"The service did not answer: {exc.message}; {BASE_URL_ENV} sets its base URL"
    elif exc.http_status == 400:
        text = f"The service rejected the request (400 {exc.code}): {_message(exc)}"
    else:
        text = f"The service failed ({exc.http_status} {exc.code}): {_message(exc)}"
    return redact_api_key(_sentence(text))


def _message(exc: ApiError) -> str:
    return exc.describe().rstrip(".")


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "!", "?")) else text + "."


def _error_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=redact_api_key(text))], is_error=True
    )


class _RedactingFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return redact_api_key(super().format(record))


def configure_logging(level: int = logging.INFO) -> None:
    """Log to stderr only, this package at `level` and libraries at WARNING, with the API
    key's value redacted from every line (tracebacks included)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    logging.getLogger("projectops").setLevel(level)


async def serve_stdio(server: Server[Any]) -> None:
    """Serve `server` over stdio until the client closes stdin.

    Nothing else may write to stdout meanwhile: it is the transport.
    """
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


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


def serve_http(server: Server[Any], host: str, port: int) -> None:
    """Serve `server` over Streamable HTTP on ``http://host:port/mcp`` until SIGINT/SIGTERM.

    Raises:
        SystemExit: uvicorn could not bind the address (it logs why).
    """
    import uvicorn  # part of the mcp extra; only the HTTP transport needs it

    # log_config=None: uvicorn's loggers go through configure_logging's redacting handler.
    uvicorn.run(
        http_app(server, host, port), host=host, port=port, log_level="warning", log_config=None
    )


async def _check_client(client_factory: ClientFactory) -> tuple[str, bool]:
    async with client_factory() as client:
        return client.base_url, client.has_api_key


def run(
    *, http: bool, host: str, port: int, base_url: str | None = None, timeout: float | None = 30.0
) -> int:
    """``projectops mcp``: serve the tools over stdio, or over Streamable HTTP if `http`.

    Args:
        http: serve Streamable HTTP on `host`:`port` instead of stdio.
        host, port: the HTTP address (the CLI's default is 127.0.0.1:8765).
        base_url: the service's base URL; None reads ``SERVICE_BACKEND_URL`` (default
            :data:`~projectops.DEFAULT_BASE_URL`).
        timeout: seconds each tool call waits for each phase of its HTTP request.

    Returns:
        0 when the transport ends normally (stdin closed, SIGINT).

    Raises:
        ValueError: the base URL is not an absolute http(s) URL (checked before serving).
    """
    configure_logging()
    client_factory: ClientFactory = partial(AsyncClient, base_url, timeout=timeout)
    try:
        service_url, has_key = anyio.run(_check_client, client_factory)
    except ValueError as exc:
        raise ValueError(f"{exc} (set by --base-url or {BASE_URL_ENV})") from None
    server = create_server(client_factory)
    where = f"http://{host}:{port}{HTTP_PATH}" if http else "stdio"
    _log.info("serving %d tools on %s; service at %s", len(operations()), where, service_url)
    if not has_key:
        _log.warning(
            "%s is not set: tool calls will fail until it holds the project's API key", API_KEY_ENV
        )
    if http:
        serve_http(server, host, port)
    else:
        anyio.run(serve_stdio, server)
    return 0
