"""What the servers write to their logs, against clients that put secrets and control characters
where logs pick them up: the access log never holds a query string, the crash log never the key."""

from __future__ import annotations

import json
import re
import time
from urllib.parse import quote, quote_plus

import httpx2
import pytest

from projectops.conventions import API_KEY_HEADER
from tests.adversarial.servers import CRASH_KEY, crashing_server, mock_server, raw_exchange

SECRET = "s3cr3t-T0ken"


@pytest.mark.slow
def test_the_access_log_never_writes_a_query_string() -> None:
    urls = [
        f"/api/mcp/list_rum_environments?api_key={SECRET}",
        f"/api/mcp/get_release_details?token={SECRET}&x=1",
        f"/no/such/path?{SECRET}",
        f"/docs?key={SECRET}",
    ]
    with mock_server(["--access-log"]) as server:
        with httpx2.Client(base_url=server.base_url, timeout=10) as client:
            for url in urls:
                client.post(url, json={}, headers={API_KEY_HEADER: "demo-key"})
        # A path with an escape sequence (percent-encoded: the request line allows no raw ESC).
        raw_exchange(
            server.port, b"GET /x%1b[2J%07 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
        )
        time.sleep(0.2)
        log = server.stderr()
    lines = [line for line in log.splitlines() if " HTTP/1.1" in line]
    print(f"\naccess log ({len(lines)} request lines):\n" + "\n".join(lines))
    assert len(lines) == len(urls) + 1
    assert SECRET.lower() not in log.lower()
    assert "?" not in "".join(lines)
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f]", log)


@pytest.mark.slow
def test_the_crash_log_redacts_the_key_in_every_escaping() -> None:
    """A handler's exception quotes the request's version, which a confused client set to its
    key: the logged traceback holds it in none of the spellings an honest echo writes (as is,
    any case, percent-encoded, JSON or Python escaped); the response is a plain 500."""
    forms = {
        CRASH_KEY,
        repr(CRASH_KEY)[1:-1],
        CRASH_KEY.upper(),
        CRASH_KEY.lower(),
        quote(CRASH_KEY, safe=""),
        quote_plus(CRASH_KEY),
        json.dumps(CRASH_KEY)[1:-1],
    }
    with crashing_server() as server:
        answer = httpx2.post(
            f"{server.base_url}/api/mcp/get_release_details",
            json={"version": CRASH_KEY},
            headers={API_KEY_HEADER: CRASH_KEY},
            timeout=10,
        )
        time.sleep(0.2)
        log = server.stderr()
    assert answer.status_code == 500
    assert answer.json()["code"] == "internal"
    assert "Traceback" in log and "RuntimeError: lookup failed for" in log
    failed_line = next(line for line in log.splitlines() if "lookup failed" in line)
    print(f"\ncrash log line: {failed_line}")
    assert failed_line.count("***") >= 9  # all but the doubly escaped one
    for form in forms:
        assert form.lower() not in log.lower(), form
