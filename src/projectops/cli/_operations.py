"""The client's commands of the ``projectops`` program (docs/contract.md §1.6, §1.4, §2 and §5).

:func:`commands` lists them; :mod:`projectops.cli._main` composes the program from them and the
server layer's ``mock-server``:

- one command per operation of the registry, named by its tool name
  (``projectops get-release-details --version 1.2.0``). Its flags are the request's top-level
  scalar, enum and repeated-scalar fields in kebab-case, with the fields' proto comments as help;
  ``--json-input`` takes the whole request as a JSON object (inline or ``@file``, ``@-`` for
  stdin) and is merged over the flags, JSON winning. Message and map fields are set through
  ``--json-input`` only. The request object goes to :meth:`Client.call`, which decodes it
  strictly and validates it once, exactly as a JSON body is read. stdout carries the response
  JSON (``projectops.to_json(msg, indent=2)``) and nothing else.
- ``operations``: tool name, path and summary of each operation.
- ``schema <tool> [--output]``: the JSON Schema of a tool's input (output), exactly the tool
  server's ``inputSchema`` (``outputSchema``).
- ``mcp``: the MCP tool server (:mod:`projectops.mcp._server`, extra ``mcp``).

This module imports neither httpx nor the ``mcp`` SDK: the commands import what they need when
they run, so ``operations`` and ``schema`` work in a core-only install.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import stat
import sys
from functools import cache, partial
from typing import TYPE_CHECKING, Any, cast

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from projectops import json_schema
from projectops._text import REDACTED, _unsafe, escape, escape_lines
from projectops.client import DEFAULT_RETRIES
from projectops.client.failures import EXIT_OK, UsageError
from projectops.codec import describe_value
from projectops.commands import (
    DEFAULT_DRAIN_TIMEOUT,
    Command,
    port,
    warn_if_every_interface,
    whole,
)
from projectops.conventions import (
    API_KEY_ENV,
    API_KEY_HEADER,
    BASE_URL_ENV,
    MAX_BODY_BYTES,
    base_url_hint,
)
from projectops.descriptions import description
from projectops.registry import Operation, operation, operations

if TYPE_CHECKING:
    import httpx2 as httpx
    from google.protobuf.message import Message

__all__ = ["DEFAULT_MCP_HOST", "DEFAULT_MCP_PORT", "add_retries", "commands"]

#: Address ``projectops mcp --http`` binds to by default: loopback only.
DEFAULT_MCP_HOST = "127.0.0.1"
#: TCP port ``projectops mcp --http`` listens on by default.
DEFAULT_MCP_PORT = 8765

_FIELD_DEST = "field:"  # argparse dest prefix of request fields: cannot clash with options
# Options an operation command defines itself; a request field whose flag would be one of these
# is settable through --json-input only.
_OWN_FLAGS = frozenset(
    {
        "--help",
        "--json-input",
        "--compact",
        "--dry-run",
        "--base-url",
        "--timeout",
        "--max-response-bytes",
        "--retries",
    }
)


def commands(transport: httpx.BaseTransport | None = None) -> list[Command]:
    """The client's commands, in the order ``projectops --help`` lists them.

    Args:
        transport: an ``httpx.BaseTransport`` the operation commands send through instead
            of the network (e.g. ``httpx.MockTransport`` in tests).
    """
    out = [
        Command(
            op.tool_name,
            escape(op.summary),  # the program's parser doubles its % signs
            partial(_configure_operation, op),
            partial(_run_operation, op, transport),
            description=_description_text(op.description),
            connection=True,
            extra="client",
        )
        for op in operations()
    ]
    out += [
        Command(
            "operations",
            "list every operation: tool name, path, summary",
            _configure_operations,
            _run_operations,
            description="List every operation of the API.",
        ),
        Command(
            "describe",
            "show the reference of an operation: path, description, request and response fields",
            _configure_describe,
            _run_describe,
            description="Show an operation's reference, from the proto: its path and "
            "description, then its request's and response's fields with their JSON names, JSON "
            "types, whether they are REQUIRED, and their comments. Without TOOL, list the "
            "operations.",
        ),
        Command(
            "schema",
            "print the JSON Schema of a tool's input (or, with --output, output)",
            _configure_schema,
            _run_schema,
        ),
        Command(
            "openapi",
            "print the OpenAPI 3.1 document of the API",
            _configure_openapi,
            _run_openapi,
            description="Print the OpenAPI 3.1 document of the API, derived from the proto: "
            "every operation, its request and response schemas, its errors and the API key "
            "scheme. Feed it to Swagger UI, Redoc, Postman or a client generator.",
        ),
        Command(
            "completion",
            "print the shell completion script (bash, zsh or fish)",
            _configure_completion,
            _run_completion,
            extra="client",
            description="Print the completion script of projectops for SHELL: commands, flags "
            "and enum values complete with Tab. Install it with, for example, "
            '`eval "$(projectops completion bash)"` in ~/.bashrc.',
        ),
        Command(
            "mcp",
            "run the MCP tool server (one tool per operation) over stdio or HTTP",
            _configure_mcp,
            _run_mcp,
            connection=True,
            extra="mcp",
        ),
    ]
    return out


# --- operation commands -----------------------------------------------------------------------


def _flag(fd: FieldDescriptor) -> str:
    return "--" + fd.name.replace("_", "-")


def _flag_fields(op: Operation) -> list[FieldDescriptor]:
    """The request fields that have a flag: top-level scalars, enums and repeated scalars."""
    descriptor = cast(Descriptor, op.request_type.DESCRIPTOR)
    return [
        fd for fd in descriptor.fields if fd.message_type is None and _flag(fd) not in _OWN_FLAGS
    ]


def _help_text(text: str) -> str:
    """A proto comment as an argparse ``help``: controls escaped (paragraph breaks kept) and
    ``%`` doubled, since argparse %-formats every help string."""
    return escape_lines(text).replace("%", "%%")


def _description_text(text: str) -> str:
    """A proto comment as an argparse ``description``: controls escaped (paragraph breaks
    kept); argparse %-formats a description only when it holds ``%(prog)``, so only then are
    its ``%`` doubled (``50% done`` must not read ``50%% done``)."""
    shown = escape_lines(text)
    return shown.replace("%", "%%") if "%(prog)" in shown else shown


def _json_bool(text: str) -> bool:
    if text not in ("true", "false"):
        raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
    return text == "true"


def _configure_operation(op: Operation, parser: argparse.ArgumentParser) -> None:
    """One flag per field of :func:`_flag_fields`, and ``--json-input``."""
    group = parser.add_argument_group("request")
    for fd in _flag_fields(op):
        options: dict[str, Any] = {
            "dest": _FIELD_DEST + fd.name,
            "default": None,
            "help": _help_text(description(fd)),
        }
        if fd.is_repeated:
            options["action"] = "append"
            options["help"] += " Repeat the flag for several values."
        if fd.type == FieldDescriptor.TYPE_BOOL:
            if fd.is_repeated:
                options["type"] = _json_bool
            else:
                options["action"] = argparse.BooleanOptionalAction
        elif fd.enum_type is not None:
            # The zero value means "unset" (docs/contract.md §8.5): not a choice.
            options["choices"] = [v.name for v in fd.enum_type.values if v.number != 0]
        if "choices" not in options and options.get("action") is not argparse.BooleanOptionalAction:
            options["metavar"] = fd.name.upper()
        group.add_argument(_flag(fd), **options)
    group.add_argument(
        "--json-input",
        metavar="JSON",
        help="the request as a JSON object, inline or @path/to/file.json (@- reads stdin); "
        "merged over the flags, its fields win (a notice on stderr says when both set one)",
    )
    add_retries(parser)
    output = parser.add_argument_group("output")
    output.add_argument(
        "--compact", action="store_true", help="print the response JSON on one line"
    )
    output.add_argument(
        "--dry-run",
        action="store_true",
        help="print the HTTP request that would be sent (the API key redacted) and send nothing",
    )


def add_retries(parser: argparse.ArgumentParser, *, top_level: bool = False) -> None:
    """``--retries N`` (``args.retries``; None: the default), on the program (before any
    command) and on each command that retries its calls: an operation's and ``mcp``. A
    command's own flag has no default, so it does not reset a value given before the
    command."""
    parser.add_argument(
        "--retries",
        metavar="N",
        type=partial(whole, lowest=0),
        default=None if top_level else argparse.SUPPRESS,
        help="extra attempts of a call of a read-only or idempotent operation when no answer "
        "came or the answer is 429, 502, 503 or 504, with backoff, all within --timeout "
        f"(default: {DEFAULT_RETRIES}; 0: never retry)",
    )


def _retries(args: argparse.Namespace) -> int:
    given = getattr(args, "retries", None)
    return DEFAULT_RETRIES if given is None else int(given)


def _read_json_input(text: str) -> dict[str, Any]:
    """The JSON object of ``--json-input`` (inline, ``@file`` or ``@-``), read with a cap of
    the server's body limit; a non-regular file is refused before it is read."""
    source = "--json-input"
    if text.startswith("@"):
        path = text[1:]
        source = f"--json-input file {path}"
        try:
            if path == "-":
                raw = sys.stdin.buffer.read(MAX_BODY_BYTES + 1)
            else:
                # O_NONBLOCK: opening a FIFO must not wait for a writer before the check.
                fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
                with open(fd, "rb") as file:
                    if not stat.S_ISREG(os.fstat(fd).st_mode):
                        raise UsageError(f"{source} is not a regular file")
                    raw = file.read(MAX_BODY_BYTES + 1)
            if len(raw) > MAX_BODY_BYTES:
                raise UsageError(
                    f"{source} is larger than the server's limit of {MAX_BODY_BYTES} bytes"
                )
            text = raw.decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc)
            raise UsageError(f"cannot read {source}: {reason}") from None
    if len(text.encode("utf-8", "surrogatepass")) > MAX_BODY_BYTES:
        raise UsageError(f"{source} is larger than the server's limit of {MAX_BODY_BYTES} bytes")
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise UsageError(f"{source} is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise UsageError(f"{source}: expected a JSON object, got {describe_value(value)}")
    return value


def _request_object(op: Operation, args: argparse.Namespace) -> dict[str, Any]:
    """The request as a JSON object: the flags given, then ``--json-input`` over them."""
    data = _read_json_input(args.json_input) if args.json_input is not None else {}
    request: dict[str, Any] = {}
    for fd in _flag_fields(op):
        value = getattr(args, _FIELD_DEST + fd.name)
        if value is None:
            continue
        # JSON wins, under either name of the field, as in the service's own CLI.
        if fd.name in data or fd.json_name in data:
            print(
                f"notice: {_flag(fd)} is also set by --json-input; the --json-input value is used",
                file=sys.stderr,
            )
        else:
            request[fd.json_name] = value
    request.update(data)
    return request


def _run_operation(
    op: Operation, transport: httpx.BaseTransport | None, args: argparse.Namespace
) -> int:
    # The sync client: no event loop to start, which keeps a call quick to start up.
    from projectops.client.http import Client

    request = _request_object(op, args)
    if args.dry_run:
        transport = _dry_run_transport()
    try:
        with Client(
            args.base_url,
            timeout=args.timeout,
            max_response_bytes=args.max_response_bytes,
            retries=_retries(args),
            transport=transport,
        ) as client:
            hint = base_url_hint(client.base_url)
            if hint is not None:
                print(f"hint: {hint}", file=sys.stderr)
            response = client.call(op, request)
    except _DryRun as dry:
        sys.stdout.write(dry.text)
        return EXIT_OK
    _write_json(response, indent=None if args.compact else 2)
    return EXIT_OK


def _write_json(message: Message, *, indent: int | None) -> None:
    """Write `message`'s JSON and a newline to stdout as it is encoded, in pieces: the text
    (several times the answer's size, indented) is never held whole, nor encoded whole."""
    from projectops.codec import iter_json

    write = sys.stdout.write
    for piece in iter_json(message, indent=indent):
        write(inert_json(piece))
    write("\n")


@cache
def _terminal_controls() -> re.Pattern[str]:
    # What escape() shows escaped, but the newline: in JSON text a raw one only separates tokens.
    return re.compile(r"(?!\n)" + _unsafe().pattern)


def _json_escape(match: re.Match[str]) -> str:
    return json.dumps(match.group())[1:-1]  # ensure_ascii: \uXXXX (a surrogate pair above BMP)


def inert_json(text: str) -> str:
    """JSON text with every character a terminal acts on (what :func:`projectops._text.escape`
    escapes: C0/C1 controls, DEL, bidi overrides, line separators, ...) written as a ``\\uXXXX``
    escape: the same JSON value, safe to print (issue 28.6)."""
    return _terminal_controls().sub(_json_escape, text)


class _DryRun(Exception):
    """Carries the would-be request out of the client: ``--dry-run`` stops the call here."""

    def __init__(self, text: str) -> None:
        super().__init__("dry run")
        self.text = text


def _dry_run_text(request: httpx.Request) -> str:
    """`request` as an HTTP/1.1 message (request line, headers, blank line, body), with the
    API key header's value redacted."""
    lines = [f"{request.method} {request.url} HTTP/1.1"]
    for raw_name, raw_value in request.headers.raw:
        name = raw_name.decode("latin-1")
        shown = REDACTED if name.lower() == API_KEY_HEADER.lower() else raw_value.decode("latin-1")
        lines.append(f"{name}: {shown}")
    body = inert_json(request.content.decode("utf-8", "replace"))
    return "\n".join(lines) + "\n\n" + body + "\n"


def _dry_run_transport() -> httpx.BaseTransport:
    """A transport that sends nothing: it raises :class:`_DryRun` with the request it got,
    exactly as the client built it, so ``--dry-run`` shows what a real call would send."""
    import httpx2 as httpx

    class DryRunTransport(httpx.BaseTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            raise _DryRun(_dry_run_text(request))

    return DryRunTransport()


# --- operations, schema, mcp ------------------------------------------------------------------


def _configure_operations(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json",
        action="store_true",
        help="print a JSON array of objects (name, toolName, path, summary, description, "
        "readOnly) for scripts",
    )


def _run_operations(args: argparse.Namespace) -> int:
    ops = operations()
    if args.json:
        listing = [
            {
                "name": op.name,
                "toolName": op.tool_name,
                "path": op.path,
                "summary": op.summary,
                "description": op.description,
                "readOnly": op.read_only,
            }
            for op in ops
        ]
        print(inert_json(json.dumps(listing, indent=2, ensure_ascii=False)))
        return EXIT_OK
    # Schema text is outside text too: a proto comment or path reaches the terminal escaped.
    rows = [(escape(op.tool_name), escape(op.path), escape(op.summary)) for op in ops]
    name_width = max(len(name) for name, _, _ in rows)
    path_width = max(len(path) for _, path, _ in rows)
    for name, path, summary in rows:
        print(f"{name:<{name_width}}  {path:<{path_width}}  {summary}")
    return EXIT_OK


def _tool_argument(parser: argparse.ArgumentParser, *, optional: bool = False) -> None:
    names = [op.tool_name for op in operations()]
    parser.add_argument(
        "tool",
        metavar="TOOL",
        nargs="?" if optional else None,
        choices=names,
        help="the tool (operation) name: " + ", ".join(names),
    )


def _configure_describe(parser: argparse.ArgumentParser) -> None:
    _tool_argument(parser, optional=True)


def _run_describe(args: argparse.Namespace) -> int:
    from projectops import reference

    # A terminal narrower than 100 columns gets its width; a pipe or file always 100.
    width = min(shutil.get_terminal_size().columns, 100) if sys.stdout.isatty() else 100
    text = (
        reference.index(width=width)
        if args.tool is None
        else reference.describe(operation(args.tool), width=width)
    )
    print(text.rstrip("\n"))
    return EXIT_OK


def _configure_openapi(parser: argparse.ArgumentParser) -> None:
    from projectops.conventions import DEFAULT_BASE_URL

    parser.add_argument(
        "--base-url",
        dest="server_url",  # not the connection option's dest: this one names, never calls
        metavar="URL",
        default=DEFAULT_BASE_URL,
        help=f"the server URL the document names (default: {DEFAULT_BASE_URL}, the mock server)",
    )
    parser.add_argument(
        "--format", choices=["json", "yaml"], default="json", help="output format (default: json)"
    )


def _run_openapi(args: argparse.Namespace) -> int:
    from projectops import openapi

    try:
        text = openapi.render(args.server_url, args.format)
        sys.stdout.write(inert_json(text) if args.format == "json" else text)
    except openapi.RenderError as exc:
        raise UsageError(str(exc)) from None
    return EXIT_OK


#: The shells ``projectops completion`` writes a script for (argcomplete's ``shellcode``).
COMPLETION_SHELLS = ("bash", "zsh", "fish")


def _configure_completion(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "shell", metavar="SHELL", choices=COMPLETION_SHELLS, help="bash, zsh or fish"
    )


def _run_completion(args: argparse.Namespace) -> int:
    from argcomplete.shell_integration import shellcode

    sys.stdout.write(shellcode(["projectops"], shell=args.shell))
    return EXIT_OK


def _configure_schema(parser: argparse.ArgumentParser) -> None:
    _tool_argument(parser)
    parser.add_argument(
        "--output",
        action="store_true",
        help="print the output schema (the response) instead of the input schema (the request)",
    )


def _run_schema(args: argparse.Namespace) -> int:
    op = operation(args.tool)
    schema = json_schema.output_schema(op) if args.output else json_schema.input_schema(op)
    print(json.dumps(schema, indent=2))
    return EXIT_OK


def _configure_mcp(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--http",
        action="store_true",
        help="serve Streamable HTTP on HOST:PORT instead of stdio (the endpoint's URL is "
        "logged at start)",
    )
    parser.add_argument(
        "--host",
        help=f"address to bind with --http (default: {DEFAULT_MCP_HOST}, loopback only); Host "
        "and Origin headers must name a loopback address or this host (DNS-rebinding "
        "protection)",
    )
    parser.add_argument(
        "--port",
        type=port,
        help=f"TCP port to listen on with --http (default: {DEFAULT_MCP_PORT})",
    )
    parser.add_argument(
        "--max-result-bytes",
        metavar="BYTES",
        type=whole,
        help="the largest tool result, as the response's indented JSON text in bytes; a larger "
        "one is an error result naming this limit and its size (default: 1048576, 1 MiB)",
    )
    parser.add_argument(
        "--drain-timeout",
        metavar="SECONDS",
        type=partial(whole, lowest=0),
        help="with --http, on SIGTERM or Ctrl-C refuse new connections and give requests in "
        f"flight this long to finish, then cut them and exit (default: {DEFAULT_DRAIN_TIMEOUT})",
    )
    add_retries(parser)
    parser.epilog = (
        f"Tool calls send {API_KEY_ENV} (the project API key) to {BASE_URL_ENV}; "
        "without a key the server still starts and lists its tools, and calls "
        "fail with a message saying so. Logs go to stderr."
    )


def _run_mcp(args: argparse.Namespace) -> int:
    if not args.http:
        given = [
            flag
            for flag in ("--host", "--port", "--drain-timeout")
            if getattr(args, flag[2:].replace("-", "_")) is not None
        ]
        if given:
            raise UsageError(f"{given[0]} applies only with --http (stdio has no address)")
    host = DEFAULT_MCP_HOST if args.host is None else args.host
    port = DEFAULT_MCP_PORT if args.port is None else args.port
    if args.http:
        warn_if_every_interface(host)

    from projectops import mcp

    return mcp.run(
        http=args.http,
        host=host,
        port=port,
        base_url=args.base_url,
        timeout=args.timeout,
        max_response_bytes=args.max_response_bytes,
        retries=_retries(args),
        max_result_bytes=(
            mcp.DEFAULT_MAX_RESULT_BYTES if args.max_result_bytes is None else args.max_result_bytes
        ),
        drain_timeout=DEFAULT_DRAIN_TIMEOUT if args.drain_timeout is None else args.drain_timeout,
    )
