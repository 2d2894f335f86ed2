"""The ASGI server adapter: :func:`create_app`, one Starlette app serving a service object at
the registry's paths (docs/server.md; the order of its checks: docs/contract.md §2.4)."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar, cast

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.routing import Route

from projectops import registry
from projectops.conventions import DEFAULT_BODY_TIMEOUT, MAX_BODY_BYTES, VALIDATE_RESPONSES_ENV
from projectops.registry import Operation
from projectops.server._endpoint import Endpoint
from projectops.server._interceptors import ServerInterceptor, check_interceptors
from projectops.server._responses import http_exception
from projectops.server._services import OperationsServiceHandler
from projectops.server._threads import Pools

__all__ = ["Authenticate", "create_app"]

ProjectT = TypeVar("ProjectT")

#: ``authenticate(api_key) -> project | None`` (or an awaitable of it).
Authenticate = Callable[[str], "ProjectT | Awaitable[ProjectT | None] | None"]


def create_app(
    service: OperationsServiceHandler,
    *,
    authenticate: Authenticate[Any],
    strict: bool = False,
    handler_timeout: float | None = None,
    interceptors: Sequence[ServerInterceptor] = (),
    operations: Sequence[Operation] | None = None,
    max_request_bytes: int = MAX_BODY_BYTES,
    body_timeout: float | None = DEFAULT_BODY_TIMEOUT,
    validate_responses: bool | None = None,
) -> Starlette:
    """A stateless Starlette app serving `service` at the registry's paths (docs/server.md;
    the order of its checks: docs/contract.md §2.4).

    Args:
        service: an instance of a subclass of the generated :class:`OperationsServiceHandler`;
            a method plain (run in anyio's default thread pool, 40 threads) or ``async def``.
            An rpc it does not override answers 501 ``unimplemented``.
        authenticate: :data:`Authenticate`, ``api_key -> project | None`` (plain, run in a
            thread pool of its own, or ``async def``), never called with an empty key
            (docs/contract.md §2.2); the project it returns is ``context.project`` of the
            handler's call. ``None`` or a ``LookupError`` answers 401 (§2.3), an
            :class:`~projectops.ApiError` itself, any other exception a logged 500.
        strict: unknown request fields and enum names are 400 instead of ignored (§3.4);
            ``False`` by default (§3.3).
        handler_timeout: seconds that `authenticate`, the interceptors and the handler may
            take together for one request, then 504 ``deadline_exceeded``: an ``async def``
            handler is cancelled at its next ``await``; a plain one's thread runs on, keeping its
            place in the pool, until it returns. ``None`` (the default): no limit.
        interceptors: :class:`ServerInterceptor` callables around every rpc's handler, the
            first outermost; none by default.
        operations: the operations to serve; ``None`` (the default): all of
            :func:`projectops.operations`. The paths of the others answer 404.
        max_request_bytes: the largest request body, in bytes; a larger one is 413
            ``resource_exhausted`` (by ``Content-Length`` or by the bytes read, §6); 1 MiB
            (:data:`~projectops.conventions.MAX_BODY_BYTES`) by default.
        body_timeout: seconds a request body may take to arrive whole, however slowly it
            trickles, then 408 ``deadline_exceeded`` and the connection closed (§5.4, §6);
            :data:`~projectops.conventions.DEFAULT_BODY_TIMEOUT` (30) by default; ``None``: no
            limit (leave it to a reverse proxy in front). It is apart from `handler_timeout`:
            a slow client is not the service's lateness.
        validate_responses: check every response of the service (not a ``PreEncoded`` one)
            against the schema's rules (REQUIRED and protovalidate's, docs/contract.md §4.6)
            before sending it; one that breaks a rule is logged and answered 500
            ``internal``. ``None`` (the default): on where the environment variable
            ``PROJECTOPS_VALIDATE_RESPONSES`` is ``1``, which the pytest plugin sets for a
            test session, so a team's own tests find a response that drops an "Always set"
            field; off otherwise (in production it costs the engine's time on every response:
            opt in with ``True``). Requests are always checked: a broken rule is 400
            ``invalid_argument``, one violation per rule.

    Returns:
        An ASGI app (Starlette) answering ``POST`` at each operation's path, to run under any
        ASGI server or mount in a larger app; it keeps no state between requests beyond its
        thread pools, so several workers may serve it.

    Raises:
        ValueError: `handler_timeout`, `body_timeout` or `max_request_bytes` is not positive.
        TypeError: one is not a number, or `interceptors` not a sequence of callables.
    """
    _check_positive("handler_timeout", handler_timeout, float, none=True)
    _check_positive("body_timeout", body_timeout, float, none=True)
    _check_positive("max_request_bytes", max_request_bytes, int)
    chain = check_interceptors(interceptors)
    if validate_responses is None:
        validate_responses = os.environ.get(VALIDATE_RESPONSES_ENV) == "1"
    # The rules' engine is imported now rather than by the first request (0.5-1 s).
    import protovalidate  # noqa: F401

    if operations is None:
        operations = registry.operations()
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
                max_request_bytes=max_request_bytes,
                body_timeout=body_timeout,
                validate_responses=validate_responses,
            ),
        )
        for op in operations
    ]
    app = Starlette(routes=routes, exception_handlers={HTTPException: http_exception})
    # "/api/mcp/x/" must not become a 307 to "/api/mcp/x": clients do not follow redirects.
    app.router.redirect_slashes = False
    return app


def _check_positive(
    name: str,
    value: object,
    kind: type,
    *,
    none: bool = False,
) -> None:
    if value is None and none:
        return
    kinds: tuple[type, ...] = (int,)
    expected = "whole number"
    if kind is float:
        kinds = (int, float)
        expected = "number"
    if isinstance(value, bool) or not isinstance(value, kinds):
        raise TypeError(f"{name} must be a {expected}, not {value!r}")
    if not cast(float, value) > 0:  # NaN too
        raise ValueError(f"{name} must be positive, not {value}")
