"""The mock server's listening socket: :class:`GuardedListener`, whose ``accept`` keeps the
process's open connections under a cap.

Accepting past the process's open-file limit makes asyncio log a traceback per attempt,
thousands a second. At the cap (``max_connections``, by default the open-file limit less a
reserve: :func:`default_max_connections`) the listener first closes the connections that have
waited longest for their request (idle or slow peers, never one whose handler runs, with a 503
when part of a request came: :func:`~projectops.server._protocol.waiting_peers`); when none
waits, a new connection gets a 503 ``unavailable`` and is closed at once.

Closing it (uvicorn does on a stop signal) refuses new connections at once.
"""

from __future__ import annotations

import resource
import socket
from multiprocessing import reduction
from typing import Any

from projectops.errors import Unavailable
from projectops.server._protocol import error_answer, waiting_peers

__all__ = ["GuardedListener", "default_max_connections"]

# Connections refused (503) in one pass of the accept loop before it yields to other work.
_REFUSE_BURST = 64


def default_max_connections(reserve_fraction: int = 8) -> int:
    """The connection cap for this process: the soft open-file limit less a reserve.

    The reserve (an eighth, at least 16 and at most 256 descriptors) keeps room for the
    listening socket, the event loop, logs and files a request opens.
    """
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft > 1 << 20:
        soft = 1 << 20
    reserve = min(256, max(16, soft // reserve_fraction))
    return max(1, soft - reserve)


class _Tracked(socket.socket):
    """An accepted connection that tells its listener when it is closed (for the count)."""

    _listener: GuardedListener | None = None

    def close(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.open_connections -= 1
        super().close()


class GuardedListener(socket.socket):
    """A listening TCP socket whose ``accept`` keeps open connections under a cap (module
    docstring). Made from a bound, listening socket by :meth:`wrap`; passed to worker
    processes like any socket (it pickles as a duplicate of its descriptor)."""

    max_connections: int = 1
    open_connections: int = 0

    @classmethod
    def wrap(cls, sock: socket.socket, max_connections: int) -> GuardedListener:
        """`sock` (listening; it is detached, do not use it after) as a guarded listener.

        Args:
            sock: a bound, listening stream socket.
            max_connections: the most connections open at once (at least 1).
        """
        listener = cls(sock.family, sock.type, sock.proto, fileno=sock.detach())
        listener.max_connections = max(1, max_connections)
        listener.open_connections = 0
        return listener

    def __reduce__(self) -> Any:
        return _rebuild_listener, (
            reduction.DupFd(self.fileno()),
            self.family,
            self.type,
            self.proto,
            self.max_connections,
        )

    def accept(self) -> tuple[socket.socket, Any]:
        """The next connection, or ``BlockingIOError`` (asyncio's "none waiting") while at the
        cap: then the longest-waiting connections are shed first, and only when none waits is
        the new connection refused with a 503."""
        for _ in range(_REFUSE_BURST):
            if self.open_connections < self.max_connections:
                fd, address = self._accept()  # type: ignore[attr-defined]
                conn = _Tracked(self.family, self.type, self.proto, fileno=fd)
                conn._listener = self
                self.open_connections += 1
                return conn, address
            if waiting_peers(self.getsockname()).shed(max(1, self.max_connections // 16)):
                # Their sockets close on the event loop's next pass; accept again then.
                raise BlockingIOError
            fd, address = self._accept()  # type: ignore[attr-defined]
            _refuse(fd)
        raise BlockingIOError


def _refuse(fd: int) -> None:
    """Answer a connection that cannot be served with a 503 and close it at once."""
    with socket.socket(fileno=fd) as conn:
        conn.setblocking(False)
        try:
            conn.send(
                error_answer(503, Unavailable("the server is at its connection limit; retry"))
            )
            conn.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def _rebuild_listener(
    dup: Any, family: int, kind: int, proto: int, max_connections: int
) -> GuardedListener:
    listener = GuardedListener(family, kind, proto, fileno=dup.detach())
    listener.max_connections = max_connections
    listener.open_connections = 0
    return listener
