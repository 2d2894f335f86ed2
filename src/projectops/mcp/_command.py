"""``projectops mcp``: the tool server's command, which :mod:`projectops.cli` composes into the
program (docs/mcp.md). It imports the ``mcp`` SDK only when it runs."""

from __future__ import annotations

import argparse
import os

from projectops.client import DEFAULT_RETRIES
from projectops.conventions import API_KEY_ENV, BASE_URL_ENV
from projectops.mcp._limits import (
    DEFAULT_MAX_SESSIONS,
    DEFAULT_SESSION_IDLE_TIMEOUT,
    MIN_TOKEN_CHARS,
    TOKEN_ENV,
)
from projectops.program.commands import (
    DEFAULT_DRAIN_TIMEOUT,
    Command,
    add_listening,
    add_retries,
    is_loopback,
    time_in_seconds,
    warn_if_every_interface,
    whole_number,
)
from projectops.program.failures import UsageError

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "command"]

#: Address and TCP port ``projectops mcp --http`` listens on by default: loopback only.
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
_HTTP_ONLY = (
    "--host",
    "--port",
    "--drain-timeout",
    "--bearer-token",
    "--max-sessions",
    "--session-idle-timeout",
)


def command() -> Command:
    """The ``mcp`` command of ``projectops``: stdio, or Streamable HTTP with ``--http``
    (extra ``mcp``; docs/mcp.md).

    Returns:
        The command, for :func:`projectops.cli.build_parser`.
    """
    what = "run the MCP tool server (one tool per operation) over stdio or HTTP"
    return Command("mcp", what, _configure, _run, connection=True, extra="mcp")


def _configure(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--http", action="store_true", help="serve Streamable HTTP on HOST:PORT, not stdio")
    add_listening(parser, host=DEFAULT_HOST, default_port=DEFAULT_PORT, only_with="--http")
    add(
        "--max-result-bytes",
        metavar="BYTES",
        type=whole_number,
        help="the largest tool result (1 MiB)",
    )
    add(
        "--bearer-token",
        metavar="TOKEN",
        help=f"with --http, the token every request must carry (Authorization: Bearer TOKEN, "
        f"at least {MIN_TOKEN_CHARS} visible ASCII characters); default: ${TOKEN_ENV}, which "
        "keeps it out of the process list. Without one the server listens on loopback only",
    )
    add(
        "--max-sessions",
        metavar="N",
        type=whole_number,
        help=f"with --http, sessions open at once at most; one more initialize gets 503 "
        f"(default: {DEFAULT_MAX_SESSIONS})",
    )
    add(
        "--session-idle-timeout",
        metavar="SECONDS",
        type=time_in_seconds,
        help="with --http, close a session with no request in flight and no open stream after "
        f"this long (default: {DEFAULT_SESSION_IDLE_TIMEOUT:g})",
    )
    add_retries(parser, DEFAULT_RETRIES)
    parser.epilog = (
        f"Tool calls send {API_KEY_ENV} to {BASE_URL_ENV}; without a key the server still "
        "lists its tools, and calls fail saying so. Logs go to stderr."
    )


def _run(args: argparse.Namespace) -> int:
    from projectops.mcp._server import DEFAULT_MAX_RESULT_BYTES, run

    host = args.host
    if host is None:
        host = DEFAULT_HOST
    token = _bearer_token(args)
    if not args.http:
        for flag in _HTTP_ONLY:
            dest = flag[2:].replace("-", "_")  # --drain-timeout: drain_timeout
            if getattr(args, dest) is not None:
                raise UsageError(f"{flag} applies only with --http (stdio has no address)")
    elif token is None and not is_loopback(host):
        raise UsageError(
            f"--host {host}: without a bearer token (--bearer-token or {TOKEN_ENV}) the server "
            "listens on a loopback address only"
        )
    else:
        warn_if_every_interface(host)
    # Flags left out are None: their defaults are filled here (--port is never 0 with --http).
    drain_timeout = args.drain_timeout
    if drain_timeout is None:
        drain_timeout = DEFAULT_DRAIN_TIMEOUT
    return run(
        http=args.http,
        host=host,
        port=args.port or DEFAULT_PORT,
        base_url=args.base_url,
        timeout=args.timeout,
        max_response_bytes=args.max_response_bytes,
        retries=args.retries,
        max_result_bytes=args.max_result_bytes or DEFAULT_MAX_RESULT_BYTES,
        drain_timeout=drain_timeout,
        token=token,
        max_sessions=args.max_sessions or DEFAULT_MAX_SESSIONS,
        session_idle_timeout=args.session_idle_timeout or DEFAULT_SESSION_IDLE_TIMEOUT,
    )


def _bearer_token(args: argparse.Namespace) -> str | None:
    """The bearer token of ``--http``: ``--bearer-token``, else ``$PROJECTOPS_MCP_TOKEN``;
    ``None``: neither. Raises UsageError: too short, or not visible ASCII (a header carries it)."""
    token = args.bearer_token or os.environ.get(TOKEN_ENV) or None
    if token is None or not args.http:
        return None
    visible = token.isascii() and token.isprintable() and " " not in token
    if len(token) < MIN_TOKEN_CHARS or not visible:
        raise UsageError(
            f"the bearer token (--bearer-token or {TOKEN_ENV}) must be at least "
            f"{MIN_TOKEN_CHARS} visible ASCII characters without spaces"
        )
    return token
