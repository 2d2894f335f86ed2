"""The server layer's command of the ``projectops`` program: ``mock-server``.

Defining it needs nothing but the core; running it imports :mod:`projectops.server.mock`
(uvicorn, Starlette: the ``server`` extra).
"""

from __future__ import annotations

import argparse
from functools import partial
from urllib.parse import urlsplit

from projectops.commands import Command, port
from projectops.conventions import DEFAULT_BASE_URL

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "commands"]

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
            "Stop it with Ctrl-C or SIGTERM.",
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
        help=f"TCP port to listen on; 0 picks a free one (default: {DEFAULT_PORT})",
    )
    parser.add_argument(
        "--fixtures",
        metavar="FILE",
        help="JSON fixtures file (format: see `pydoc projectops.server.fixtures`);"
        " default: the embedded demo fixtures (keys demo-key, other-key)",
    )
    parser.add_argument(
        "--access-log", action="store_true", help="log one line per request to stderr"
    )


def _run(args: argparse.Namespace) -> int:
    from projectops.server import mock

    return mock.serve(
        host=args.host, port=args.port, fixtures=args.fixtures, access_log=args.access_log
    )
