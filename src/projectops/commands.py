"""The seam the ``projectops`` program is composed through: :class:`Command`.

Each layer lists its own commands (``projectops.cli._operations.commands()``,
``projectops.mock._command.commands()``); :mod:`projectops.cli._main`, the layer above both,
builds one parser from them. No registry, no import-time registration.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import math
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DEFAULT_BACKLOG",
    "DEFAULT_DRAIN_TIMEOUT",
    "CannotListen",
    "Command",
    "listen",
    "listen_url",
    "port",
    "seconds",
    "serve_uvicorn",
    "stop_signals_interrupt",
    "warn_if_every_interface",
    "whole",
]


#: Connections a listening socket of ``mock-server`` or ``mcp --http`` queues before they are
#: accepted (the ``backlog`` of :func:`listen`, uvicorn's default too).
DEFAULT_BACKLOG = 2048
#: Whole seconds ``mock-server`` and ``mcp --http`` let requests in flight finish after SIGTERM or
#: SIGINT before cutting them (``--drain-timeout``, uvicorn's ``timeout_graceful_shutdown``).
DEFAULT_DRAIN_TIMEOUT = 10


@dataclass(frozen=True)
class Command:
    """One subcommand of ``projectops``.

    Attributes:
        name: the subcommand, e.g. ``"mock-server"``; unique in the program.
        help: one line for the command listing of ``projectops --help``.
        configure: adds the subcommand's arguments to its parser.
        run: runs the command with the parsed arguments; returns the exit code. It imports the
            optional dependencies it needs itself; an ``ImportError`` is reported as one line
            naming `extra`, exit 2.
        description: the text of ``projectops <name> --help`` (default: `help`).
        connection: whether the command calls the service, so it takes ``--base-url`` and
            ``--timeout`` (after parsing: ``args.base_url``, ``args.timeout``).
        extra: the install extra the command needs (``client``, ``server``, ``mcp``), or ``""``.
    """

    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    description: str = ""
    connection: bool = False
    extra: str = ""


def whole(text: str, *, lowest: int = 1) -> int:
    """A whole number of at least `lowest` from the command line (argparse ``type``).

    Raises:
        argparse.ArgumentTypeError: not a whole number, or less than `lowest`.
    """
    try:
        value = int(text)
    except ValueError:
        value = lowest - 1
    if value < lowest:
        raise argparse.ArgumentTypeError(f"expected a whole number >= {lowest}, got {text!r}")
    return value


def seconds(text: str, *, below: float = math.inf) -> float:
    """A number of seconds, more than 0 and less than `below` (finite), from the command line
    (argparse ``type``).

    Raises:
        argparse.ArgumentTypeError: not a number, not positive, not finite, or not below `below`.
    """
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value < below or value == math.inf:
        bound = "" if below == math.inf else f" and less than {below:g}"
        raise argparse.ArgumentTypeError(f"expected seconds, more than 0{bound}, got {text!r}")
    return value


def port(text: str, *, lowest: int = 1) -> int:
    """A TCP port from the command line (argparse ``type``); `lowest` 0 allows "any free one".

    Raises:
        argparse.ArgumentTypeError: not a whole number from `lowest` to 65535.
    """
    try:
        value = whole(text, lowest=lowest)
    except argparse.ArgumentTypeError:
        value = -1
    if not lowest <= value <= 65535:
        raise argparse.ArgumentTypeError(
            f"expected a TCP port from {lowest} to 65535, got {text!r}"
        )
    return value


class CannotListen(OSError):
    """The address of ``mock-server`` or ``mcp --http`` cannot be bound (busy port, address not
    on this host, no permission). Both commands report it as one line with the same exit code.
    """


def listen(host: str, port: int, *, backlog: int = DEFAULT_BACKLOG) -> socket.socket:
    """A listening TCP socket on `host`:`port` (IPv4 or IPv6, whichever `host` resolves to
    first) with a queue of `backlog` connections (:data:`DEFAULT_BACKLOG`), inheritable so
    that worker processes can share it.

    Binding before the server starts lets a command report a busy port in one line and print
    its URL only once connections are accepted (they wait in the backlog meanwhile).

    Raises:
        CannotListen: the address cannot be resolved or bound; ``str()`` is one line naming it.
    """
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise CannotListen(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family in (socket.AF_INET, socket.AF_INET6):
            # Accepted connections inherit it, however the socket is handed to uvicorn.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind(address)
        sock.listen(backlog)
    except OSError as exc:
        sock.close()
        raise CannotListen(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock


def listen_url(sock: socket.socket) -> str:
    """``http://HOST:PORT`` of a listening socket (an IPv6 host in brackets, RFC 3986)."""
    host, bound_port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{bound_port}"


def warn_if_every_interface(host: str) -> None:
    """Print one warning line to stderr if `host` (a ``--host`` value) is the unspecified
    address (``0.0.0.0``, ``::``), so the server is reachable from other machines."""
    try:
        every = not host or ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return
    if every:
        print(
            f"warning: --host {host or '(empty)'} listens on every network interface: anyone "
            "who can reach this machine can call it; use 127.0.0.1 unless that is intended",
            file=sys.stderr,
            flush=True,
        )


@contextmanager
def stop_signals_interrupt() -> Iterator[None]:
    """While the block runs (on the main thread), SIGTERM raises ``KeyboardInterrupt`` as SIGINT
    does. uvicorn re-raises the stop signal it caught once its graceful stop is over; the caller
    catches the ``KeyboardInterrupt`` and exits 0."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def serve_uvicorn(
    config: Any, sock: socket.socket, *, on_stop: Callable[[], None] | None = None
) -> bool:
    """Serve a ``uvicorn.Config`` on the listening `sock` (from :func:`listen`) until SIGINT or
    SIGTERM, then stop as uvicorn does: `sock` closes at once, requests in flight get
    ``config.timeout_graceful_shutdown`` seconds. `on_stop()` is called when the stop begins.

    Returns:
        Whether the server started (a stop signal then ends it cleanly).
    """
    import uvicorn

    server = uvicorn.Server(config)

    async def serve() -> None:
        serving = asyncio.ensure_future(server.serve(sockets=[sock]))
        if on_stop is not None:
            while not (server.should_exit or serving.done()):
                await asyncio.wait({serving}, timeout=0.1)
            on_stop()
        await serving

    try:
        with stop_signals_interrupt():
            asyncio.run(serve())
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
    return bool(server.started)
