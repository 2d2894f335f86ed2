"""The ASGI server adapter: one Starlette app that serves a service object at the registry's paths.

See :func:`create_app`; the module docstring of :mod:`projectops.server` gives the order of the
checks and the content-type policy. Its parts, a module each below this one:
:mod:`~projectops.server._endpoint` (one operation's request pipeline),
:mod:`~projectops.server._interceptors` (the interceptor chain and :class:`PreEncoded`),
:mod:`~projectops.server._threads` (thread pools, the abandonable handler thread) and
:mod:`~projectops.server._replies` (the adapter's own answers and the failure log).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.routing import Route

from projectops.registry import Operation
from projectops.registry import operations as registry_operations
from projectops.server._endpoint import Endpoint
from projectops.server._interceptors import (
    PreEncoded,
    ServerCallNext,
    ServerInterceptor,
    check_interceptors,
)
from projectops.server._replies import http_exception, logger
from projectops.server._services import OperationsServiceHandler
from projectops.server._threads import Pools

__all__ = [
    "Authenticate",
    "PreEncoded",
    "ServerCallNext",
    "ServerInterceptor",
    "create_app",
    "logger",
]

ProjectT = TypeVar("ProjectT")

#: ``authenticate(api_key) -> project | None`` (or an awaitable of it): the project of a key,
#: ``None`` for an unknown one.
Authenticate = Callable[[str], "ProjectT | Awaitable[ProjectT | None] | None"]


def create_app(
    service: OperationsServiceHandler,
    *,
    authenticate: Callable[[str], Any],
    strict: bool = False,
    handler_timeout: float | None = None,
    interceptors: Sequence[ServerInterceptor] = (),
    operations: Sequence[Operation] | None = None,
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
            ``ApiError`` (e.g. a custom ``Unauthenticated``) to answer with it; a
            ``LookupError`` (``KEYS[key]`` of a key table) counts as an unknown key (401), any
            other exception is a logged 500 ``internal``.
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
            `handler_timeout` bounds the handler only, not the interceptors. Tracing:
            :class:`projectops.telemetry.ServerTelemetry` first.
        operations: the operations to serve (default: every operation of the registry,
            :func:`projectops.operations`); e.g. those of a schema built in a test, from
            :func:`projectops.registry.operation_of` of its rpcs.

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
        TypeError: `handler_timeout` is not a number, or `interceptors` is not a sequence of
            callables.
    """
    _check_timeout(handler_timeout)
    chain = check_interceptors(interceptors)
    # Limiters belong to one event loop: one per loop the app is served on.
    pools = Pools()
    routes = [
        Route(
            op.path,
            Endpoint(
                op,
                service,
                authenticate,
                strict=strict,
                timeout=handler_timeout,
                pools=pools,
                interceptors=chain,
            ),
        )
        for op in (registry_operations() if operations is None else operations)
    ]
    app = Starlette(routes=routes, exception_handlers={HTTPException: http_exception})
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

