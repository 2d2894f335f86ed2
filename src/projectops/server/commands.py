"""The server layer's command of the ``projectops`` program: ``mock-server``.

Defining it needs nothing but the core and :mod:`projectops.server._limits` (whose
:class:`ServerLimits` defaults are the flags' defaults); running it imports
:mod:`projectops.server.mock` (uvicorn, Starlette: the ``server`` extra).
"""

from __future__ import annotations

import argparse
from functools import partial
from urllib.parse import urlsplit

from projectops.commands import Command, port, seconds, warn_if_every_interface, whole
from projectops.conventions import DEFAULT_BASE_URL, DEFAULT_REQUEST_TIMEOUT
from projectops.server._limits import ServerLimits

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "DEFAULT_REQUEST_TIMEOUT", "commands"]

#: Where the mock server listens by default: the client's default base URL.
DEFAULT_HOST = urlsplit(DEFAULT_BASE_URL).hostname or "127.0.0.1"
DEFAULT_PORT = urlsplit(DEFAULT_BASE_URL).port or 8787


def commands() -> list[Command]:
    """The server layer's commands: ``mock-server``."""
    return [
        Command(
            "mock-server",
            "run the mock server of the API (every operation, from fixtures)",
            _configure,
            _run,
            extra="server",
            description="Serve every operation of the API from fixtures, for tests and demos. "
            "Stop it with Ctrl-C or SIGTERM: new connections are refused at once and requests "
            "in flight get --drain-timeout seconds to finish.",
        )
    ]


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--host", default=DEFAULT_HOST, help=f"address to listen on (default: {DEFAULT_HOST})"
    )
    parser.add_argument(
        "--port",
        type=partial(port, lowest=0),
        default=DEFAULT_PORT,
        help=f"TCP port, 0 for any free one (default: {DEFAULT_PORT})",
    )
    parser.add_argument(
        "--fixtures",
        metavar="FILE",
        help="JSON fixtures file (format: see `pydoc projectops.server.fixtures`);"
        " default: the embedded demo fixtures (keys demo-key, other-key)",
    )
    parser.add_argument(
        "--no-generate",
        dest="generate",
        action="store_false",
        help="answer an operation a project has no fixtures for with 400 failed_precondition"
        " (default: a generated, schema-valid response, the same for the same request)",
    )
    parser.add_argument(
        "--access-log",
        action="store_true",
        help="log one line per request to stderr (the path, never the query string)",
    )
    parser.add_argument(
        "--workers",
        type=partial(whole, lowest=1),
        default=1,
        metavar="N",
        help="serve with N processes sharing the port (default: 1)",
    )
    limits = parser.add_argument_group(
        "limits on peers",
        "Slow, idle and numerous connections are shed. The last five are uvicorn's settings, "
        "passed on as they are.",
    )
    limits.add_argument(
        "--request-timeout",
        type=partial(seconds, below=86400),
        default=ServerLimits.request_timeout,
        metavar="SECONDS",
        help="close a connection that has not delivered a whole request (head and body) this "
        "long after it started waiting for one; 408 if part of one came "
        f"(default: {ServerLimits.request_timeout:g})",
    )
    limits.add_argument(
        "--max-connections",
        type=partial(whole, lowest=1),
        metavar="N",
        help="most connections open at once; at the cap the longest-waiting idle or slow ones "
        "are closed first, else new ones get 503 (default: the open-file limit less a reserve)",
    )
    limits.add_argument(
        "--timeout-keep-alive",
        type=partial(whole, lowest=1),
        default=ServerLimits.timeout_keep_alive,
        metavar="SECONDS",
        help="close an idle keep-alive connection after this long (default: %(default)s)",
    )
    limits.add_argument(
        "--limit-concurrency",
        type=partial(whole, lowest=1),
        metavar="N",
        help="answer 503 once this many connections or requests are open (default: no limit)",
    )
    limits.add_argument(
        "--backlog",
        type=partial(whole, lowest=1),
        default=ServerLimits.backlog,
        metavar="N",
        help="connections waiting to be accepted (default: %(default)s)",
    )
    limits.add_argument(
        "--h11-max-incomplete-event-size",
        type=partial(whole, lowest=1024),
        default=ServerLimits.h11_max_incomplete_event_size,
        metavar="BYTES",
        help="largest request head; a larger one is answered 431 (default: %(default)s)",
    )
    limits.add_argument(
        "--drain-timeout",
        type=partial(whole, lowest=0),
        default=ServerLimits.drain_timeout,
        metavar="SECONDS",
        help="on SIGTERM or Ctrl-C, refuse new connections and give requests in flight this "
        "long to finish, then cut them and exit (uvicorn's timeout_graceful_shutdown; "
        "default: %(default)s)",
    )


def _run(args: argparse.Namespace) -> int:
    from projectops.server import mock

    warn_if_every_interface(args.host)
    limits = mock.ServerLimits(
        request_timeout=args.request_timeout,
        max_connections=args.max_connections,
        timeout_keep_alive=args.timeout_keep_alive,
        limit_concurrency=args.limit_concurrency,
        backlog=args.backlog,
        h11_max_incomplete_event_size=args.h11_max_incomplete_event_size,
        drain_timeout=args.drain_timeout,
    )
    return mock.serve(
        host=args.host,
        port=args.port,
        fixtures=args.fixtures,
        generate=args.generate,
        access_log=args.access_log,
        limits=limits,
        workers=args.workers,
    )
