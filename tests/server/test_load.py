"""A bounded load test of the mock server subprocess: every response checked, figures printed.

2,000 requests from 16 concurrent clients on 127.0.0.1, mixing both operations of both projects
with 401 and 400 cases. Each client is a thread with one keep-alive ``http.client`` connection:
the stdlib client costs little CPU, so on a small machine the figures are the server's rather
than the client's (httpx's client spends several times more per request). Timings are printed
(``pytest -s`` shows them), never asserted.
"""

from __future__ import annotations

import http.client
import json
import statistics
import threading
import time
from typing import Any
from urllib.parse import urlsplit

import pytest

import projectops
from projectops.conventions import API_KEY_HEADER, CONTENT_TYPE

REQUESTS = 2000
CLIENTS = 16
LIST = projectops.operation("list_rum_environments")
GET = projectops.operation("get_release_details")

# (operation, body, key, expected status, expected code or None for a 200)
CASES: list[tuple[projectops.Operation, bytes, str, int, str | None]] = [
    (LIST, b"{}", "demo-key", 200, None),
    (LIST, b"", "other-key", 200, None),
    (GET, b'{"version": "1.0.0"}', "demo-key", 200, None),
    (GET, b'{"version": " 2.3.1 "}', "other-key", 200, None),
    (GET, b'{"version": "1.0.0"}', "wrong-key", 401, "unauthenticated"),
    (GET, b'{"version": "1.0.0"}', "other-key", 400, "failed_precondition"),
    (GET, b'{"version": 5}', "demo-key", 400, "invalid_argument"),
    (LIST, b"[]", "", 401, "unauthenticated"),
]


class Client:
    """One keep-alive connection to the server."""

    def __init__(self, base_url: str) -> None:
        parts = urlsplit(base_url)
        self._conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)

    def post(self, case: int) -> tuple[int, Any]:
        op, body, key, _, _ = CASES[case]
        self._conn.request(
            "POST", op.path, body=body, headers={"Content-Type": CONTENT_TYPE, API_KEY_HEADER: key}
        )
        response = self._conn.getresponse()
        return response.status, json.loads(response.read())

    def close(self) -> None:
        self._conn.close()


@pytest.mark.slow
def test_load_mixed_requests_all_answered_correctly(mock_server: Any) -> None:
    first = Client(mock_server.base_url)
    # The 200 responses each case must get, fetched once before the clock starts.
    expected = {i: first.post(i)[1] for i, case in enumerate(CASES) if case[3] == 200}
    first.close()
    assert expected[2]["detailedResults"]["issues"][0]["issueId"] == "9007199254740993"
    assert expected[3]["summary"]["release"]["version"] == "2.3.1"

    latencies: list[float] = []
    failures: list[str] = []
    counter = iter(range(REQUESTS))
    lock = threading.Lock()

    def worker() -> None:
        client = Client(mock_server.base_url)
        try:
            while True:
                with lock:
                    n = next(counter, None)
                if n is None:
                    return
                case = n % len(CASES)
                _, _, _, status, code = CASES[case]
                start = time.perf_counter()
                got_status, got = client.post(case)
                latencies.append(time.perf_counter() - start)
                ok = got_status == status and (
                    got == expected[case] if code is None else got["code"] == code
                )
                if not ok:
                    failures.append(f"case {case}: {got_status} {str(got)[:200]}")
        except Exception as exc:  # a failure in a thread must fail the test, not vanish
            failures.append(repr(exc))
        finally:
            client.close()

    threads = [threading.Thread(target=worker) for _ in range(CLIENTS)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    elapsed = time.perf_counter() - started

    assert failures == []
    assert len(latencies) == REQUESTS
    cuts = statistics.quantiles(latencies, n=100)
    print(
        f"\nmock server load: {REQUESTS} requests, {CLIENTS} concurrent clients: "
        f"{REQUESTS / elapsed:.0f} requests/s, p50 {cuts[49] * 1000:.1f} ms, "
        f"p99 {cuts[98] * 1000:.1f} ms, total {elapsed:.2f} s"
    )
