"""The ``projectops`` program: ``python -m projectops`` and the ``projectops`` console script.

This entry module sits above the layers: it composes one parser from the client layer's commands
(:func:`projectops.cli._operations.commands`) and the server layer's
(:func:`projectops.mock._command.commands`), so client and server never import each other, and
it reports every failure through the one table of :mod:`projectops.client.failures`.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import projectops
from projectops import conformance, mock
from projectops.cli import _operations as cli
from projectops.client import failures
from projectops.client.failures import EXIT_INTERRUPTED, EXIT_USAGE, UsageError
from projectops.commands import Command, seconds, whole
from projectops.conventions import (
    API_KEY_ENV,
    BASE_URL_ENV,
    DEFAULT_BASE_URL,
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_MAX_RESPONSE_BYTES,
)

if TYPE_CHECKING:
    import httpx2 as httpx

__all__ = ["build_parser", "main"]

#: Exit code -> meaning, as the help's epilog shows it.
EXIT_CODES = {
    failures.EXIT_OK: "success",
    failures.EXIT_INTERNAL: "unexpected failure of the program itself",
    failures.EXIT_USAGE: f"usage error or invalid local input (also: {API_KEY_ENV} not set, "
    "or the --host/--port of a server cannot be bound; nothing was sent)",
    failures.EXIT_UNAUTHENTICATED: "the server answered 401 (API key missing or invalid)",
    failures.EXIT_BAD_REQUEST: "the server answered 400 (validation or business rule)",
    failures.EXIT_FAILURE: "no answer (network failure, time-out) or any other status",
    failures.EXIT_CONFORMANCE_FAILED: "conformance: a 'must' check failed, or --deadline "
    "stopped the run",
    failures.EXIT_INTERRUPTED: "interrupted (Ctrl-C)",
}


#: Where to read more, as the help's epilog lists it: page -> what it covers.
DOCS = {
    "README.md": "first steps: a call, the typed client, a server, a test, MCP",
    "docs/cli.md": "this program: commands, flags, output, exit codes",
    "docs/python.md": "the Python clients and their errors",
    "docs/server.md": "the server adapter, and running it in production",
    "docs/mock.md": "the mock server and testing: fixtures, the pytest plugin",
    "docs/conformance.md": "checking any server against the contract, in CI too",
    "docs/mcp.md": "the MCP tool server",
    "docs/schema.md": "the schema: adding an operation, stability",
}


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (reported by :func:`main` like every other error) that
    suggest the closest valid choice."""

    def error(self, message: str) -> Any:  # argparse declares NoReturn; raising satisfies it
        if "(see '" not in message:
            message += f" (see '{self.prog} --help')"
        raise UsageError(message)

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        # argparse's own message lists every choice; ours names the closest one and, for a
        # command, the help to read next.
        choices = action.choices
        if choices is None or value in choices:
            return
        suggestion = _closest(str(value), [str(choice) for choice in choices])
        if isinstance(action, argparse._SubParsersAction):
            hint = f"; did you mean {suggestion!r}?" if suggestion else ""
            see = f"{self.prog} {suggestion} --help" if suggestion else f"{self.prog} --help"
            raise UsageError(f"unknown command {value!r}{hint} (see '{see}')")
        hint = f"; did you mean {suggestion!r}?" if suggestion else ""
        listed = ", ".join(repr(str(choice)) for choice in choices)
        raise argparse.ArgumentError(action, f"invalid choice: {value!r}{hint} (one of {listed})")


def _closest(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate most like `word` (difflib's ratio of at least 0.6), if any."""
    matches = difflib.get_close_matches(word, list(candidates), n=1)
    return matches[0] if matches else None


class _Formatter(argparse.HelpFormatter):
    """Re-wraps each paragraph of a description on its own (proto comments have several)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "\n\n".join(
            super(_Formatter, self)._fill_text(p, width, indent) for p in text.split("\n\n")
        )


#: The options of :func:`_add_connection_options`: flag -> argparse dest.
_CONNECTION_OPTIONS = {
    "--base-url": "base_url",
    "--timeout": "timeout",
    "--max-response-bytes": "max_response_bytes",
}


def _add_connection_options(parser: argparse.ArgumentParser, *, top_level: bool) -> None:
    """``--base-url``, ``--timeout`` and ``--max-response-bytes``, on the program (before any
    command) and on each command that calls the service (:attr:`Command.connection`). Defaults
    are filled in by :func:`_check_connection_options`, so a value given before the command is
    not reset."""
    default = None if top_level else argparse.SUPPRESS
    parser.add_argument(
        "--base-url",
        metavar="URL",
        default=default,
        help=f"the service's base URL, its root without /api/mcp (default: ${BASE_URL_ENV} if "
        f"set and not empty; there is no default: `projectops mock-server` listens on "
        f"{DEFAULT_BASE_URL}); trailing slashes are "
        "ignored",
    )
    parser.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=seconds,
        default=default,
        help="seconds a call may take as a whole: connecting, sending and receiving the "
        f"complete answer (default: {DEFAULT_CALL_TIMEOUT:g})",
    )
    parser.add_argument(
        "--max-response-bytes",
        metavar="BYTES",
        type=whole,
        default=default,
        help="the largest answer body read, in bytes; a larger answer fails (exit 5) and is not "
        f"read further (default: {DEFAULT_MAX_RESPONSE_BYTES}, 32 MiB)",
    )


def _check_connection_options(namespace: argparse.Namespace, command: Command) -> None:
    """Refuse connection options and ``--retries`` given to a command they do nothing for;
    fill in the connection options' defaults for a command that calls the service."""
    for flag, dest in {**_CONNECTION_OPTIONS, "--retries": "retries"}.items():
        if getattr(namespace, dest, None) is None:
            continue
        why = _why_ignored(flag, command, namespace.command_parser)
        if why is not None:
            raise UsageError(f"{flag} does nothing for '{command.name}': {why}")
    if not command.connection:
        return
    if namespace.timeout is None:
        namespace.timeout = DEFAULT_CALL_TIMEOUT
    if namespace.max_response_bytes is None:
        namespace.max_response_bytes = DEFAULT_MAX_RESPONSE_BYTES


def _why_ignored(flag: str, command: Command, sub: argparse.ArgumentParser) -> str | None:
    """Why `flag` (a connection option or ``--retries``) does nothing for `command`, whose
    parser is `sub`; None when it applies, or is no such option."""
    if flag not in _CONNECTION_OPTIONS and flag != "--retries":
        return None
    if not command.connection:
        return "it does not call the service"
    if flag == "--retries" and flag not in sub._option_string_actions:
        return "it retries no call"
    return None


def _unknown_arguments(
    parser: argparse.ArgumentParser, namespace: argparse.Namespace, unknown: list[str]
) -> UsageError:
    """The error for arguments no parser took: the closest flag of the command, or why a
    connection option does not apply to it."""
    command: Command = namespace.command
    sub: argparse.ArgumentParser = namespace.command_parser
    first = unknown[0]
    flag = first.split("=", 1)[0]
    see = f"(see '{sub.prog} --help')"
    why = _why_ignored(flag, command, sub)
    if why is not None:
        return UsageError(f"{flag} does nothing for '{command.name}': {why} {see}")
    if flag.startswith("-"):
        options = [o for o in sub._option_string_actions if o.startswith("--")]
        suggestion = _closest(flag, options)
        hint = f"; did you mean {suggestion}?" if suggestion else ""
        return UsageError(f"unknown option {flag}{hint} {see}")
    return UsageError(f"unexpected argument {first!r} {see}")


def _all_commands(transport: httpx.BaseTransport | None) -> list[Command]:
    return [
        *cli.commands(transport),
        conformance.command(),
        conformance.proxy_command(),
        *mock.commands(),
    ]


def build_parser(transport: httpx.BaseTransport | None = None) -> argparse.ArgumentParser:
    """The parser of ``projectops``: every command of the client and server layers.

    Every subcommand's parsed namespace has ``command`` (its :class:`Command`) and
    ``command_parser`` (its parser).
    """
    epilog = "\n".join(
        [
            "environment:",
            f"  {API_KEY_ENV:<20} the project API key, sent with every call (never a flag)",
            f"  {BASE_URL_ENV:<20} the service's base URL (required; the mock server: "
            f"{DEFAULT_BASE_URL})",
            "",
            "exit codes:",
            *(f"  {code:<3} {meaning}" for code, meaning in sorted(EXIT_CODES.items())),
            "",
            "read more (in the projectops sources):",
            *(f"  {page:<20} {what}" for page, what in DOCS.items()),
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
    cli.add_retries(parser, top_level=True)
    subparsers = parser.add_subparsers(title="commands", metavar="<command>")
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
        sub.set_defaults(command=command, command_parser=sub)
    return parser


def _complete(parser: argparse.ArgumentParser) -> None:
    """Answer the shell's completion request (argcomplete's protocol) and exit; a no-op when
    argcomplete (the ``client`` extra) is not installed."""
    try:
        import argcomplete
    except ImportError:
        return
    argcomplete.autocomplete(parser)


def _report(line: str) -> None:
    from projectops.client.redaction import redact

    print(f"error: {redact(line)}", file=sys.stderr)


def main(argv: Sequence[str] | None = None, *, transport: httpx.BaseTransport | None = None) -> int:
    """Run ``projectops`` with `argv` (default ``sys.argv[1:]``); return the exit code.

    Args:
        argv: the arguments, without the program name.
        transport: an ``httpx.BaseTransport`` the operation commands send through
            instead of the network (in-process tests: ``httpx.MockTransport(handler)``).

    Never raises (``SystemExit`` of ``--help`` included): failures are one ``error: ...`` line
    on stderr and an exit code of :data:`EXIT_CODES` (0 success, 2 usage or local input,
    3 answer 401, 4 answer 400, 5 no answer or other status, 130 interrupted, 1 unexpected).
    """
    args = list(sys.argv[1:] if argv is None else argv)
    command: Command | None = None
    try:
        parser = build_parser(transport)
        if "_ARGCOMPLETE" in os.environ:  # the shell asks for completions (argcomplete)
            _complete(parser)
        namespace, unknown = parser.parse_known_args(args)
        command = getattr(namespace, "command", None)
        if command is None:  # a bare `projectops` shows its help, as git and gh do
            if args:
                raise UsageError(f"a command is required (see '{parser.prog} --help')")
            parser.print_help()
            return failures.EXIT_OK
        if unknown:
            raise _unknown_arguments(parser, namespace, unknown)
        _check_connection_options(namespace, command)
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
