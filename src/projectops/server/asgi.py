"""The ASGI server adapter: one Starlette app that serves a service object at the registry's paths.

See :func:`create_app`; the module docstring of :mod:`projectops.server` gives the order of the
checks and the content-type policy.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import math
import threading
import traceback
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import anyio
import anyio.lowlevel
import anyio.to_thread
from google.protobuf.message import Message
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from projectops._text import MAX_TEXT_CHARS, cut, escape_lines, redact_secrets
from projectops.answers import (
    ALLOWED_METHOD,
    BODY_TOO_LARGE,
    INTERNAL_FAILURE,
    MALFORMED_BODY,
    NO_OPERATION,
    NOT_IMPLEMENTED,
    UNAUTHENTICATED,
    WRONG_METHOD,
    ErrorCase,
)
from projectops.codec import error_body, from_json, to_json
from projectops.conventions import API_KEY_HEADER, CONTENT_TYPE, MAX_BODY_BYTES
from projectops.errors import (
    HTTP_STATUS_BY_CODE,
    ApiError,
    DeadlineExceeded,
    FieldViolation,
    Internal,
)
from projectops.registry import Operation, operations
from projectops.server._context import REDACTED, RequestContext
from projectops.server._services import OperationsServiceHandler
from projectops.validation import validate

if TYPE_CHECKING:
    from projectops.telemetry import RpcTelemetry, Telemetry

__all__ = [
    "Authenticate",
    "PreEncoded",
    "ServerCallNext",
    "ServerInterceptor",
    "create_app",
    "logger",
]

#: Where failures of handlers and of `authenticate` are logged, with their traceback (API keys
#: are redacted from the text).
logger = logging.getLogger("projectops.server")

ProjectT = TypeVar("ProjectT")

#: ``authenticate(api_key) -> project | None`` (or an awaitable of it): the project of a key,
#: ``None`` for an unknown one.
Authenticate = Callable[[str], "ProjectT | Awaitable[ProjectT | None] | None"]

#: What a server interceptor awaits to go on: ``await call_next(request, context)`` runs the
#: next interceptor, and after the last the handler; it returns the response message (or the
#: handler's :class:`PreEncoded` answer) and raises an :class:`~projectops.ApiError` for a
#: failed call (a handler's failure other than an ``ApiError`` as
#: :class:`~projectops.errors.Internal`, its generic message; a handler past
#: ``handler_timeout`` as :class:`~projectops.errors.DeadlineExceeded`).
ServerCallNext = Callable[[Message, RequestContext[Any]], Awaitable["Message | PreEncoded"]]


class ServerInterceptor(Protocol):
    """A callable around each rpc served by :func:`create_app` (``interceptors=[...]``).

    ``async def interceptor(request, context, call_next) -> response``: `request` is the
    decoded, validated request message (a ``<Rpc>Request`` of ``context.operation``),
    `context` the :class:`RequestContext` the handler gets, `call_next` a
    :data:`ServerCallNext`. It runs after the key check and decoding and before the response
    is encoded, so it may:

    - refuse the call by raising an :class:`~projectops.ApiError` (``PermissionDenied``
      answers 403, each code with its status of :data:`projectops.HTTP_STATUS_BY_CODE`);
    - time or log the call around ``await call_next(request, context)``;
    - pass another request message of the operation's request type on;
    - return another response message of the operation's response type (or a
      :class:`PreEncoded` answer).

    Any other exception it raises is a 500 ``internal`` answer with a generic message, logged
    with the API key redacted, as a handler's; so is a result of the wrong type.
    """

    async def __call__(
        self, request: Message, context: RequestContext[Any], call_next: ServerCallNext
    ) -> Message | PreEncoded: ...


_POST = ALLOWED_METHOD
_KEY_NAME = API_KEY_HEADER.lower().encode("ascii")
_CONTENT_TYPE_BYTES = CONTENT_TYPE.encode("ascii")
# Longest text of an error body the adapter sends (message, each violation's field and
# description): a handler's or the codec's words may quote a request value.
_MAX_ERROR_TEXT = MAX_TEXT_CHARS
# Bodies larger than this are decoded in a worker thread, so one big request cannot stall the
# event loop for every other client.
_DECODE_OFF_LOOP_BYTES = 64 * 1024
# Threads of the pools of a sync `authenticate` and of body decoding, each its own, apart from
# the handlers' (anyio's default limiter, 40 threads): handlers stuck in every thread of theirs
# must not hold up the key check or the decoding of other requests.
_AUTHENTICATE_THREADS = 40
_DECODE_THREADS = 8


def create_app(
    service: OperationsServiceHandler,
    *,
    authenticate: Callable[[str], Any],
    strict: bool = False,
    handler_timeout: float | None = None,
    interceptors: Sequence[ServerInterceptor] = (),
    telemetry: bool | Telemetry = True,
) -> Starlette:
    """Build the ASGI app that serves `service` at the registry's paths (docs/contract.md §1,
    §2 and §5).

    Args:
        service: an object with one method per rpc, as the generated
            :class:`~projectops.server.OperationsServiceHandler` protocol declares them
            (``def get_release_details(self, request, context) -> GetReleaseDetailsResponse``,
            plain or ``async def``). An rpc it lacks answers 501 ``unimplemented``.
        authenticate: ``authenticate(api_key) -> project | None`` (plain or ``async def``); the
            project reaches the handlers as ``context.project``. It is called with the
            ``Service-Api-Key`` header's value, never with an empty one. It may raise an
            ``ApiError`` (e.g. a custom ``Unauthenticated``) to answer with it.
        strict: reject unknown request fields and unknown enum names (400) instead of ignoring
            them (the default, for forward compatibility).
        handler_timeout: seconds a handler method may take, waiting for a thread included;
            past it the request is answered ``deadline_exceeded`` (status from
            :data:`projectops.HTTP_STATUS_BY_CODE`: 504) and a warning is logged. ``None`` (the
            default): no limit. An ``async def`` handler is cancelled at its next ``await`` (one
            that blocks the event loop cannot be stopped). A plain handler's thread cannot be
            killed: the answer goes out anyway, and the thread keeps its place in the pool until
            the handler returns (its result is dropped), so stuck handlers never grow the pool.
        interceptors: ``async def`` callables ``(request, context, call_next) -> response``
            wrapped around every rpc's handler, the first outermost (:class:`ServerInterceptor`).
            `handler_timeout` bounds the handler only, not the interceptors.
        telemetry: ``True`` (the default): one OpenTelemetry SERVER span per request that
            reaches an operation's path, and a ``rpc.server.duration`` histogram (ms), when
            ``opentelemetry-api`` is installed and a tracer (meter) provider is configured;
            nothing otherwise (see :mod:`projectops.telemetry`). ``False``: never. A
            :class:`~projectops.telemetry.Telemetry`: record to its providers.

    Plain (non-``async``) callables run in worker threads. Handlers share anyio's default
    thread limiter (40 threads per event loop; ``anyio.to_thread.current_default_thread_limiter``
    changes it): past 40 plain handlers at once, the next ones wait for a thread. A plain
    `authenticate` runs on a limiter of its own (40 threads), and large bodies are decoded on
    another, so handlers stuck in every thread hold up neither the key check (a bad key is
    still answered 401) nor requests served by ``async def`` handlers.

    Returns:
        A :class:`starlette.applications.Starlette` app; run it with any ASGI server (uvicorn)
        or mount it in a larger app (paths are matched relative to the mount point). It keeps
        no state between requests, so several workers or processes can serve it.

    Raises:
        ValueError: `handler_timeout` is not a positive number of seconds.
        TypeError: `handler_timeout` is not a number, `interceptors` is not a sequence of
            callables, or `telemetry` is neither a bool nor a ``Telemetry``.
    """
    _check_timeout(handler_timeout)
    chain = _check_interceptors(interceptors)
    recorders = _recorders(telemetry)
    # Limiters belong to one event loop: one per loop the app is served on.
    pools = _Pools()
    routes = [
        Route(
            op.path,
            _Endpoint(
                op,
                service,
                authenticate,
                strict=strict,
                timeout=handler_timeout,
                pools=pools,
                interceptors=chain,
                telemetry=None if recorders is None else recorders(op),
            ),
        )
        for op in operations()
    ]
    app = Starlette(routes=routes, exception_handlers={HTTPException: _http_exception})
    # "/api/mcp/x/" must not become a 307 to "/api/mcp/x": clients do not follow redirects.
    app.router.redirect_slashes = False
    return app


def _check_timeout(timeout: object) -> None:
    if timeout is None:
        return
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise TypeError(f"handler_timeout must be a number of seconds or None, not {timeout!r}")
    if not timeout > 0:  # NaN too
        raise ValueError(f"handler_timeout must be a positive number of seconds, not {timeout}")


def _check_interceptors(interceptors: object) -> tuple[ServerInterceptor, ...]:
    if isinstance(interceptors, str | bytes) or not isinstance(interceptors, Sequence):
        raise TypeError(
            "interceptors must be a sequence of async callables "
            f"(request, context, call_next), not {type(interceptors).__name__}"
        )
    for index, interceptor in enumerate(interceptors):
        if not callable(interceptor):
            raise TypeError(
                f"interceptors[{index}] is a {type(interceptor).__name__}, not a callable "
                "(request, context, call_next) -> response"
            )
    return tuple(interceptors)


def _recorders(telemetry: object) -> Callable[[Operation], RpcTelemetry] | None:
    """How to build each operation's span and histogram, or None when nothing can be recorded
    (turned off, or ``opentelemetry-api`` missing: then no request ever looks at telemetry)."""
    from projectops import telemetry as otel

    if telemetry is False:
        return None
    if telemetry is not True and not isinstance(telemetry, otel.Telemetry):
        raise TypeError(f"telemetry must be True, False or a Telemetry, not {telemetry!r}")
    if not otel.available():
        return None
    given = None if telemetry is True else telemetry
    return lambda op: otel.RpcTelemetry(op, "server", given)


class _Pools:
    """The thread limiters of one app, one set per event loop (a limiter is bound to the loop
    it is used on; the same app may be served on several, e.g. by a test client)."""

    __slots__ = ("_authenticate", "_decode")

    def __init__(self) -> None:
        self._authenticate: anyio.lowlevel.RunVar[anyio.CapacityLimiter] = anyio.lowlevel.RunVar(
            "projectops_authenticate_threads"
        )
        self._decode: anyio.lowlevel.RunVar[anyio.CapacityLimiter] = anyio.lowlevel.RunVar(
            "projectops_decode_threads"
        )

    def authenticate(self) -> anyio.CapacityLimiter:
        return self._get(self._authenticate, _AUTHENTICATE_THREADS)

    def decode(self) -> anyio.CapacityLimiter:
        return self._get(self._decode, _DECODE_THREADS)

    @staticmethod
    def _get(
        var: anyio.lowlevel.RunVar[anyio.CapacityLimiter], threads: int
    ) -> anyio.CapacityLimiter:
        try:
            return var.get()
        except LookupError:
            limiter = anyio.CapacityLimiter(threads)
            var.set(limiter)
            return limiter


async def _http_exception(request: Request, exc: Exception) -> Response:
    """Starlette's own errors (a path that is no operation's) as ErrorResponse bodies."""
    status = exc.status_code if isinstance(exc, HTTPException) else INTERNAL_FAILURE.http_status
    if status == NO_OPERATION.http_status:
        return _answer(
            NO_OPERATION,
            f"no operation at {_quoted(request.url.path)}; operations are served "
            "at /api/mcp/<operation_name>",
        )
    headers = getattr(exc, "headers", None)
    if status == WRONG_METHOD.http_status:
        # A GET-only route (/docs) asked with POST: the operations' own 405, with the route's
        # Allow header instead of theirs.
        allowed = (headers or {}).get("Allow", "GET")
        return _answer(
            WRONG_METHOD, f"{request.method} is not allowed here; use {allowed}", headers
        )
    return _error(ApiError(str(getattr(exc, "detail", "")) or f"HTTP {status}"), status, headers)


class _Refusal(Exception):
    """The adapter refuses the request with one of its own answers (a row of
    :mod:`projectops.answers`), answered by :func:`_answer`: its code, status and headers come
    from the row. Not an ApiError, so no ``except ApiError`` meant for handlers catches it."""

    def __init__(self, case: ErrorCase, message: str) -> None:
        super().__init__(message)
        self.case = case
        self.message = message


def _answer(case: ErrorCase, message: str, headers: Mapping[str, str] | None = None) -> Response:
    """The adapter's answer of `case` (its code, status and headers) saying `message`;
    `headers` replace the case's own."""
    return _error(
        case.error(message), case.http_status, case.headers if headers is None else headers
    )


class _ErrorResponse(Response):
    """An error answer that remembers its code, for the span of the request."""

    error_code: str


def _error(
    error: ApiError, status: int | None = None, headers: Mapping[str, str] | None = None
) -> Response:
    response = _ErrorResponse(
        error_body(_Cut(error) if _too_long(error) else error),
        status_code=status or HTTP_STATUS_BY_CODE[error.code],
        media_type=CONTENT_TYPE,
        headers=headers,
    )
    response.error_code = str(error.code)
    return response


def _implementation(service: object, op: Operation) -> Callable[..., Any] | None:
    """The service's method for `op`, or None when it lacks one (the protocol's own stub,
    inherited by a subclass of the protocol, counts as lacking)."""
    method = getattr(service, op.name, None)
    stub = getattr(OperationsServiceHandler, op.name, None)
    if method is None or getattr(type(service), op.name, None) is stub:
        return None
    return method  # type: ignore[no-any-return]


class PreEncoded:
    """A handler's answer already encoded: the JSON text of a message of the operation's
    response type (e.g. from a cache). The adapter sends `body` as it is, unchecked.

    Attributes:
        body: UTF-8 JSON text of the response message, as :func:`projectops.codec.to_json`
            writes it.
    """

    __slots__ = ("body",)

    def __init__(self, body: bytes) -> None:
        self.body = body


class _Endpoint:
    """The ASGI app behind one operation's path: every method, in the documented order."""

    def __init__(
        self,
        op: Operation,
        service: object,
        authenticate: Callable[[str], Any],
        *,
        strict: bool,
        timeout: float | None,
        pools: _Pools,
        interceptors: tuple[ServerInterceptor, ...] = (),
        telemetry: RpcTelemetry | None = None,
    ) -> None:
        self._op = op
        handler = _implementation(service, op)
        self._handler = None if handler is None else _Callee(handler)
        self._authenticate = _Callee(authenticate, pools.authenticate)
        self._strict = strict
        self._timeout = timeout
        self._pools = pools
        self._interceptors = interceptors
        self._telemetry = telemetry

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        call = None if self._telemetry is None else self._telemetry.start(_Carrier(scope))
        if call is None:
            response = await self._respond(scope, receive)
            await response(scope, receive, send)
            return
        status: int | None = None
        code: str | None = None
        try:
            response = await self._respond(scope, receive)
            status = response.status_code
            code = getattr(response, "error_code", None)
            await response(scope, receive, send)
        except BaseException as exc:
            # Cancelled or stopped before the answer went out: the span still ends.
            code = code or type(exc).__name__
            raise
        finally:
            call.finish(status, code, failed=status is None or status >= 500)

    async def _respond(self, scope: Scope, receive: Receive) -> Response | _Json:
        # Route on the path as sent: "/api/mcp%2fx" decodes to an operation's path, but is not it.
        if b"%" in scope.get("raw_path", b""):
            sent = scope["raw_path"].decode("latin-1")
            return _answer(NO_OPERATION, f"no operation at {_quoted(sent)}")
        method = scope["method"]
        if method != _POST:
            return _answer(
                WRONG_METHOD, f"method {method} is not allowed; every operation is {_POST}"
            )
        # One pass over the headers (ASGI names are lower case) for what the checks need.
        keys: list[str] = []
        declared = b""
        for name, value in scope["headers"]:
            if name == _KEY_NAME:
                keys.append(value.decode("latin-1"))
            elif name == b"content-length":
                declared = value
        api_key = keys[0] if len(keys) == 1 else ""
        try:
            project = await self._project(keys)
            if self._handler is None:
                raise _Refusal(
                    NOT_IMPLEMENTED, f"{self._op.name} is not implemented by this server"
                )
            body = await _read_body(receive, declared)
            if len(body) > _DECODE_OFF_LOOP_BYTES:
                message = await anyio.to_thread.run_sync(
                    self._decode, body, limiter=self._pools.decode()
                )
            else:
                message = self._decode(body)
            context = RequestContext(
                project=project, operation=self._op, headers=_RedactedHeaders(scope["headers"])
            )
            answer = await self._serve(self._handler, message, context, api_key)
        except _Refusal as refusal:
            return _answer(refusal.case, refusal.message)
        except ApiError as exc:  # the codec's, validation's, a handler's or authenticate's
            return _error(exc)
        except ClientDisconnect:
            return _answer(MALFORMED_BODY, "the client disconnected before the body was read")
        return _Json(answer)

    async def _project(self, keys: list[str]) -> Any:
        if len(keys) > 1:  # which one would decide the project is anyone's guess
            raise _Refusal(
                UNAUTHENTICATED, f"more than one {API_KEY_HEADER} header: send exactly one"
            )
        api_key = keys[0] if keys else ""
        if not api_key.strip():
            raise _Refusal(
                UNAUTHENTICATED, f"missing API key: send it in the {API_KEY_HEADER} header"
            )
        try:
            project = await self._authenticate(api_key)
        except ApiError:
            raise
        except BaseException as exc:
            if _must_go_up(exc):
                raise
            _log_failure("authenticate", exc, api_key)
            raise _Refusal(INTERNAL_FAILURE, "internal error while checking the API key") from None
        if project is None:
            raise _Refusal(
                UNAUTHENTICATED, f"the API key in the {API_KEY_HEADER} header is not valid"
            )
        return project

    def _decode(self, body: bytes) -> Message:
        message = from_json(body or b"{}", self._op.request_type, strict=self._strict)
        validate(message)
        return message

    async def _serve(
        self,
        handler: _Callee,
        message: Message,
        context: RequestContext[Any],
        api_key: str,
    ) -> bytes | str:
        """The answer of the interceptors and the handler, as JSON text (encoded here, or as
        the handler encoded it)."""
        name = self._op.name
        if not self._interceptors:
            return self._encoded(await self._call(handler, message, context, api_key), api_key)

        async def innermost(request: Message, context: RequestContext[Any]) -> Message | PreEncoded:
            if request is not message:
                if not isinstance(request, self._op.request_type):
                    failure = TypeError(
                        f"passed a {type(request).__name__} on, not "
                        f"{self._op.request_type.__name__}"
                    )
                    _log_failure(f"an interceptor of {name}", failure, api_key)
                    raise Internal(f"internal error while serving {name}")
                validate(request)  # a replacement is checked as the sent one was
            return await self._call(handler, request, context, api_key)

        call_next: ServerCallNext = innermost
        for interceptor in reversed(self._interceptors):
            call_next = _wrap(interceptor, call_next)
        try:
            response = await call_next(message, context)
        except ApiError:
            raise
        except BaseException as exc:
            if _must_go_up(exc):
                raise
            _log_failure(f"an interceptor of {name}", exc, api_key)
            raise _Refusal(INTERNAL_FAILURE, f"internal error while serving {name}") from None
        return self._encoded(response, api_key, "an interceptor")

    async def _call(
        self,
        handler: _Callee,
        message: Message,
        context: RequestContext[Any],
        api_key: str,
    ) -> Message | PreEncoded:
        """The handler's answer, checked to be the operation's response message (or
        :class:`PreEncoded`); any other failure than an ``ApiError`` is logged and raised as
        :class:`~projectops.errors.Internal`, with a generic message."""
        name = self._op.name
        response: Any = None
        timed_out = False
        try:
            if self._timeout is None:
                response = await handler(message, context)
            else:
                with anyio.move_on_after(self._timeout) as scope:
                    response = await handler.abandoning(message, context)
                timed_out = scope.cancelled_caught
        except ApiError:
            raise
        except BaseException as exc:
            if _must_go_up(exc):
                raise
            _log_failure(f"the handler of {name}", exc, api_key)
            raise Internal(f"internal error while serving {name}") from None
        if timed_out:
            thread = "" if handler.is_async else "; its thread runs on until it returns"
            logger.warning(
                "the handler of %s ran past handler_timeout (%g s)%s", name, self._timeout, thread
            )
            raise DeadlineExceeded(f"{name} did not finish within {self._timeout:g} seconds")
        if not isinstance(response, PreEncoded | self._op.response_type):
            self._wrong_type("the handler", response, api_key)
            raise Internal(f"internal error while serving {name}")
        return response

    def _encoded(self, response: object, api_key: str, source: str = "the handler") -> bytes | str:
        if isinstance(response, PreEncoded):
            return response.body
        if not isinstance(response, self._op.response_type):
            self._wrong_type(source, response, api_key)
            raise _Refusal(INTERNAL_FAILURE, f"internal error while serving {self._op.name}")
        return to_json(response)

    def _wrong_type(self, source: str, response: object, api_key: str) -> None:
        _log_failure(
            f"{source} of {self._op.name}",
            TypeError(f"returned {type(response).__name__}, not {self._op.response_type.__name__}"),
            api_key,
        )


def _wrap(interceptor: ServerInterceptor, call_next: ServerCallNext) -> ServerCallNext:
    async def wrapped(request: Message, context: RequestContext[Any]) -> Message | PreEncoded:
        return await interceptor(request, context, call_next)

    return wrapped


class _Carrier(Mapping[str, str]):
    """The request headers of an ASGI scope as the trace context propagator reads them (by
    lower-case name); decoded only for the names it asks for."""

    __slots__ = ("_raw",)

    def __init__(self, scope: Scope) -> None:
        self._raw: list[tuple[bytes, bytes]] = scope["headers"]

    def __getitem__(self, name: str) -> str:
        wanted = name.lower().encode("latin-1")
        for key, value in self._raw:
            if key == wanted:
                return value.decode("latin-1")
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return iter([key.decode("latin-1") for key, _ in self._raw])

    def __len__(self) -> int:
        return len(self._raw)


def _must_go_up(exc: BaseException) -> bool:
    """Whether `exc` must propagate instead of becoming a 500: the process is told to stop, a
    generator to close, or the request's own task is cancelled (also inside a group)."""
    kinds = (KeyboardInterrupt, SystemExit, GeneratorExit, anyio.get_cancelled_exc_class())
    if isinstance(exc, BaseExceptionGroup):
        return exc.subgroup(kinds) is not None
    return isinstance(exc, kinds)


class _Callee:
    """A plain or ``async def`` callable, called on the loop (async) or in a worker thread
    (plain); which one is decided once, not per request.

    `limiter` gives the thread limiter of a plain callable (anyio's default when None).
    """

    __slots__ = ("_function", "_limiter", "is_async")

    def __init__(
        self,
        function: Callable[..., Any],
        limiter: Callable[[], anyio.CapacityLimiter] | None = None,
    ) -> None:
        self._function = function
        self._limiter = limiter
        self.is_async = inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
            getattr(function, "__call__", None)  # noqa: B004 - callable objects, too
        )

    async def __call__(self, *args: Any) -> Any:
        if self.is_async:
            return await self._function(*args)
        limiter = None if self._limiter is None else self._limiter()
        result = await anyio.to_thread.run_sync(self._function, *args, limiter=limiter)
        if inspect.isawaitable(result):
            result = await result
        return result

    async def abandoning(self, *args: Any) -> Any:
        """As a call, but a plain callable's thread is abandoned when the caller is cancelled
        (it cannot be killed); it holds its token of the default limiter until it returns."""
        if self.is_async:
            return await self._function(*args)
        result = await _abandonable_thread(self._function, args)
        if inspect.isawaitable(result):
            result = await result
        return result


async def _abandonable_thread(function: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    """`function(*args)` in a worker thread, under anyio's default thread limiter; cancelling
    the caller abandons the thread without waiting for it.

    anyio releases an abandoned thread's token at once, so stuck calls would add a thread each
    past the limit. Here the token is taken on the thread's behalf, and whoever is last gives
    it back: the caller when the call ended (or never started), else the abandoned thread once
    `function` returns.
    """
    pool = anyio.to_thread.current_default_thread_limiter()
    borrower = object()
    await pool.acquire_on_behalf_of(borrower)
    call_soon = _loop_caller()
    lock = threading.Lock()
    # queued -> running -> returned, or -> abandoned (before it ran, or while it ran)
    state = ["queued"]

    def give_back_from_thread() -> None:
        try:
            call_soon(lambda: pool.release_on_behalf_of(borrower))
        except RuntimeError:
            pass  # the event loop has ended, and its limiter with it

    def run() -> Any:
        with lock:
            if state[0] == "abandoned":
                return None
            state[0] = "running"
        try:
            return function(*args)
        finally:
            with lock:
                abandoned = state[0] == "abandoned"
                state[0] = "returned"
            if abandoned:
                give_back_from_thread()

    try:
        # The token is already held: the thread itself is not limited a second time.
        return await anyio.to_thread.run_sync(
            run, abandon_on_cancel=True, limiter=anyio.CapacityLimiter(math.inf)
        )
    finally:
        with lock:
            still_running = state[0] == "running"
            state[0] = "abandoned"
        if not still_running:
            pool.release_on_behalf_of(borrower)


def _loop_caller() -> Callable[[Callable[[], object]], object]:
    """A function that schedules a callable on the running event loop from any thread, without
    waiting (asyncio's ``call_soon_threadsafe``, trio's ``TrioToken.run_sync_soon``); it raises
    RuntimeError once the loop is closed.

    Public APIs of both backends: ``anyio.from_thread.run_sync(token=...)`` would do it too, but
    only from anyio 4.11, and it blocks the calling thread until the loop runs the callable.
    """
    try:
        return asyncio.get_running_loop().call_soon_threadsafe
    except RuntimeError:  # not asyncio: anyio's other backend
        import trio  # type: ignore[import-not-found]

        run_sync_soon: Callable[[Callable[[], object]], object]
        run_sync_soon = trio.lowlevel.current_trio_token().run_sync_soon
        return run_sync_soon


class _RedactedHeaders(Mapping[str, str]):
    """The request headers as a handler sees them (:class:`RequestContext`): names in lower case,
    values decoded as Latin-1, the key's value :data:`REDACTED`; decoded on first use only."""

    __slots__ = ("_decoded", "_raw")

    def __init__(self, raw: list[tuple[bytes, bytes]]) -> None:
        self._raw = raw
        self._decoded: dict[str, str] | None = None

    def _headers(self) -> dict[str, str]:
        if self._decoded is None:
            self._decoded = {
                name.decode("latin-1"): REDACTED if name == _KEY_NAME else value.decode("latin-1")
                for name, value in self._raw
            }
        return self._decoded

    def __getitem__(self, name: str) -> str:
        return self._headers()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._headers())

    def __len__(self) -> int:
        return len(self._headers())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._headers()!r})"


class _Json:
    """A 200 answer of an already encoded JSON body, as a plain ASGI app: the one path every
    request that succeeds takes, so its two messages are built here, nothing else."""

    __slots__ = ("_body",)
    status_code = 200

    def __init__(self, body: bytes | str) -> None:
        self._body = body.encode("utf-8") if isinstance(body, str) else body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = [
            (b"content-length", str(len(self._body)).encode("ascii")),
            (b"content-type", _CONTENT_TYPE_BYTES),
        ]
        await send({"type": "http.response.start", "status": self.status_code, "headers": headers})
        await send({"type": "http.response.body", "body": self._body})


async def _read_body(receive: Receive, declared: bytes) -> bytes:
    """The request body, read with a cap of MAX_BODY_BYTES (Content-Length is only a hint).

    Raises:
        _Refusal: BODY_TOO_LARGE, declared or actually larger than the cap.
        ClientDisconnect: the client went away first.
    """
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise _too_large()
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnect()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise _too_large()
        chunks.append(chunk)
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _too_large() -> _Refusal:
    return _Refusal(BODY_TOO_LARGE, f"the request body is larger than {MAX_BODY_BYTES} bytes")


def _quoted(path: str, limit: int = 100) -> str:
    """`path` as a Python literal, cut to `limit` characters: a request value in a message."""
    return repr(path) if len(path) <= limit else f"{path[:limit]!r}... ({len(path)} characters)"


def _too_long(error: ApiError) -> bool:
    texts = [error.message]
    texts += [text for v in error.violations for text in (v.field, v.description)]
    return any(len(text) > _MAX_ERROR_TEXT for text in texts)


class _Cut(ApiError):
    """`error` with its message and each violation's field and description cut to
    ``_MAX_ERROR_TEXT`` characters, the code kept (what an error body may carry)."""

    def __init__(self, error: ApiError) -> None:
        super().__init__(
            cut(error.message, _MAX_ERROR_TEXT),
            [
                FieldViolation(
                    field=cut(v.field, _MAX_ERROR_TEXT),
                    description=cut(v.description, _MAX_ERROR_TEXT),
                )
                for v in error.violations
            ],
        )
        self.code = error.code


def _log_failure(what: str, exc: BaseException, api_key: str) -> None:
    """Log `exc` with its traceback: every form of `api_key` redacted, control characters
    escaped (the text may quote a request)."""
    text = redact_secrets("".join(traceback.format_exception(exc)), [api_key], REDACTED)
    logger.error("%s failed:\n%s", what, escape_lines(text.rstrip()))
