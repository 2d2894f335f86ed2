"""The ``projectops`` program (extra ``client``): one command per operation, composed with the
commands of the mock server, the conformance runner and the MCP tool server (docs/cli.md)."""

from projectops.cli._main import build_parser, main

__all__ = ["build_parser", "main"]
