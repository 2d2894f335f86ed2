"""Fixtures of the client tests: a recording HTTP server, dead and silent ports, the CLI runner.

Everything listens on 127.0.0.1 only. The CLI runners, ``run_cli`` and ``run_cli_process``, are
the whole suite's (``tests/conftest.py``).
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer

import pytest

from tests.client.support import Recorder, make_handler
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
def silent_url() -> Iterator[str]:
    """A base URL that accepts connections (kernel backlog) but never answers."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        sock.listen(8)
        yield f"http://{LOOPBACK}:{sock.getsockname()[1]}"
