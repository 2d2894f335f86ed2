"""The ``projectops mcp`` and ``projectops schema`` subcommands (issue 4).

Registered on the CLI with :func:`projectops.client.cli.add_command` when this module is
imported (it is listed in :data:`projectops.client.cli.COMMAND_MODULES`). Importing it is
cheap and needs only the ``client`` extra: ``schema`` uses nothing but the core, and ``mcp``
imports :mod:`projectops.client.mcp_server` (the ``mcp`` extra) only when it runs; without that
extra it exits 2 with one line naming the extra.

- ``projectops mcp [--http [--host H] [--port N]]``: the MCP tool server, over stdio or
  Streamable HTTP (see :mod:`projectops.client.mcp_server`).
- ``projectops schema <tool-name> [--output]``: prints the JSON Schema of the tool's input
  (its request message) or, with ``--output``, of its output (its response message), indented;
  the top level is the object schema itself. These are exactly the tool server's
  ``inputSchema`` and ``outputSchema``.
"""

from __future__ import annotations

import argparse
import json
import sys

from projectops import API_KEY_ENV, BASE_URL_ENV, json_schema, operation, operations
from projectops.client.cli import EXIT_OK, EXIT_USAGE, add_command

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT"]

#: Address ``projectops mcp --http`` binds to by default: loopback only.
DEFAULT_HOST = "127.0.0.1"
#: TCP port ``projectops mcp --http`` listens on by default.
DEFAULT_PORT = 8765

_MCP_EXTRA = "mcp"


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = 0
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"expected a TCP port from 1 to 65535, got {text!r}")
    return port


def _configure_mcp(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--http", action="store_true",
        help="serve Streamable HTTP on HOST:PORT instead of stdio (the endpoint's URL is "
             "logged at start)")
    parser.add_argument(
        "--host", default=DEFAULT_HOST,
        help=f"address to bind with --http (default: {DEFAULT_HOST}, loopback only); Host and "
             "Origin headers must name a loopback address or this host (DNS-rebinding "
             "protection)")
    parser.add_argument("--port", type=_port, default=DEFAULT_PORT,
                        help=f"TCP port to listen on with --http (default: {DEFAULT_PORT})")
    parser.epilog = (f"Each tool call reads {API_KEY_ENV} (the project API key) and "
                     f"{BASE_URL_ENV}; without a key the server still starts and lists its "
                     "tools, and calls fail with a message saying so. Logs go to stderr.")


def _run_mcp(args: argparse.Namespace) -> int:
    try:
        from projectops.client import mcp_server
    except ImportError as exc:
        print(f"error: projectops mcp needs the '{_MCP_EXTRA}' extra ({exc.name or exc} is not "
              f"installed): pip install 'projectops[{_MCP_EXTRA}]'", file=sys.stderr)
        return EXIT_USAGE
    return mcp_server.run(http=args.http, host=args.host, port=args.port,
                          base_url=args.base_url, timeout=args.timeout)


def _configure_schema(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("tool", metavar="TOOL", choices=[op.tool_name for op in operations()],
                        help="the tool (operation) name: "
                             + ", ".join(op.tool_name for op in operations()))
    parser.add_argument("--output", action="store_true",
                        help="print the output schema (the response) instead of the input "
                             "schema (the request)")


def _run_schema(args: argparse.Namespace) -> int:
    op = operation(args.tool)
    schema = json_schema.output_schema(op) if args.output else json_schema.input_schema(op)
    print(json.dumps(schema, indent=2))
    return EXIT_OK


add_command("mcp", "run the MCP tool server (one tool per operation) over stdio or HTTP",
            _configure_mcp, _run_mcp)
add_command("schema", "print the JSON Schema of a tool's input (or, with --output, output)",
            _configure_schema, _run_schema)
