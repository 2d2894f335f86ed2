"""uvicorn as the mock server runs it: the config that ties the pieces together, the server that
exits 0 on a stop signal, and the worker supervisor.

uvicorn alone holds slow and idle peers for good, floods its log when accepting past the
open-file limit, and answers malformed HTTP in plain text. The pieces that close that live each
in its own module, at the smallest place it can live:

- :mod:`projectops.server._protocol`: the HTTP protocol (whole-request deadline, ``ErrorResponse``
  answers to malformed HTTP);
- :mod:`projectops.server._listener`: the listening socket (the connection cap);
- :mod:`projectops.server._logs`: the log filters (rate limit, no query strings);
- :mod:`projectops.server._limits`: the defaults of every limit, stated once.

:class:`LimitedConfig` is ``uvicorn.Config`` with the protocol and the log filters, in every
process that serves, worker processes included. A stop signal (SIGTERM, SIGINT) is uvicorn's
graceful stop: the listening sockets close at once (new connections are refused), idle
connections close, requests in flight get up to ``timeout_graceful_shutdown`` seconds to finish,
then they are cancelled. :class:`CleanExitServer` then returns instead of re-raising the signal;
:func:`supervisor`'s parent closes its copy of the listening sockets as it stops the workers.
Production deployments put a reverse proxy in front instead (README).
"""

from __future__ import annotations

import inspect
import logging
import signal
import socket
from types import FrameType
from typing import Any

import uvicorn
from uvicorn.supervisors import Multiprocess

from projectops.conventions import DEFAULT_REQUEST_TIMEOUT
from projectops.server._logs import install_log_filters
from projectops.server._protocol import SheddingH11Protocol

__all__ = ["CleanExitServer", "LimitedConfig", "supervisor"]


class LimitedConfig(uvicorn.Config):
    """``uvicorn.Config`` serving with :class:`~projectops.server._protocol.SheddingH11Protocol`
    and the log filters (:func:`~projectops.server._logs.install_log_filters`).

    Args:
        app, **kwargs: as for ``uvicorn.Config`` (``http`` is set here; ``loop`` defaults to
            ``"asyncio"``).
        request_timeout: seconds from the moment a connection waits for a request until the
            whole request (head and body) has arrived; > 0.

    Raises:
        ValueError: `request_timeout` is not > 0.
    """

    def __init__(
        self, app: Any, *, request_timeout: float = DEFAULT_REQUEST_TIMEOUT, **kwargs: Any
    ) -> None:
        if not request_timeout > 0:
            raise ValueError(f"request_timeout must be > 0, got {request_timeout!r}")
        self.request_timeout = request_timeout
        # loop="asyncio": uvloop accepts connections in C, past GuardedListener.accept.
        kwargs.setdefault("loop", "asyncio")
        super().__init__(app, http=SheddingH11Protocol, **kwargs)

    def configure_logging(self) -> None:
        """uvicorn's logging set-up, then the root handler and the log filters."""
        super().configure_logging()
        logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
        install_log_filters()


class CleanExitServer(uvicorn.Server):
    """uvicorn's server, except that a stop signal is not re-raised after the graceful stop.

    uvicorn re-raises SIGINT/SIGTERM once it has stopped, which would end the process with the
    signal's status (or a KeyboardInterrupt); the mock server exits 0 instead. A second SIGINT
    stops waiting for requests in flight, as in uvicorn.
    """

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.should_exit and sig == signal.SIGINT:
            self.force_exit = True
        else:
            self.should_exit = True


def supervisor(config: uvicorn.Config, sockets: list[socket.socket]) -> Multiprocess:
    """uvicorn's worker supervisor for `config` (``config.workers`` processes) on `sockets`.

    On a stop signal it closes its own copy of `sockets` before it stops the workers, so a new
    connection is refused while they drain, instead of waiting in the backlog until the parent
    exits. Before uvicorn 0.51 the supervisor takes the function each worker runs; later
    versions build each worker's server themselves.
    """
    if "target" in inspect.signature(Multiprocess).parameters:
        server = uvicorn.Server(config)
        return _Supervisor(config, target=server.run, sockets=sockets)  # type: ignore[call-arg]
    return _Supervisor(config, sockets=sockets)


class _Supervisor(Multiprocess):
    def terminate_all(self) -> None:
        for sock in self.sockets:
            sock.close()
        super().terminate_all()
