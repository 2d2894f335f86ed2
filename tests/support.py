"""Helpers of the client tests: constants, the recording HTTP server, the CLI environment.

Imported by the tests of this folder and its conftest as ``tests.client.support``.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler

#: A distinctive API key: no output of any kind may contain it.
KEY = "pk-test-Zq9x7-DISTINCT-41b2"
#: The keys of the mock server's default fixtures.
DEMO_KEY = "demo-key"
OTHER_KEY = "other-key"
CLI_TIMEOUT = 30.0


@dataclass
class Recorded:
    """One request the recording server received."""

    method: str
    path: str
    headers: list[tuple[str, str]]
    body: bytes

    def header_names(self) -> set[str]:
        return {name.lower() for name, _ in self.headers}

    def header(self, name: str) -> list[str]:
        return [value for key, value in self.headers if key.lower() == name.lower()]


@dataclass
class Recorder:
    """A tiny real HTTP server that records every request and answers as told.

    Attributes:
        base_url: ``http://127.0.0.1:<port>``.
        requests: every request received, in order.
        status, body, headers: the response to every request (default: 200 with ``{}``).
        delay: seconds to wait before answering.
    """

    base_url: str = ""
    requests: list[Recorded] = field(default_factory=list)
    status: int = 200
    body: bytes = b"{}"
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "application/json"})
    delay: float = 0.0

    def respond(
        self,
        status: int,
        body: bytes | str = b"",
        headers: Mapping[str, str] | None = None,
        delay: float = 0.0,
    ) -> None:
        self.status = status
        self.body = body.encode() if isinstance(body, str) else body
        self.headers = dict(headers or {})
        self.delay = delay


def make_handler(recorder: Recorder) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            recorder.requests.append(
                Recorded(self.command, self.path, list(self.headers.items()), body)
            )
            time.sleep(recorder.delay)
            self.send_response(recorder.status)
            for name, value in recorder.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(recorder.body)))
            self.end_headers()
            self.wfile.write(recorder.body)

        do_POST = do_GET = do_PUT = _serve

        def log_message(self, format: str, *args: object) -> None:
            pass  # keep test output clean

    return Handler


def cli_env(key: str | None, base_url: str | None) -> dict[str, str]:
    """The environment of a CLI run: ours minus every SERVICE_* and proxy variable."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("SERVICE_") and "proxy" not in name.lower()
    }
    if key is not None:
        env["SERVICE_API_KEY"] = key
    if base_url is not None:
        env["SERVICE_BACKEND_URL"] = base_url
    return env


#: ``run_cli(*args, key=KEY, base_url=None, stdin=None, cwd=None)`` (the `run_cli` fixture).
RunCli = Callable[..., subprocess.CompletedProcess[str]]
