"""The ``projectops`` program: one parser composed of the commands of the operations
(:mod:`projectops.cli._operations`) and of the features' public faces (conformance, proxy, mock
server); every failure is reported through the one table of :mod:`projectops.program.failures`."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable, Sequence
from functools import partial
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any

import projectops
from projectops import API_KEY_ENV, BASE_URL_ENV, DEFAULT_BASE_URL
from projectops.cli import _operations
from projectops.client import DEFAULT_RETRIES
from projectops.conventions import DEFAULT_CALL_TIMEOUT, DEFAULT_MAX_RESPONSE_BYTES
from projectops.program import failures
from projectops.program.commands import Command, add_retries, time_in_seconds, whole_number
from projectops.program.failures import UsageError
from projectops.registry import REGISTRY, Registry

if TYPE_CHECKING:
    import httpx2

__all__ = ["build_parser", "main"]

#: Exit code -> meaning, as the help's epilog shows it.
EXIT_CODES = {
    failures.EXIT_OK: "success",
    failures.EXIT_INTERNAL: "unexpected failure of the program itself",
    failures.EXIT_USAGE: f"usage or local input ({API_KEY_ENV} unset, a port busy): nothing sent",
    failures.EXIT_UNAUTHENTICATED: "the server answered 401 (API key missing or invalid)",
    failures.EXIT_BAD_REQUEST: "the server answered 400 (validation or business rule)",
    failures.EXIT_FAILURE: "no answer (network failure, time-out) or any other status",
    failures.EXIT_CONFORMANCE_FAILED: "conformance: a 'must' check failed, or --deadline hit",
    failures.EXIT_INTERRUPTED: "interrupted (Ctrl-C)",
}

#: Where to read more, as the help's epilog lists it (in the projectops sources).
_PAGES = "cli python server mock conformance mcp schema".split()
DOCS = ("README.md", *(f"docs/{page}.md" for page in _PAGES))


class _Parser(argparse.ArgumentParser):
    """One-line errors (reported by :func:`main`) that suggest the closest valid choice."""

    def error(self, message: str) -> Any:  # argparse declares NoReturn; raising satisfies it
        see = "" if "(see '" in message else f" (see '{self.prog} --help')"
        raise UsageError(message + see)

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        choices = action.choices
        if choices is None or value in choices:
            return
        suggestion = _closest(str(value), map(str, choices))
        hint = f"; did you mean {suggestion!r}?" if suggestion else ""
        if isinstance(action, argparse._SubParsersAction):
            see = f"{self.prog} {suggestion} --help" if suggestion else f"{self.prog} --help"
            raise UsageError(f"unknown command {value!r}{hint} (see '{see}')")
        listed = ", ".join(repr(str(choice)) for choice in choices)
        raise argparse.ArgumentError(action, f"invalid choice: {value!r}{hint} (one of {listed})")


def _closest(word: str, candidates: Iterable[str]) -> str | None:
    import difflib  # only a mistyped command, choice or flag pays for it

    # Flags are compared without the dashes they all share: with them, "--verbose" is close
    # enough to "--version" (0.67 > difflib's 0.6), without them it is not (0.57).
    names = {candidate.lstrip("-"): candidate for candidate in candidates}
    matches = difflib.get_close_matches(word.lstrip("-"), names, n=1)
    return names[matches[0]] if matches else None


def _unknown_option(flag: str, parser: argparse.ArgumentParser) -> UsageError:
    """The error of an option `parser` does not take, naming its closest long option (another
    than `flag`: the same option can only be unknown where it was given, before the command)."""
    if flag in parser._option_string_actions:  # `projectops --compact list-rum-environments`
        return UsageError(
            f"{flag} is an option of '{parser.prog}': put it after the command "
            f"(see '{parser.prog} --help')"
        )
    suggestion = _closest(flag, [o for o in parser._option_string_actions if o[:2] == "--"])
    hint = f"; did you mean {suggestion}?" if suggestion else ""
    return UsageError(f"unknown option {flag}{hint} (see '{parser.prog} --help')")


class _Formatter(argparse.HelpFormatter):
    """Re-wraps each paragraph of a description on its own (proto comments have several)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        fill = super()._fill_text
        return "\n\n".join(fill(paragraph, width, indent) for paragraph in text.split("\n\n"))


#: The options only a command that calls the service takes.
_CALL_FLAGS = ("--base-url", "--timeout", "--max-response-bytes", "--retries")


def _add_connection_options(
    parser: argparse.ArgumentParser,
    *,
    top_level: bool,
) -> None:
    """On the program and on each command that calls the service; a command's own flag has no
    default, so that it does not reset a value given before it (:func:`_check_options`)."""
    add = partial(parser.add_argument, default=None if top_level else argparse.SUPPRESS)
    add("--base-url", metavar="URL", help=f"the service's root (default: ${BASE_URL_ENV})")
    timeout = f"seconds a call may take, answer included (default: {DEFAULT_CALL_TIMEOUT:g})"
    add("--timeout", metavar="SECONDS", type=time_in_seconds, help=timeout)
    largest = f"the largest answer read (default: {DEFAULT_MAX_RESPONSE_BYTES}, 32 MiB)"
    add("--max-response-bytes", metavar="BYTES", type=whole_number, help=largest)


def _why_ignored(
    flag: str,
    command: Command,
    sub: argparse.ArgumentParser,
) -> str | None:
    """Why `flag` (of :data:`_CALL_FLAGS`) does nothing for `command` (parser `sub`)."""
    if flag not in _CALL_FLAGS:
        return None
    if not command.connection:
        return "it does not call the service"
    if flag not in sub._option_string_actions:  # only --retries: build_parser adds the others
        return "it retries no call"
    return None


def _check_options(args: argparse.Namespace, unknown: list[str]) -> None:
    """Refuse arguments no parser took (naming the closest flag) and call options given to a
    command they do nothing for; fill in the connection options' defaults."""
    command: Command = args.command
    sub: argparse.ArgumentParser = args.command_parser
    see = f"(see '{sub.prog} --help')"
    if unknown:
        flag = unknown[0].split("=", 1)[0]
        why = _why_ignored(flag, command, sub)
        if why is not None:
            raise UsageError(f"{flag} does nothing for '{command.name}': {why} {see}")
        if not flag.startswith("-"):
            raise UsageError(f"unexpected argument {unknown[0]!r} {see}")
        raise _unknown_option(flag, sub)
    for flag in _CALL_FLAGS:
        given = getattr(args, flag[2:].replace("-", "_")) is not None
        why = _why_ignored(flag, command, sub)
        if given and why is not None:
            raise UsageError(f"{flag} does nothing for '{command.name}': {why}")
    if command.connection:  # both are positive when given
        args.timeout = args.timeout or DEFAULT_CALL_TIMEOUT
        args.max_response_bytes = args.max_response_bytes or DEFAULT_MAX_RESPONSE_BYTES
        if args.retries is None:  # 0 is given: no retry
            args.retries = DEFAULT_RETRIES


def _commands(
    transport: httpx2.BaseTransport | None,
    argv: Sequence[str],
    registry: Registry,
) -> list[Command]:
    """The commands a parser of `argv` needs: the command `argv` names first when it is one of
    the program's own, as argparse finds it (each option before it without ``=`` takes the next
    argument as its value); every command when `argv` names none, a feature's or asks for help.
    """
    own = _operations.commands(transport, registry)
    rest = iter(argv)
    for arg in rest:
        if arg in ("-h", "--help"):
            break
        if not arg.startswith("-"):
            named = [command for command in own if command.name == arg]
            if named:
                return named
            break
        if "=" not in arg:
            next(rest, None)  # the value of --base-url, --timeout, ... (or of a wrong option)
    from projectops import conformance, mcp, mock  # only their commands, not their machinery

    return [
        *own,
        mcp.command(),
        conformance.command(),
        conformance.proxy_command(),
        *mock.commands(),
    ]


def build_parser(
    transport: httpx2.BaseTransport | None = None,
    *,
    argv: Sequence[str] | None = None,
    registry: Registry = REGISTRY,
) -> argparse.ArgumentParser:
    """The argument parser of ``projectops``: the operation commands and those the features
    contribute (docs/cli.md).

    Args:
        transport: an ``httpx2.BaseTransport`` the operation commands send through instead of
            the network (tests); ``None`` (the default): the network.
        argv: the arguments the parser is for: when they name one of the program's own
            commands (an operation, ``describe``, ...), the parser holds that command only, so
            a call imports no feature and builds no other command's arguments; ``None`` (the
            default): every command.
        registry: the operations that get a command; :data:`projectops.registry.REGISTRY`
            by default.

    Returns:
        The parser; each command's namespace has ``command`` (its
        :class:`~projectops.program.commands.Command`) and ``command_parser``.
    """
    epilog = [
        "environment:",
        f"  {API_KEY_ENV:<20} the project API key, sent with every call (never a flag)",
        f"  {BASE_URL_ENV:<20} the service's base URL (required; the mock server: "
        f"{DEFAULT_BASE_URL})",
        "\nexit codes:",
        *(f"  {code:<3} {meaning}" for code, meaning in sorted(EXIT_CODES.items())),
        # A wheel holds the docstrings, not docs/: the reference is pydoc's; the guides are the
        # sources' (the sdist holds them; in a checkout, ./scripts/docs serves them as a site).
        "\nread more:",
        "  projectops describe [<command>]     an operation's fields, from the installed schema",
        "  python -m pydoc projectops.client   the Python API reference (installed docstrings)",
        f"  in the projectops sources (the sdist): {DOCS[0]} first, then {', '.join(DOCS[1:3])},",
        f"  {', '.join(DOCS[3:])};",
        "  (in a checkout, ./scripts/docs serves them with the API reference as a site)",
    ]
    parser = _Parser(
        prog="projectops",
        allow_abbrev=False,  # `--json` is not `--json-input`: an option is given whole
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n".join(epilog),
        description="Command-line client of the Project-Scoped Operations API: one command per "
        "operation; prints the response JSON on stdout.",
    )
    parser.add_argument(
        "-V", "--version", action="version", version=f"%(prog)s {projectops.__version__}"
    )
    _add_connection_options(parser, top_level=True)
    add_retries(parser, DEFAULT_RETRIES, top_level=True)
    subparsers = parser.add_subparsers(title="commands", metavar="<command>")
    for command in _commands(transport, argv or (), registry):
        sub = subparsers.add_parser(
            command.name,
            help=command.help.replace("%", "%%"),
            description=command.description or command.help,
            formatter_class=_Formatter,
            allow_abbrev=False,
        )
        command.configure(sub)
        if command.connection:
            _add_connection_options(sub, top_level=False)
        sub.set_defaults(command=command, command_parser=sub)
    return parser


def main(
    argv: Sequence[str] | None = None,
    *,
    transport: httpx2.BaseTransport | None = None,
    registry: Registry = REGISTRY,
) -> int:
    """Run ``projectops`` (docs/cli.md). Never raises: a failure is one ``error: ...`` line on
    stderr and its exit code.

    Args:
        argv: the arguments; ``None`` (the default): ``sys.argv[1:]``.
        transport: an ``httpx2.BaseTransport`` the operation commands send through instead of
            the network (tests); ``None`` (the default): the network.
        registry: the operations that get a command; :data:`projectops.registry.REGISTRY`
            by default (a test's schema in the tests).

    Returns:
        The exit code (docs/contract.md §5.6; ``projectops --help`` lists them): 0 success, 1 a
        failure of the program, 2 usage or invalid local input, 3 a 401 answer, 4 a 400 answer,
        5 no response or another status, 6 a ``must`` conformance check failed, 130 interrupted.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    command: Command | None = None
    try:
        parser = build_parser(transport, argv=args, registry=registry)
        if "_ARGCOMPLETE" in os.environ and find_spec("argcomplete"):  # Tab in the shell
            import argcomplete

            argcomplete.autocomplete(parser)
        namespace, unknown = parser.parse_known_args(args)
        command = getattr(namespace, "command", None)
        if command is None:  # a bare `projectops` shows its help, as git and gh do
            flags = [arg.split("=", 1)[0] for arg in unknown if arg.startswith("-")]
            if flags:  # not silently dropped: `projectops --verbose` is a mistake to name
                raise _unknown_option(flags[0], parser)
            if args:
                raise UsageError(f"a command is required (see '{parser.prog} --help')")
            parser.print_help()
            return failures.EXIT_OK
        _check_options(namespace, unknown)
        code = int(command.run(namespace))
        sys.stdout.flush()
        return code
    except SystemExit as exc:  # --help and --version exit 0 through argparse
        return exc.code if isinstance(exc.code, int) else failures.EXIT_USAGE * bool(exc.code)
    except KeyboardInterrupt:
        return failures.EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader went away (`| head`): how pipes end, not a failure
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return failures.EXIT_OK
    except ImportError as exc:
        extra = command.extra if command is not None and command.extra else "client"
        name = command.name if command is not None else "this command"
        line = (
            f"projectops {name} needs the '{extra}' extra ({exc.name or exc} is not "
            f"installed): pip install 'projectops[{extra}]'"
        )
        code = failures.EXIT_USAGE
    except Exception as exc:
        row = failures.failure(exc)
        line, _ = row.format(exc, command.name if command is not None else "projectops")
        code = row.exit_code
    # No redaction here: the key never enters our messages, outside text was redacted on entry.
    print(f"error: {line}", file=sys.stderr)
    return code
