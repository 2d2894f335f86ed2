"""Every private part of a dependency we lean on (ARCHITECTURE.md, "Private parts we lean on")
still exists and is still called, so an upstream change fails here instead of silently removing
a protection."""

from __future__ import annotations

import argparse
import inspect

import pytest

# sse-starlette (projectops.mcp._server.serve_http)


def test_sse_starlette_drain_switches_of_mcp_http() -> None:
    """serve_http turns sse-starlette's automatic drain off and ends the streams itself by
    setting AppStatus.should_exit; both must still exist and still be what the streams read."""
    sse = pytest.importorskip("sse_starlette.sse")
    status = sse.AppStatus
    assert callable(status.disable_automatic_graceful_drain)
    assert isinstance(status.should_exit, bool)
    assert "should_exit" in inspect.getsource(sse.EventSourceResponse)
    assert "disable_automatic_graceful_drain" in inspect.getsource(status)


# argparse (projectops.cli._main: _Parser, _Formatter), through the program's parser


def test_argparse_overrides_suggest_the_closest_choice_and_keep_paragraphs() -> None:
    from projectops.cli import build_parser
    from projectops.program.failures import UsageError

    parser = build_parser()
    with pytest.raises(UsageError, match="did you mean 'openapi'"):
        parser.parse_args(["opneapi"])
    with pytest.raises(UsageError, match="did you mean 'yaml'"):
        parser.parse_args(["openapi", "--format", "yml"])
    commands = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert isinstance(parser._subparsers._group_actions[0], argparse._SubParsersAction)  # type: ignore[union-attr]
    formatter = commands["openapi"].formatter_class
    assert formatter._fill_text  # overridden: each paragraph of a description wrapped alone
    text = "First paragraph.\n\nSecond paragraph."
    paragraphs = argparse.ArgumentParser(prog="p", description=text, formatter_class=formatter)
    assert text in paragraphs.format_help()
    assert "--format" in commands["openapi"]._option_string_actions
