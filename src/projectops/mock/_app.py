"""The mock server: ``projectops mock-server``, every operation of the registry from fixtures.

Usage::

    projectops mock-server [--host 127.0.0.1] [--port 8787] [--fixtures FILE] [--access-log]
                           [--workers N] [--request-timeout S] [--max-connections N]
                           [--drain-timeout S] ...

It serves :func:`projectops.server.create_app` with uvicorn on ``--host``/``--port`` (default
``127.0.0.1:8787``, the client's default base URL; ``--port 0`` lets the OS pick one), plus the
API reference: ``GET /openapi.json`` and ``GET /docs`` (:mod:`projectops.server.docs`). Once the
port accepts connections it prints one line to stderr,
``projectops mock server listening on http://HOST:PORT``, and nothing else unless a request
fails inside the server (logged with its traceback), a peer misbehaves (rate-limited warnings)
or ``--access-log`` is given (one line per request: the path, never the query string). SIGINT
(Ctrl-C) and SIGTERM stop it gracefully: new connections are refused at once, requests in
flight get ``--drain-timeout`` seconds to finish (then they are cancelled), and the exit code is
0. A bad fixtures file stops it before it
listens, with exit code 2 and one line on stderr naming the file and the field path; so does an
address it cannot bind (:class:`projectops.commands.CannotListen`, as for ``mcp --http``). A
``--host`` of every interface (``0.0.0.0``, ``::``) is warned about in one line.

Hostile peers are bounded (:class:`ServerLimits`, :mod:`projectops.server._uvicorn` and the
modules it names): a
connection must deliver each whole request within ``--request-timeout`` seconds of starting to
wait for it, connections are capped below the open-file limit by shedding the longest-waiting
ones, and malformed HTTP is answered with an ``ErrorResponse`` and a closed connection.
``--workers N`` serves with N processes sharing the listening socket.

The fixture format, its loading and the matching of requests to answers are
:mod:`projectops.mock._matching` (an answer may be an error, wait a delay first, or match
requests partially; an operation a project lists no answers for gets a generated response
unless ``--no-generate``); without ``--fixtures`` the embedded ``default_fixtures.json``
serves projects ``demo`` (key ``demo-key``) and ``other`` (key ``other-key``). Each answer is
encoded to JSON once, on first use, and served from that cache.
"""

from __future__ import annotations

import copy
import logging
import os
import sys
from collections.abc import Mapping
from functools import partial
from typing import Any, cast

import anyio
import uvicorn
from google.protobuf.message import Message
from starlette.applications import Starlette

from projectops.commands import listen, listen_url
from projectops.mock._matching import MockProject, load_fixtures
from projectops.registry import Operation, operations
from projectops.server._context import RequestContext
from projectops.server._limits import ServerLimits
from projectops.server._listener import GuardedListener, default_max_connections
from projectops.server._services import OperationsServiceHandler
from projectops.server._uvicorn import CleanExitServer, LimitedConfig, supervisor
from projectops.server.asgi import PreEncoded, create_app
from projectops.server.docs import docs_routes

__all__ = [
    "FIXTURES_ENV",
    "GENERATE_ENV",
    "ServerLimits",
    "app_from_environment",
    "create_mock_app",
    "serve",
]

#: The fixtures file of worker processes (``serve(workers=N)``); empty: the default fixtures.
FIXTURES_ENV = "PROJECTOPS_MOCK_FIXTURES"
#: ``0`` in worker processes of ``serve(generate=False)``: no generated answers.
GENERATE_ENV = "PROJECTOPS_MOCK_GENERATE"


class _MockService:
    """Implements every rpc of the registry by :meth:`MockProject.reply` (the handler methods
    are made from the registry, so a new rpc is served without a change here): it waits the
    answer's delay, then answers with its body or raises its error."""

    def __init__(self) -> None:
        for op in operations():
            setattr(self, op.name, partial(self._answer, op))

    @staticmethod
    async def _answer(
        op: Operation, request: Message, context: RequestContext[MockProject]
    ) -> PreEncoded:
        reply = context.project.reply(op, request)
        if reply.delay:
            await anyio.sleep(reply.delay)
        if reply.error is not None:
            raise reply.error
        return PreEncoded(reply.body)


def create_mock_app(projects: Mapping[str, MockProject], *, docs: bool = True) -> Starlette:
    """The mock server's app: every registry operation answered from `projects` (key -> project).

    Requests are checked exactly as :func:`projectops.server.create_app` checks them (the mock is
    built on it); :meth:`MockProject.answer` chooses the answer.

    Args:
        projects: API key -> project, as :func:`~projectops.mock._matching.load_fixtures`
            returns them.
        docs: also serve ``GET /openapi.json`` and ``GET /docs``
            (:func:`projectops.server.docs.docs_routes`; needs ``swagger-ui-py``).
    """

    async def authenticate(api_key: str) -> MockProject | None:
        return projects.get(api_key)

    service = cast(OperationsServiceHandler, _MockService())
    app = create_app(service, authenticate=authenticate)
    if docs:
        app.router.routes.extend(docs_routes())
    return app


def serve(
    *,
    host: str,
    port: int,
    fixtures: str | None = None,
    generate: bool = True,
    access_log: bool = False,
    limits: ServerLimits | None = None,
    workers: int = 1,
) -> int:
    """Run the mock server until SIGINT/SIGTERM (the module docstring); return the exit code.

    Args:
        host, port: the address to listen on (``port`` 0: any free one).
        fixtures: a fixtures file; ``None`` serves the embedded default fixtures.
        generate: answer an operation a project lists no answers for with a generated
            response (``--no-generate``: ``False``, a 400 ``failed_precondition``).
        access_log: log one line per request to stderr (path only, never a query string).
        limits: how slow, idle and numerous peers are bounded, and how long a stop signal
            lets requests in flight finish (:class:`ServerLimits`).
        workers: processes that serve (uvicorn workers sharing the listening socket); each
            builds the app from :func:`app_from_environment` and loads the fixtures itself.

    Returns:
        0 after a stop signal, 1 when the server fails to start.

    Raises:
        FixtureError: the fixtures file is unreadable or invalid (before anything listens).
        projectops.commands.CannotListen: `host`:`port` cannot be bound (one line, exit 2 in
            ``projectops``, as for ``mcp --http``).
    """
    limits = limits or ServerLimits()
    projects = load_fixtures(fixtures, generate=generate)
    sock = listen(host, port, backlog=limits.backlog)
    max_connections = limits.max_connections or default_max_connections()
    listener = GuardedListener.wrap(sock, max_connections)
    app: Any = create_mock_app(projects)
    if workers > 1:
        # Worker processes build their own app from an import string (apps do not pickle).
        os.environ[FIXTURES_ENV] = os.path.abspath(fixtures) if fixtures else ""
        os.environ[GENERATE_ENV] = "1" if generate else "0"
        app = f"{__name__}:{app_from_environment.__name__}"
    config = LimitedConfig(
        app,
        factory=workers > 1,
        workers=workers,
        request_timeout=limits.request_timeout,
        timeout_keep_alive=limits.timeout_keep_alive,
        limit_concurrency=limits.limit_concurrency,
        backlog=limits.backlog,
        h11_max_incomplete_event_size=limits.h11_max_incomplete_event_size,
        timeout_graceful_shutdown=limits.drain_timeout,
        log_level="warning",
        log_config=_log_config(),
        access_log=access_log,
        lifespan="off",
    )
    if access_log:
        logging.getLogger("uvicorn.access").setLevel(logging.INFO)
    # The socket already listens: connections made from now on wait in its backlog.
    print(
        f"projectops mock server listening on {listen_url(listener)}", file=sys.stderr, flush=True
    )
    if workers > 1:
        try:
            supervisor(config, [listener]).run()
        finally:
            listener.close()
        return 0
    server = CleanExitServer(config)
    try:
        server.run(sockets=[listener])
    except KeyboardInterrupt:  # a Ctrl-C before uvicorn took the signal over
        pass
    finally:
        listener.close()
    return 0 if server.started or server.should_exit else 1


def _log_config() -> dict[str, Any]:
    """uvicorn's logging set-up, with the access log on stderr beside every other line
    (uvicorn writes it to stdout)."""
    config = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    config["handlers"]["access"]["stream"] = "ext://sys.stderr"
    return config


def app_from_environment() -> Starlette:
    """The mock app of a worker process: fixtures from ``$PROJECTOPS_MOCK_FIXTURES`` (unset or
    empty: the default fixtures), generated answers unless ``$PROJECTOPS_MOCK_GENERATE`` is
    ``0``. The import-string factory ``serve(workers=N)`` gives uvicorn.

    Raises:
        FixtureError: the fixtures file is unreadable or invalid.
    """
    generate = os.environ.get(GENERATE_ENV) != "0"
    return create_mock_app(load_fixtures(os.environ.get(FIXTURES_ENV) or None, generate=generate))
