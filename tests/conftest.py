"""Shared fixtures: the mock server as a real subprocess on 127.0.0.1, and the CLI runners.

``mock_server`` (session scope) is one server on the default fixtures, shared by every test that
only reads from it; ``start_mock_server`` (function scope) is a factory for tests that need their
own server (other fixtures, extra flags, or to inspect its output and exit code). Both run
``python -m projectops mock-server --host 127.0.0.1 --port <free port>`` exactly as a user would,
wait until the port accepts connections (at most :data:`STARTUP_TIMEOUT` seconds; the test fails
with the server's stderr if it exits first), and stop it with SIGTERM afterwards.

``run_cli`` runs the CLI in-process (``projectops.cli.main``) with an environment the test
controls; ``run_cli_process`` runs the real entry point, ``python -m projectops ...``, for the
few tests where the process matters.

A test that starts a process (``subprocess``, an asyncio subprocess, ``os.fork``/``posix_spawn``/
``system``, a ``multiprocessing`` process) in its set-up, body or tear-down must be marked
``@pytest.mark.slow``, so ``./scripts/test --fast`` (``-m "not slow"``) stays in-process: an
unmarked one gets :class:`UnmarkedProcessError` where it starts the process, and fails even if it
catches that error (:data:`SPAWN_GUARD`).
"""

from __future__ import annotations

import io
import multiprocessing.process
import os
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from projectops.cli import main
from tests.hypothesis_profiles import examples as _registers_the_profiles  # noqa: F401
from tests.loopback import LOOPBACK, STARTUP_TIMEOUT, free_port, stop, wait_until_listening
from tests.support import CLI_TIMEOUT, KEY, Recorder, RunCli, cli_env, make_handler


class UnmarkedProcessError(RuntimeError):
    """A test not marked ``slow`` tried to start a process (nothing was started)."""


class _SpawnGuard:
    """Which test runs now (set around each test's set-up, call and tear-down), and the first
    process it tried to start without being marked ``slow``."""

    def __init__(self) -> None:
        self.item: pytest.Item | None = None
        self.violation: str | None = None

    def check(self, what: str) -> None:
        """Raise :class:`UnmarkedProcessError` when the running test may not start `what`."""
        item = self.item
        if item is None or item.get_closest_marker("slow") is not None:
            return
        message = (
            f"{item.nodeid} starts a process ({what}) but is not marked slow: add "
            "@pytest.mark.slow to it (pyproject.toml [tool.pytest.ini_options] markers), so "
            "`./scripts/test --fast` leaves it out"
        )
        self.violation = self.violation or message
        raise UnmarkedProcessError(message)


SPAWN_GUARD = _SpawnGuard()

# Audit events of everything that starts a process (asyncio's subprocesses go through
# subprocess.Popen). multiprocessing's spawn and forkserver methods raise none: Process.start is
# wrapped instead.
_SPAWN_EVENTS = frozenset(
    {"subprocess.Popen", "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.system"}
)


def _audit(event: str, args: tuple[object, ...]) -> None:
    if event in _SPAWN_EVENTS:
        SPAWN_GUARD.check(event)


sys.addaudithook(_audit)
_process_start = multiprocessing.process.BaseProcess.start


def _guarded_start(self: multiprocessing.process.BaseProcess) -> None:
    SPAWN_GUARD.check("multiprocessing Process.start")
    _process_start(self)


multiprocessing.process.BaseProcess.start = _guarded_start  # type: ignore[method-assign]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[object]:
    SPAWN_GUARD.item, SPAWN_GUARD.violation = item, None
    try:
        return (yield)
    finally:
        SPAWN_GUARD.item = None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Iterator[pytest.TestReport]:
    report: pytest.TestReport = yield
    violation, SPAWN_GUARD.violation = SPAWN_GUARD.violation, None
    if violation is not None and report.passed:
        # The test caught the error (or a library swallowed it): it still may not pass.
        report.outcome = "failed"
        report.longrepr = violation
    return report


# One Hypothesis store for the whole suite, whatever the working directory: the pytest workers
# and the schemathesis runs (tests/openapi, cwd a tmp dir) share its Unicode tables, which take
# each process about 2 s of CPU to build when missing, and its example database.
os.environ.setdefault(
    "HYPOTHESIS_STORAGE_DIRECTORY", str(Path(__file__).resolve().parents[1] / ".hypothesis")
)


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


@pytest.fixture
def no_proxy_in_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No proxy named by the environment (``*_PROXY``, ``NO_PROXY``, either case), whatever the
    machine's: the test sets its own through the returned ``monkeypatch``."""
    for scheme in ("http", "https", "all", "no"):
        for name in (f"{scheme}_proxy", f"{scheme.upper()}_PROXY"):
            monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.fixture
def dead_url() -> Iterator[str]:
    """A base URL whose port refuses connections: bound (so nobody else takes it), not
    listening."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that uses the npm tools (MCP Inspector, the conformance suite) ``npm``,
    so ``-m "not npm"`` is the fast selection that needs no npm registry."""
    for item in items:
        if "npm_tools" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.npm)


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
def silent_url() -> Iterator[str]:
    """A base URL that accepts connections (kernel backlog) but never answers."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        sock.listen(8)
        yield f"http://{LOOPBACK}:{sock.getsockname()[1]}"
