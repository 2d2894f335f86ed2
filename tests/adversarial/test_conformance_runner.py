"""``projectops conformance`` against hostile servers on 127.0.0.1 (issue 31, items 3 and 4):

- judging is bounded: a 200 of 31.9 MiB of ``{"sessionCount":"1"}`` elements (the most judging
  work per byte) ends the run within ``--deadline`` plus one ``--timeout`` and a few hundred MiB,
  whether the response is over the judged size (skipped, saying so) or judged (a raised
  ``--max-judged-bytes``: the run stops waiting for the judging at that bound); figures:
  ``pytest tests/adversarial/test_conformance_runner.py -s | grep FIGURE``;
- one odd value does not sink a run: a fixtures project whose name cannot be a header value
  (``café``) gets an ASCII stand-in in the scope-header check, and the run reports.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import projectops
from tests.adversarial.hostile import Request, answer, hostile_server
from tests.adversarial.test_answer_memory import _LAUNCHER
from tests.adversarial.test_conformance_proxy import _large_answer
from tests.support import RunCli, cli_env

KEY = "runner-key-31"
MIB = 1024 * 1024
#: The --timeout of the bounded runs, in seconds.
TIMEOUT = 10.0
#: Seconds a Python process takes to start and import the conformance runner on a busy machine,
#: at most.
START_UP = 8.0


def _large_to_the_key(body: bytes) -> object:
    def behave(sock: socket.socket, request: Request) -> None:
        own = request.header(projectops.API_KEY_HEADER) == KEY
        if own and request.head.startswith(b"POST /api/mcp/list_rum_environments "):
            answer(200, body)(sock, request)
        else:
            answer(401, '{"code": "unauthenticated", "message": "no"}')(sock, request)

    return behave


@pytest.mark.slow
@pytest.mark.parametrize("judged", [False, True], ids=["over the judged size", "judged"])
def test_a_large_answer_is_judged_within_the_deadline_and_a_timeout(
    judged: bool, tmp_path: Path
) -> None:
    body = _large_answer()
    peak_file = tmp_path / "peak"
    with hostile_server(_large_to_the_key(body)) as server:  # type: ignore[arg-type]
        args = [sys.executable, "-c", _LAUNCHER, str(peak_file), sys.executable, "-m"]
        args += ["projectops", "conformance", "--base-url", server.base_url, "--json"]
        # Over the judged size, the run is quick: a deadline it does not reach lets the report
        # say why the response's checks were skipped.
        deadline = "2" if judged else "60"
        args += ["--deadline", deadline, "--timeout", f"{TIMEOUT:g}"]
        args += ["--operation", "list_rum_environments"]
        if judged:
            args += ["--max-judged-bytes", str(64 * MIB)]
        started = time.monotonic()
        done = subprocess.run(
            args, capture_output=True, env=cli_env(KEY, None), timeout=120, check=False
        )
        seconds = time.monotonic() - started
    peak = int(peak_file.read_text()) / 1024
    report = json.loads(done.stdout)
    print(
        f"\nFIGURE conformance --deadline {deadline} --timeout {TIMEOUT:g}, a "
        f"{len(body) / MIB:.1f} MiB answer {'judged' if judged else 'over the judged size'}: "
        f"{seconds:.2f} s, peak "
        f"{peak:.0f} MiB, exit {done.returncode}"
    )
    assert seconds < 2 + TIMEOUT + START_UP
    checks = {c["id"]: c for c in report["checks"]}
    if judged:
        assert report["stopped"] or checks["response.decodes"]["status"] != "skipped"
        assert peak < 700  # a few hundred MiB: decoded a slice of the list at a time
    else:
        assert peak < 400
        assert "--max-judged-bytes" in checks["response.decodes"]["detail"]
        assert checks["response.decodes"]["status"] == "skipped"


def test_a_project_name_that_cannot_be_a_header_value_gets_a_stand_in(
    run_cli: RunCli, tmp_path: Path
) -> None:
    data = json.loads(Path(projectops.__file__).with_name("default_fixtures.json").read_text())
    data["projects"][0]["apiKey"] = KEY
    data["projects"][0]["project"] = "café\u202e\x1b"
    fixtures = tmp_path / "fixtures.json"
    fixtures.write_text(json.dumps(data), encoding="utf-8")
    sent: list[str | None] = []

    def empty(sock: socket.socket, request: Request) -> None:
        sent.append(request.header("Project-Id"))
        answer(200, "{}")(sock, request)

    with hostile_server(empty) as server:
        done = run_cli(
            "conformance",
            "--fixtures",
            str(fixtures),
            "--json",
            "--deadline",
            "60",
            key=KEY,
            base_url=server.base_url,
        )
    assert done.returncode in (0, 6), done.stderr
    report = json.loads(done.stdout)
    scope = [c for c in report["checks"] if c["id"] == "auth.scope-headers"]
    assert scope and all(c["status"] in ("passed", "failed") for c in scope)
    assert "not-caf\\xe9\\u202e\\x1b" in sent
