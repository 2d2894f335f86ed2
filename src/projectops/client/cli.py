"""The ``projectops`` command-line client (spec 4.1.7, 4.1.8, 5 and 7).

One subcommand per operation of the registry, named by its tool name
(``projectops get-release-details --version 1.2.0``). Its flags are the request's top-level
scalar, enum and repeated-scalar fields in kebab-case, with the fields' proto comments as help;
``--json-input`` takes the whole request as a JSON object (inline or ``@file``, ``@-`` for
stdin) and is merged over the flags, JSON winning. Message and map fields are set through
``--json-input`` only. Flag values go through :func:`projectops.from_json`, so they are read
and rejected exactly as a JSON body is.

stdout carries the response JSON (``projectops.to_json(msg, indent=2)``) and nothing else;
stderr one line per error. The API key comes only from ``SERVICE_API_KEY`` (a flag would show
it in process lists) and is never printed. Exit codes: see :data:`EXIT_CODES`.

Extra subcommands (e.g. ``mcp``, ``schema``) are registered by other modules with
:func:`add_command`: list the module in :data:`COMMAND_MODULES` and call :func:`add_command`
at its import. ``mock-server`` is dispatched by :mod:`projectops.__main__` before this parser
(client and server never import each other); the help's epilog names it.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, cast

from google.protobuf.descriptor import Descriptor, FieldDescriptor

import projectops
from projectops import (
    API_KEY_ENV,
    BASE_URL_ENV,
    DEFAULT_BASE_URL,
    ApiError,
    DeadlineExceeded,
    Operation,
    Unavailable,
    description,
    operations,
    to_json,
)
from projectops.client.http import Client, MissingApiKey, prepare_request, redact_api_key

__all__ = [
    "COMMAND_MODULES",
    "EXIT_CODES",
    "Command",
    "add_command",
    "build_parser",
    "main",
]

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_UNAUTHENTICATED = 3
EXIT_BAD_REQUEST = 4
EXIT_FAILURE = 5
EXIT_INTERRUPTED = 130

#: Exit code -> meaning, as the help's epilog shows it.
EXIT_CODES: Mapping[int, str] = {
    EXIT_OK: "success",
    EXIT_USAGE: f"usage error or invalid local input (also: {API_KEY_ENV} not set; nothing "
                "was sent)",
    EXIT_UNAUTHENTICATED: "the server answered 401 (API key missing or invalid)",
    EXIT_BAD_REQUEST: "the server answered 400 (validation or business rule)",
    EXIT_FAILURE: "no answer (network failure, time-out) or any other status",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C)",
    EXIT_INTERNAL: "unexpected failure of the CLI itself",
}

#: Modules imported before the parser is built; each registers its subcommands by calling
#: :func:`add_command` at import. Keep such modules cheap to import: import optional
#: dependencies (``mcp``, ...) inside the command's ``run``.
COMMAND_MODULES: list[str] = ["projectops.client.mcp_commands"]

#: Options every operation subcommand defines itself; a request field whose flag would be one
#: of these is settable through ``--json-input`` only.
_RESERVED_FLAGS = frozenset({"--help", "--json-input", "--base-url", "--timeout"})
_FIELD_DEST = "field:"  # argparse dest prefix of request fields: cannot clash with options


@dataclass(frozen=True)
class Command:
    """An extra subcommand of ``projectops`` (see :func:`add_command`)."""

    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


_COMMANDS: dict[str, Command] = {}


def add_command(name: str, help: str, configure: Callable[[argparse.ArgumentParser], None],
                run: Callable[[argparse.Namespace], int]) -> None:
    """Register the extra subcommand ``projectops <name>``.

    Args:
        name: the subcommand, e.g. ``"mcp"``; must not be an operation's tool name, nor
            ``operations`` or ``mock-server``.
        help: one line for the command listing of ``projectops --help``.
        configure: adds the subcommand's arguments to its parser (which already has
            ``--base-url`` and ``--timeout``; after parsing, ``args.base_url`` is ``None`` or
            the flag's value and ``args.timeout`` is seconds).
        run: runs the command with the parsed arguments and returns the exit code. Exceptions
            are reported as one stderr line with the exit code of :data:`EXIT_CODES`
            (``ApiError`` by status, ``ValueError``/``TypeError`` as 2, others as 1).

    Raises:
        ValueError: the name is taken.
    """
    taken = {op.tool_name for op in operations()} | {"operations", "mock-server"}
    if name in taken or name in _COMMANDS:
        raise ValueError(f"the subcommand name {name!r} is taken")
    _COMMANDS[name] = Command(name, help, configure, run)


class _UsageError(Exception):
    """Wrong arguments or invalid local input: exit 2, nothing was sent."""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors, reported by :func:`main` like every other error."""

    def error(self, message: str) -> Any:  # argparse declares NoReturn; raising satisfies it
        raise _UsageError(f"{message} (see '{self.prog} --help')")


class _Formatter(argparse.HelpFormatter):
    """Re-wraps each paragraph of a description on its own (proto comments have several)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "\n\n".join(super(_Formatter, self)._fill_text(p, width, indent)
                           for p in text.split("\n\n"))


def _help_text(text: str) -> str:
    return text.replace("%", "%%")  # argparse %-formats help strings


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def _add_connection_options(parser: argparse.ArgumentParser, *, top_level: bool) -> None:
    # On subcommands the defaults are SUPPRESS, so a value given before the subcommand stays.
    base_url: dict[str, Any] = {"default": None if top_level else argparse.SUPPRESS}
    timeout: dict[str, Any] = {"default": 30.0 if top_level else argparse.SUPPRESS}
    parser.add_argument(
        "--base-url", metavar="URL", **base_url,
        help=f"the service's base URL (default: ${BASE_URL_ENV}, else {DEFAULT_BASE_URL}, the "
             "mock server); trailing slashes are ignored")
    parser.add_argument(
        "--timeout", metavar="SECONDS", type=_seconds, **timeout,
        help="seconds to wait for connecting, sending and receiving each (default: 30)")


def _flag_fields(op: Operation) -> list[FieldDescriptor]:
    """The request fields that have a flag: top-level scalars, enums and repeated scalars."""
    descriptor = cast(Descriptor, op.request_type.DESCRIPTOR)
    # Messages and maps have no flag form (--json-input sets them), nor do fields whose flag
    # would be one of the subcommand's own options.
    return [fd for fd in descriptor.fields
            if fd.message_type is None and _flag(fd) not in _RESERVED_FLAGS]


def _flag(fd: FieldDescriptor) -> str:
    return "--" + fd.name.replace("_", "-")


def _add_request_options(parser: argparse.ArgumentParser, op: Operation) -> None:
    """One flag per field of :func:`_flag_fields`, and ``--json-input``."""
    group = parser.add_argument_group("request")
    for fd in _flag_fields(op):
        options: dict[str, Any] = {"dest": _FIELD_DEST + fd.name, "default": None,
                                   "help": _help_text(description(fd))}
        if fd.is_repeated:
            options["action"] = "append"
            options["help"] += " Repeat the flag for several values."
        if fd.type == FieldDescriptor.TYPE_BOOL:
            if fd.is_repeated:
                options["type"] = _json_bool
            else:
                options["action"] = argparse.BooleanOptionalAction
        elif fd.enum_type is not None:
            # The zero value means "unset" (DESIGN.md, proto conventions): not a choice.
            options["choices"] = [v.name for v in fd.enum_type.values if v.number != 0]
        if "choices" not in options and options.get("action") is not argparse.BooleanOptionalAction:
            options["metavar"] = fd.name.upper()
        group.add_argument(_flag(fd), **options)
    group.add_argument(
        "--json-input", metavar="JSON",
        help="the request as a JSON object, inline or @path/to/file.json (@- reads stdin); "
             "merged over the flags, its fields win")


def _json_bool(text: str) -> bool:
    if text not in ("true", "false"):
        raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
    return text == "true"


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``projectops``: one subcommand per operation, ``operations``, and the
    commands registered with :func:`add_command` by the modules of :data:`COMMAND_MODULES`.

    Every subcommand's parsed namespace has ``run(args) -> int``.
    """
    for module in COMMAND_MODULES:
        importlib.import_module(module)
    epilog = "\n".join([
        "environment:",
        f"  {API_KEY_ENV:<20} the project API key, sent with every call (never a flag)",
        f"  {BASE_URL_ENV:<20} the service's base URL (default {DEFAULT_BASE_URL})",
        "",
        "also:",
        "  projectops mock-server --help   run the mock server of the API on 127.0.0.1",
        "                                  (needs the 'server' extra)",
        "",
        "exit codes:",
        *(f"  {code:<3} {meaning}" for code, meaning in sorted(EXIT_CODES.items())),
    ])
    parser = _Parser(
        prog="projectops", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=epilog,
        description="Command-line client of the Project-Scoped Operations API: one command per "
                    "operation; prints the response JSON on stdout.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {projectops.__version__}")
    _add_connection_options(parser, top_level=True)
    commands = parser.add_subparsers(title="commands", metavar="<command>", required=True)
    for op in operations():
        sub = commands.add_parser(op.tool_name, help=_help_text(op.summary),
                                  description=op.description, formatter_class=_Formatter)
        _add_request_options(sub, op)
        _add_connection_options(sub, top_level=False)
        sub.set_defaults(run=partial(_run_operation, op))
    listing = commands.add_parser("operations", help="list every operation: tool name, path, "
                                  "summary", description="List every operation of the API.")
    listing.set_defaults(run=_run_operations)
    for command in _COMMANDS.values():
        sub = commands.add_parser(command.name, help=_help_text(command.help),
                                  description=command.help, formatter_class=_Formatter)
        _add_connection_options(sub, top_level=False)
        command.configure(sub)
        sub.set_defaults(run=command.run)
    return parser


def _read_json_input(text: str) -> dict[str, Any]:
    """The JSON object of ``--json-input`` (inline, ``@file`` or ``@-``)."""
    source = "--json-input"
    if text.startswith("@"):
        path = text[1:]
        source = f"--json-input file {path}"
        try:
            text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc)
            raise _UsageError(f"cannot read {source}: {reason}") from None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise _UsageError(f"{source} is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise _UsageError(f"{source} must be a JSON object, got {type(value).__name__}")
    return value


def _request_object(op: Operation, args: argparse.Namespace) -> dict[str, Any]:
    """The request as a JSON object: the flags given, then ``--json-input`` over them."""
    data = _read_json_input(args.json_input) if args.json_input is not None else {}
    request: dict[str, Any] = {}
    for fd in _flag_fields(op):
        value = getattr(args, _FIELD_DEST + fd.name)
        # JSON wins, under either name of the field.
        if value is not None and fd.name not in data and fd.json_name not in data:
            request[fd.json_name] = value
    request.update(data)
    return request


def _run_operation(op: Operation, args: argparse.Namespace) -> int:
    try:
        request = prepare_request(op, _request_object(op, args))
        client = Client(args.base_url, timeout=args.timeout)
    except (ValueError, TypeError) as exc:  # InvalidArgument is a ValueError
        raise _UsageError(f"invalid request: {exc}" if isinstance(exc, ApiError) else str(exc)
                          ) from None
    with client:
        response = client.call(op, request)
    print(to_json(response, indent=2))
    return EXIT_OK


def _run_operations(args: argparse.Namespace) -> int:
    ops = operations()
    name_width = max(len(op.tool_name) for op in ops)
    path_width = max(len(op.path) for op in ops)
    for op in ops:
        print(f"{op.tool_name:<{name_width}}  {op.path:<{path_width}}  {op.summary}")
    return EXIT_OK


def _failure(exc: Exception) -> tuple[int, str]:
    """Exit code and stderr line of an exception raised while running a command."""
    if isinstance(exc, _UsageError | MissingApiKey):
        return EXIT_USAGE, str(exc)
    if isinstance(exc, Unavailable | DeadlineExceeded):  # raised by the client: no answer
        return EXIT_FAILURE, exc.message
    if isinstance(exc, ApiError):
        line = f"{exc.http_status} {exc.code}: {exc.describe()}"
        if exc.http_status == 401:
            return EXIT_UNAUTHENTICATED, (f"{line} (the API key is missing or invalid; "
                                          f"{API_KEY_ENV} sets it)")
        return (EXIT_BAD_REQUEST if exc.http_status == 400 else EXIT_FAILURE), line
    if isinstance(exc, ValueError | TypeError | LookupError):
        return EXIT_USAGE, str(exc)
    if isinstance(exc, ImportError):
        return EXIT_USAGE, (f"{exc.name or exc} is not installed: install the extra this "
                            "command needs, e.g. pip install 'projectops[mcp]'")
    return EXIT_INTERNAL, f"unexpected {type(exc).__name__}: {exc}"


def _report(line: str) -> None:
    print(f"error: {redact_api_key(line)}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``projectops`` with `argv` (default ``sys.argv[1:]``); return the exit code.

    Never raises (``SystemExit`` of ``--help`` included): failures are one ``error: ...`` line
    on stderr and an exit code of :data:`EXIT_CODES` (0 success, 2 usage or local input,
    3 answer 401, 4 answer 400, 5 no answer or other status, 130 interrupted).
    """
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        namespace = build_parser().parse_args(args)
        code = int(namespace.run(namespace))
        sys.stdout.flush()
        return code
    except SystemExit as exc:  # --help and --version exit 0 through argparse
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else EXIT_USAGE)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): silence the interpreter's final flush.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_INTERNAL
    except Exception as exc:
        code, line = _failure(exc)
        _report(line)
        return code
