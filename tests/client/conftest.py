"""Fixtures of the client tests: a recording HTTP server, dead and silent ports, the CLI runner.

Everything listens on 127.0.0.1 only. ``run_cli`` runs the CLI in-process
(``projectops.__main__.main``) with an environment the test controls; ``run_cli_process`` runs
the real entry point, ``python -m projectops ...``, for the few tests where the process matters.
"""

from __future__ import annotations

import io
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer

import pytest

from projectops.__main__ import main
from tests.client.support import CLI_TIMEOUT, KEY, Recorder, RunCli, cli_env, make_handler
from tests.loopback import LOOPBACK


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    """A recording server on 127.0.0.1 for the duration of the test."""
    rec = Recorder()
    server = ThreadingHTTPServer((LOOPBACK, 0), make_handler(rec))
    server.daemon_threads = True
    rec.base_url = f"http://{LOOPBACK}:{server.server_address[1]}"
    # A short poll: shutdown() waits for the loop to look, 0.5 s by default, on every test.
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield rec
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def dead_url() -> Iterator[str]:
    """A base URL whose port refuses connections: bound (so nobody else takes it), not
    listening."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        yield f"http://{LOOPBACK}:{sock.getsockname()[1]}"


@pytest.fixture
def silent_url() -> Iterator[str]:
    """A base URL that accepts connections (kernel backlog) but never answers."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        sock.listen(8)
        yield f"http://{LOOPBACK}:{sock.getsockname()[1]}"


@pytest.fixture
def run_cli(monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> RunCli:
    """``run_cli(*args, key=KEY, base_url=None, stdin=None, cwd=None)`` runs ``projectops
    *args`` in-process and returns what a finished process would (exit code, text output).

    `key` and `base_url` set SERVICE_API_KEY and SERVICE_BACKEND_URL (``None``: unset).
    """

    def run(
        *args: str,
        key: str | None = KEY,
        base_url: str | None = None,
        stdin: str | None = None,
        cwd: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        with monkeypatch.context() as patch:
            for name in [n for n in os.environ if n.startswith("SERVICE_")]:
                patch.delenv(name)
            for name, value in cli_env(key, base_url).items():
                patch.setenv(name, value)
            patch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO((stdin or "").encode())))
            if cwd is not None:
                patch.chdir(cwd)
            capfd.readouterr()
            code = main(list(args))
            out, err = capfd.readouterr()
        return subprocess.CompletedProcess(list(args), code, out, err)

    return run


@pytest.fixture
def run_cli_process() -> RunCli:
    """:func:`run_cli` as a real subprocess, ``python -m projectops *args``."""

    def run(
        *args: str,
        key: str | None = KEY,
        base_url: str | None = None,
        stdin: str | None = None,
        cwd: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "projectops", *args],
            env=cli_env(key, base_url),
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=CLI_TIMEOUT,
            cwd=cwd,
            check=False,
        )

    return run
