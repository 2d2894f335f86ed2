"""The ``projectops mock-server`` command; only running it imports uvicorn and Starlette."""

from __future__ import annotations

import argparse
from functools import partial
from urllib.parse import urlsplit

from projectops.conventions import DEFAULT_BASE_URL
from projectops.program.commands import (
    DEFAULT_BACKLOG,
    Command,
    add_body_timeout,
    add_listening,
    warn_if_every_interface,
    whole_number,
)

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "commands"]

#: Where the mock server listens by default: the client's default base URL.
DEFAULT_HOST = urlsplit(DEFAULT_BASE_URL).hostname or "127.0.0.1"
DEFAULT_PORT = urlsplit(DEFAULT_BASE_URL).port or 8787

# uvicorn's settings passed on as they are (None: uvicorn's own).
_LIMITS = "timeout_keep_alive limit_concurrency backlog h11_max_incomplete_event_size".split()


def commands() -> list[Command]:
    """The commands the mock contributes to ``projectops`` (docs/cli.md).

    Returns:
        The ``mock-server`` command.
    """
    what = "run the mock server of the API (every operation, from fixtures)"
    about = (
        "Serve every operation of the API from fixtures, for tests and demos (docs/mock.md). "
        "A development server: put a reverse proxy in front of anything shared."
    )
    return [Command("mock-server", what, _configure, _run, about, extra="server")]


def _configure(parser: argparse.ArgumentParser) -> None:
    add_listening(parser, host=DEFAULT_HOST, default_port=DEFAULT_PORT)
    parser.add_argument(
        "--fixtures",
        metavar="FILE",
        help="JSON fixtures file (docs/mock.md); default: the embedded demo fixtures "
        "(keys demo-key, other-key)",
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
    add_body_timeout(parser)
    parser.add_argument(
        "--workers",
        type=partial(whole_number, lowest=1),
        default=1,
        metavar="N",
        help="serve with N processes sharing the port (default: 1)",
    )
    group = parser.add_argument_group("uvicorn's limits", "Passed on to uvicorn as they are.")
    add = partial(group.add_argument, type=partial(whole_number, lowest=1))
    keep_alive = "close an idle keep-alive connection after this long (default: uvicorn's)"
    add("--timeout-keep-alive", metavar="SECONDS", help=keep_alive)
    at_most = "answer 503 once this many connections or requests are open (default: no limit)"
    add("--limit-concurrency", metavar="N", help=at_most)
    waiting = "connections waiting to be accepted (default: %(default)s)"
    add("--backlog", metavar="N", default=DEFAULT_BACKLOG, help=waiting)
    head = "largest request head, in bytes (default: uvicorn's)"
    large = partial(whole_number, lowest=1024)
    add("--h11-max-incomplete-event-size", type=large, metavar="BYTES", help=head)


def _run(args: argparse.Namespace) -> int:
    from projectops.mock import _app

    warn_if_every_interface(args.host)
    limits = {}
    for name in _LIMITS:
        value = getattr(args, name)
        if value is not None:
            limits[name] = value
    return _app.serve(
        host=args.host,
        port=args.port,
        fixtures=args.fixtures,
        generate=args.generate,
        access_log=args.access_log,
        workers=args.workers,
        drain_timeout=args.drain_timeout,
        body_timeout=args.body_timeout,
        **limits,
    )
