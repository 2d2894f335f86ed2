"""``projectops conformance --deadline``: a server that never answers cannot hold a run (a CI
job) past the deadline; the checks not run are skipped saying so, and the exit code is 6 even
when nothing failed, since the server was not shown to conform.

The servers listen on 127.0.0.1 in a thread of the test and stop with it.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from projectops.conformance import run_checks
from projectops.conformance._catalogue import CHECKS
from projectops.program.failures import EXIT_CONFORMANCE_FAILED
from projectops.registry import operations
from tests.conformance.test_conformance import DEFAULT_FIXTURES, DEMO_KEY, TIMEOUT, _demo, _mock_app
from tests.loopback import raw_listener
from tests.openapi.support import serving
from tests.support import RunCli


@contextmanager
def _silent_server() -> Iterator[str]:
    """A server on 127.0.0.1 that accepts connections, reads nothing and never answers; its
    base URL. Closed, with every connection it took, when the block ends."""
    held: list[socket.socket] = []
    try:
        with raw_listener(held.append) as base_url:
            yield base_url
    finally:
        for conn in held:
            conn.close()


def _slow(app: Any, delay: float) -> Any:
    """`app`, each HTTP request answered `delay` seconds late."""

    async def wrapped(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            await asyncio.sleep(delay)
        await app(scope, receive, send)

    return wrapped


def test_a_server_that_never_answers_is_given_up_at_the_deadline() -> None:
    # Without the deadline: about 60 requests of 0.5 s each. The first ends at its own
    # time-out, the second at the deadline.
    with _silent_server() as url:
        start = time.monotonic()
        report = run_checks(url, DEMO_KEY, project=_demo(), timeout=0.5, deadline=1.0)
        took = time.monotonic() - start
    assert took < 30, took
    assert report.stopped == 1.0
    assert report.requests <= 3
    assert len(report.checks) == len(CHECKS) * len(operations())
    failed = [c for c in report.checks if c.status == "failed"]
    # What ran got no response within its own time-out; nothing else failed.
    assert failed and all("no complete answer within the time-out" in c.detail for c in failed)
    assert "passed" not in {c.status for c in report.checks}
    skipped = [c for c in report.checks if c.status == "skipped"]
    # Each says why: the deadline, or (decided before it) a request without REQUIRED fields.
    for check in skipped:
        assert "--deadline of 1 s" in check.detail or "no REQUIRED field" in check.detail, check
    assert any(c.level == "must" for c in skipped)


def test_a_stopped_run_exits_6_even_when_nothing_failed(run_cli: RunCli) -> None:
    # Each answer comes 0.1 s late: some checks pass before the deadline, none fails, and the
    # request under way at the deadline is not judged.
    with serving(_slow(_mock_app(), 0.1)) as url:
        start = time.monotonic()
        result = run_cli(
            "conformance",
            "--json",
            "--fixtures",
            DEFAULT_FIXTURES,
            "--timeout",
            str(TIMEOUT),
            "--deadline",
            "1",
            "--base-url",
            url,
            key=DEMO_KEY,
        )
        took = time.monotonic() - start
    assert result.returncode == EXIT_CONFORMANCE_FAILED, result.stderr
    assert took < 30, took
    report = json.loads(result.stdout)
    assert report["stopped"] is True
    assert report["failed"] == 0, [c for c in report["checks"] if c["status"] == "failed"]
    assert report["passed"] >= 1
    assert report["skipped"] > len(CHECKS)


def test_the_summary_line_says_the_deadline_stopped_the_run(run_cli: RunCli) -> None:
    with _silent_server() as url:
        result = run_cli(
            "conformance", "--timeout", "0.5", "--deadline", "1", "--base-url", url, key=DEMO_KEY
        )
    assert result.returncode == EXIT_CONFORMANCE_FAILED
    assert "\nstopped by --deadline 1 s\n" in result.stdout
