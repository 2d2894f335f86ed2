"""The ``proxy`` command of ``projectops``; Starlette, uvicorn and httpx2 are imported when it
runs."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from projectops._text import outside_text
from projectops.client.failures import EXIT_FAILURE, EXIT_OK, UsageError
from projectops.commands import (
    DEFAULT_DRAIN_TIMEOUT,
    Command,
    listen,
    listen_url,
    port,
    serve_uvicorn,
    warn_if_every_interface,
    whole,
)
from projectops.conformance._command import write_file
from projectops.conventions import InvalidBaseUrl, normalize_base_url

if TYPE_CHECKING:
    from projectops.conformance._proxy import Drift, Recording

__all__ = ["DEFAULT_PORT", "MAX_RECORDED_ANSWERS", "MAX_RECORDED_BYTES", "proxy_command"]

#: Beside the mock server's port.
DEFAULT_PORT = 8788
#: Answers a recording keeps at most (``--record-max-answers``).
MAX_RECORDED_ANSWERS = 1000
#: Bytes of JSON a recording keeps at most (``--record-max-bytes``, 16 MiB).
MAX_RECORDED_BYTES = 16 * 1024 * 1024


def proxy_command() -> Command:
    """The ``proxy`` command of ``projectops`` (extras ``client`` and ``server``)."""
    return Command(
        "proxy",
        "a validation proxy: forward calls to a server, report where they drift from the "
        "schema, record the answers as mock fixtures",
        _configure,
        _run,
        description=(
            "Listen on --host/--port and forward every call to --upstream as it came; answer "
            "with exactly what the upstream answered. Each request and answer of an operation "
            "is checked with the conformance checks of one answer: one line per violation on "
            "stderr ('drift: OPERATION request|answer CHECK FIELD: WHAT'), or one JSON object "
            "per line on stdout with --json. With --record FILE, the 200 answers seen are "
            "written on exit as a fixtures file for `projectops mock-server --fixtures FILE`, "
            "the key replaced by a stand-in. Exit 0 after a stop signal, 2 for a usage error."
        ),
        connection=True,
        extra="server",
    )


def _configure(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add(
        "--upstream",
        metavar="URL",
        required=True,
        help="the server to forward to, its root without /api/mcp (never read from "
        "$SERVICE_BACKEND_URL: that may name this proxy)",
    )
    add("--host", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    add(
        "--port",
        type=partial(port, lowest=0),
        default=DEFAULT_PORT,
        help="TCP port, 0 for any free one (default: %(default)s)",
    )
    add("--json", action="store_true", help="write each drift as a JSON object on stdout")
    add("--record", metavar="FILE", help="write the 200 answers seen to FILE on exit")
    add(
        "--record-max-answers",
        metavar="N",
        type=whole,
        default=MAX_RECORDED_ANSWERS,
        help="answers recorded at most; later new ones are left out (default: %(default)s)",
    )
    add(
        "--record-max-bytes",
        metavar="BYTES",
        type=whole,
        default=MAX_RECORDED_BYTES,
        help="bytes of JSON recorded at most (default: %(default)s, 16 MiB)",
    )


def _run(args: argparse.Namespace) -> int:
    import uvicorn

    from projectops.client import AsyncRawClient
    from projectops.conformance._proxy import Recording, create_proxy_app

    if args.base_url is not None:
        raise UsageError("--base-url does nothing for 'proxy': give the server with --upstream")
    try:
        base_url = normalize_base_url(args.upstream)
    except InvalidBaseUrl as exc:
        raise UsageError(f"--upstream: {exc}") from None
    record = args.record
    folder = os.path.dirname(os.path.abspath(record or "."))
    if record is not None and (os.path.isdir(record) or not os.access(folder, os.W_OK)):
        raise UsageError(f"--record {outside_text(record, 200)}: cannot write a file there")
    recording = Recording(max_answers=args.record_max_answers, max_bytes=args.record_max_bytes)
    warn_if_every_interface(args.host)
    sock = listen(args.host, args.port)
    upstream = AsyncRawClient(
        base_url, timeout=args.timeout, max_response_bytes=args.max_response_bytes
    )
    app = create_proxy_app(
        upstream, report=_reporter(args.json), recording=recording if record else None
    )
    print(
        f"projectops proxy listening on {listen_url(sock)}, forwarding to {base_url}",
        file=sys.stderr,
        flush=True,
    )
    config = uvicorn.Config(
        app,
        log_level="warning",
        lifespan="off",
        server_header=False,
        date_header=False,
        timeout_graceful_shutdown=DEFAULT_DRAIN_TIMEOUT,
    )
    started = serve_uvicorn(config, sock)
    if record is not None:
        _write(recording, record)
    return EXIT_OK if started else EXIT_FAILURE


def _reporter(as_json: bool) -> Callable[[Drift], None]:
    def report(drift: Drift) -> None:
        if as_json:
            print(drift.json_line(), flush=True)
        else:
            print(drift.line(), file=sys.stderr, flush=True)

    return report


def _write(recording: Recording, path: str) -> None:
    from projectops.conformance._proxy import STAND_IN_KEY

    write_file("--record", path, recording.write)
    left_out = f"; {recording.left_out} left out" if recording.left_out else ""
    print(
        f"projectops proxy recorded {recording.count} answer{'' if recording.count == 1 else 's'} "
        f"to {outside_text(path, 200)}{left_out}; its "
        f"apiKey is the stand-in {STAND_IN_KEY!r}: set it to the key your tests send",
        file=sys.stderr,
    )
