"""The MCP stdio transport, where every line on stdin gets a response (docs/mcp.md, JSON-RPC 2.0
§5.1). The SDK's ``stdio_server`` keeps the writing; its reader is replaced, since it drops lines
it cannot parse, replaces bytes that are not UTF-8, reads lines of any length, and takes a request
whose ``id`` is no string or integer for a notification."""

from __future__ import annotations

import io
import json
import logging
import os
import sys
import threading
from contextlib import suppress
from typing import Any, BinaryIO

import anyio
import anyio.from_thread
import anyio.lowlevel
import pydantic
from anyio.streams.memory import MemoryObjectSendStream
from mcp import types
from mcp.server import Server
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from projectops._text import outside_text

__all__ = ["DRAIN_SECONDS", "MAX_LINE_BYTES", "serve_stdio"]

#: The longest line (one JSON-RPC message) read, in bytes; a longer one is answered ``-32700``.
MAX_LINE_BYTES = 8 * 1024 * 1024
#: Seconds the requests in flight at the end of stdin may take to be answered.
DRAIN_SECONDS = 60.0

_log = logging.getLogger(__name__)
# pydantic error types that mean "not JSON text" rather than "JSON, but no JSON-RPC message".
_PARSE_ERROR_TYPES = frozenset({"json_invalid", "json_type", "string_unicode"})
_Item = SessionMessage | types.JSONRPCError


def _error(
    code: int,
    reason: str,
    request_id: Any = None,
) -> types.JSONRPCError:
    title = "Invalid Request"
    if code == types.PARSE_ERROR:
        title = "Parse error"
    message = f"{title}: {outside_text(reason, 300)}"
    error = types.ErrorData(code=code, message=message)
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error)


def _id_member(line: bytes) -> tuple[bool, Any]:
    """Whether `line` is a JSON object with an ``id``; that id if it is one JSON-RPC allows (a
    string or an integer), else None."""
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return False, None
    if not isinstance(value, dict) or "id" not in value:
        return False, None
    found = value["id"]
    if isinstance(found, bool) or not isinstance(found, str | int):
        return True, None
    return True, found


def _parse(line: bytes) -> _Item:
    """The message of one line, or the error that responses it."""
    try:
        message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except pydantic.ValidationError as exc:
        errors = exc.errors(include_url=False, include_input=False)
        where = ".".join(map(str, errors[0]["loc"]))
        first = errors[0]["msg"]
        if where:
            first = f"{where}: {first}"
        if any(error["type"] in _PARSE_ERROR_TYPES for error in errors):
            return _error(types.PARSE_ERROR, first)
        reason = f"not a JSON-RPC 2.0 message: {first}"
        return _error(types.INVALID_REQUEST, reason, _id_member(line)[1])
    if isinstance(message, types.JSONRPCNotification) and _id_member(line)[0]:
        return _error(types.INVALID_REQUEST, "the id must be a string or an integer")
    return SessionMessage(message)


def _read(
    source: BinaryIO,
    limit: int,
    token: anyio.lowlevel.EventLoopToken,
    items: MemoryObjectSendStream[_Item],
) -> None:
    """Read and parse `source` line by line, handing each item to the event loop. Run in a
    daemon thread: a read blocked on a stdin left open must not keep the process from exiting."""
    lines = iter(lambda: source.readline(limit + 1), b"")
    # Ends quietly when the server stopped listening, its loop is gone, or stdin failed.
    with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, RuntimeError, OSError):
        try:
            for number, line in enumerate(lines, 1):
                if len(line) > limit and not line.endswith(b"\n"):
                    while line and not line.endswith(b"\n"):  # skipped, never held whole
                        line = source.readline(limit + 1)
                    item: _Item = _error(types.PARSE_ERROR, f"line longer than {limit:,} bytes")
                elif not line.strip():
                    continue  # a blank line is no request
                else:
                    item = _parse(line.rstrip(b"\r\n"))
                if isinstance(item, types.JSONRPCError):
                    error = item.error
                    _log.warning("stdio line %d rejected: %d %s", number, error.code, error.message)
                anyio.from_thread.run(items.send, item, token=token)
        finally:
            anyio.from_thread.run_sync(items.close, token=token)


async def serve_stdio(
    server: Server[Any],
    stdin: BinaryIO | None = None,
    stdout: anyio.AsyncFile[str] | None = None,
    *,
    max_line_bytes: int = MAX_LINE_BYTES,
    drain_seconds: float = DRAIN_SECONDS,
) -> None:
    """Serve on stdin and stdout, one JSON-RPC message a line, until stdin ends and every request
    read is answered (docs/mcp.md). Every line gets a response: a line too long or not JSON is
    answered ``-32700``.

    Args:
        server: the server from :func:`create_server`.
        stdin: where lines are read from, binary; ``None`` (the default): the process's stdin.
        stdout: where responses are written; ``None`` (the default): the process's stdout.
        max_line_bytes: the longest line read, in bytes; 8 MiB (``MAX_LINE_BYTES``) by
            default.
        drain_seconds: seconds the requests in flight at the end of stdin may take to be
            answered; 60 by default.
    """
    # Our own reader of fd 0, never closed: the reading thread may hold its lock when the
    # interpreter exits, and closing sys.stdin (or this) would then wait for it.
    source = stdin
    if source is None:
        source = open(os.dup(sys.stdin.fileno()), "rb")
    to_server, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, from_server = anyio.create_memory_object_stream[SessionMessage](0)
    items_in, items = anyio.create_memory_object_stream[_Item](0)
    pending: set[types.RequestId] = set()  # requests handed to the server, not yet answered
    ended = anyio.Event()  # stdin ended
    drained = anyio.Event()  # then every request answered

    async def forward(out: Any) -> None:  # the server's messages and our errors, to stdout
        async with from_server, out:
            async for item in from_server:
                await out.send(item)
                if isinstance(item.message, types.JSONRPCResponse | types.JSONRPCError):
                    pending.discard(item.message.id)  # only once the writer has it
                    if ended.is_set() and not pending:
                        drained.set()

    async def pump(answers: MemoryObjectSendStream[SessionMessage]) -> None:
        async with to_server, answers, items:
            async for item in items:
                if isinstance(item, types.JSONRPCError):
                    await answers.send(SessionMessage(item))
                    continue
                if isinstance(item.message, types.JSONRPCRequest):
                    pending.add(item.message.id)
                await to_server.send(item)
            # A client may write its requests and close stdin at once: each is still answered.
            ended.set()
            if pending:
                with anyio.move_on_after(drain_seconds):
                    await drained.wait()

    # The SDK's transport only writes: it is given an empty stdin of its own.
    empty = anyio.wrap_file(io.StringIO())
    async with stdio_server(stdin=empty, stdout=stdout) as (_, out):
        async with anyio.create_task_group() as writers:
            writers.start_soon(forward, out)
            thread_args = (source, max_line_bytes, anyio.lowlevel.current_token(), items_in)
            reader = threading.Thread(target=_read, args=thread_args, name="stdio", daemon=True)
            reader.start()
            async with anyio.create_task_group() as readers:
                readers.start_soon(pump, write_stream.clone())
                try:
                    await server.run(
                        read_stream, write_stream, server.create_initialization_options()
                    )
                finally:
                    readers.cancel_scope.cancel()
                    write_stream.close()  # forward passes on what is left, then ends
