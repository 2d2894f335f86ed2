"""The ``conformance`` command of ``projectops``: its flags, help and configuration, kept apart
from the checks (:mod:`projectops.conformance._runner`) so that every other command of the
program starts without importing them; :func:`_run` imports the runner when it runs.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from projectops._text import outside_text
from projectops.client.failures import EXIT_CONFORMANCE_FAILED, EXIT_OK, UsageError
from projectops.commands import Command, seconds
from projectops.conformance._http import DEFAULT_DEADLINE, MAX_REQUESTS
from projectops.conventions import API_KEY_ENV, BASE_URL_ENV

if TYPE_CHECKING:
    import httpx

    from projectops.fixtures import FixtureProject

__all__ = ["command"]


def command() -> Command:
    """The ``conformance`` command of ``projectops`` (extra ``client``)."""
    return Command(
        "conformance",
        "run the API contract's checks against a server and report each",
        _configure,
        _run,
        description=(
            "Run the checks of the API contract (docs/contract.md) against the server at "
            f"--base-url (default: ${BASE_URL_ENV}; one of them is needed) with the key in "
            f"${API_KEY_ENV}: authentication, validation, the JSON mapping of answers, error "
            "bodies. One line per check and operation; exit 0 when no 'must' check failed, "
            f"{EXIT_CONFORMANCE_FAILED} when one did or when --deadline stopped the run before "
            "every check ran (the rest are 'skipped'; the server is not shown to conform), 2 "
            f"for a usage error. At most {MAX_REQUESTS} requests, each within --timeout, all "
            "within --deadline."
        ),
        connection=True,
        extra="client",
    )


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json",
        action="store_true",
        help='write a JSON report instead: {"passed", "failed", "skipped", "stopped" (by '
        '--deadline), "checks": [{"id", "operation", "level", "status", "detail"}]}',
    )
    parser.add_argument(
        "--fixtures",
        metavar="FILE",
        help="a fixtures file in the mock server's format: its requests for the project whose "
        "apiKey is the key in use must be answered with its responses, and are the requests "
        "known to succeed (without one, the checks of 200 answers are skipped)",
    )
    parser.add_argument(
        "--operation",
        metavar="NAME",
        action="append",
        help="check only this operation (its name, tool name or path; repeatable)",
    )
    parser.add_argument(
        "--junit-xml",
        metavar="FILE",
        help="also write the report to FILE as JUnit XML (one testcase per operation and "
        "check), which CI systems show",
    )
    parser.add_argument(
        "--deadline",
        metavar="SECONDS",
        type=seconds,
        default=DEFAULT_DEADLINE,
        help="seconds the whole run may take (default: %(default)g); past it no request is "
        "sent, the checks not run are skipped and the exit code is "
        f"{EXIT_CONFORMANCE_FAILED}",
    )


def _api_key() -> str:
    from projectops.client import usable_api_key

    return usable_api_key((os.environ.get(API_KEY_ENV) or "").strip())


def _fixture_project(path: str, key: str) -> FixtureProject:
    """The project of the fixtures file at `path` whose key is `key`.

    Raises:
        UsageError: the file cannot be read or decoded, or no project has `key`.
    """
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
    report = run_checks(
        base_url,
        key,
        project=project,
        timeout=args.timeout,
        max_response_bytes=args.max_response_bytes,
        transport=transport,
        deadline=args.deadline,
        of=ops,
    )
    write_report(report, args.json, base_url)
    if args.junit_xml is not None:
        try:
            with open(args.junit_xml, "wb") as file:
                file.write(junit_xml(report, base_url))
        except OSError as exc:
            shown = outside_text(args.junit_xml, 200)
            raise UsageError(
                f"--junit-xml {shown}: {outside_text(exc.strerror or str(exc), 200)}"
            ) from None
    return EXIT_CONFORMANCE_FAILED if report.must_failed or report.stopped else EXIT_OK
