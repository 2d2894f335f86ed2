"""A judging thread that fails is named, not taken for something else (issue 39, finding 2):
judging promises never to raise, and when it does all the same (here made to), the runner's
check says ``judging failed`` in its one line, redacted and escaped, instead of ``stopped by
--deadline``, and the proxy draws a ``proxy.not-judged`` drift line instead of a traceback."""

from __future__ import annotations

import json
from typing import NoReturn

import pytest

import projectops
from projectops.conformance import _catalogue, _proxy
from tests.adversarial.hostile import answer, hostile_server
from tests.conformance.test_proxy import _answering, _call, _post
from tests.support import RunCli

KEY = "sk_live_0123456789abcdefghijklmnopqrstuvwxyzABCDEF"


def _failing_judge(*_: object) -> NoReturn:
    raise RuntimeError(f"\x1b[2J\x1b[31mjudge broke on {KEY}")


def test_the_runner_names_a_failed_judging_thread(
    run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_catalogue, "judge_response", _failing_judge)
    op = projectops.operations()[0]
    with hostile_server(answer(200, "{}")) as server:
        args = ["conformance", "--operation", op.name, "--json"]
        run = run_cli(*args, key=KEY, base_url=server.base_url)
    report = json.loads(run.stdout)
    assert report["stopped"] is False
    checks = {check["id"]: check for check in report["checks"]}
    detail = checks[_catalogue.DECODES]["detail"]
    assert (
        "not judged: judging failed (RuntimeError: \\x1b[2J\\x1b[31mjudge broke on ***)" in detail
    )
    assert KEY[:8] not in run.stdout + run.stderr
    assert "\x1b" not in run.stdout + run.stderr and "Traceback" not in run.stderr


def test_the_proxy_draws_a_drift_line_for_a_failed_judging_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_proxy, "judge_response", _failing_judge)
    op = projectops.operations()[0]
    via, straight, drifts = _call(_answering(200, b"{}"), [_post(op, b"{}", key=KEY)])
    assert via == straight
    failed = [d for d in drifts if d.check == _proxy.NOT_JUDGED]
    assert len(failed) == 1, drifts
    line = failed[0].line()
    assert "judging failed: RuntimeError: \\x1b[2J\\x1b[31mjudge broke on ***" in line
    assert KEY[:8] not in line and "\x1b" not in line
