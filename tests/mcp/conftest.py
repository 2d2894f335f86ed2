"""Fixtures of the MCP tool server tests (helpers in ``mcp_support.py``)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.mcp.support import NpmTools, OpenStdio, StdioSession, install_npm_tools, stdio_session


@pytest.fixture(scope="session")
def npm_tools() -> NpmTools:
    """The pinned npm tools (Inspector, conformance suite, Node 22), installed if need be."""
    return install_npm_tools()


@pytest.fixture
def open_stdio(tmp_path: Path) -> Iterator[OpenStdio]:
    """Factory: ``open_stdio(env) -> StdioSession`` to a new ``projectops mcp`` over stdio;
    every session is closed when the test ends."""
    numbers = itertools.count()
    with ExitStack() as stack:

        def open_(env: Mapping[str, str]) -> StdioSession:
            errlog = tmp_path / f"mcp-server-{next(numbers)}.log"
            return stack.enter_context(stdio_session(env, errlog))

        yield open_
