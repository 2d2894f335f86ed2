"""The program's own commands (docs/cli.md): one per operation of the registry (a flag per
top-level scalar, enum or repeated-scalar field; ``--json-input`` for the whole request, winning
over the flags; stdout: the response's JSON only), ``operations``, ``describe``, ``schema``,
``openapi`` and ``completion``. No httpx at import: the core-only commands work without it."""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import stat
import sys
from functools import cache, partial
from typing import TYPE_CHECKING, Any, cast

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from projectops._text import KEY_CUT, REDACTED, escape, escape_lines, unsafe_characters
from projectops._wire import INT_TYPES_32
from projectops.client import DEFAULT_RETRIES
from projectops.client.redaction import redact, redact_values
from projectops.codec import describe_value, dump, iter_json, to_dict
from projectops.conventions import API_KEY_HEADER, DEFAULT_BASE_URL, MAX_BODY_BYTES, base_url_hint
from projectops.descriptions import description
from projectops.program.commands import Command, add_retries
from projectops.program.failures import EXIT_OK, UsageError
from projectops.registry import REGISTRY, Operation, Registry
from projectops.rules import described, rule_phrases

if TYPE_CHECKING:
    import httpx2
    from google.protobuf.message import Message

__all__ = ["commands"]

_FIELD_DEST = "field:"  # argparse dest prefix of request fields: cannot clash with options
# An operation command's own options: a request field with one of these flags has none.
_OWN_FLAGS = frozenset(
    "--help --json-input --compact --dry-run --base-url --timeout --max-response-bytes "
    "--retries".split()
)


def commands(
    transport: httpx2.BaseTransport | None = None, registry: Registry = REGISTRY
) -> list[Command]:
    """In the order of ``projectops --help``; `transport`: what the operation commands send
    through instead of the network (tests); `registry`: the operations they call and
    describe."""
    return [
        *(
            Command(
                op.tool_name,
                escape(op.summary),
                partial(_configure_operation, op),
                partial(_run_operation, op, transport),
                description=_description_text(op.description),
                connection=True,
                extra="client",
            )
            for op in registry.operations()
        ),
        Command(
            "operations",
            "list every operation: tool name, path, summary",
            _json,
            partial(_listing, registry),
        ),
        Command(
            "describe",
            "show an operation's reference, or list them",
            partial(_tool_argument, registry, nargs="?"),
            partial(_describe, registry),
        ),
        Command(
            "schema",
            "print the JSON Schema of a tool's input (or output)",
            partial(_schema_arguments, registry),
            partial(_schema, registry),
        ),
        Command(
            "openapi",
            "print the OpenAPI 3.1 document of the API",
            _openapi,
            partial(_run_openapi, registry),
        ),
        Command(
            "completion", "print the shell's completion script", _shell, _completion, extra="client"
        ),
    ]


def _flag(fd: FieldDescriptor) -> str:
    return "--" + fd.name.replace("_", "-")


def _flag_fields(op: Operation) -> list[FieldDescriptor]:
    """The request fields that have a flag: top-level scalars, enums and repeated scalars."""
    fields = cast(Descriptor, op.request_type.DESCRIPTOR).fields
    return [fd for fd in fields if fd.message_type is None and _flag(fd) not in _OWN_FLAGS]


def _description_text(text: str) -> str:
    """A proto comment as an argparse description: controls escaped (paragraphs kept); argparse
    %-formats a description only when it holds ``%(prog)``, so only then are ``%`` doubled."""
    shown = escape_lines(text)
    if "%(prog)" not in shown:
        return shown
    return shown.replace("%", "%%")


def _json_bool(text: str) -> bool:
    if text not in ("true", "false"):
        raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
    return text == "true"


def _json_integer(text: str) -> int:
    """A flag's value for a field whose JSON form is a number without a fraction (a 32-bit
    integer: the strict codec takes no string for one); the range is the codec's to check."""
    digits = text.removeprefix("-")
    if not (digits.isascii() and digits.isdigit()):
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}")
    return int(text)


#: The JSON mapping's strings for the numbers JSON has no literal for.
_NON_FINITE = ("NaN", "Infinity", "-Infinity")


def _json_number(text: str) -> float | str:
    """A flag's value for a double or float field: a JSON number, or one of :data:`_NON_FINITE`
    as the JSON mapping writes it."""
    if text in _NON_FINITE:
        return text
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}")
    return value


#: The flag's value type by field kind where the JSON form is not a string.
_FLAG_TYPES: dict[int, Any] = {
    FieldDescriptor.TYPE_BOOL: _json_bool,  # a repeated one: a single bool is --flag/--no-flag
    **dict.fromkeys(INT_TYPES_32, _json_integer),
    FieldDescriptor.TYPE_DOUBLE: _json_number,
    FieldDescriptor.TYPE_FLOAT: _json_number,
}


def _configure_operation(op: Operation, parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("request")
    for fd in _flag_fields(op):
        # argparse %-formats every help string.
        # The field's comment and its rules (docs/contract.md §4.6).
        described_text = described(description(fd), rule_phrases(fd))
        text = escape_lines(described_text).replace("%", "%%")
        options: dict[str, Any] = {
            "dest": _FIELD_DEST + fd.name,
            "help": text,
        }
        if fd.is_repeated:
            options.update(action="append", help=text + " Repeat the flag for several values.")
        if fd.type == FieldDescriptor.TYPE_BOOL and not fd.is_repeated:
            options["action"] = argparse.BooleanOptionalAction
        elif fd.enum_type is not None:  # the zero value means "unset" (docs/contract.md §8.5)
            options["choices"] = [v.name for v in fd.enum_type.values if v.number != 0]
        else:  # a string or a 64-bit integer has no type: argparse keeps the text
            options["type"] = _FLAG_TYPES.get(fd.type)
            options["metavar"] = fd.name.upper()
        group.add_argument(_flag(fd), **options)
    what = "the request as a JSON object, inline or @file (@- reads stdin), over the flags"
    group.add_argument("--json-input", metavar="JSON", help=what)
    add_retries(parser, DEFAULT_RETRIES)
    output = parser.add_argument_group("output").add_argument
    output("--compact", action="store_true", help="print the answer on one line")
    output("--dry-run", action="store_true", help="print the request (key redacted), send none")


def _read_json_input(text: str) -> dict[str, Any]:
    """The JSON object of ``--json-input`` (inline, ``@file`` or ``@-``), read with a cap of
    the server's body limit; a file that is not regular is refused before it is read."""
    source = "--json-input"
    if text.startswith("@"):
        path = text[1:]
        # A path is outside text: the key redacted from it on entry (never from our lines).
        source = f"--json-input file {redact(path)}"
        try:
            if path == "-":
                raw = sys.stdin.buffer.read(MAX_BODY_BYTES + 1)
            else:  # O_NONBLOCK: opening a FIFO must not wait for a writer before the check
                fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
                with open(fd, "rb") as file:
                    if not stat.S_ISREG(os.fstat(fd).st_mode):
                        raise UsageError(f"{source} is not a regular file")
                    raw = file.read(MAX_BODY_BYTES + 1)
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
    data: dict[str, Any] = {}
    if args.json_input is not None:
        data = _read_json_input(args.json_input)
    request: dict[str, Any] = {}
    for fd in _flag_fields(op):
        value = getattr(args, _FIELD_DEST + fd.name)
        if value is None:
            continue
        if fd.name in data or fd.json_name in data:  # JSON wins, under either name
            notice = f"{_flag(fd)} is also set by --json-input; the --json-input value is used"
            print(f"notice: {notice}", file=sys.stderr)
        else:
            request[fd.json_name] = value
    return {**request, **data}


def _run_operation(
    op: Operation,
    transport: httpx2.BaseTransport | None,
    args: argparse.Namespace,
) -> int:
    import httpx2

    from projectops.client.http import Client  # sync: no event loop to start

    request = _request_object(op, args)
    if args.dry_run:  # the request is shown, never sent
        transport = httpx2.MockTransport(_refuse)
    try:
        with Client(
            args.base_url,
            timeout=args.timeout,
            max_response_bytes=args.max_response_bytes,
            retries=args.retries,
            transport=transport,
        ) as client:
            hint = base_url_hint(client.base_url)
            if hint is not None:
                print(f"hint: {hint}", file=sys.stderr)
            response = client.call(op, request)
    except _DryRun as dry:
        sys.stdout.write(dry.text)
        return EXIT_OK
    indent: int | None = 2
    if args.compact:
        indent = None
    _write_json(response, indent=indent)
    return EXIT_OK


def _write_json(message: Message, *, indent: int | None) -> None:
    """`message`'s JSON and a newline on stdout, written in pieces as it is encoded; when the
    service echoed the key, with every string redacted as the tool server redacts its result
    (docs/contract.md §9.4)."""
    if _echoes_key(message, indent):
        # A key that straddles two JSON tokens is caught by redacting the text whole.
        redacted = redact_values(to_dict(message))
        text = redact(dump(redacted, indent=indent))
        sys.stdout.write(inert_json(text) + "\n")
        return
    sys.stdout.writelines(map(inert_json, iter_json(message, indent=indent)))
    sys.stdout.write("\n")


def _echoes_key(message: Message, indent: int | None) -> bool:
    """Whether `message`'s JSON holds the key (or a cut of it), one piece at a time: each with
    the end of the one before, since redaction knows a key cut by the piece's edge by its
    first :data:`projectops._text.KEY_CUT` characters."""
    before = ""
    for piece in iter_json(message, indent=indent):
        text = before + piece
        if redact(text) != text:
            return True
        before = text[-KEY_CUT:]
    return False


@cache
def _terminal_controls(ascii_only: bool) -> re.Pattern[str]:
    # What escape() shows escaped, but the newline: in JSON text a raw one only separates tokens.
    return re.compile(r"(?!\n)" + unsafe_characters(ascii_only=ascii_only).pattern)


def inert_json(text: str) -> str:
    """JSON text with every character a terminal acts on (what :func:`projectops._text.escape`
    escapes) written as a ``\\uXXXX`` escape: the same JSON value, safe to print (28.6)."""
    # json.dumps (ensure_ascii) writes \\uXXXX, a surrogate pair above the BMP.
    controls = _terminal_controls(text.isascii())
    return controls.sub(lambda match: json.dumps(match.group())[1:-1], text)


class _DryRun(Exception):
    """Carries the would-be request out of the client: ``--dry-run`` stops the call here."""

    def __init__(self, request: httpx2.Request) -> None:
        super().__init__("dry run")
        lines = [f"{request.method} {request.url} HTTP/1.1"]
        for raw_name, raw_value in request.headers.raw:
            name = raw_name.decode("latin-1")
            value = raw_value.decode("latin-1")
            if name.lower() == API_KEY_HEADER.lower():
                value = REDACTED
            lines.append(f"{name}: {value}")
        body = inert_json(request.content.decode("utf-8", "replace"))
        self.text = "\n".join(lines) + "\n\n" + body + "\n"


def _refuse(request: httpx2.Request) -> httpx2.Response:
    """The handler of ``--dry-run``'s transport: sends nothing, raises :class:`_DryRun`."""
    raise _DryRun(request)


def _json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print a JSON array, for scripts")


def _listing(registry: Registry, args: argparse.Namespace) -> int:
    ops = registry.operations()
    if args.json:
        keys = {"toolName": "tool_name", "readOnly": "read_only"}
        names = ("name", "toolName", "path", "summary", "description", "readOnly")
        rows = [{name: getattr(op, keys.get(name, name)) for name in names} for op in ops]
        text = json.dumps(rows, indent=2, ensure_ascii=False)
        print(inert_json(text))
        return EXIT_OK
    # Schema text is outside text too: a proto comment or path reaches the terminal escaped.
    table = [(escape(op.tool_name), escape(op.path), escape(op.summary)) for op in ops]
    name_width = max(len(name) for name, _, _ in table)
    path_width = max(len(path) for _, path, _ in table)
    for name, path, summary in table:
        print(f"{name:<{name_width}}  {path:<{path_width}}  {summary}")
    return EXIT_OK


def _tool_argument(
    registry: Registry,
    parser: argparse.ArgumentParser,
    *,
    nargs: str | None = None,
) -> None:
    names = [op.tool_name for op in registry.operations()]
    parser.add_argument(
        "tool",
        metavar="TOOL",
        nargs=nargs,
        choices=names,
        help="the tool (operation) name: " + ", ".join(names),
    )


def _describe(registry: Registry, args: argparse.Namespace) -> int:
    from projectops import reference

    # A terminal narrower than 100 columns gets its width; a pipe or file always 100.
    width = 100
    if sys.stdout.isatty():
        width = min(shutil.get_terminal_size().columns, 100)
    if args.tool:
        text = reference.describe(args.tool, width=width, registry=registry)
    else:
        text = reference.index(width=width, registry=registry)
    print(text.rstrip("\n"))
    return EXIT_OK


def _schema_arguments(registry: Registry, parser: argparse.ArgumentParser) -> None:
    _tool_argument(registry, parser)
    parser.add_argument("--output", action="store_true", help="the response's schema")


def _schema(registry: Registry, args: argparse.Namespace) -> int:
    from projectops import json_schema

    op = registry.operation(args.tool)
    if args.output:
        schema = json_schema.output_schema(op)
    else:
        schema = json_schema.input_schema(op)
    print(inert_json(json.dumps(schema, indent=2)))  # DEL is ASCII: json.dumps keeps it
    return EXIT_OK


def _openapi(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--base-url",
        dest="server_url",  # not the connection option's dest: this one names, never calls
        metavar="URL",
        default=DEFAULT_BASE_URL,
        help=f"the server URL the document names (default: {DEFAULT_BASE_URL}, the mock server)",
    )
    parser.add_argument("--format", choices=["json", "yaml"], default="json", help="default: json")


def _run_openapi(registry: Registry, args: argparse.Namespace) -> int:
    from projectops import openapi

    # A RenderError (PyYAML missing) is a ValueError: the failure table reports it as usage.
    text = openapi.render(args.server_url, args.format, registry)
    if args.format == "json":
        text = inert_json(text)
    sys.stdout.write(text)
    return EXIT_OK


def _shell(parser: argparse.ArgumentParser) -> None:
    shells = ("bash", "zsh", "fish")
    how = 'e.g. eval "$(projectops completion bash)" in ~/.bashrc'
    parser.add_argument("shell", metavar="SHELL", choices=shells, help=f"{shells}: {how}")


def _completion(args: argparse.Namespace) -> int:
    from argcomplete.shell_integration import shellcode

    sys.stdout.write(shellcode(["projectops"], shell=args.shell))
    return EXIT_OK
