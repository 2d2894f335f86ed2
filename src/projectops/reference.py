"""The text of ``projectops describe`` (docs/cli.md), from the descriptors alone: :func:`describe`
renders one operation and the field tree of its bodies (JSON name, JSON type as
:func:`projectops._wire.value_form` reads it, ``REQUIRED``, comment; a message met again reads
``(fields shown above)``); :func:`index` lists the operations. Every line fits `width` columns;
comments are outside text, escaped."""

from __future__ import annotations

import re
import textwrap
from typing import Any

from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor

from projectops._text import escape, escape_lines
from projectops._wire import is_map, scalar_type, shape, value_form
from projectops.descriptions import description, summary
from projectops.registry import REGISTRY, SERVICE, Operation, Registry
from projectops.rules import described, rule_phrases
from projectops.validation import is_required

__all__ = ["MIN_WIDTH", "describe", "index"]

#: The narrowest `width` the renderers accept, in columns.
MIN_WIDTH = 40
_STEP = 2  # columns added per level of the tree
_PACKAGE = SERVICE.file.package  # messages and enums of the schema are named without it


def describe(
    op: Operation | str,
    *,
    width: int = 100,
    registry: Registry = REGISTRY,
) -> str:
    """The reference text of an operation, as ``projectops describe <tool>`` prints it: its comment,
    path, request and response fields with their types and comments.

    Args:
        op: an :class:`~projectops.Operation`, or any key :func:`projectops.operation` takes.
        width: the most columns a line may take; 100 by default, at least :data:`MIN_WIDTH`.
        registry: where a string `op` is looked up; :data:`projectops.registry.REGISTRY` by
            default.

    Returns:
        The text, ending with ``\\n``.

    Raises:
        projectops.UnknownOperationError: `op` is a string that names no operation.
        ValueError: `width` is below :data:`MIN_WIDTH`.
    """
    out = _Lines(width)
    found = registry.operation(op)
    title = escape(found.title)
    heading = found.tool_name
    if title:
        heading = f"{found.tool_name} - {title}"
    out.wrap(heading, 0, 2)
    out.blank()
    out.wrap(f"POST {found.path}", _STEP, 2 * _STEP)
    out.wrap(f"operation {found.name}; {_behaviour(found)}", _STEP, 2 * _STEP)
    if found.deprecated:
        out.wrap("DEPRECATED: the rpc is marked deprecated; avoid it in new code.", _STEP, _STEP)
    if found.description:
        out.blank()
        out.paragraphs(escape_lines(found.description), 0)
    bodies = (("Request", found.method.input_type), ("Response", found.method.output_type))
    for title, message in bodies:
        out.blank()
        out.wrap(f"{title} body: {_name(message)}", 0, _STEP)
        # The comment and the message's rules (§4.6); none: a blank line.
        text = described(description(message), rule_phrases(message))
        out.paragraphs(escape_lines(text), _STEP)
        if not message.fields:
            out.blank()
            out.wrap("No fields: the body is the empty JSON object {}.", _STEP, _STEP)
        path = (message.full_name,)
        _fields(out, message, _STEP, path, {*path}, request=title == "Request")
    return out.text()


def index(*, width: int = 100, registry: Registry = REGISTRY) -> str:
    """The operations with their titles, as ``projectops describe`` without a tool prints them.

    Args:
        width: the most columns a line may take; 100 by default, at least :data:`MIN_WIDTH`.
        registry: the operations to list; :data:`projectops.registry.REGISTRY` by default.

    Returns:
        The text, one operation a line (titles wrapped as :func:`describe` wraps), ending with
        ``\\n``.

    Raises:
        ValueError: `width` is below :data:`MIN_WIDTH`.
    """
    out = _Lines(width)
    service = registry.service
    heading = escape(summary(service)) or service.full_name
    out.wrap(heading, 0, 0)
    out.blank()
    ops = registry.operations()
    longest = max(len(op.tool_name) for op in ops)
    column = min(longest + 2 * _STEP, width // 2)
    for op in ops:
        name = " " * _STEP + op.tool_name
        text = escape(op.title)
        if op.deprecated:
            text += " (deprecated)"
        if len(name) + _STEP <= column:
            out.wrap(name.ljust(column) + text, 0, column)
        else:
            out.wrap(name, 0, 2 * _STEP)
            out.wrap(text, column, column)
    out.blank()
    out.wrap("projectops describe <tool> shows the fields of one operation.", 0, 0)
    return out.text()


def _behaviour(op: Operation) -> str:
    if op.read_only:  # what the rpc's idempotency option promises
        return f"read-only, safe to retry ({op.idempotency})"
    if op.idempotent:
        return f"idempotent, safe to retry ({op.idempotency})"
    return "may change data; not marked idempotent"


def _name(message: Descriptor | EnumDescriptor) -> str:
    full = message.full_name
    if message.file.package != _PACKAGE:
        return full
    return full.removeprefix(_PACKAGE + ".")


class _Lines:
    """Lines of text, each wrapped to `width` columns."""

    def __init__(self, width: int) -> None:
        if width < MIN_WIDTH:
            raise ValueError(f"width must be at least {MIN_WIDTH} columns, got {width}")
        self.width = width
        self.lines: list[str] = []

    def blank(self) -> None:
        if self.lines and self.lines[-1]:
            self.lines.append("")

    def wrap(self, text: str, indent: int, hanging: int) -> None:
        """`text` at `indent` columns, its continuation lines at `hanging` columns."""
        half = self.width // 2  # keep half the line for text, however deep the tree
        first = " " * min(indent, half)
        rest = " " * min(hanging, half)
        wrapper = textwrap.TextWrapper(self.width, first, rest, break_on_hyphens=False)
        self.lines.extend(wrapper.wrap(text) or [""])

    def paragraphs(self, text: str, indent: int) -> None:
        for i, paragraph in enumerate(text.split("\n\n")):
            if i:
                self.blank()
            self.wrap(paragraph, indent, indent)

    def text(self) -> str:
        while self.lines and not self.lines[-1]:
            self.lines.pop()
        stripped = [line.rstrip() for line in self.lines]
        return "\n".join(stripped) + "\n"


def _fields(
    out: _Lines,
    message: Descriptor,
    indent: int,
    path: tuple[str, ...],
    shown: set[str],
    request: bool,
) -> None:
    """The field tree of one body; `shown`: the messages already expanded in it. `request`: a
    type reads as what the server accepts (64-bit integers as numbers too)."""
    for fd in message.fields:
        out.blank()
        nested = value_form(fd).message
        expand = nested is not None and nested.full_name not in shown
        value = _value_type(fd, path, expand, request)
        kind = _KINDS.get(shape(fd), "")
        line = f"{fd.json_name}: {kind}{value}"
        if is_required(fd):
            line += ", REQUIRED"
        out.wrap(line, indent, indent + 2 * _STEP)
        # The field's rules, then those of the message it expands (docs/contract.md §4.6).
        phrases = rule_phrases(fd)
        if nested is not None and expand:
            phrases += rule_phrases(nested)
        text = described(description(fd), phrases)
        out.paragraphs(escape_lines(text), indent + _STEP)
        if nested is not None and expand:
            shown.add(nested.full_name)
            nested_path = (*path, nested.full_name)
            _fields(out, nested, indent + _STEP, nested_path, shown, request)


_KINDS = {"map": "object of string -> ", "list": "array of "}  # how a field holds its values


def _value_type(
    fd: FieldDescriptor,
    path: tuple[str, ...],
    expand: bool,
    request: bool,
) -> str:
    """The JSON type of one value of `fd` (one element of a list, one value of a map)."""
    form = value_form(fd)
    if form.message is not None:
        name = _name(form.message)
        if expand:
            return f"object {name}"
        if form.message.full_name in path:
            return f"object {name} (recursive: its fields are shown above)"
        return f"object {name} (fields shown above)"
    if is_map(fd):
        fd = fd.message_type.fields_by_name["value"]  # type: ignore[union-attr]  # is_map
    json_type = _json_type(form.schema)
    if fd.enum_type is not None:
        values = fd.enum_type.values
        names = ", ".join(value.name for value in values)
        return f"{json_type}, enum {_name(fd.enum_type)}: {names}"
    if fd.message_type is not None:  # a well-known type with a JSON form of its own
        if set(form.schema) - {"type"}:
            return f"{json_type} ({_phrase(form.expected)})"
        return f"{json_type} ({fd.message_type.full_name})"
    proto_type = scalar_type(fd)
    if json_type == "string" and proto_type.endswith("64"):
        accepted = form.input_schema.get("type", ())
        also = ""
        if request and "integer" in accepted:
            also = "; a JSON number is accepted too"
        return f"string ({proto_type} as decimal digits{also})"
    if form.schema.get("contentEncoding") == "base64":
        return "string (base64)"
    if json_type in ("integer", "number"):
        return f"{json_type} ({proto_type})"
    return json_type


def _json_type(schema: dict[str, Any]) -> str:
    kinds = [schema, *schema.get("anyOf", ())]  # floats: a number, or "NaN"/"Infinity" strings
    for kind in kinds:
        if isinstance(kind.get("type"), str):
            return str(kind["type"])
    return "any JSON value"


def _phrase(expected: str) -> str:
    """``a duration string in seconds such as "3.5s"`` -> ``duration in seconds such as ..``."""
    text = re.sub(r"^(an?|any) ", "", expected)
    return re.sub(r" string\b", "", text, count=1)
