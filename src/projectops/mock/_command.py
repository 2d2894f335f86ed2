"""The server layer's command of the ``projectops`` program: ``mock-server``.

Defining it needs nothing but the core and :mod:`projectops.server._limits` (whose
:class:`ServerLimits` defaults are the flags' defaults); running it imports
:mod:`projectops.mock._app` (uvicorn, Starlette: the ``server`` extra).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from functools import partial
from urllib.parse import urlsplit

from projectops.commands import Command, port, seconds, warn_if_every_interface, whole
from projectops.conventions import DEFAULT_BASE_URL, DEFAULT_REQUEST_TIMEOUT
from projectops.server._limits import ServerLimits

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "DEFAULT_REQUEST_TIMEOUT", "commands"]

#: Where the mock server listens by default: the client's default base URL.
DEFAULT_HOST = urlsplit(DEFAULT_BASE_URL).hostname or "127.0.0.1"
DEFAULT_PORT = urlsplit(DEFAULT_BASE_URL).port or 8787


#: The flags of the "limits on peers" group, in --help order: a :class:`ServerLimits` field
#: (the flag is its name in kebab-case, the default its value) -> (parser, metavar, help).
_LIMIT_FLAGS: dict[str, tuple[Callable[[str], object], str, str]] = {
    "request_timeout": (
        partial(seconds, below=86400),
        "SECONDS",
        "close a connection that has not delivered a whole request (head and body) this "
        "long after it started waiting for one; 408 if part of one came "
        f"(default: {ServerLimits.request_timeout:g})",
    ),
    "max_connections": (
        partial(whole, lowest=1),
        "N",
        "most connections open at once; at the cap the longest-waiting idle or slow ones "
        "are closed first, else new ones get 503 (default: the open-file limit less a reserve)",
    ),
    "timeout_keep_alive": (
        partial(whole, lowest=1),
        "SECONDS",
        "close an idle keep-alive connection after this long (default: %(default)s)",
    ),
    "limit_concurrency": (
        partial(whole, lowest=1),
        "N",
        "answer 503 once this many connections or requests are open (default: no limit)",
    ),
    "backlog": (
        partial(whole, lowest=1),
        "N",
        "connections waiting to be accepted (default: %(default)s)",
    ),
    "h11_max_incomplete_event_size": (
        partial(whole, lowest=1024),
        "BYTES",
        "largest request head; a larger one is answered 431 (default: %(default)s)",
    ),
    "drain_timeout": (
        partial(whole, lowest=0),
        "SECONDS",
        "on SIGTERM or Ctrl-C, refuse new connections and give requests in flight this "
        "long to finish, then cut them and exit (uvicorn's timeout_graceful_shutdown; "
        "default: %(default)s)",
    ),
}


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
        help="JSON fixtures file (format: see `pydoc projectops.mock._matching`);"
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
    for name, (convert, metavar, help_text) in _LIMIT_FLAGS.items():
        limits.add_argument(
            "--" + name.replace("_", "-"),
            type=convert,
            default=getattr(ServerLimits, name),
            metavar=metavar,
            help=help_text,
        )


def _run(args: argparse.Namespace) -> int:
    from projectops.mock import _app as mock

    warn_if_every_interface(args.host)
    limits = mock.ServerLimits(**{name: getattr(args, name) for name in _LIMIT_FLAGS})
    return mock.serve(
        host=args.host,
        port=args.port,
        fixtures=args.fixtures,
        generate=args.generate,
        access_log=args.access_log,
        limits=limits,
        workers=args.workers,
    )
