"""The mock server's app (every registry operation from fixtures, through
:func:`projectops.server.create_app`, plus the reference page) and :func:`serve` on uvicorn
(docs/mock.md)."""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Mapping
from functools import partial
from typing import Any, cast

import anyio
from google.protobuf.message import Message
from starlette.applications import Starlette
from starlette.types import ASGIApp, Receive, Scope, Send

from projectops._text import outside_text
from projectops.conventions import DEFAULT_BODY_TIMEOUT
from projectops.mock._matching import MockProject, load_fixtures
from projectops.program.commands import (
    DEFAULT_BACKLOG,
    DEFAULT_DRAIN_TIMEOUT,
    listen,
    listen_url,
    serve_app,
)
from projectops.registry import REGISTRY, Operation, Registry
from projectops.server import OperationsServiceHandler, PreEncoded, RequestContext, create_app
from projectops.server.docs import docs_routes

__all__ = ["app_from_environment", "create_mock_app", "serve"]

# What worker processes serve (``serve(workers=N)``): JSON [fixtures, generate, access_log].
_SETTINGS_ENV = "PROJECTOPS_MOCK_SETTINGS"
_access = logging.getLogger("projectops.mock.access")


class _MockService:
    """Every rpc of the registry answered by :meth:`MockProject.reply`."""

    def __init__(self, registry: Registry) -> None:
        for op in registry.operations():
            setattr(self, op.name, partial(self._respond, op))

    @staticmethod
    async def _respond(
        op: Operation,
        request: Message,
        context: RequestContext[MockProject],
    ) -> PreEncoded:
        reply = context.project.reply(op, request)
        if reply.delay:
            await anyio.sleep(reply.delay)
        if reply.error is not None:
            raise reply.error
        return PreEncoded(reply.body)


def create_mock_app(
    projects: Mapping[str, MockProject],
    *,
    docs: bool = True,
    body_timeout: float | None = DEFAULT_BODY_TIMEOUT,
    registry: Registry = REGISTRY,
) -> Starlette:
    """The mock server's ASGI app: every operation of the registry answered from fixtures.

    Args:
        projects: API key -> project, as :func:`load_fixtures` returns them; a request with
            another key is 401 (docs/contract.md §2.3).
        docs: serve the reference page (``/docs``, ``/openapi.json``) too; ``True`` by default.
        body_timeout: seconds a request body may take to arrive whole, then 408
            (``create_app``'s; ``--body-timeout``); 30 by default.
        registry: the operations served; :data:`projectops.registry.REGISTRY` by default.

    Returns:
        A Starlette app.
    """

    async def authenticate(api_key: str) -> MockProject | None:
        return projects.get(api_key)

    service = cast(OperationsServiceHandler, _MockService(registry))
    app = create_app(
        service,
        authenticate=authenticate,
        body_timeout=body_timeout,
        operations=registry.operations(),
    )
    if docs:
        app.router.routes.extend(docs_routes(registry=registry))
    return app


class _AccessLog:
    """One log line per request: client, method, escaped path (never the query), status."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        status = [0]

        async def sending(message: Any) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self._app(scope, receive, sending)
        finally:
            host, port = scope.get("client") or ("-", 0)
            path = outside_text(scope["path"], 200)
            line = f'"{scope["method"]} {path} HTTP/{scope["http_version"]}"'
            _access.info("%s:%d - %s %d", host, port, line, status[0])


def _app(
    fixtures: str | None,
    generate: bool,
    access_log: bool,
    body_timeout: float,
) -> ASGIApp:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    projects = load_fixtures(fixtures, generate=generate)
    app = create_mock_app(projects, body_timeout=body_timeout)
    if not access_log:
        _access.setLevel(logging.WARNING)
        return app
    _access.setLevel(logging.INFO)
    return _AccessLog(app)


def app_from_environment() -> ASGIApp:
    """The app of a worker process of ``serve(workers=N)``. Raises FixtureError."""
    default = [None, True, False, DEFAULT_BODY_TIMEOUT]
    settings = os.environ.get(_SETTINGS_ENV) or json.dumps(default)
    return _app(*json.loads(settings))


def serve(
    *,
    host: str,
    port: int,
    fixtures: str | None = None,
    generate: bool = True,
    access_log: bool = False,
    workers: int = 1,
    backlog: int = DEFAULT_BACKLOG,
    drain_timeout: int = DEFAULT_DRAIN_TIMEOUT,
    body_timeout: float = DEFAULT_BODY_TIMEOUT,
    **uvicorn_settings: Any,
) -> int:
    """Run the mock server (the ``mock-server`` flags) until SIGINT/SIGTERM; the exit code (0,
    1 if it did not start). `drain_timeout` is uvicorn's ``timeout_graceful_shutdown``,
    `body_timeout` ``create_app``'s, `uvicorn_settings` more ``uvicorn.Config`` arguments.
    Raises FixtureError (before anything listens), CannotListen."""
    # A bad file fails before the bind.
    app: ASGIApp | str = _app(fixtures, generate, access_log, body_timeout)
    sock = listen(host, port, backlog=backlog)
    print(f"projectops mock server listening on {listen_url(sock)}", file=sys.stderr, flush=True)
    if workers > 1:
        path = None
        if fixtures:
            path = os.path.abspath(fixtures)
        os.environ[_SETTINGS_ENV] = json.dumps([path, generate, access_log, body_timeout])
        app = f"{__name__}:{app_from_environment.__name__}"
    # access_log: _AccessLog's instead, without query strings.
    settings = dict(uvicorn_settings, workers=workers, backlog=backlog, access_log=False)
    served = serve_app(app, sock, drain_timeout=drain_timeout, **settings)
    return 0 if served else 1
