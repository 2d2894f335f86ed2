"""JSON Schema (draft 2020-12) of the protobuf JSON form of any message, from its descriptor.

The schema describes exactly what :mod:`projectops.codec` writes and reads: camelCase properties
whose descriptions are the proto comments, enums as string enums of their names, 64-bit integers
as strings of digits (numbers too, on input), ``Timestamp`` as a ``date-time`` string,
``Duration`` as ``"<seconds>s"``, repeated fields as arrays, maps as objects, and nested or
recursive messages through ``$defs``. ``required`` lists the fields marked
``(google.api.field_behavior) = REQUIRED`` (AIP-203). Input schemas forbid unknown properties.

The top level is always the object schema itself (``"type": "object"`` with ``$defs`` beside it),
never a bare ``$ref``, as MCP requires of tool input and output schemas.
"""

from __future__ import annotations

from typing import Any, Literal, cast

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from projectops._wire import is_map, value_form
from projectops.descriptions import description
from projectops.registry import Operation, operation
from projectops.validation import is_required

__all__ = ["DIALECT", "input_schema", "message_schema", "output_schema"]

#: The JSON Schema dialect of every schema made here.
DIALECT = "https://json-schema.org/draft/2020-12/schema"

Direction = Literal["input", "output"]


def message_schema(
    message: type[Message] | Descriptor, direction: Direction = "output"
) -> dict[str, Any]:
    """The JSON Schema of the JSON form of a message type.

    Args:
        message: a generated message class or its descriptor.
        direction: ``"input"`` for what a client may send (64-bit integers also as numbers,
            unknown properties forbidden), ``"output"`` for what the codec writes.

    Returns:
        A JSON-serialisable dict: the object schema, with ``$defs`` keyed by the full proto
        names of the nested messages (``projectops.v1.Release``) when there are any.
    """
    root = cast(Descriptor, message if isinstance(message, Descriptor) else message.DESCRIPTOR)
    builder = _Builder(root, direction)
    schema: dict[str, Any] = {"$schema": DIALECT, **builder.object_schema(root)}
    if builder.defs:
        schema["$defs"] = dict(sorted(builder.defs.items()))
    return schema


def input_schema(op: str | Operation) -> dict[str, Any]:
    """The input schema of an operation: its request message, ``direction="input"``."""
    return message_schema(operation(op).request_type, "input")


def output_schema(op: str | Operation) -> dict[str, Any]:
    """The output schema of an operation: its response message, ``direction="output"``."""
    return message_schema(operation(op).response_type, "output")


class _Builder:
    def __init__(self, root: Descriptor, direction: Direction) -> None:
        self.root = root
        self.direction = direction
        self.defs: dict[str, dict[str, Any]] = {}

    def object_schema(self, message: Descriptor) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "object"}
        text = description(message)
        if text:
            schema["description"] = text
        schema["properties"] = {fd.json_name: self.field_schema(fd) for fd in message.fields}
        required = [fd.json_name for fd in message.fields if is_required(fd)]
        if required:
            schema["required"] = required
        if self.direction == "input":
            schema["additionalProperties"] = False
        return schema

    def field_schema(self, fd: FieldDescriptor) -> dict[str, Any]:
        value = self.value_schema(fd)
        if is_map(fd):
            schema: dict[str, Any] = {"type": "object", "additionalProperties": value}
        elif fd.is_repeated:
            schema = {"type": "array", "items": value}
        else:
            schema = dict(value)
        text = description(fd)
        if text:
            schema["description"] = text
        return schema

    def value_schema(self, fd: FieldDescriptor) -> dict[str, Any]:
        form = value_form(fd)
        if form.message is None:
            return dict(form.input_schema if self.direction == "input" else form.schema)
        if form.message.full_name == self.root.full_name:
            return {"$ref": "#"}
        name = form.message.full_name
        if name not in self.defs:
            self.defs[name] = {}  # placeholder first: recursive messages refer to themselves
            self.defs[name] = self.object_schema(form.message)
        return {"$ref": f"#/$defs/{name}"}
