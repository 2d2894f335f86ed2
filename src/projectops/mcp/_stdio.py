"""The MCP stdio transport, answering every line: the SDK's ``stdio_server`` with a reader of
our own in front of it.

The SDK's transport drops a line it cannot parse (its server logs the error at debug level and
answers nothing), reads stdin with ``errors="replace"`` (so a line that is not UTF-8 is
quietly changed), and reads a line of any length. JSON-RPC 2.0 (section 5.1) asks for an answer:
``-32700`` (parse error) with ``"id": null`` for a line that is not JSON, and ``-32600``
(invalid request) for JSON that is no JSON-RPC message. So :func:`stdio_server` keeps the SDK's
transport for what it does well, writing stdout (one writer, so answers never interleave) and
claiming fd 1 so stray prints miss the wire, and reads stdin itself:

- each line is read in binary, at most :data:`MAX_LINE_BYTES` long (a longer one is skipped to
  its newline and answered ``-32700``), and parsed by the SDK's own message adapter (pydantic's
  JSON parser), the parser the SDK's transport uses;
- a line that is not UTF-8, not JSON, holds a lone surrogate (raw or as a ``\\ud800`` escape)
  or nests deeper than the parser allows gets ``-32700`` with ``id: null``; JSON that is no
  JSON-RPC message gets ``-32600``, with the request's ``id`` when it has a usable one;
- every such answer is logged as one warning on the ``projectops.client.stdio`` logger
  (stderr), the reason escaped and cut; blank lines are skipped.

Needs the ``mcp`` extra. Nothing of the SDK is copied: its ``stdio_server`` runs as is, given
an empty stdin of its own.
"""

from __future__ import annotations

import io
import json
import logging
import os
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, BinaryIO

import anyio
import anyio.from_thread
import anyio.lowlevel
import mcp_types as types
import pydantic
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.stdio import stdio_server as sdk_stdio_server
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.message import SessionMessage

from projectops._text import outside_text

__all__ = ["DRAIN_SECONDS", "MAX_LINE_BYTES", "stdio_server"]

#: The longest line (one JSON-RPC message) read, in bytes; tool arguments are small.
MAX_LINE_BYTES = 8 * 1024 * 1024
#: Seconds the requests still in flight at the end of stdin may take to be answered (a tool
#: call's own time-out is 30 s by default).
DRAIN_SECONDS = 60.0

_log = logging.getLogger("projectops.client.stdio")

# pydantic error types that mean "not JSON text" rather than "JSON, but no JSON-RPC message".
_PARSE_ERROR_TYPES = frozenset({"json_invalid", "json_type", "string_unicode"})


class _Rejected(Exception):
    """A line that gets an error answer instead of reaching the server."""

    def __init__(self, code: int, message: str, reason: str, request_id: Any = None) -> None:
        super().__init__(reason)
        self.code, self.message, self.reason, self.request_id = code, message, reason, request_id


def _too_long(limit: int) -> _Rejected:
    return _Rejected(
        types.PARSE_ERROR, "Parse error", f"line longer than {limit:,} bytes, not read"
    )


def _request_id(line: bytes) -> Any:
    """The ``id`` of a JSON object line, if it is one JSON-RPC allows (a string or an
    integer); else None."""
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return None
    request_id = value.get("id") if isinstance(value, dict) else None
    if isinstance(request_id, str) or (
        isinstance(request_id, int) and not isinstance(request_id, bool)
    ):
        return request_id
    return None


def _parse_line(line: bytes) -> SessionMessage:
    """The JSON-RPC message of one stdin line (without its newline).

    Raises:
        _Rejected: the line is not UTF-8, not JSON, holds a lone surrogate or nests too deep
            (``-32700``), or is JSON but no JSON-RPC message (``-32600``).
    """
    try:
        message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except pydantic.ValidationError as exc:
        errors = exc.errors(include_url=False, include_input=False)
        first = str(exc)
        if errors:
            where = ".".join(str(part) for part in errors[0]["loc"])
            first = f"{where}: {errors[0]['msg']}" if where else errors[0]["msg"]
        if any(error["type"] in _PARSE_ERROR_TYPES for error in errors):
            raise _Rejected(types.PARSE_ERROR, "Parse error", first) from None
        reason = f"not a JSON-RPC 2.0 message: {first}"
        raise _Rejected(
            types.INVALID_REQUEST, "Invalid Request", reason, _request_id(line)
        ) from None
    return SessionMessage(message)


class _Pending:
    """Ids of the requests handed to the server and not answered yet (JSON-RPC 2.0 section 5:
    every request gets exactly one response)."""

    def __init__(self) -> None:
        self.ids: set[Any] = set()
        self._changed = anyio.Event()

    def add(self, request_id: Any) -> None:
        self.ids.add(request_id)

    def answered(self, request_id: Any) -> None:
        self.ids.discard(request_id)
        self._changed.set()
        self._changed = anyio.Event()

    async def drained(self) -> None:
        """Return once every request is answered."""
        while self.ids:
            await self._changed.wait()


async def _forward(
    answers: MemoryObjectReceiveStream[SessionMessage],
    write_stream: WriteStream[SessionMessage],
    pending: _Pending,
) -> None:
    """The server's messages to the SDK's stdout writer, noting which requests are answered."""
    async with answers, write_stream:
        async for session_message in answers:
            await write_stream.send(session_message)
            message = session_message.message
            if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
                pending.answered(message.id)  # only once the writer has it


def _read_line(source: BinaryIO, limit: int) -> bytes | _Rejected | None:
    """One line of `source` without its newline; a :class:`_Rejected` for a line over
    `limit` bytes (read to its end in pieces, never held); None at the end of input."""
    line = source.readline(limit + 1)
    if not line:
        return None
    if len(line) <= limit or line.endswith(b"\n"):
        return line.rstrip(b"\r\n")
    while line and not line.endswith(b"\n"):  # skip the rest of the long line
        line = source.readline(limit + 1)
    return _too_long(limit)


async def _answer(
    write_stream: WriteStream[SessionMessage], number: int, rejected: _Rejected
) -> None:
    reason = outside_text(rejected.reason, 300)
    _log.warning(
        "stdio line %d rejected: %d %s: %s", number, rejected.code, rejected.message, reason
    )
    error = types.JSONRPCError(
        jsonrpc="2.0",
        id=rejected.request_id,
        error=types.ErrorData(code=rejected.code, message=f"{rejected.message}: {reason}"),
    )
    await write_stream.send(SessionMessage(error))


def _reader(
    source: BinaryIO,
    limit: int,
    token: anyio.lowlevel.EventLoopToken,
    lines: MemoryObjectSendStream[bytes | _Rejected | None],
) -> None:
    """Read `source` in a daemon thread, handing each line to the event loop; None at the end.

    A daemon thread, not one of anyio's workers: a blocked read of a stdin that stays open
    must not keep the process from exiting (Ctrl-C of ``projectops mcp`` in a terminal).
    """
    try:
        while True:
            item = _read_line(source, limit)
            anyio.from_thread.run(lines.send, item, token=token)
            if item is None:
                return
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, RuntimeError, OSError):
        return  # the server stopped listening, its loop is gone, or stdin failed


async def _pump(
    source: BinaryIO,
    limit: int,
    read_writer: WriteStream[SessionMessage | Exception],
    write_stream: WriteStream[SessionMessage],
    pending: _Pending,
    drain_seconds: float,
) -> None:
    """Read `source` line by line until its end: messages to the server, errors answered.

    At the end of input the server's read stream stays open until every request read has
    been answered (at most `drain_seconds`): a client that writes its requests and then
    closes stdin still gets every answer."""
    send, lines = anyio.create_memory_object_stream[bytes | _Rejected | None](0)
    token = anyio.lowlevel.current_token()
    thread = threading.Thread(
        target=_reader, args=(source, limit, token, send), name="stdio reader", daemon=True
    )
    thread.start()
    number = 0
    async with read_writer, lines:
        async for item in lines:
            if item is None:
                with anyio.move_on_after(drain_seconds):
                    await pending.drained()
                return
            number += 1
            if isinstance(item, bytes) and not item.strip():
                continue  # a blank line is no request
            try:
                if isinstance(item, _Rejected):
                    raise item
                message = _parse_line(item)
            except _Rejected as rejected:
                await _answer(write_stream, number, rejected)
            else:
                if isinstance(message.message, types.JSONRPCRequest):
                    pending.add(message.message.id)
                await read_writer.send(message)


@asynccontextmanager
async def stdio_server(
    stdin: BinaryIO | None = None,
    stdout: anyio.AsyncFile[str] | None = None,
    *,
    max_line_bytes: int = MAX_LINE_BYTES,
    drain_seconds: float = DRAIN_SECONDS,
) -> AsyncIterator[tuple[ReadStream[SessionMessage | Exception], WriteStream[SessionMessage]]]:
    """Serve MCP over stdin and stdout: ``async with stdio_server() as (read, write)``, then
    ``await server.run(read, write, ...)``, as with the SDK's ``mcp.server.stdio.stdio_server``.

    Args:
        stdin: the binary stream to read (default: the process's stdin, read through a
            duplicate of its file descriptor).
        stdout: the text stream to write (default: the SDK's, the process's stdout).
        max_line_bytes: the longest line read, in bytes (default :data:`MAX_LINE_BYTES`).
        drain_seconds: at the end of stdin, how long requests still in flight may take to be
            answered before the read stream ends (default :data:`DRAIN_SECONDS`).

    Every line gets an answer: a message goes to the server, anything else is answered with a
    JSON-RPC error and logged (module docstring). The read stream ends when stdin has ended
    and every request read from it has been answered (or `drain_seconds` have passed).
    """
    # A reader of our own on a duplicate of fd 0: the reading thread may still hold its lock
    # when the interpreter exits, and sys.stdin's would then be fatal to close. Never closed
    # here for the same reason (a close waits for that lock); the process ends with it.
    source = stdin if stdin is not None else open(os.dup(sys.stdin.fileno()), "rb")
    # The SDK's transport reads an empty stdin of its own and is left the writing.
    empty = anyio.wrap_file(io.StringIO())
    async with sdk_stdio_server(stdin=empty, stdout=stdout) as (_, write_stream):
        read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        answer_writer, answers = anyio.create_memory_object_stream[SessionMessage](0)
        pending = _Pending()
        async with anyio.create_task_group() as group:
            group.start_soon(_forward, answers, write_stream, pending)
            try:
                async with anyio.create_task_group() as readers:
                    readers.start_soon(
                        _pump,
                        source,
                        max_line_bytes,
                        read_writer,
                        write_stream,
                        pending,
                        drain_seconds,
                    )
                    try:
                        yield read_stream, answer_writer
                    finally:
                        readers.cancel_scope.cancel()
            finally:
                answer_writer.close()  # _forward passes on what is left, then ends
