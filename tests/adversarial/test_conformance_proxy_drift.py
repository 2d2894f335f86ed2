"""``projectops proxy``'s drift lines and recording summary against hostile upstreams (issue 39,
findings 2 and 8), the real program on 127.0.0.1 in front of a raw-socket upstream:

- a response nested about 980 levels deep, under an unknown field named with the key and
  ``ESC[2J ESC[31m``, draws one drift line per call (the name escaped, the key redacted, or the
  nesting json.loads refused), never a traceback, the key or a raw escape;
- the recording's summary agrees with the drift lines: a 200 response that fails strict decoding
  draws a drift line naming it and is counted as left out, where the summary used to say that no
  200 response of an operation came through the proxy.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest

from tests.adversarial.hostile import Request, answer, hostile_server
from tests.adversarial.test_clipped_key import KEY_50, shown_part
from tests.adversarial.test_conformance_proxy import ITEMS, LIST, Proxy, _raw, _status, proxy
from tests.adversarial.test_deep_judging import DEPTHS, _deep_answers

pytestmark = pytest.mark.slow


def _drift_lines(running: Proxy, check: str, count: int) -> list[str]:
    """The proxy's drift lines of `check`, once there are `count` (judging follows the response)
    or after 60 s."""
    deadline = time.monotonic() + 60
    while True:
        lines = [line for line in running.drift_text().splitlines() if check in line]
        if len(lines) >= count or time.monotonic() > deadline:
            return lines
        time.sleep(0.1)


def test_the_proxy_draws_a_drift_line_for_every_deep_answer() -> None:
    with hostile_server(_deep_answers(KEY_50)) as upstream, proxy(upstream.base_url) as running:
        for count in range(1, len(DEPTHS) + 1):  # one at a time: none is left unjudged
            assert _status(_raw(running.port, LIST, {"Service-Api-Key": KEY_50})) == 200
            lines = _drift_lines(running, "answer response.decodes", count)
        running.process.terminate()
        running.process.wait(20)
        text = running.drift_text()
    assert len(lines) == len(DEPTHS), text
    # Each names the unknown field (escaped, the key redacted) or the nesting json.loads refused.
    named = [line for line in lines if "\\x1b[2J\\x1b[31m***" in line]
    assert named and all("recursion" in line for line in lines if line not in named), lines
    assert "Traceback" not in text
    assert "\x1b" not in text
    assert shown_part(text, KEY_50) is None, text


def _unknown_field(sock: socket.socket, request: Request) -> None:
    """A 200 of the operation with one field the schema does not have."""
    answer(200, json.dumps({ITEMS: [], "notInTheSchema": 1}))(sock, request)


def test_a_200_answer_that_drew_a_drift_line_is_counted_as_left_out(tmp_path: Path) -> None:
    record = tmp_path / "recorded.json"
    with hostile_server(_unknown_field) as upstream:
        with proxy(upstream.base_url, "--record", str(record)) as running:
            assert _status(_raw(running.port, LIST, {"Service-Api-Key": "k"})) == 200
            lines = _drift_lines(running, "answer response.decodes", 1)
            running.process.terminate()
            running.process.wait(20)
            text = running.drift_text()
    assert len(lines) == 1 and "notInTheSchema" in lines[0], text
    assert "recorded 0 answers" in text
    assert "1 left out (an answer or request that drew a drift line" in text
    assert "no 200 answer" not in text
    assert json.loads(record.read_text())["projects"][0]["operations"] == {}
