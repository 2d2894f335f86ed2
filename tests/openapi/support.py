"""What the OpenAPI tests share: the apps under test, a real uvicorn socket, Chromium.

The mock app is the mock server's own (:func:`projectops.mock.create_mock_app`, which
serves the docs routes); the error app adds the docs routes to a ``create_app`` app the way the
docs module tells server packages to.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette

import projectops
from projectops.errors import ERROR_CLASSES, Code
from projectops.mock import create_mock_app, load_fixtures
from projectops.openapi import ERROR_CASES, OUTSIDE_OPERATIONS
from projectops.program.commands import listen, listen_url
from projectops.registry import operations
from projectops.server import create_app
from projectops.server.docs import docs_routes

#: The mock server's demo key (README).
DEMO_KEY = "demo-key"
#: Where Debian's package puts Chromium (scripts/install-chromium installs it).
CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))


def with_docs(app: Starlette) -> Starlette:
    """`app` with the docs routes added (``projectops.server.docs`` tells how)."""
    app.router.routes.extend(docs_routes())
    return app


def mock_app() -> Starlette:
    """The mock server's app on its default fixtures (it serves the docs routes itself)."""
    return create_mock_app(load_fixtures())


def error_app(make_error: Callable[[], Exception]) -> Starlette:
    """``create_app`` whose every rpc raises ``make_error()``; the key ``demo-key``."""

    def raise_it(*_: Any) -> Any:
        raise make_error()

    def authenticate(key: str) -> str | None:
        return "demo" if key == DEMO_KEY else None

    service = type("Raising", (), {op.name: raise_it for op in operations()})()
    return with_docs(create_app(service, authenticate=authenticate))


def api_error_classes() -> dict[str, type[projectops.ApiError]]:
    """Code -> exception class, for every code of the operations' error responses (the error
    table but for the 404 and 405 of no operation, which the document states apart)."""
    return {
        case.code: ERROR_CLASSES[Code(case.code)]
        for case in ERROR_CASES
        if case not in OUTSIDE_OPERATIONS
    }


@contextmanager
def serving(app: Starlette) -> Iterator[str]:
    """Serve `app` with uvicorn on 127.0.0.1 (a free port) in a thread; yield its base URL.

    The socket is the mock server's own (:func:`projectops.program.commands.listen`): asyncio turns
    Nagle's algorithm off only on sockets made with ``IPPROTO_TCP``, and with it on every
    answer waited 40 ms for the client's delayed ACK.
    """
    sock = listen("127.0.0.1", 0, backlog=128)
    config = uvicorn.Config(app, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield listen_url(sock)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def chromium() -> Path:
    """The Chromium binary; fails (never skips) when it is missing.

    Raises:
        AssertionError: no executable at ``$CHROMIUM`` (default ``/usr/bin/chromium``);
            ``scripts/install-chromium`` installs it.
    """
    found = CHROMIUM if CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK) else None
    if found is None and "CHROMIUM" not in os.environ:
        which = shutil.which("chromium")
        found = Path(which) if which else None
    assert found is not None, (
        f"{CHROMIUM} is missing: run scripts/install-chromium (apt-get install chromium)"
    )
    return found


def dump_dom(
    url: str, profile: str, *, budget_ms: int, flags: Sequence[str] = ()
) -> subprocess.CompletedProcess[str]:
    """Headless Chromium's DOM of the page at `url` after `budget_ms` of virtual time, with
    `profile` as its user-data directory and `flags` added; stopped after 120 s.

    Raises:
        AssertionError: no Chromium (see :func:`chromium`).
    """
    args = [
        str(chromium()),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        *flags,
        f"--user-data-dir={profile}",
        f"--virtual-time-budget={budget_ms}",
        "--dump-dom",
        url,
    ]
    return subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)
