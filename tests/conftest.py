"""Shared fixtures: the mock server as a real subprocess on 127.0.0.1.

``mock_server`` (session scope) is one server on the default fixtures, shared by every test that
only reads from it; ``start_mock_server`` (function scope) is a factory for tests that need their
own server (other fixtures, extra flags, or to inspect its output and exit code). Both run
``python -m projectops mock-server --host 127.0.0.1 --port <free port>`` exactly as a user would,
wait until the port accepts connections (at most :data:`STARTUP_TIMEOUT` seconds; the test fails
with the server's stderr if it exits first), and stop it with SIGTERM afterwards.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from tests.loopback import LOOPBACK, STARTUP_TIMEOUT, free_port, stop, wait_until_listening


class MockServerProcess:
    """A running ``projectops mock-server`` subprocess.

    Attributes:
        base_url: ``http://127.0.0.1:<port>``, the base URL clients use (no trailing slash).
        port: the TCP port it listens on.
        process: the :class:`subprocess.Popen` of the server.
    """

    def __init__(
        self, fixtures_path: str | os.PathLike[str] | None = None, extra_args: Sequence[str] = ()
    ) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="projectops-mock-")
        self._out_path = Path(self._dir.name, "stdout")
        self._err_path = Path(self._dir.name, "stderr")
        self.port = free_port()
        self.base_url = f"http://{LOOPBACK}:{self.port}"
        args = [
            sys.executable,
            "-m",
            "projectops",
            "mock-server",
            "--host",
            LOOPBACK,
            "--port",
            str(self.port),
        ]
        if fixtures_path is not None:
            args += ["--fixtures", os.fspath(fixtures_path)]
        args += list(extra_args)
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        with self._out_path.open("wb") as out, self._err_path.open("wb") as err:
            # Output goes to files, not pipes: a chatty server can never block on a full pipe.
            self.process = subprocess.Popen(
                args, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env
            )

    def wait_until_listening(self, timeout: float = STARTUP_TIMEOUT) -> None:
        """Block until the port accepts a connection.

        Raises:
            RuntimeError: the server exited first, or did not listen within `timeout` seconds;
                the message carries its exit code and stderr.
        """
        try:
            wait_until_listening(self.process, self.port, "mock server", self.stderr, timeout)
        except RuntimeError:
            self.stop()
            raise

    def stop(self) -> int:
        """SIGTERM, wait (kill after :data:`SHUTDOWN_TIMEOUT` s); return the exit code."""
        return stop(self.process)

    def stdout(self) -> str:
        """Everything the server wrote to stdout so far."""
        return self._out_path.read_text(encoding="utf-8", errors="replace")

    def stderr(self) -> str:
        """Everything the server wrote to stderr so far."""
        return self._err_path.read_text(encoding="utf-8", errors="replace")

    def close(self) -> None:
        """Stop the server and remove its output files."""
        self.stop()
        self._dir.cleanup()


def _start(
    fixtures_path: str | os.PathLike[str] | None, extra_args: Sequence[str]
) -> MockServerProcess:
    # The free port can be taken between the probe and the server's bind: retry on a new one.
    for attempt in range(3):
        server = MockServerProcess(fixtures_path, extra_args)
        try:
            server.wait_until_listening()
            return server
        except RuntimeError:
            if attempt == 2 or "address already in use" not in server.stderr().lower():
                server.close()
                raise
            server.close()
    raise AssertionError("unreachable")


StartMockServer = Callable[..., MockServerProcess]


@pytest.fixture(scope="session")
def mock_server() -> Iterator[MockServerProcess]:
    """One mock server on the default fixtures for the whole session (read-only use)."""
    server = _start(None, ())
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def start_mock_server() -> Iterator[StartMockServer]:
    """Factory: ``start_mock_server(fixtures_path=None, extra_args=())`` -> a listening server.

    Every server it started is stopped when the test ends. A server that fails to start (e.g.
    a bad fixtures file) raises RuntimeError with its stderr; tests that expect that should run
    the command themselves.
    """
    started: list[MockServerProcess] = []

    def start(
        fixtures_path: str | os.PathLike[str] | None = None, extra_args: Sequence[str] = ()
    ) -> MockServerProcess:
        server = _start(fixtures_path, extra_args)
        started.append(server)
        return server

    try:
        yield start
    finally:
        for server in started:
            server.close()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that uses the npm tools (MCP Inspector, the conformance suite) ``npm``,
    so ``-m "not npm"`` is the fast selection that needs no npm registry."""
    for item in items:
        if "npm_tools" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.npm)
