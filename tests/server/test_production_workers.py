"""README "Running in production", "Workers": the factory module and the uvicorn command run as
written (the command with a free port on 127.0.0.1 added), with a stand-in ``mypkg.service``:
every worker serves the API, and SIGTERM ends them all within the drain time."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx2 as httpx
import pytest

import projectops
from projectops.conventions import API_KEY_HEADER
from tests.loopback import LOOPBACK, free_port, stop, wait_until_listening

pytestmark = pytest.mark.slow

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()
LIST = projectops.operation("list_rum_environments")

# The user's own parts that the README's factory imports.
SERVICE = """
import os

from projectops.v1 import operations_pb2 as ops

KEYS = {"worker-key": "demo"}


class Service:
    def list_rum_environments(self, request, context):
        answer = ops.ListRumEnvironmentsResponse()
        answer.environments.add(environment=f"pid-{os.getpid()}")
        return answer
"""


def _workers_blocks() -> tuple[str, str]:
    section = README[README.index("### Workers") : README.index("### The proxy in front")]
    python = re.search(r"```python\n(.*?)```", section, re.S)
    shell = re.search(r"```sh\n(.*?)```", section, re.S)
    assert python and shell, "the Workers section lost a block"
    return python.group(1), shell.group(1).strip()


def test_the_documented_workers_deployment_serves_and_stops(tmp_path: Path) -> None:
    factory, command = _workers_blocks()
    package = tmp_path / "mypkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "service.py").write_text(SERVICE)
    (package / "app.py").write_text(factory)
    argv = shlex.split(command)
    assert argv[0] == "uvicorn" and "--workers" in argv
    port = free_port()
    log = tmp_path / "uvicorn.log"
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", *argv, "--host", LOOPBACK, "--port", str(port)],
            cwd=tmp_path,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_until_listening(
            process, port, argv, lambda: log.read_text(errors="replace"), timeout=30
        )
        seen: set[str] = set()
        url = f"http://{LOOPBACK}:{port}{LIST.path}"
        denied = httpx.post(url, content=b"{}", headers={API_KEY_HEADER: "wrong"}, timeout=10)
        assert denied.status_code == 401, denied.text
        deadline = time.monotonic() + 20
        # Each new connection goes to whichever worker accepts it: ask until two answered.
        while len(seen) < 2 and time.monotonic() < deadline:
            answer = httpx.post(
                url, content=b"{}", headers={API_KEY_HEADER: "worker-key"}, timeout=10
            )
            assert answer.status_code == 200, answer.text
            seen.add(answer.json()["environments"][0]["environment"])
        assert len(seen) == 2, seen
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
        assert time.monotonic() - started < 20, log.read_text(errors="replace")
    finally:
        stop(process)
