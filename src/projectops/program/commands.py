"""The seam the ``projectops`` program is composed through: each layer lists its own
:class:`Command` objects, :mod:`projectops.cli._main` builds one parser from them; plus the
argument types and listening helpers the serving commands share."""

from __future__ import annotations

import argparse
import ipaddress
import math
import socket
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from projectops.conventions import DEFAULT_BODY_TIMEOUT

__all__ = [
    "DEFAULT_BACKLOG",
    "DEFAULT_DRAIN_TIMEOUT",
    "CannotListen",
    "Command",
    "add_body_timeout",
    "add_listening",
    "add_retries",
    "is_loopback",
    "listen",
    "listen_url",
    "serve_app",
    "tcp_port",
    "time_in_seconds",
    "warn_if_every_interface",
    "whole_number",
]


#: Connections a listening socket queues before they are accepted (uvicorn's default too).
DEFAULT_BACKLOG = 2048
#: Seconds requests in flight may take after SIGTERM/SIGINT (uvicorn's timeout_graceful_shutdown).
DEFAULT_DRAIN_TIMEOUT = 10


@dataclass(frozen=True)
class Command:
    """One subcommand of ``projectops``, contributed by a feature (docs/cli.md).

    Attributes:
        name: the command's name on the command line (``mock-server``).
        help: its line in ``projectops --help``.
        configure: adds its arguments to its parser.
        run: runs it with the parsed arguments and returns the exit code (docs/contract.md §5.6);
            it imports its optional dependencies itself, so an ``ImportError`` becomes one line
            naming `extra` and exit 2.
        description: its ``--help`` text; ``""`` (the default): `help`.
        connection: it takes ``--base-url`` and ``--timeout``; ``False`` by default.
        extra: the extra to install for it (``server``); ``""`` (the default): none.
    """

    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    description: str = ""
    connection: bool = False
    extra: str = ""


def whole_number(text: str, *, lowest: int = 1) -> int:
    """argparse ``type`` of a whole number.

    Args:
        text: the argument as given.
        lowest: the least value accepted; 1 by default.

    Returns:
        The number.

    Raises:
        argparse.ArgumentTypeError: not a whole number, or below `lowest`.
    """
    return _whole_in(text, lowest, math.inf, f"a whole number >= {lowest}")


def _whole_in(
    text: str,
    lowest: int,
    highest: float,
    expected: str,
) -> int:
    """`text` as a whole number from `lowest` to `highest` (``math.inf``: no bound), or
    ``argparse.ArgumentTypeError`` saying it should be `expected`."""
    try:
        value = int(text)
    except ValueError:
        value = lowest - 1
    if value < lowest or value > highest:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
    return value


def time_in_seconds(text: str, *, below: float = math.inf) -> float:
    """argparse ``type`` of a duration in seconds.

    Args:
        text: the argument as given (``2.5``).
        below: the value must be less than this; no bound by default.

    Returns:
        The seconds, finite and more than 0.

    Raises:
        argparse.ArgumentTypeError: not a number, not finite, not positive, or not below
            `below`.
    """
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value < below:  # NaN compares False; infinity is never below `below`
        bound = ""
        if below != math.inf:
            bound = f" and less than {below:g}"
        raise argparse.ArgumentTypeError(f"expected seconds, more than 0{bound}, got {text!r}")
    return value


def tcp_port(text: str, *, lowest: int = 1) -> int:
    """argparse ``type`` of a TCP port.

    Args:
        text: the argument as given.
        lowest: the least port accepted; 1 by default, 0 to admit "any free port".

    Returns:
        The port, from `lowest` to 65535.

    Raises:
        argparse.ArgumentTypeError: not a whole number in that range.
    """
    return _whole_in(text, lowest, 65535, f"a TCP port from {lowest} to 65535")


def add_retries(
    parser: argparse.ArgumentParser,
    default: int,
    *,
    top_level: bool = False,
) -> None:
    """Add ``--retries N`` to a parser (docs/contract.md §1.5).

    Args:
        parser: the parser of the program or of one command.
        default: the number of retries when the flag is not given, shown in the help.
        top_level: on the program's parser, the flag defaults to ``None``; on a command's
            (``False``, the default) it has no default at all, so it does not reset a value given
            before the command.
    """
    unset: Any = argparse.SUPPRESS
    if top_level:
        unset = None
    parser.add_argument(
        "--retries",
        metavar="N",
        type=partial(whole_number, lowest=0),
        default=unset,
        help="extra attempts of a read-only or idempotent call that got no answer or 429, 502, "
        f"503, 504, with backoff, within --timeout (default: {default}; 0: none)",
    )


def add_listening(
    parser: argparse.ArgumentParser,
    *,
    host: str,
    default_port: int,
    only_with: str = "",
) -> None:
    """Add ``--host``, ``--port`` (0: any free port) and ``--drain-timeout`` to a serving command.

    Args:
        parser: the command's parser.
        host: the default host (``127.0.0.1``).
        default_port: the default port.
        only_with: a flag (``--http``) the options belong to: then they default to ``None``, port
            0 is refused, and the command refuses them without that flag and applies `host` and
            `default_port` itself. ``""`` (the default): the options stand alone.
    """
    when = ""
    any_port = ", 0 for any free one"
    lowest_port = 0
    if only_with:
        when = f" with {only_with}"
        any_port = ""
        lowest_port = 1
    add = parser.add_argument
    add(
        "--host",
        help=f"address to listen on{when} (default: {host})",
    )
    add(
        "--port",
        type=partial(tcp_port, lowest=lowest_port),
        help=f"TCP port{when}{any_port} (default: {default_port})",
    )
    add(
        "--drain-timeout",
        metavar="SECONDS",
        type=partial(whole_number, lowest=0),
        help="on SIGTERM or Ctrl-C, refuse new connections and give requests in flight this long "
        f"to finish (uvicorn's timeout_graceful_shutdown; default: {DEFAULT_DRAIN_TIMEOUT})",
    )
    if not only_with:  # with it, None (argparse's default): the command applies them
        parser.set_defaults(host=host, port=default_port, drain_timeout=DEFAULT_DRAIN_TIMEOUT)


def add_body_timeout(parser: argparse.ArgumentParser) -> None:
    """Add ``--body-timeout SECONDS`` to a command that serves operations (the mock server, the
    proxy): the whole time a request body may take to arrive, then 408.

    Args:
        parser: the command's parser.
    """
    parser.add_argument(
        "--body-timeout",
        metavar="SECONDS",
        type=time_in_seconds,
        default=DEFAULT_BODY_TIMEOUT,
        help="seconds a request body may take to arrive whole, however slowly it trickles; "
        "then 408 deadline_exceeded and the connection is closed (default: %(default)g)",
    )


class CannotListen(OSError):
    """An address cannot be bound (busy port, not on this host, no permission): one line."""


def listen(
    host: str,
    port: int,
    *,
    backlog: int = DEFAULT_BACKLOG,
) -> socket.socket:
    """Bind a listening TCP socket before the server starts, so a busy port is one line and
    connections wait in the backlog until it serves.

    Args:
        host: the host name or address; the first address it resolves to is bound.
        port: the port; 0: any free one (read it back with :func:`listen_url`).
        backlog: connections queued before they are accepted; :data:`DEFAULT_BACKLOG` by default.

    Returns:
        The socket, inheritable (worker processes share it).

    Raises:
        CannotListen: (an ``OSError``) the address cannot be bound: busy, not on this host, or no
            permission; one line.
    """
    sock: socket.socket | None = None
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Accepted connections inherit it, however the socket is handed to uvicorn.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind(address)
        sock.listen(backlog)
    except OSError as exc:
        if sock is not None:
            sock.close()
        raise CannotListen(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock


def listen_url(sock: socket.socket) -> str:
    """The URL a listening socket serves.

    Args:
        sock: a socket from :func:`listen`.

    Returns:
        ``http://HOST:PORT``, an IPv6 host in brackets (RFC 3986).
    """
    host, bound_port = sock.getsockname()[:2]
    if ":" in host:  # IPv6
        host = f"[{host}]"
    return f"http://{host}:{bound_port}"


def is_loopback(host: str) -> bool:
    """Whether a server on `host` is reachable from this machine only.

    Args:
        host: an address (``127.0.0.1``, ``::1``, ``[::1]``) or ``localhost``.

    Returns:
        ``True`` for ``localhost`` and loopback addresses; ``False`` for any other address or
        name (a name may resolve anywhere).
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def warn_if_every_interface(host: str) -> None:
    """Write one warning line on stderr when a server listens on every interface.

    Args:
        host: the host it listens on; unspecified is ``0.0.0.0``, ``::`` or empty.
    """
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


def serve_app(
    app: Any,
    sock: socket.socket,
    *,
    drain_timeout: int = DEFAULT_DRAIN_TIMEOUT,
    workers: int = 1,
    on_stop: Callable[[], None] | None = None,
    **settings: Any,
) -> bool:
    """Serve an ASGI app with uvicorn on a bound socket until SIGINT or SIGTERM, then stop as
    uvicorn does: the requests in flight finish within `drain_timeout`.

    Args:
        app: the ASGI app; with `workers` > 1, the import string of a factory of it.
        sock: a socket from :func:`listen`; closed after.
        drain_timeout: seconds requests in flight may take after the signal (uvicorn's
            ``timeout_graceful_shutdown``); :data:`DEFAULT_DRAIN_TIMEOUT` by default.
        workers: processes serving; 1 (the default) serves in this one.
        on_stop: called when the stop begins; ``None`` (the default): nothing is.
        settings: more ``uvicorn.Config`` arguments, over these defaults: warnings only, through
            the logging already configured, no lifespan.

    Returns:
        Whether the server started (``False``: uvicorn could not start it, and said why); always
        ``True`` with `workers` > 1.
    """
    # Imported here, not at the top: every command of the program imports this module, and an
    # operation's one call must not pay for an event loop it never starts, nor for signal.
    import asyncio
    import signal

    import uvicorn

    settings = {
        "log_level": "warning",
        "log_config": None,
        "lifespan": "off",
        "timeout_graceful_shutdown": drain_timeout,
        **settings,
    }
    server = uvicorn.Server(uvicorn.Config(app, **settings))

    async def serve() -> None:
        serving = asyncio.ensure_future(server.serve(sockets=[sock]))
        if on_stop is not None:
            while not (server.should_exit or serving.done()):
                await asyncio.wait({serving}, timeout=0.1)
            on_stop()
        await serving

    # SIGTERM raises KeyboardInterrupt as SIGINT does: uvicorn re-raises the signal after its
    # graceful stop, and the caller exits 0.
    main = threading.current_thread() is threading.main_thread()
    previous: Any = None
    if main:
        previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        if workers == 1:
            asyncio.run(serve())
        else:
            uvicorn.run(app, factory=True, workers=workers, fd=sock.fileno(), **settings)
    except KeyboardInterrupt:
        pass
    finally:
        if main:
            signal.signal(signal.SIGTERM, previous)
        sock.close()
    return workers > 1 or bool(server.started)
