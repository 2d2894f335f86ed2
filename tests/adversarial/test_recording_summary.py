"""The recording's summary agrees with the drift lines (issue 39, finding 8): a 200 answer that
fails strict decoding draws a drift line naming it, and the summary ``projectops proxy --record``
prints on exit counts it as left out, where it used to say that no 200 answer of an operation
came through the proxy. The real program on 127.0.0.1, in front of a raw-socket upstream.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from tests.adversarial.hostile import Request, answer, hostile_server
from tests.adversarial.test_deep_judging import _drift_lines
from tests.adversarial.test_kit_proxy import ITEMS, LIST, _raw, _status, proxy

pytestmark = pytest.mark.slow


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
