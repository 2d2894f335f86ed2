"""The ASGI app behind one operation's path: the checks of docs/contract.md §2.4, then the
interceptors and the handler."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from google.protobuf.message import Message
from starlette.requests import ClientDisconnect
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from projectops._text import REDACTED
from projectops.codec import OFF_LOOP_BYTES, from_json, to_json
from projectops.conventions import API_KEY_HEADER, DEFAULT_BODY_TIMEOUT, MAX_BODY_BYTES
from projectops.error_cases import (
    ALLOWED_METHOD,
    BODY_TIMED_OUT,
    INTERNAL_FAILURE,
    MALFORMED_BODY,
    NO_OPERATION,
    NOT_IMPLEMENTED,
    UNAUTHENTICATED,
    WRONG_METHOD,
)
from projectops.errors import ApiError, DeadlineExceeded, Internal, InvalidArgument
from projectops.registry import Operation
from projectops.server._context import RequestContext
from projectops.server._interceptors import PreEncoded, ServerCallNext, ServerInterceptor, wrap
from projectops.server._responses import (
    Abort,
    EncodedJSONResponse,
    error_response,
    log_failure,
    logger,
    quoted,
    respond,
    too_large,
)
from projectops.server._services import OperationsServiceHandler
from projectops.server._threads import PooledCallable, Pools, cancelled_from_outside
from projectops.validation import validate_rules

__all__ = ["Endpoint", "read_body"]

T = TypeVar("T")

_KEY_NAME = API_KEY_HEADER.lower().encode("ascii")
#: Bytes of a response (its binary size) above which its rules are checked in a worker thread
#: (``validate_responses``): the engine takes about 10 ms a KiB of small list elements (0.8 s
#: for 3,000, its budget), so a smaller answer stalls the loop a few ms at most.
OFF_LOOP_RULES_BYTES = 1024
#: Seconds the interceptors' bound runs past the handler's, so that the handler's ends first.
_HANDLER_FIRST = 0.05


def _implementation(service: object, op: Operation) -> Callable[..., Any] | None:
    method = getattr(service, op.name, None)
    # The generated base's stub, inherited: unimplemented. An rpc of another registry (a test's
    # schema) has no stub there, and a method set on the instance is its implementation.
    stub = getattr(OperationsServiceHandler, op.name, None)
    if method is None:
        return None
    if stub is not None and getattr(type(service), op.name, None) is stub:
        return None
    return method  # type: ignore[no-any-return]


@dataclass(slots=True)
class _Call:
    """One request's state past the key check, made once by :meth:`Endpoint._respond` and
    passed along to the interceptors' and the handler's runs.

    Attributes:
        api_key: the request's key, redacted from every log line its call writes.
        deadline: the ``anyio.current_time()`` instant `handler_timeout` ends at (``None``: no
            limit); it bounds authenticate, the interceptors and the handler together.
        handler: the operation's handler.
        request: the decoded, validated request message.
        context: the :class:`RequestContext` the first interceptor (or the handler) is given.
        handler_response: what the handler returned, once it has: a response the interceptors
            pass on unchanged is still the handler's, and so is its failure.
    """

    api_key: str
    deadline: float | None
    handler: PooledCallable
    request: Message
    context: RequestContext[Any]
    handler_response: Message | PreEncoded | None = None


class Endpoint:
    """The ASGI app behind one operation's path."""

    def __init__(
        self,
        op: Operation,
        service: object,
        authenticate: Callable[[str], Any],
        *,
        strict: bool,
        timeout: float | None,
        pools: Pools,
        interceptors: tuple[ServerInterceptor, ...],
        max_request_bytes: int,
        body_timeout: float | None,
        validate_responses: bool,
    ) -> None:
        self._op = op
        self._body_timeout = body_timeout
        self._validate_responses = validate_responses
        self._max_request_bytes = max_request_bytes
        handler = _implementation(service, op)
        self._handler = None if handler is None else PooledCallable(handler)
        self._authenticate = PooledCallable(authenticate, pools.authenticate)
        self._strict = strict
        self._timeout = timeout
        self._pools = pools
        self._interceptors = interceptors
        self._handler_what = f"the handler of {op.name}"
        self._interceptor_what = f"an interceptor of {op.name}"
        serving = f"internal error while serving {op.name}"
        self._handler_failed = partial(Internal, serving)
        self._interceptor_failed = partial(Abort, INTERNAL_FAILURE, serving)
        self._authenticate_failed = partial(
            Abort, INTERNAL_FAILURE, "internal error while checking the API key"
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = await self._respond(scope, receive)
        await response(scope, receive, send)

    async def _respond(self, scope: Scope, receive: Receive) -> Response | EncodedJSONResponse:
        # Route on the path as sent: "/api/mcp%2fx" decodes to an operation's path, but is not it.
        if b"%" in scope.get("raw_path", b""):
            sent = scope["raw_path"].decode("latin-1")
            return respond(NO_OPERATION, f"no operation at {quoted(sent)}")
        method = scope["method"]
        if method != ALLOWED_METHOD:
            return respond(
                WRONG_METHOD, f"method {method} is not allowed; every operation is {ALLOWED_METHOD}"
            )
        keys: list[str] = []
        declared = b""
        for name, value in scope["headers"]:
            if name == _KEY_NAME:
                keys.append(value.decode("latin-1"))
            elif name == b"content-length":
                declared = value
        # handler_timeout bounds all the service's code runs for this request together:
        # authenticate, the interceptors and the handler (docs/server.md).
        deadline = None if self._timeout is None else anyio.current_time() + self._timeout
        try:
            project = await self._bounded(deadline, "authenticate", self._project(keys))
            if self._handler is None:
                raise Abort(NOT_IMPLEMENTED, f"{self._op.name} is not implemented by this server")
            try:
                body = await read_body(
                    receive,
                    max_request_bytes=self._max_request_bytes,
                    content_length=declared,
                    timeout=self._body_timeout,
                )
            except DeadlineExceeded as late:  # the client's lateness, not the service's: 408
                raise Abort(BODY_TIMED_OUT, late.message) from None
            if len(body) > OFF_LOOP_BYTES:  # one large body does not stall the event loop
                message = await anyio.to_thread.run_sync(
                    self._decode, body, limiter=self._pools.decode()
                )
            else:
                message = self._decode(body)
            headers = {
                name.decode("latin-1"): REDACTED if name == _KEY_NAME else value.decode("latin-1")
                for name, value in scope["headers"]
            }
            context = RequestContext(project=project, operation=self._op, headers=headers)
            # _project let exactly one key through.
            call = _Call(keys[0], deadline, self._handler, message, context)
            # The handler's own scope (_call) ends at `deadline`, this one _HANDLER_FIRST s later:
            # with both cancelled at once, an interceptor would see a CancelledError where
            # ServerCallNext promises DeadlineExceeded, and the log would blame an interceptor.
            later = deadline and deadline + _HANDLER_FIRST
            encoded = await self._bounded(later, "an interceptor", self._serve(call))
        except Abort as abort:
            return respond(abort.case, abort.message)
        except ApiError as exc:  # the codec's, validation's, a handler's or authenticate's
            return error_response(exc)
        except ClientDisconnect:
            return respond(MALFORMED_BODY, "the client disconnected before the body was read")
        return EncodedJSONResponse(encoded)

    async def _bounded(
        self,
        deadline: float | None,
        where: str,
        work: Awaitable[T],
    ) -> T:
        """`work` awaited until `deadline` (an ``anyio.current_time()`` instant; ``None``: no
        limit); past it, a logged ``DeadlineExceeded`` naming `where` it was."""
        if deadline is None:
            return await work
        with anyio.CancelScope(deadline=deadline):
            return await work
        raise self._past_deadline(where)  # reached only when the scope cancelled `work`

    def _past_deadline(self, where: str, thread: str = "") -> DeadlineExceeded:
        name = self._op.name
        seconds = self._timeout
        logger.warning(
            "serving %s ran past handler_timeout (%g s) in %s%s", name, seconds, where, thread
        )
        return DeadlineExceeded(f"{name} did not finish within {seconds:g} seconds")

    async def _project(self, keys: list[str]) -> Any:
        if len(keys) > 1:  # which one would decide the project is anyone's guess
            raise Abort(UNAUTHENTICATED, f"more than one {API_KEY_HEADER} header: send exactly one")
        api_key = keys[0] if keys else ""
        if not api_key.strip():
            raise Abort(UNAUTHENTICATED, f"missing API key: send it in the {API_KEY_HEADER} header")
        with _error_boundary("authenticate", api_key, self._authenticate_failed):
            try:
                if self._timeout is None:
                    project = await self._authenticate(api_key)
                else:  # a plain one past handler_timeout is left to finish in its thread
                    project = await self._authenticate.abandoning(api_key)
            except LookupError:  # `KEYS[key]`: an unknown key (docs/contract.md §2.3)
                project = None
        if project is None:
            raise Abort(UNAUTHENTICATED, f"the API key in the {API_KEY_HEADER} header is not valid")
        return project

    def _decode(self, body: bytes) -> Message:
        message = from_json(body or b"{}", self._op.request_type, strict=self._strict)
        validate_rules(message)  # REQUIRED and every protovalidate rule (§4.6)
        return message

    async def _serve(self, call: _Call) -> bytes | str:
        async def innermost(
            request: Message,
            context: RequestContext[Any],
        ) -> Message | PreEncoded:
            if request is not call.request:
                if not isinstance(request, self._op.request_type):
                    failure = TypeError(
                        f"passed a {type(request).__name__} on, not "
                        f"{self._op.request_type.__name__}"
                    )
                    log_failure(self._interceptor_what, failure, call.api_key)
                    raise self._handler_failed()
                validate_rules(request)  # a replacement is checked as the sent one was
            return await self._call(call, request, context)

        call_next: ServerCallNext = innermost
        for interceptor in reversed(self._interceptors):
            call_next = wrap(interceptor, call_next)
        with _error_boundary(self._interceptor_what, call.api_key, self._interceptor_failed):
            response = await call_next(call.request, call.context)
        return await self._encoded(call, response)

    async def _call(
        self,
        call: _Call,
        request: Message,
        context: RequestContext[Any],
    ) -> Message | PreEncoded:
        """The handler's response to `request` and `context` (an interceptor may have passed on
        others than `call`'s), kept in `call` too."""
        response: Any = None
        timed_out = False
        with _error_boundary(self._handler_what, call.api_key, self._handler_failed):
            if call.deadline is None:
                response = await call.handler(request, context)
            else:  # interceptors see the handler's time-out as DeadlineExceeded (ServerCallNext)
                with anyio.CancelScope(deadline=call.deadline) as scope:
                    response = await call.handler.abandoning(request, context)
                timed_out = scope.cancelled_caught
        if timed_out:
            thread = "" if call.handler.is_async else "; its thread runs on until it returns"
            raise self._past_deadline("the handler", thread)
        if not isinstance(response, PreEncoded | self._op.response_type):
            self._wrong_type(call, self._handler_what, response)
            raise self._handler_failed()
        call.handler_response = response
        return response

    async def _encoded(self, call: _Call, response: object) -> bytes | str:
        if isinstance(response, PreEncoded):
            return response.body  # encoded by the service: not checked against the rules
        # The handler's response, passed on as it came by any interceptors, is the handler's:
        # a rule it breaks is the handler's failure, not an interceptor's.
        source = self._interceptor_what
        failed: Callable[[], Exception] = self._interceptor_failed
        if response is not None and response is call.handler_response:
            source = self._handler_what
            failed = self._handler_failed
        if not isinstance(response, self._op.response_type):
            self._wrong_type(call, source, response)
            raise failed()
        try:
            # The engine's time grows with the lists (up to its budget, MAX_RULED_ELEMENTS):
            # a large response's rules are checked in the one rules thread, not on the loop
            # others share (they still share the GIL with it).
            if self._validate_responses and response.ByteSize() > OFF_LOOP_RULES_BYTES:
                await anyio.to_thread.run_sync(
                    validate_rules, response, limiter=self._pools.rules()
                )
            elif self._validate_responses:
                validate_rules(response)
        except InvalidArgument as broken:  # the service's own mistake: logged, a generic 500
            log_failure(f"the answer of {source} (its rules)", broken, call.api_key)
            raise failed() from None
        return to_json(response)

    def _wrong_type(self, call: _Call, source: str, response: object) -> None:
        log_failure(
            source,
            TypeError(f"returned {type(response).__name__}, not {self._op.response_type.__name__}"),
            call.api_key,
        )


@contextmanager
def _error_boundary(
    what: str,
    api_key: str,
    failed: Callable[[], Exception],
) -> Iterator[None]:
    """Around the service's code: an ``ApiError`` or a cancellation from outside passes; any
    other exception is logged and ``failed()`` raised instead."""
    try:
        yield
    except BaseException as exc:
        if isinstance(exc, ApiError) or cancelled_from_outside(exc):
            raise
        log_failure(what, exc, api_key)
        raise failed() from None


async def read_body(
    receive: Receive,
    *,
    max_request_bytes: int = MAX_BODY_BYTES,
    content_length: bytes | str | None = None,
    timeout: float | None = DEFAULT_BODY_TIMEOUT,
) -> bytes:
    """Read a request's whole body from the ASGI `receive`, refusing it once it is over the
    limit (docs/contract.md §6, §2.4 step 5) or late, as the app does before decoding.

    Args:
        receive: the ASGI receive callable of the request (``request.receive`` in Starlette).
        max_request_bytes: the largest body accepted, in bytes (default
            :data:`projectops.conventions.MAX_BODY_BYTES`, 1 MiB).
        content_length: the request's ``Content-Length`` header, if any: a declared size over
            the limit is refused before anything is read.
        timeout: seconds the whole body may take to arrive, however it trickles (a byte a
            second resets nothing); :data:`projectops.conventions.DEFAULT_BODY_TIMEOUT` (30) by
            default; ``None``: no limit.

    Returns:
        The body (``b""`` for none).

    Raises:
        projectops.ResourceExhausted: (413) declared or read, the body is over the limit; what
            was read is dropped.
        projectops.DeadlineExceeded: the body was not whole within `timeout`; answer it with
            :data:`projectops.error_cases.BODY_TIMED_OUT` (408, ``Connection: close``: the rest
            of the body is not read).
        starlette.requests.ClientDisconnect: the client went away before the body was whole.
    """
    declared = content_length or b""
    if isinstance(declared, str):  # as bytes: isdigit() is then ASCII only, as int() is
        declared = declared.encode("latin-1")
    # Over 19 digits is over any limit, and int() refuses more than 4,300 (ValueError).
    digits = declared.lstrip(b"0")
    if declared.isdigit():
        if len(digits) > 19 or int(digits or b"0") > max_request_bytes:
            raise too_large(max_request_bytes)
    with anyio.move_on_after(timeout):
        return await _read_chunks(receive, max_request_bytes)
    late = f"the request body did not arrive whole within {timeout:g} seconds"
    raise BODY_TIMED_OUT.error(late)  # reached only when the scope cancelled the read


async def _read_chunks(receive: Receive, max_request_bytes: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnect()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > max_request_bytes:
            raise too_large(max_request_bytes)
        chunks.append(chunk)
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)
