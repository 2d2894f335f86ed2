"""The real ``projectops mock-server`` as a subprocess, for the adversarial tests of both sides.

:func:`mock_server` starts ``python -m projectops mock-server --host 127.0.0.1 --port <free>``
with any extra flags, optionally under a lowered open-file limit (``RLIMIT_NOFILE``, set in the
child before it runs), with stdout and stderr going to files (a chatty server never blocks on a
pipe, and the size of its log can be measured), and stops it with SIGTERM afterwards.
:func:`crashing_server` runs uvicorn on an app whose handlers fail (the crash log under test).
:func:`raw_exchange` sends raw bytes on one socket and reads the response until the server
closes or a deadline passes: the tool for malformed and slow HTTP.
"""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

from tests.loopback import LOOPBACK, STARTUP_TIMEOUT, free_port, stop, wait_until_listening

__all__ = [
    "CRASH_KEY",
    "LOOPBACK",
    "MockServer",
    "crashing_app",
    "crashing_server",
    "mock_server",
    "raw_exchange",
    "read_until_closed",
]

#: The repository's root (the working directory of servers that import ``tests``).
REPO = Path(__file__).resolve().parents[2]


class MockServer:
    """A running ``projectops mock-server`` subprocess (see :func:`mock_server`).

    Attributes:
        base_url: ``http://127.0.0.1:<port>`` (no trailing slash).
        port: the TCP port it listens on.
        process: its :class:`subprocess.Popen`.
    """

    def __init__(
        self,
        extra_args: Sequence[str] = (),
        *,
        fixtures_path: str | os.PathLike[str] | None = None,
        nofile: int | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="projectops-adversarial-")
        self._out_path = Path(self._dir.name, "stdout")
        self._err_path = Path(self._dir.name, "stderr")
        self.port = free_port()
        self.base_url = f"http://{LOOPBACK}:{self.port}"
        args = [sys.executable, "-m", "projectops", "mock-server"]
        args += ["--host", LOOPBACK, "--port", str(self.port)]
        if fixtures_path is not None:
            args += ["--fixtures", os.fspath(fixtures_path)]
        args += list(extra_args)

        def limit_files() -> None:  # runs in the child, before the server starts
            if nofile is not None:
                hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, hard))

        with self._out_path.open("wb") as out, self._err_path.open("wb") as err:
            self.process = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
                preexec_fn=limit_files if nofile is not None else None,
            )

    def stderr(self) -> str:
        """Everything the server wrote to stderr so far."""
        return self._err_path.read_text(encoding="utf-8", errors="replace")

    def stdout(self) -> str:
        """Everything the server wrote to stdout so far."""
        return self._out_path.read_text(encoding="utf-8", errors="replace")

    def stderr_bytes(self) -> int:
        """The size of its stderr so far, in bytes (the log flood measure)."""
        return self._err_path.stat().st_size

    def stop(self) -> int:
        """SIGTERM, wait (kill after the shutdown timeout); return the exit code."""
        return stop(self.process)

    def close(self) -> None:
        """Stop it and remove its output files."""
        self.stop()
        self._dir.cleanup()


@contextmanager
def mock_server(
    extra_args: Sequence[str] = (),
    *,
    fixtures_path: str | os.PathLike[str] | None = None,
    nofile: int | None = None,
    env: dict[str, str] | None = None,
    timeout: float = STARTUP_TIMEOUT,
) -> Iterator[MockServer]:
    """A listening mock server subprocess on 127.0.0.1; stopped when the block ends.

    Args:
        extra_args: flags after ``--host``/``--port`` (and ``--fixtures``).
        fixtures_path: a fixtures file; ``None`` serves the default fixtures.
        nofile: the soft open-file limit of the server process, ``None`` to inherit it.
        env: variables added to the server's environment.
        timeout: seconds to wait for the port to accept connections.

    Raises:
        RuntimeError: it exited before listening, or did not listen in time (message: its
            exit code and stderr). A port taken between the probe and the bind is retried.
    """
    for attempt in range(3):
        server = MockServer(extra_args, fixtures_path=fixtures_path, nofile=nofile, env=env)
        try:
            wait_until_listening(server.process, server.port, "mock server", server.stderr, timeout)
            break
        except RuntimeError:
            busy = "address already in use" in server.stderr().lower()
            server.close()
            if attempt == 2 or not busy:
                raise
    try:
        yield server
    finally:
        server.close()


def read_until_closed(
    sock: socket.socket, deadline: float, limit: int = 1 << 20
) -> tuple[bytes, bool]:
    """Read from `sock` until the peer closes it, `limit` bytes came, or `deadline` passes
    (a :func:`time.monotonic` value).

    Returns:
        ``(what came, whether the peer closed or reset the connection)``.
    """
    data = bytearray()
    while len(data) < limit:
        left = deadline - time.monotonic()
        if left <= 0:
            return bytes(data), False
        sock.settimeout(left)
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            return bytes(data), False
        except ConnectionResetError:
            return bytes(data), True
        if not chunk:
            return bytes(data), True
        data += chunk
    return bytes(data), False


def raw_exchange(port: int, payload: bytes, timeout: float = 10.0) -> tuple[bytes, bool, float]:
    """Send `payload` on a fresh connection to 127.0.0.1:`port`; read until it closes.

    Returns:
        ``(answer bytes, closed by the server, seconds until closed or the timeout)``.
    """
    start = time.monotonic()
    with socket.create_connection((LOOPBACK, port), timeout=timeout) as sock:
        if payload:
            sock.sendall(payload)
        answer, closed = read_until_closed(sock, start + timeout)
        elapsed = time.monotonic() - start
    return answer, closed, elapsed


#: The key of :func:`crashing_app`: printable ASCII (it must travel in a header) holding every
#: character that some escaping changes (quote, apostrophe, backslash, slash, plus, space, %).
CRASH_KEY = 'Crash-Key/"q"\\b+s p%\'x'


def crashing_app() -> Any:
    """An app of ``create_app`` whose every handler fails with an exception that quotes the
    request's ``version`` in many escapings (``repr``, upper case, percent-encoded, JSON, UTF-8
    bytes, ``ascii``); :data:`CRASH_KEY` is its one key. For ``uvicorn --factory``."""
    from projectops.registry import operations
    from projectops.server import create_app

    def crash(request: Any, context: Any) -> Any:
        value = getattr(request, "version", "")
        raise RuntimeError(
            f"lookup failed for {value!r} {value.upper()} {value.lower()} "
            f"{quote(value, safe='')} {quote_plus(value)} {json.dumps(value)} "
            f"{value.encode()!r} {value!a} {[value]!r} {repr(value)!r}"
        )

    def authenticate(key: str) -> str | None:
        return "crash" if key == CRASH_KEY else None

    service = type("Crashing", (), {op.name: staticmethod(crash) for op in operations()})()
    return create_app(service, authenticate=authenticate)


@contextmanager
def crashing_server(timeout: float = STARTUP_TIMEOUT) -> Iterator[MockServer]:
    """:func:`crashing_app` served by uvicorn in a subprocess on 127.0.0.1 (its stderr is the
    crash log); a :class:`MockServer` handle (only ``port``, ``base_url``, ``stderr`` and
    ``stop`` are meaningful)."""
    server = MockServer.__new__(MockServer)
    server._dir = tempfile.TemporaryDirectory(prefix="projectops-crash-")
    server._out_path = Path(server._dir.name, "stdout")
    server._err_path = Path(server._dir.name, "stderr")
    server.port = free_port()
    server.base_url = f"http://{LOOPBACK}:{server.port}"
    args = [sys.executable, "-m", "uvicorn", "--factory", f"{__name__}:crashing_app"]
    args += ["--host", LOOPBACK, "--port", str(server.port), "--log-level", "warning"]
    with server._out_path.open("wb") as out, server._err_path.open("wb") as err:
        server.process = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            cwd=REPO,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    try:
        wait_until_listening(server.process, server.port, "crashing server", server.stderr, timeout)
        yield server
    finally:
        server.close()
