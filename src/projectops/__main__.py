"""The ``projectops`` program: ``python -m projectops`` and the ``projectops`` console script.

This entry module sits above the layers: it composes one parser from the client layer's commands
(:func:`projectops.client.cli.commands`) and the server layer's
(:func:`projectops.server.commands.commands`), so client and server never import each other, and
it reports every failure through the one table of :mod:`projectops.client.failures`.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import projectops
from projectops.client import cli, failures
from projectops.client.failures import EXIT_INTERRUPTED, EXIT_USAGE, UsageError
from projectops.commands import Command
from projectops.conventions import API_KEY_ENV, BASE_URL_ENV, DEFAULT_BASE_URL
from projectops.server import commands as server_commands

if TYPE_CHECKING:
    import httpx

__all__ = ["build_parser", "main"]

#: Exit code -> meaning, as the help's epilog shows it.
EXIT_CODES = {
    failures.EXIT_OK: "success",
    failures.EXIT_INTERNAL: "unexpected failure of the program itself",
    failures.EXIT_USAGE: f"usage error or invalid local input (also: {API_KEY_ENV} not set; "
    "nothing was sent)",
    failures.EXIT_UNAUTHENTICATED: "the server answered 401 (API key missing or invalid)",
    failures.EXIT_BAD_REQUEST: "the server answered 400 (validation or business rule)",
    failures.EXIT_FAILURE: "no answer (network failure, time-out) or any other status",
    failures.EXIT_INTERRUPTED: "interrupted (Ctrl-C)",
}


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors, reported by :func:`main` like every other error."""

    def error(self, message: str) -> Any:  # argparse declares NoReturn; raising satisfies it
        raise UsageError(f"{message} (see '{self.prog} --help')")


class _Formatter(argparse.HelpFormatter):
    """Re-wraps each paragraph of a description on its own (proto comments have several)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "\n\n".join(
            super(_Formatter, self)._fill_text(p, width, indent) for p in text.split("\n\n")
        )


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def _add_connection_options(parser: argparse.ArgumentParser, *, top_level: bool) -> None:
    # On subcommands the defaults are SUPPRESS, so a value given before the subcommand stays.
    base_url: dict[str, Any] = {"default": None if top_level else argparse.SUPPRESS}
    timeout: dict[str, Any] = {"default": 30.0 if top_level else argparse.SUPPRESS}
    parser.add_argument(
        "--base-url",
        metavar="URL",
        **base_url,
        help=f"the service's base URL (default: ${BASE_URL_ENV}, else {DEFAULT_BASE_URL}, the "
        "mock server); trailing slashes are ignored",
    )
    parser.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=_seconds,
        **timeout,
        help="seconds to wait for connecting, sending and receiving each (default: 30)",
    )


def _all_commands(transport: httpx.AsyncBaseTransport | None) -> list[Command]:
    return [*cli.commands(transport), *server_commands.commands()]


def build_parser(transport: httpx.AsyncBaseTransport | None = None) -> argparse.ArgumentParser:
    """The parser of ``projectops``: every command of the client and server layers.

    Every subcommand's parsed namespace has ``command`` (its :class:`Command`).
    """
    epilog = "\n".join(
        [
            "environment:",
            f"  {API_KEY_ENV:<20} the project API key, sent with every call (never a flag)",
            f"  {BASE_URL_ENV:<20} the service's base URL (default {DEFAULT_BASE_URL})",
            "",
            "exit codes:",
            *(f"  {code:<3} {meaning}" for code, meaning in sorted(EXIT_CODES.items())),
        ]
    )
    parser = _Parser(
        prog="projectops",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=epilog,
        description="Command-line client of the Project-Scoped Operations API: one command per "
        "operation; prints the response JSON on stdout.",
    )
    parser.add_argument(
        "-V", "--version", action="version", version=f"%(prog)s {projectops.__version__}"
    )
    _add_connection_options(parser, top_level=True)
    subparsers = parser.add_subparsers(title="commands", metavar="<command>", required=True)
    for command in _all_commands(transport):
        sub = subparsers.add_parser(
            command.name,
            help=command.help.replace("%", "%%"),
            description=command.description or command.help,
            formatter_class=_Formatter,
        )
        command.configure(sub)
        if command.connection:
            _add_connection_options(sub, top_level=False)
        sub.set_defaults(command=command)
    return parser


def _report(line: str) -> None:
    from projectops.client.redaction import redact

    print(f"error: {redact(line)}", file=sys.stderr)


def main(
    argv: Sequence[str] | None = None, *, transport: httpx.AsyncBaseTransport | None = None
) -> int:
    """Run ``projectops`` with `argv` (default ``sys.argv[1:]``); return the exit code.

    Args:
        argv: the arguments, without the program name.
        transport: an ``httpx.AsyncBaseTransport`` the operation commands send through
            instead of the network (in-process tests: ``httpx.ASGITransport(app)``).

    Never raises (``SystemExit`` of ``--help`` included): failures are one ``error: ...`` line
    on stderr and an exit code of :data:`EXIT_CODES` (0 success, 2 usage or local input,
    3 answer 401, 4 answer 400, 5 no answer or other status, 130 interrupted, 1 unexpected).
    """
    args = list(sys.argv[1:] if argv is None else argv)
    command: Command | None = None
    try:
        namespace = build_parser(transport).parse_args(args)
        command = namespace.command
        code = int(command.run(namespace))
        sys.stdout.flush()
        return code
    except SystemExit as exc:  # --help and --version exit 0 through argparse
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else EXIT_USAGE)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): that is how pipes end, not a failure.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return failures.EXIT_OK
    except ImportError as exc:
        extra = command.extra if command is not None and command.extra else "client"
        name = command.name if command is not None else "this command"
        _report(
            f"projectops {name} needs the '{extra}' extra ({exc.name or exc} is not "
            f"installed): pip install 'projectops[{extra}]'"
        )
        return EXIT_USAGE
    except Exception as exc:
        row = failures.failure(exc)
        line, _ = row.format(exc, command.name if command is not None else "projectops")
        _report(line)
        return row.exit_code


if __name__ == "__main__":
    sys.exit(main())
