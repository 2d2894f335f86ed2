"""A ``create_app`` app whose ``get_release_details`` takes its time, for graceful-stop tests
that serve it in another process.

``SLOW_APP_SLEEP`` (seconds, default 2) is how long the handler sleeps; ``SLOW_APP_MARK``, if
set, is a file the handler creates when it starts, so the test knows the request is in flight.
Served by the documented deployment (``uvicorn --factory tests.server.slow_app:app_from_env``)
or, by :func:`run_mock_server`, through ``projectops mock-server``'s own runtime.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import cast

from starlette.applications import Starlette

from projectops import operation
from projectops.server import OperationsServiceHandler, RequestContext, create_app
from projectops.v1 import operations_pb2 as ops
from tests.synthetic import minimal_response

#: The API key the app accepts.
KEY = "slow-key"


class _Slow:
    def __init__(self, sleep: float, mark: str | None) -> None:
        self.sleep, self.mark = sleep, mark

    async def get_release_details(
        self, request: ops.GetReleaseDetailsRequest, context: RequestContext[str]
    ) -> ops.GetReleaseDetailsResponse:
        if self.mark:
            Path(self.mark).touch()
        await asyncio.sleep(self.sleep)
        response = minimal_response(operation("get_release_details"))  # keeps the rules
        response.summary.release.version = request.version
        return response


def app_from_env() -> Starlette:
    """The slow app, configured from ``SLOW_APP_SLEEP`` and ``SLOW_APP_MARK``."""
    sleep = float(os.environ.get("SLOW_APP_SLEEP", "2"))
    # Only get_release_details is implemented; the rest answer 501.
    service = cast(OperationsServiceHandler, _Slow(sleep, os.environ.get("SLOW_APP_MARK") or None))
    return create_app(service, authenticate=lambda key: "p" if key == KEY else None)


def run_mock_server(argv: list[str]) -> int:
    """Serve the slow app as ``projectops mock-server`` serves (``projectops.program.commands``: its
    listening socket and its uvicorn runtime); ``argv``: ``--host H --port P --drain-timeout S``."""
    from projectops.program.commands import listen, serve_app

    args = dict(zip(argv[::2], argv[1::2], strict=True))
    sock = listen(args["--host"], int(args["--port"]))
    return 0 if serve_app(app_from_env(), sock, drain_timeout=int(args["--drain-timeout"])) else 1


if __name__ == "__main__":
    sys.exit(run_mock_server(sys.argv[1:]))
