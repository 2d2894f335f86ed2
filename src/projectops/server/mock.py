"""The mock server: ``projectops mock-server``, every operation of the registry from fixtures.

Usage::

    projectops mock-server [--host 127.0.0.1] [--port 8787] [--fixtures FILE] [--access-log]

It serves :func:`projectops.server.create_app` with uvicorn on ``--host``/``--port`` (default
``127.0.0.1:8787``, the client's default base URL; ``--port 0`` lets the OS pick one). Once the
port accepts connections it prints one line to stderr,
``projectops mock server listening on http://HOST:PORT``, and nothing else unless a request
fails inside the server (logged with its traceback) or ``--access-log`` is given. SIGINT (Ctrl-C)
and SIGTERM stop it; the exit code is then 0. A bad fixtures file stops it before it listens,
with exit code 2 and one line on stderr naming the file and the field path; a port it cannot
bind gives exit code 1.

The fixture format, its loading and the matching of requests to answers are
:mod:`projectops.server.fixtures`; without ``--fixtures`` the embedded ``fixtures/default.json``
serves projects ``demo`` (key ``demo-key``) and ``other`` (key ``other-key``).
"""

from __future__ import annotations

import logging
import signal
import socket
import sys
from collections.abc import Mapping
from functools import partial
from types import FrameType
from typing import cast

import uvicorn
from google.protobuf.message import Message
from starlette.applications import Starlette

from projectops.registry import Operation, operations
from projectops.server._context import RequestContext
from projectops.server._services import OperationsServiceHandler
from projectops.server.asgi import create_app
from projectops.server.fixtures import MockProject, load_fixtures

__all__ = ["create_mock_app", "serve"]


class _MockService:
    """Implements every rpc of the registry by :meth:`MockProject.answer` (the handler methods
    are made from the registry, so a new rpc is served without a change here)."""

    def __init__(self) -> None:
        for op in operations():
            setattr(self, op.name, partial(self._answer, op))

    @staticmethod
    async def _answer(
        op: Operation, request: Message, context: RequestContext[MockProject]
    ) -> Message:
        return context.project.answer(op, request)


def create_mock_app(projects: Mapping[str, MockProject]) -> Starlette:
    """The mock server's app: every registry operation answered from `projects` (key -> project).

    Requests are checked exactly as :func:`projectops.server.create_app` checks them (the mock is
    built on it); :meth:`MockProject.answer` chooses the answer.
    """

    async def authenticate(api_key: str) -> MockProject | None:
        return projects.get(api_key)

    service = cast(OperationsServiceHandler, _MockService())
    return create_app(service, authenticate=authenticate)


class _Server(uvicorn.Server):
    """uvicorn's server, except that a stop signal is not re-raised after the clean shutdown.

    uvicorn re-raises SIGINT/SIGTERM once it has stopped, which would end the process with the
    signal's status (or a KeyboardInterrupt); the mock server exits 0 instead.
    """

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.should_exit and sig == signal.SIGINT:
            self.force_exit = True  # a second Ctrl-C: stop waiting for open connections
        else:
            self.should_exit = True


def _listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (IPv4 or IPv6, whichever the host resolves to)."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def _url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def serve(*, host: str, port: int, fixtures: str | None = None, access_log: bool = False) -> int:
    """Run the mock server until SIGINT/SIGTERM (the module docstring); return the exit code.

    Args:
        host, port: the address to listen on (``port`` 0: any free one).
        fixtures: a fixtures file; ``None`` serves the embedded default fixtures.
        access_log: log one line per request to stderr.

    Returns:
        0 after a stop signal, 1 when the address cannot be bound or the server fails to start.

    Raises:
        FixtureError: the fixtures file is unreadable or invalid (before anything listens).
    """
    projects = load_fixtures(fixtures)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        sock = _listen(host, port)
    except OSError as exc:
        print(f"error: cannot listen on {host}:{port}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    config = uvicorn.Config(
        create_mock_app(projects), log_level="warning", access_log=access_log, lifespan="off"
    )
    if access_log:
        logging.getLogger("uvicorn.access").setLevel(logging.INFO)
    server = _Server(config)
    # The socket already listens: connections made from now on wait in its backlog.
    print(f"projectops mock server listening on {_url(sock)}", file=sys.stderr, flush=True)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # a Ctrl-C before uvicorn took the signal over
        pass
    finally:
        sock.close()
    return 0 if server.started or server.should_exit else 1
