"""A human-readable reference of the operations, from the descriptors alone.

The text of ``projectops describe``.

:func:`describe` renders one operation: its tool name and title, ``POST`` path, what its rpc
options say (read-only, idempotent, deprecated), the rpc comment, then the request body and the
response body as an indented tree of fields, each with its JSON name, its JSON type, ``REQUIRED``
(``google.api.field_behavior``, AIP-203) and its proto comment. :func:`index` lists every
operation with the first sentence of its comment. Nothing here restates the schema: names come
from the registry and the descriptors, comments from :mod:`projectops.descriptions`, JSON types
from :func:`projectops._wire.value_form` (the table the codec and the JSON Schema builder use).

Shape of one field (two columns per level; message fields are expanded below their comment)::

    summary: object ReleaseSummary
      What a release gate needs: the release record and the aggregate counts.

      release: object Release
        ...

How JSON types read:

- scalars by their JSON type, with the proto type where JSON alone would lose it:
  ``string (int64 as decimal digits)``, ``integer (int32)``, ``number (double)``,
  ``string (base64)``; in a request body, 64-bit integers add that a JSON number is accepted
  too (the protobuf JSON mapping reads both);
- enums as ``string, enum IssueStatus: ISSUE_STATUS_UNSPECIFIED, ACTIVE, ...`` (every name
  that can travel);
- well-known types as their JSON form: the codec's own words where the form has a rule
  (``string (RFC 3339 timestamp such as "2026-01-31T09:30:00Z")``, ``string (duration in seconds
  such as "3.5s")``), else their proto name (``object (google.protobuf.Struct)``);
- ``array of X`` for repeated fields, ``object of string -> X`` for maps (JSON keys are strings);
- other messages as ``object Name``, expanded once per body: a message met again (or inside
  itself) reads ``object Name (fields shown above)`` and is not expanded again.

Every line is at most `width` columns: text wraps at word boundaries, indentation stops growing
at half the width, and a word longer than a line is broken. Comments are shown as data: a
character a terminal would act on (ESC, BEL, CR, bidi overrides, ...) reads as its escape
(``\\x1b``), as every other outside text does (:func:`projectops._text.escape`).
"""

from __future__ import annotations

import re
import textwrap
from typing import Any, cast

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from google.protobuf.message import Message

from projectops._text import escape, escape_lines
from projectops._wire import shape, value_form
from projectops.descriptions import description, summary
from projectops.registry import SERVICE, Operation, operation, operations
from projectops.validation import is_required

__all__ = ["MIN_WIDTH", "describe", "index"]

#: The narrowest `width` the renderers accept, in columns.
MIN_WIDTH = 40
#: Columns added per level of the tree.
_STEP = 2
#: Package of the schema: messages and enums in it are named without it.
_PACKAGE = SERVICE.file.package


def describe(op: Operation | str, *, width: int = 100) -> str:
    """The reference text of one operation (the output of ``projectops describe <tool>``).

    Args:
        op: an :class:`~projectops.registry.Operation`, or its tool name, operation name or path
            (looked up with :func:`projectops.operation`).
        width: the longest line, in columns (at least :data:`MIN_WIDTH`).

    Returns:
        Lines joined with ``\\n`` and ending with one: a header (tool name and title, ``POST``
        path, operation name, the rpc's idempotency and deprecation), the rpc comment, then
        ``Request body`` and ``Response body`` sections holding the field tree (module
        docstring: how each field reads).

    Raises:
        projectops.UnknownOperationError: `op` is a string that names no operation.
        ValueError: `width` is below :data:`MIN_WIDTH`.
    """
    _check(width)
    found = operation(op)
    out = _Lines(width)
    title = escape(found.title)
    out.wrap(f"{found.tool_name} - {title}" if title else found.tool_name, 0, 2)
    out.blank()
    out.wrap(f"POST {found.path}", _STEP, 2 * _STEP)
    out.wrap(f"operation {found.name}; {_behaviour(found)}", _STEP, 2 * _STEP)
    if found.deprecated:
        out.wrap("DEPRECATED: the rpc is marked deprecated; avoid it in new code.", _STEP, _STEP)
    if found.description:
        out.blank()
        out.paragraphs(escape_lines(found.description), 0)
    for title, message, request in (
        ("Request body", _message(found.request_type), True),
        ("Response body", _message(found.response_type), False),
    ):
        out.blank()
        out.wrap(f"{title}: {_name(message)}", 0, _STEP)
        if description(message):
            out.paragraphs(escape_lines(description(message)), _STEP)
        if not message.fields:
            out.blank()
            out.wrap("No fields: the body is the empty JSON object {}.", _STEP, _STEP)
        _Tree(out, request=request).fields(
            message, _STEP, (message.full_name,), {message.full_name}
        )
    return out.text()


def index(*, width: int = 100) -> str:
    """The list of operations (the output of ``projectops describe`` with no argument).

    Args:
        width: the longest line, in columns (at least :data:`MIN_WIDTH`).

    Returns:
        A title line (first sentence of the service comment), then one entry per operation in
        the order of the proto service: its tool name and the first sentence of its rpc
        comment, wrapped under a column of names; then how to see one operation. Ends with
        ``\\n``.

    Raises:
        ValueError: `width` is below :data:`MIN_WIDTH`.
    """
    _check(width)
    out = _Lines(width)
    out.wrap(escape(summary(SERVICE)) or SERVICE.full_name, 0, 0)
    out.blank()
    ops = operations()
    column = min(max(len(op.tool_name) for op in ops) + 2 * _STEP, width // 2)
    for op in ops:
        name = " " * _STEP + op.tool_name
        text = escape(op.title) + (" (deprecated)" if op.deprecated else "")
        if len(name) + _STEP <= column:
            out.wrap(name.ljust(column) + text, 0, column)
        else:
            out.wrap(name, 0, 2 * _STEP)
            out.wrap(text, column, column)
    out.blank()
    out.wrap("projectops describe <tool> shows the fields of one operation.", 0, 0)
    return out.text()


def _check(width: int) -> None:
    if width < MIN_WIDTH:
        raise ValueError(f"width must be at least {MIN_WIDTH} columns, got {width}")


def _behaviour(op: Operation) -> str:
    """What the rpc's idempotency option promises, in words."""
    if op.read_only:
        return f"read-only, safe to retry ({op.idempotency})"
    if op.idempotent:
        return f"idempotent, safe to retry ({op.idempotency})"
    return "may change data; not marked idempotent"


def _message(message_type: type[Message]) -> Descriptor:
    return cast(Descriptor, message_type.DESCRIPTOR)


def _name(message: Descriptor | EnumDescriptor) -> str:
    """A message's or enum's name, without the package when it is the schema's own."""
    full: str = message.full_name
    return full.removeprefix(_PACKAGE + ".") if message.file.package == _PACKAGE else full


class _Lines:
    """Lines of text, each wrapped to `width` columns."""

    def __init__(self, width: int) -> None:
        self.width = width
        self.lines: list[str] = []

    def blank(self) -> None:
        if self.lines and self.lines[-1]:
            self.lines.append("")

    def wrap(self, text: str, indent: int, hanging: int) -> None:
        """`text` at `indent` columns, its continuation lines at `hanging` columns."""
        limit = self.width // 2  # keep half the line for text, however deep the tree
        self.lines.extend(
            textwrap.wrap(
                text,
                self.width,
                initial_indent=" " * min(indent, limit),
                subsequent_indent=" " * min(hanging, limit),
                break_on_hyphens=False,
            )
            or [""]
        )

    def paragraphs(self, text: str, indent: int) -> None:
        for i, paragraph in enumerate(text.split("\n\n")):
            if i:
                self.blank()
            self.wrap(paragraph, indent, indent)

    def text(self) -> str:
        while self.lines and not self.lines[-1]:
            self.lines.pop()
        return "\n".join(line.rstrip() for line in self.lines) + "\n"


class _Tree:
    """The field tree of one body; `shown` holds the messages already expanded in it.

    `request`: the body is a request, so a type reads as what the server accepts (64-bit
    integers as numbers too), not only as what the codec writes.
    """

    def __init__(self, out: _Lines, *, request: bool) -> None:
        self.out = out
        self.request = request

    def fields(
        self, message: Descriptor, indent: int, path: tuple[str, ...], shown: set[str]
    ) -> None:
        for fd in message.fields:
            self.out.blank()
            nested = value_form(fd).message
            expand = nested is not None and nested.full_name not in shown
            header = f"{fd.json_name}: {_type(fd, path, expand, self.request)}"
            if is_required(fd):
                header += ", REQUIRED"
            self.out.wrap(header, indent, indent + 2 * _STEP)
            text = escape_lines(description(fd))
            if text:
                self.out.paragraphs(text, indent + _STEP)
            if nested is not None and expand:
                shown.add(nested.full_name)
                self.fields(nested, indent + _STEP, (*path, nested.full_name), shown)


def _type(fd: FieldDescriptor, path: tuple[str, ...], expand: bool, request: bool) -> str:
    """The JSON type of `fd` (module docstring: how JSON types read)."""
    kind = shape(fd)
    value = _value_type(fd, path, expand, request)
    if kind == "map":
        return f"object of string -> {value}"
    if kind == "list":
        return f"array of {value}"
    return value


def _value_type(fd: FieldDescriptor, path: tuple[str, ...], expand: bool, request: bool) -> str:
    """The JSON type of one value of `fd` (one element of a list, one value of a map)."""
    form = value_form(fd)
    if form.message is not None:
        name = _name(form.message)
        if expand:
            return f"object {name}"
        if form.message.full_name in path:
            return f"object {name} (recursive: its fields are shown above)"
        return f"object {name} (fields shown above)"
    if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
        fd = fd.message_type.fields_by_name["value"]
    json_type = _json_type(form.schema)
    if fd.enum_type is not None:
        names = ", ".join(value.name for value in fd.enum_type.values)
        return f"{json_type}, enum {_name(fd.enum_type)}: {names}"
    if fd.message_type is not None:  # a well-known type with a JSON form of its own
        if set(form.schema) - {"type"}:
            return f"{json_type} ({_phrase(form.expected)})"
        return f"{json_type} ({fd.message_type.full_name})"
    proto_type = _proto_type(fd)
    if json_type == "string" and proto_type.endswith("64"):
        accepted = form.input_schema.get("type", ())
        also = "; a JSON number is accepted too" if request and "integer" in accepted else ""
        return f"string ({proto_type} as decimal digits{also})"
    if form.schema.get("contentEncoding") == "base64":
        return "string (base64)"
    if json_type in ("integer", "number"):
        return f"{json_type} ({proto_type})"
    return json_type


def _json_type(schema: dict[str, Any]) -> str:
    """The JSON type named by a JSON Schema fragment of :func:`value_form`."""
    kind = schema.get("type")
    if isinstance(kind, str):
        return kind
    for branch in schema.get("anyOf", ()):  # floats: a number, or "NaN"/"Infinity" strings
        if isinstance(branch.get("type"), str):
            return str(branch["type"])
    return "any JSON value"


def _proto_type(fd: FieldDescriptor) -> str:
    """The proto scalar type name: ``TYPE_INT64`` -> ``int64``."""
    name: str = descriptor_pb2.FieldDescriptorProto.Type.Name(fd.type)  # type: ignore[arg-type]
    return name.removeprefix("TYPE_").lower()


def _phrase(expected: str) -> str:
    """The codec's phrase for a value, as a type qualifier: ``a duration string in seconds such
    as "3.5s"`` -> ``duration in seconds such as "3.5s"``."""
    text = re.sub(r"^(an?|any) ", "", expected)
    return re.sub(r" string\b", "", text, count=1)
