"""``projectops mcp --http`` plus the conformance suite's fixture tools (test harness).

    python tests/mcp/conformance_server.py --host 127.0.0.1 --port N

The server is the one ``projectops mcp`` serves, built by the same
:func:`~projectops.client.mcp_server.create_server` and served by the same
:func:`~projectops.client.mcp_server.serve_http`, with the fixed-name tools of
``conformance_fixtures.py`` added, so that the suite's ``tools-call-*`` scenarios have the
tools they call. SERVICE_BACKEND_URL and SERVICE_API_KEY configure the operations' tools as
for ``projectops mcp``.
"""

from __future__ import annotations

import argparse
import sys

from conformance_fixtures import fixture_tools

from projectops.client import mcp_server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    mcp_server.configure_logging()
    server = mcp_server.create_server(extra_tools=fixture_tools())
    mcp_server.serve_http(server, args.host, args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
