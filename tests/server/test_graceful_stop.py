"""A stop signal drains: requests in flight get their answer, new connections are refused, and
the process exits within the drain time, for ``projectops mock-server`` (its own runtime, serving
a slow app: fixtures cannot delay) and for ``create_app`` under the documented uvicorn
deployment (``--timeout-graceful-shutdown``). A handler slower than the drain time is cut.

Real processes on 127.0.0.1; the handler announces itself through a marker file, so SIGTERM is
sent only once the request is in flight.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest

import projectops
from projectops.conventions import API_KEY_HEADER
from tests.loopback import LOOPBACK, free_port, refuses_while_running, stop, wait_until_listening
from tests.server.slow_app import KEY

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
GET = projectops.operation("get_release_details")
#: Seconds the slow handler sleeps in the drain tests.
SLEEP = 2.0
#: Seconds of slack on a busy 2-core machine beyond what a bound under test allows.
SLACK = 10.0


def _mock_server(port: int, drain: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "tests.server.slow_app",
        "--host",
        LOOPBACK,
        "--port",
        str(port),
        "--drain-timeout",
        str(drain),
    ]


def _uvicorn(port: int, drain: int) -> list[str]:
    """The deployment the README documents for ``create_app``."""
    return [
        sys.executable,
        "-m",
        "uvicorn",
        "--factory",
        "tests.server.slow_app:app_from_env",
        "--host",
        LOOPBACK,
        "--port",
        str(port),
        "--timeout-graceful-shutdown",
        str(drain),
        "--log-level",
        "warning",
    ]


SERVERS = {"mock-server": _mock_server, "uvicorn": _uvicorn}


class Served:
    def __init__(self, process: subprocess.Popen[bytes], port: int, mark: Path, log: Path):
        self.process, self.port, self.mark, self.log = process, port, mark, log

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def send_slow_request(self) -> dict[str, Any]:
        """POST get_release_details in a thread; the returned dict gets ``status`` or
        ``error`` and ``at`` (monotonic seconds) when it ends."""
        outcome: dict[str, Any] = {}

        def send() -> None:
            try:
                response = httpx2.post(
                    f"http://{LOOPBACK}:{self.port}{GET.path}",
                    json={"version": "1.0.0"},
                    headers={API_KEY_HEADER: KEY},
                    timeout=SLEEP + 2 * SLACK,
                )
                outcome["status"], outcome["body"] = response.status_code, response.text
            except httpx2.HTTPError as exc:
                outcome["error"] = repr(exc)
            outcome["at"] = time.monotonic()

        thread = threading.Thread(target=send, daemon=True)
        thread.start()
        outcome["thread"] = thread
        deadline = time.monotonic() + SLACK
        while not self.mark.exists():
            assert time.monotonic() < deadline, f"the request never reached the handler: {outcome}"
            assert self.process.poll() is None, self.output()
            time.sleep(0.02)
        return outcome

    def refuses_new_connections(self) -> bool:
        """Whether a new connection is refused while the process still runs (polled: the
        listener closes on the server's next loop pass after the signal)."""
        return refuses_while_running(self.process, self.port, SLACK)


@contextmanager
def serving(kind: str, drain: int, sleep: float, tmp_path: Path) -> Iterator[Served]:
    port = free_port()
    mark = tmp_path / "in-flight"
    log = tmp_path / "server.log"
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "SLOW_APP_SLEEP": str(sleep),
        "SLOW_APP_MARK": str(mark),
        "PYTHONUNBUFFERED": "1",
    }
    with log.open("wb") as out:
        process = subprocess.Popen(
            SERVERS[kind](port, drain),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=ROOT,
        )
    served = Served(process, port, mark, log)
    try:
        wait_until_listening(process, port, kind, served.output)
        yield served
    finally:
        stop(process, signal.SIGKILL)


@pytest.mark.parametrize("kind", sorted(SERVERS))
def test_sigterm_finishes_the_request_in_flight_refuses_new_ones_and_exits(
    kind: str, tmp_path: Path
) -> None:
    drain = 10
    with serving(kind, drain, SLEEP, tmp_path) as served:
        outcome = served.send_slow_request()
        served.process.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        assert served.refuses_new_connections(), served.output()
        assert "at" not in outcome, "the request ended before the refusal was seen"
        code = served.process.wait(drain + SLACK)
        exited = time.monotonic()
        outcome["thread"].join(SLACK)
    assert outcome.get("status") == 200, (outcome, served.output())
    assert '"version": "1.0.0"' in outcome["body"] or '"version":"1.0.0"' in outcome["body"]
    assert exited - signalled < drain + SLACK
    assert outcome["at"] <= exited  # answered before the process went away
    # mock-server exits 0; plain uvicorn re-raises SIGTERM after its graceful stop.
    assert code == (0 if kind == "mock-server" else -signal.SIGTERM), served.output()


@pytest.mark.parametrize("kind", sorted(SERVERS))
def test_a_handler_slower_than_the_drain_time_is_cut_at_the_bound(
    kind: str, tmp_path: Path
) -> None:
    drain = 1
    with serving(kind, drain, 60.0, tmp_path) as served:
        outcome = served.send_slow_request()
        served.process.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        code = served.process.wait(drain + SLACK)
        waited = time.monotonic() - signalled
        outcome["thread"].join(SLACK)
    assert drain - 0.2 <= waited < drain + SLACK, served.output()
    assert code == (0 if kind == "mock-server" else -signal.SIGTERM), served.output()
    # The cut request ends at once (no response, or an error response), never hangs.
    assert "at" in outcome and outcome.get("status") != 200, outcome
