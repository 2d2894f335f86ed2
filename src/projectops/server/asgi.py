"""The ASGI server adapter: one Starlette app that serves every operation of the registry.

See :func:`create_app`; the module docstring of :mod:`projectops.server` gives the order of the
checks and the content-type policy.
"""

from __future__ import annotations

import inspect
import logging
import traceback
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Generic, Protocol, TypeVar, cast, overload

from google.protobuf.message import Message
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from projectops.codec import from_json, to_json
from projectops.conventions import API_KEY_HEADER, CONTENT_TYPE, MAX_BODY_BYTES, PATH_PREFIX
from projectops.errors import (
    ApiError,
    Internal,
    InvalidArgument,
    NotFound,
    ResourceExhausted,
    Unauthenticated,
    Unimplemented,
)
from projectops.registry import Operation, operations
from projectops.validation import validate

__all__ = ["AsyncAuthenticate", "Authenticate", "Handler", "create_app", "logger"]

#: Where failures of handlers and of `authenticate` are logged, with their traceback (API keys
#: are redacted from the text).
logger = logging.getLogger("projectops.server")

ProjectT = TypeVar("ProjectT")
ProjectT_contra = TypeVar("ProjectT_contra", contravariant=True)


class Handler(Protocol[ProjectT_contra]):
    """Serves one operation: ``handler(project, request) -> response`` (or an awaitable of it).

    `project` is what `authenticate` returned for the caller's key; `request` is the decoded and
    validated request message of the operation (``Operation.request_type``). The handler returns
    the operation's response message (``Operation.response_type``), or raises an
    :class:`~projectops.errors.ApiError` subclass (e.g. ``FailedPrecondition``) to answer with
    that error. Plain functions run in a worker thread; ``async def`` functions on the loop.
    """

    def __call__(self, project: ProjectT_contra, request: Any, /) -> Message | Awaitable[Message]:
        ...


#: ``authenticate(api_key) -> project | None``: the project of a key, ``None`` for an unknown one.
Authenticate = Callable[[str], ProjectT | None]
#: The ``async def`` form of :data:`Authenticate`.
AsyncAuthenticate = Callable[[str], Awaitable[ProjectT | None]]

_POST = "POST"


@overload
def create_app(
    handlers: Mapping[str, Handler[ProjectT]],
    authenticate: Callable[[str], Awaitable[ProjectT | None]],
    *,
    strict: bool = False,
) -> Starlette: ...


@overload
def create_app(
    handlers: Mapping[str, Handler[ProjectT]],
    authenticate: Callable[[str], ProjectT | None],
    *,
    strict: bool = False,
) -> Starlette: ...


def create_app(
    handlers: Mapping[str, Handler[Any]],
    authenticate: Callable[[str], Any],
    *,
    strict: bool = False,
) -> Starlette:
    """Build the ASGI app that serves `handlers` under ``/api/mcp/`` (spec sections 4, 5 and 7).

    Args:
        handlers: operation name (snake_case, e.g. ``"get_release_details"``) -> :class:`Handler`.
            Operations of the registry without a handler answer 404 ``not_found`` like unknown
            names.
        authenticate: ``authenticate(api_key) -> project | None`` (plain or ``async def``); the
            project is passed to the handlers. It is called with the ``Service-Api-Key`` header's
            value, never with an empty one. It may raise an ``ApiError`` (e.g. a custom
            ``Unauthenticated``) to answer with it.
        strict: reject unknown request fields and unknown enum names (400) instead of ignoring
            them (the default, for forward compatibility).

    Returns:
        A :class:`starlette.applications.Starlette` app; run it with any ASGI server (uvicorn)
        or mount it in a larger app (the operation name is taken relative to the mount point).

    Raises:
        ValueError: a key of `handlers` is not an operation name of the registry (the message
            names it and lists the known ones).
    """
    by_name = {op.name: op for op in operations()}
    unknown = [name for name in handlers if name not in by_name]
    if unknown:
        raise ValueError(f"handlers for unknown operations: {', '.join(map(repr, unknown))}; "
                         f"known operations: {', '.join(by_name)}")
    served = {name: (by_name[name], handler) for name, handler in handlers.items()}
    endpoint = _Endpoint(served, authenticate, strict=strict)
    app = Starlette(
        routes=[Route(PATH_PREFIX + "{name:path}", endpoint)],
        exception_handlers={HTTPException: _http_exception},
    )
    # "/api/mcp" must not become a 307 to "/api/mcp/": clients do not follow redirects.
    app.router.redirect_slashes = False
    return app


async def _http_exception(request: Request, exc: Exception) -> Response:
    """Starlette's own errors (a path outside ``/api/mcp/``) as ErrorResponse bodies."""
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    if status == 404:
        return _error(NotFound(f"no such path {request.url.path!r}; operations are served "
                               f"under {PATH_PREFIX}<operation_name>"))
    return _error(ApiError(str(getattr(exc, "detail", "")) or f"HTTP {status}",
                           http_status=status))


def _error(error: ApiError, headers: Mapping[str, str] | None = None) -> Response:
    try:
        body = error.to_json()
    except UnicodeEncodeError:  # a handler's message with a lone surrogate: escape it
        message = error.message.encode("utf-8", "backslashreplace").decode("utf-8")
        body = ApiError(message, error.violations, http_status=error.http_status,
                        code=error.code).to_json()
    return Response(body, status_code=error.http_status, media_type=CONTENT_TYPE,
                    headers=headers)


class _Endpoint(Generic[ProjectT]):
    """The ASGI app behind ``/api/mcp/{name}``: every method and name, in the documented order."""

    def __init__(self, served: Mapping[str, tuple[Operation, Handler[ProjectT]]],
                 authenticate: Callable[[str], Any], *, strict: bool) -> None:
        self._served = served
        self._authenticate = authenticate
        self._strict = strict
        self._known = ", ".join(served) or "none"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        response = await self._respond(request)
        await response(scope, receive, send)

    async def _respond(self, request: Request) -> Response:
        if request.method != _POST:
            return _error(Unimplemented(f"method {request.method} is not allowed; every "
                                        "operation is POST"), {"Allow": _POST})
        api_key = request.headers.get(API_KEY_HEADER, "")
        try:
            project = await self._project(api_key)
            op, handler = self._operation(request.path_params["name"])
            message = self._decode(await _read_body(request), op)
            response = await self._call(handler, project, message, op, api_key)
        except ApiError as exc:
            return _error(exc)
        except ClientDisconnect:
            return _error(InvalidArgument("the client disconnected before the body was read"))
        return Response(to_json(response), media_type=CONTENT_TYPE)

    async def _project(self, api_key: str) -> ProjectT:
        if not api_key.strip():
            raise Unauthenticated(f"missing API key: send it in the {API_KEY_HEADER} header")
        try:
            project = await _maybe_await(self._authenticate, api_key)
        except ApiError:
            raise
        except Exception as exc:
            _log_failure("authenticate", exc, api_key)
            raise Internal("internal error while checking the API key") from None
        if project is None:
            raise Unauthenticated(f"the API key in the {API_KEY_HEADER} header is not valid")
        return cast(ProjectT, project)

    def _operation(self, name: str) -> tuple[Operation, Handler[ProjectT]]:
        found = self._served.get(name)
        if found is None:
            raise NotFound(f"unknown operation {name!r}; known operations: {self._known}")
        return found

    def _decode(self, body: bytes, op: Operation) -> Message:
        message = from_json(body or b"{}", op.request_type, strict=self._strict)
        validate(message)
        return message

    async def _call(self, handler: Handler[ProjectT], project: ProjectT, message: Message,
                    op: Operation, api_key: str) -> Message:
        try:
            response = await _maybe_await(handler, project, message)
        except ApiError:
            raise
        except Exception as exc:
            _log_failure(f"the handler of {op.name}", exc, api_key)
            raise Internal(f"internal error while serving {op.name}") from None
        if not isinstance(response, op.response_type):
            _log_failure(f"the handler of {op.name}", TypeError(
                f"returned {type(response).__name__}, not {op.response_type.__name__}"), api_key)
            raise Internal(f"internal error while serving {op.name}")
        return response


async def _read_body(request: Request) -> bytes:
    """The request body, read with a cap of MAX_BODY_BYTES (Content-Length is only a hint)."""
    too_large = ResourceExhausted(f"the request body is larger than {MAX_BODY_BYTES} bytes")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise too_large
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise too_large
    return bytes(body)


async def _maybe_await(function: Callable[..., Any], *args: Any) -> Any:
    """Call `function`: ``async def`` ones on the loop, plain ones in a worker thread."""
    if inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
            getattr(function, "__call__", None)):  # noqa: B004 - callable objects, too
        return await function(*args)
    result = await run_in_threadpool(function, *args)
    if inspect.isawaitable(result):
        result = await result
    return result


def _log_failure(what: str, exc: BaseException, api_key: str) -> None:
    text = "".join(traceback.format_exception(exc))
    if api_key.strip():
        text = text.replace(api_key, "[redacted]")
    logger.error("%s failed:\n%s", what, text.rstrip())
