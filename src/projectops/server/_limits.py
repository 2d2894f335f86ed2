"""How the mock server bounds its peers and its stop: :class:`ServerLimits`, each default stated
once here.

Only the core is imported, so ``projectops mock-server --help`` (:mod:`projectops.mock._command`)
shows these defaults without importing uvicorn; :mod:`projectops.mock._app` serves with them and
:mod:`projectops.server._protocol` falls back to the head limit.
"""

from __future__ import annotations

from dataclasses import dataclass

from projectops.commands import DEFAULT_BACKLOG, DEFAULT_DRAIN_TIMEOUT
from projectops.conventions import DEFAULT_REQUEST_TIMEOUT

__all__ = ["ServerLimits"]


@dataclass(frozen=True)
class ServerLimits:
    """How the mock server bounds its peers and its stop (``projectops mock-server --help``
    names each; the class attributes are the defaults of its flags).

    Attributes:
        request_timeout: seconds from the moment a connection waits for a request (it opened,
            or its last answer went out) until the whole request, head and body, has arrived;
            then it is closed (after a 408 when part of a request came).
        max_connections: the most connections open at once; ``None``: the open-file limit
            less a reserve. At the cap the longest-waiting idle or slow connections are closed
            first; when none waits, new ones get a 503.
        timeout_keep_alive: uvicorn's: seconds an idle keep-alive connection is kept.
        limit_concurrency: uvicorn's: at this many connections or running requests, answer 503
            (``None``: no such limit; the connection cap above still holds).
        backlog: uvicorn's: the listening socket's queue of connections not yet accepted.
        h11_max_incomplete_event_size: uvicorn's: the largest request head, in bytes (h11's
            own default); a larger one is answered 431.
        drain_timeout: uvicorn's ``timeout_graceful_shutdown``: whole seconds a stop signal lets the
            requests in flight finish (new connections are refused at once); then they are
            cancelled and the process exits.
    """

    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    max_connections: int | None = None
    timeout_keep_alive: int = 5
    limit_concurrency: int | None = None
    backlog: int = DEFAULT_BACKLOG
    h11_max_incomplete_event_size: int = 16 * 1024
    drain_timeout: int = DEFAULT_DRAIN_TIMEOUT
