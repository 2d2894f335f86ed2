"""The ``conformance`` command of ``projectops``; :func:`_run` imports the checks when it runs."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from projectops._text import outside_text
from projectops.client.failures import EXIT_CONFORMANCE_FAILED, EXIT_OK, UsageError
from projectops.commands import Command, seconds
from projectops.conformance._http import DEFAULT_DEADLINE, MAX_REQUESTS
from projectops.conventions import API_KEY_ENV, BASE_URL_ENV

if TYPE_CHECKING:
    import httpx2 as httpx

    from projectops.fixtures import FixtureProject

__all__ = ["command", "write_file"]


def command() -> Command:
    """The ``conformance`` command of ``projectops`` (extra ``client``)."""
    return Command(
        "conformance",
        "run the API contract's checks against a server and report each",
        _configure,
        _run,
        description=(
            "Run the checks of the API contract (docs/contract.md) against the server at "
            f"--base-url (or ${BASE_URL_ENV}) with the key in ${API_KEY_ENV}. One line per check "
            "and operation; an operation answered 501 is reported unimplemented. Exit 0 when no "
            f"'must' check failed, {EXIT_CONFORMANCE_FAILED} when one did or --deadline stopped "
            f"the run, 2 for a usage error. At most {MAX_REQUESTS} requests, each within "
            "--timeout, all within --deadline."
        ),
        connection=True,
        extra="client",
    )


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
        type=seconds,
        default=DEFAULT_DEADLINE,
        help="seconds the whole run may take (default: %(default)g); past it the checks not "
        f"run are skipped and the exit code is {EXIT_CONFORMANCE_FAILED}",
    )


def _api_key() -> str:
    from projectops.client import usable_api_key

    return usable_api_key((os.environ.get(API_KEY_ENV) or "").strip())


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


def _run(args: argparse.Namespace, transport: httpx.BaseTransport | None = None) -> int:
    key = _api_key()
    project = None if args.fixtures is None else _fixture_project(args.fixtures, key)
    # No default: checking the bundled mock server by accident would prove nothing.
    base_url = args.base_url or os.environ.get(BASE_URL_ENV)
    if not base_url:
        raise UsageError(f"no server to check: give --base-url URL or set {BASE_URL_ENV}")
    from projectops.conformance._report import junit_xml, write_report
    from projectops.conformance._runner import run_checks
    from projectops.registry import UnknownOperationError, operation

    try:
        ops = None if args.operation is None else [operation(name) for name in args.operation]
    except UnknownOperationError as exc:
        raise UsageError(f"--operation: {outside_text(str(exc), 500)}") from None
    limits = {"timeout": args.timeout, "max_response_bytes": args.max_response_bytes}
    report = run_checks(
        base_url,
        key,
        project=project,
        transport=transport,
        deadline=args.deadline,
        of=ops,
        **limits,
    )
    write_report(report, args.json, base_url)
    if args.junit_xml is not None:
        xml = junit_xml(report, base_url)
        write_file("--junit-xml", args.junit_xml, lambda path: Path(path).write_bytes(xml))
    return EXIT_CONFORMANCE_FAILED if report.must_failed or report.stopped else EXIT_OK


def write_file(flag: str, path: str, write: Callable[[str], object]) -> None:
    """``write(path)``; an OSError is a UsageError naming `flag` (exit 2)."""
    try:
        write(path)
    except OSError as exc:
        why = f"{outside_text(path, 200)}: {outside_text(exc.strerror or str(exc))}"
        raise UsageError(f"{flag} {why}") from None
