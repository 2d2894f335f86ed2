"""The ``conformance`` and ``proxy`` commands of ``projectops``; the checks, Starlette, uvicorn
and httpx2 are imported when one runs."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from projectops._text import outside_text
from projectops.conformance._report import (
    DEFAULT_DEADLINE,
    MAX_CALLS,
    MAX_JUDGED_BYTES,
    MAX_REQUESTS,
    junit_xml,
    write_report,
)
from projectops.conventions import (
    API_KEY_ENV,
    BASE_URL_ENV,
    MAX_BODY_BYTES,
    InvalidBaseUrl,
    normalize_base_url,
    shown_url,
)
from projectops.program.commands import (
    Command,
    add_body_timeout,
    add_listening,
    listen,
    listen_url,
    serve_app,
    time_in_seconds,
    warn_if_every_interface,
    whole_number,
)
from projectops.program.failures import EXIT_CONFORMANCE_FAILED, EXIT_FAILURE, EXIT_OK, UsageError

if TYPE_CHECKING:
    import httpx2

    from projectops.fixtures import FixtureProject

__all__ = [
    "DEFAULT_PORT",
    "MAX_RECORDED_BYTES",
    "MAX_RECORDED_RESPONSES",
    "command",
    "proxy_command",
]

#: The proxy's, beside the mock server's.
DEFAULT_PORT = 8788
#: Answers a recording keeps at most (``--record-max-responses``).
MAX_RECORDED_RESPONSES = 1000
#: Bytes of JSON a recording keeps at most (``--record-max-bytes``, 16 MiB).
MAX_RECORDED_BYTES = 16 * 1024 * 1024


def command() -> Command:
    """The ``conformance`` command of ``projectops`` (extra ``client``; docs/conformance.md).

    Returns:
        The command, for :func:`projectops.cli.build_parser`.
    """
    what = "run the API contract's checks against a server and report each"
    about = (
        "Run the checks of the API contract (docs/contract.md) against the server at "
        f"--base-url (or ${BASE_URL_ENV}) with the key in ${API_KEY_ENV}. One line per check "
        "and operation; an operation answered 501 is reported unimplemented. Exit 0 when no "
        f"'must' check failed, {EXIT_CONFORMANCE_FAILED} when one did or --deadline stopped "
        f"the run, 2 for a usage error. At most {MAX_REQUESTS} requests, each within "
        "--timeout, all within --deadline."
    )
    return Command("conformance", what, _configure, _run, about, connection=True, extra="client")


def _configure(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add(
        "--json",
        action="store_true",
        help='write a JSON report instead: {"passed", "failed", "skipped", "stopped" (by '
        '--deadline), "unimplemented", "checks": [{"id", "operation", "level", "status", '
        '"detail"}]}',
    )
    add(
        "--fixtures",
        metavar="FILE",
        help="a mock fixtures file: the answers of the project whose apiKey is the key in use "
        "are requests known to succeed, each to be answered with its response",
    )
    add("--operation", metavar="NAME", action="append", help="check only it (repeatable)")
    add("--junit-xml", metavar="FILE", help="also write the report to FILE as JUnit XML")
    add(
        "--deadline",
        metavar="SECONDS",
        type=time_in_seconds,
        default=DEFAULT_DEADLINE,
        help="seconds the whole run may take (default: %(default)g); past it the checks not "
        f"run are skipped and the exit code is {EXIT_CONFORMANCE_FAILED} (judging an answer "
        "may end one --timeout later)",
    )
    judged = "the largest answer judged; the checks of a larger one are skipped, saying so"
    _limit(parser, "--max-judged-bytes", MAX_JUDGED_BYTES, f"{judged} (8 MiB)")


def _fixture_project(path: str, key: str) -> FixtureProject:
    from projectops.fixtures import FixtureError, decode_fixtures, read_fixtures_file

    shown = outside_text(path, 200)
    try:
        projects = decode_fixtures(read_fixtures_file(path))
    except FixtureError as exc:
        raise UsageError(f"--fixtures {shown}: {outside_text(str(exc), 500)}") from None
    for project in projects:
        if project.api_key == key:
            return project
    raise UsageError(
        f"--fixtures {shown}: no project has the key in use ({API_KEY_ENV}) as its apiKey"
    )


def _run(args: argparse.Namespace, transport: httpx2.BaseTransport | None = None) -> int:
    from projectops.client import usable_api_key

    configured = os.environ.get(API_KEY_ENV)
    key = usable_api_key(None if configured is None else configured.strip())
    _writable("--junit-xml", args.junit_xml)  # before the run, not after its requests
    project = None if args.fixtures is None else _fixture_project(args.fixtures, key)
    # No default: checking the bundled mock server by accident would prove nothing.
    base_url = args.base_url or os.environ.get(BASE_URL_ENV)
    if not base_url:
        raise UsageError(f"no server to check: give --base-url URL or set {BASE_URL_ENV}")
    from projectops.conformance._runner import run_checks
    from projectops.registry import UnknownOperationError, operation

    try:
        ops = None if args.operation is None else [operation(name) for name in args.operation]
    except UnknownOperationError as exc:
        raise UsageError(f"--operation: {outside_text(str(exc), 500)}") from None
    report = run_checks(
        base_url,
        key,
        project=project,
        transport=transport,
        deadline=args.deadline,
        operations=ops,
        timeout=args.timeout,
        max_response_bytes=args.max_response_bytes,
        max_judged_bytes=args.max_judged_bytes,
    )
    write_report(report, args.json)
    if args.junit_xml is not None:
        xml = junit_xml(report)
        _write_file("--junit-xml", args.junit_xml, lambda path: Path(path).write_bytes(xml))
    return EXIT_CONFORMANCE_FAILED if report.must_failed or report.stopped else EXIT_OK


def _writable(flag: str, path: str | None) -> None:
    folder = os.path.dirname(os.path.abspath(path or "."))
    if path is not None and (os.path.isdir(path) or not os.access(folder, os.W_OK)):
        raise UsageError(f"{flag} {outside_text(path, 200)}: cannot write a file there")


def _write_file(flag: str, path: str, write: Callable[[str], object]) -> None:
    try:
        write(path)
    except OSError as exc:
        why = f"{outside_text(path, 200)}: {outside_text(exc.strerror or str(exc))}"
        raise UsageError(f"{flag} {why}") from None


def proxy_command() -> Command:
    """The ``proxy`` command of ``projectops``: the validation proxy (extras ``client`` and
    ``server``; docs/conformance.md).

    Returns:
        The command, for :func:`projectops.cli.build_parser`.
    """
    what = (
        "a validation proxy: forward calls to a server, report where they drift from the "
        "schema, record the answers as mock fixtures"
    )
    about = (
        "Listen on --host/--port and forward every call to --upstream as it came; answer "
        "with exactly what the upstream answered. Each request and answer of an operation "
        "is checked with the conformance checks of one answer: one line per violation on "
        "stderr ('drift: OPERATION request|answer CHECK FIELD: WHAT'), or one JSON object "
        "per line on stdout with --json; an answer is forwarded first, then judged (answers "
        "over --max-judged-bytes are not, and one drift line says so). A request target with "
        "a dot segment, '#', ';' or an encoded separator (%2F, %5C, %3B), or that would leave "
        "the upstream's path, is refused with an ErrorResponse. With --record FILE, the 200 "
        "answers seen are written on exit as a fixtures file for `projectops mock-server "
        "--fixtures FILE`, "
        "the key replaced by a stand-in. Exit 0 after a stop signal, 2 for a usage error."
    )
    return Command(
        "proxy", what, _configure_proxy, _run_proxy, about, connection=True, extra="server"
    )


def _configure_proxy(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add(
        "--upstream",
        metavar="URL",
        required=True,
        help="the server to forward to, its root without /api/mcp (never read from "
        "$SERVICE_BACKEND_URL: that may name this proxy)",
    )
    add_listening(parser, host="127.0.0.1", default_port=DEFAULT_PORT)
    add("--json", action="store_true", help="write each drift as a JSON object on stdout")
    add("--record", metavar="FILE", help="write the 200 answers seen to FILE on exit")
    answers = "answers recorded at most; later new ones are left out"
    _limit(parser, "--record-max-responses", MAX_RECORDED_RESPONSES, answers, "N")
    body = "the largest request body forwarded, larger ones get 413 and are not sent"
    _limit(parser, "--max-request-bytes", MAX_BODY_BYTES, f"{body} (the server adapter's)")
    judged = "the largest answer judged; larger ones are forwarded, not judged (8 MiB)"
    _limit(parser, "--max-judged-bytes", MAX_JUDGED_BYTES, judged)
    _limit(parser, "--record-max-bytes", MAX_RECORDED_BYTES, "bytes of JSON recorded (16 MiB)")
    calls = (
        "calls in flight at most, each with a connection to the upstream of its own (so "
        "--timeout is the upstream's time alone); one more gets 503 unavailable at once"
    )
    _limit(parser, "--max-calls", MAX_CALLS, calls, "N")
    add_body_timeout(parser)


def _limit(
    parser: argparse.ArgumentParser, flag: str, default: int, what: str, metavar: str = "BYTES"
) -> None:
    """Add `flag`, a whole number that defaults to `default`, helped by `what`."""
    parser.add_argument(
        flag,
        metavar=metavar,
        type=whole_number,
        default=default,
        help=f"{what}; default: %(default)s",
    )


def _run_proxy(args: argparse.Namespace) -> int:
    from projectops.client import AsyncRawClient
    from projectops.conformance._proxy import STAND_IN_KEY, Recording, ValidationProxy, Violation

    if args.base_url is not None:
        raise UsageError("--base-url does nothing for 'proxy': give the server with --upstream")
    try:
        base_url = normalize_base_url(args.upstream)
    except InvalidBaseUrl as exc:
        raise UsageError(f"--upstream: {exc}") from None
    _writable("--record", record := args.record)
    recording = Recording(max_responses=args.record_max_responses, max_bytes=args.record_max_bytes)
    warn_if_every_interface(args.host)
    sock = listen(args.host, args.port)
    upstream = AsyncRawClient(
        base_url,
        timeout=args.timeout,
        max_response_bytes=args.max_response_bytes,
        max_connections=args.max_calls,
    )

    def report(violation: Violation) -> None:
        shown = violation.json_line() if args.json else violation.line()
        print(shown, file=sys.stdout if args.json else sys.stderr, flush=True)

    app = ValidationProxy(
        upstream,
        report=report,
        recording=recording if record else None,
        max_request_bytes=args.max_request_bytes,
        max_judged_bytes=args.max_judged_bytes,
        max_calls=args.max_calls,
        body_timeout=args.body_timeout,
    )
    where = f"listening on {listen_url(sock)}, forwarding to {shown_url(base_url)}"
    print(f"projectops proxy {where}", file=sys.stderr, flush=True)
    started = serve_app(
        app,
        sock,
        drain_timeout=args.drain_timeout,
        server_header=False,
        date_header=False,
    )
    if record is not None:
        _write_file("--record", record, recording.write)
        left_out = ""
        if recording.left_out:  # each drew a drift line, echoed a credential or was over a limit
            left_out = (
                f"; {recording.left_out} left out (an answer or request that drew a drift line, "
                "an answer that echoed a credential, or one over --record-max-responses or "
                "--record-max-bytes)"
            )
        elif recording.count == 0:  # say why the file is empty
            left_out = (
                "; no 200 answer of an operation came through the proxy (only those are "
                "recorded: error answers and other paths are not)"
            )
        answers = "answers"
        if recording.count == 1:
            answers = "answer"
        print(
            f"projectops proxy recorded {recording.count} {answers} to "
            f"{outside_text(record, 200)}{left_out}; its "
            f"apiKey is the stand-in {STAND_IN_KEY!r}: set it to the key your tests send",
            file=sys.stderr,
        )
    return EXIT_OK if started else EXIT_FAILURE
