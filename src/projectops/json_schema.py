"""JSON Schema (draft 2020-12) of the protobuf JSON form of any message, exactly what the codec
writes and reads (docs/contract.md §3), descriptions from the proto comments. ``required`` lists
the REQUIRED fields and, on output, every field without presence (always written, §3.1). The top
level is the object schema itself, never a bare ``$ref`` (as MCP requires of tool schemas).
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable
from typing import Any, Literal, cast

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from projectops import rules
from projectops._wire import (
    NON_NEGATIVE_INT64_PATTERN,
    NONZERO_INT32_PATTERN,
    map_key_names,
    shape,
    value_form,
)
from projectops.descriptions import description
from projectops.registry import Operation, operation
from projectops.validation import NOT_BLANK_PATTERN, is_required

__all__ = ["DIALECT", "input_schema", "message_schema", "output_schema", "rules_in_words"]

#: The JSON Schema dialect of every schema made here.
DIALECT = "https://json-schema.org/draft/2020-12/schema"

Direction = Literal["input", "output"]


def message_schema(
    message: type[Message] | Descriptor,
    direction: Direction = "output",
    *,
    ref: Callable[[Descriptor], str] | None = None,
    allow_unknown: bool = False,
    required_values: bool = False,
) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a message's protobuf JSON form (docs/contract.md §3, §4).

    Args:
        message: a generated message class or its ``Descriptor``.
        direction: ``"output"`` (the default): what the codec writes, every field without
            presence ``required`` (§3.1); ``"input"``: what strict decoding reads, 64-bit
            integers as numbers too, and the REQUIRED fields ``required`` (§3.2, §4.1).
        ref: for schemas kept elsewhere (OpenAPI's components): a message descriptor -> the
            ``$ref`` of its definition; the result then has no ``$schema`` and no ``$defs``.
            ``None`` (the default): nested messages go into ``$defs``, keyed by full name.
        allow_unknown: on input, take what the default server reads (§3.3, §3.6): properties
            the message does not have, an enum's unknown names and numbers; ``False`` (the
            default) forbids them, as strict decoding does.
        required_values: also exclude the values :func:`projectops.validate` counts as missing
            from REQUIRED fields (blank strings, empty lists, §4.2); ``False`` by default.

    Returns:
        A new object schema (never a bare ``$ref``), with the proto comments as descriptions.
    """
    if isinstance(message, Descriptor):
        root = message
    else:
        root = cast(Descriptor, message.DESCRIPTOR)
    builder = _Builder(root, direction, ref, allow_unknown, required_values)
    schema: dict[str, Any] = {}
    if not ref:  # a schema of its own, not a component of another document
        schema["$schema"] = DIALECT
    schema.update(builder.object_schema(root))
    if builder.defs:
        schema["$defs"] = dict(sorted(builder.defs.items()))
    return schema


def input_schema(op: str | Operation) -> dict[str, Any]:
    """The schema of what strict decoding plus :func:`projectops.validate` accept of an
    operation's request: MCP's ``inputSchema`` of its tool (docs/contract.md §3.4, §4).

    Args:
        op: an :class:`~projectops.Operation` or any key :func:`projectops.operation` takes.

    Returns:
        A new JSON Schema (draft 2020-12) object schema.

    Raises:
        projectops.UnknownOperationError: `op` names no operation.
    """
    return message_schema(operation(op).request_type, "input", required_values=True)


def output_schema(op: str | Operation) -> dict[str, Any]:
    """The schema of an operation's response as the codec writes it: MCP's ``outputSchema`` of its
    tool (docs/contract.md §3.1).

    Args:
        op: an :class:`~projectops.Operation` or any key :func:`projectops.operation` takes.

    Returns:
        A new JSON Schema (draft 2020-12) object schema.

    Raises:
        projectops.UnknownOperationError: `op` names no operation.
    """
    return message_schema(operation(op).response_type, "output")


class _Builder:
    def __init__(
        self,
        root: Descriptor,
        direction: Direction,
        ref: Callable[[Descriptor], str] | None,
        allow_unknown: bool,
        required_values: bool,
    ) -> None:
        self.root = root
        self.required_values = required_values
        self.direction = direction
        self.ref = ref
        self.closed = direction == "input" and not allow_unknown
        self.defs: dict[str, dict[str, Any]] = {}

    def object_schema(self, message: Descriptor) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "object"}
        phrases = rules.rule_phrases(message)
        text = rules.described(description(message), phrases)
        if text:
            schema["description"] = text
        schema["properties"] = {fd.json_name: self.field_schema(fd) for fd in message.fields}
        # Two members of a oneof are refused; null sets none (§3).
        pairs = []
        for oneof in message.oneofs:
            names = [fd.json_name for fd in oneof.fields]
            for a, b in itertools.combinations(names, 2):
                not_null = {name: {"not": {"type": "null"}} for name in (a, b)}
                pairs.append({"required": [a, b], "properties": not_null})
        if pairs:
            schema["not"] = {"anyOf": pairs}
        # What the codec always writes is required of a response: fields without presence. Of
        # a request: what validate refuses missing, a field whose default breaks a rule too.
        required = [fd.json_name for fd in message.fields if self._required(fd)]
        if required:
            schema["required"] = required
        if self.closed:
            schema["additionalProperties"] = False
        return schema

    def field_schema(self, fd: FieldDescriptor) -> dict[str, Any]:
        value = self.value_schema(fd)
        kind = shape(fd)
        if kind == "map":
            schema: dict[str, Any] = {"type": "object", "additionalProperties": value}
            key_names = map_key_names(fd)
            if key_names is not None:
                schema["propertyNames"] = key_names
        elif kind == "list":
            schema = {"type": "array", "items": value}
        else:
            schema = dict(value)
        if self.required_values and is_required(fd):
            schema.update(_present(fd))
        phrases = dict(zip(rules.rule_items(fd), rules.rule_phrases(fd), strict=True))
        unsaid = [phrases[name] for name in _apply_rules(fd, schema)]
        if self.direction == "input" and not self._required(fd):
            # The codec reads null as the field's default (§3): a schema refusing it would call
            # invalid what every server accepts. anyOf, as pydantic writes an Optional field.
            schema = {"anyOf": [schema, {"type": "null"}]}
        text = rules.described(description(fd), unsaid)
        if text:
            schema["description"] = text
        return schema

    def _required(self, fd: FieldDescriptor) -> bool:
        if self.direction == "output":
            return is_required(fd) or not fd.has_presence
        return is_required(fd) or rules.zero_breaks_rule(fd)

    def value_schema(self, fd: FieldDescriptor) -> dict[str, Any]:
        form = value_form(fd)
        if form.message is None and self.direction == "input":
            schema = dict(form.input_schema)
            if "enum" in schema and not self.closed:
                # The lenient server reads a name it does not know as the zero value, and a
                # number (a bool as 0 or 1) truncated to a 32-bit integer (§3.3, as json_format
                # does): its schema takes them, the names kept for readers. What reads as 0
                # leaves a REQUIRED field missing.
                wider = _LENIENT_ENUM
                if self.required_values and is_required(fd) and shape(fd) == "single":
                    wider = _LENIENT_ENUM_PRESENT
                schema = {"anyOf": [schema, *copy.deepcopy(wider)]}  # no YAML anchor
            return schema
        if form.message is None:
            return dict(form.schema)
        name = form.message.full_name
        if name != self.root.full_name and name not in self.defs:
            self.defs[name] = {}  # placeholder first: recursive messages refer to themselves
            self.defs[name] = self.object_schema(form.message)
        if self.ref:
            return {"$ref": self.ref(form.message)}
        if name == self.root.full_name:
            return {"$ref": "#"}
        return {"$ref": f"#/$defs/{name}"}


#: An enum's value besides its names, as the lenient server reads it (see value_schema).
_INT32_RANGE = {"exclusiveMinimum": -(2**31) - 1, "exclusiveMaximum": 2**31}
_LENIENT_ENUM = [{"type": ["string", "number", "boolean"], **_INT32_RANGE}]
#: ... and of those, what does not read as 0.
_LENIENT_ENUM_PRESENT: list[Any] = [
    {"type": "string", "pattern": NONZERO_INT32_PATTERN},
    {"const": True},
    {"type": "number", **_INT32_RANGE, "not": {"exclusiveMinimum": -1, "exclusiveMaximum": 1}},
]


def _present(fd: FieldDescriptor) -> dict[str, Any]:
    """The keywords that exclude a missing value of a REQUIRED field (see ``validate``)."""
    kind = shape(fd)
    if kind == "map":
        return {"minProperties": 1}
    if kind == "list":
        return {"minItems": 1}
    if fd.type == FieldDescriptor.TYPE_STRING:
        # Not `\S`: Python's and ECMA-262's white space differ; this class is validate's own.
        return {"pattern": NOT_BLANK_PATTERN}
    if fd.type == FieldDescriptor.TYPE_BYTES:
        return {"minLength": 1}
    # A scalar without presence is missing when it holds its default (protovalidate's
    # `required`): false, the enum's zero value, 0 (written "0" for 64 bits).
    if fd.type == FieldDescriptor.TYPE_BOOL:
        return {"const": True}
    enum = fd.enum_type
    if enum is not None:
        return {"not": {"const": enum.values_by_number[0].name}}
    if fd.message_type is None and not fd.has_presence:
        return {"not": {"enum": [0, "0"]}}
    return {}


# --- the protovalidate rules as JSON Schema keywords (docs/contract.md §4.6) -----------------
# As protoc-gen-connect-openapi writes them: a rule a keyword states exactly becomes the keyword;
# any other (a CEL rule's message, a bound of a duration or of a 64-bit integer written as a
# string) is said in words in the description (projectops.rules.rule_phrases).

#: Kind of rules -> rule -> the keyword that states it exactly. Not bytes (a length in base64
#: differs), the 64-bit integers (a JSON string: `minimum` does not bind it) nor float (the
#: rule holds of the value rounded to 32 bits: 999999.97 is 1e6).
_NUMBERS = ("int32", "uint32", "sint32", "fixed32", "sfixed32", "double")
_BOUNDS = {
    "gte": "minimum",
    "gt": "exclusiveMinimum",
    "lte": "maximum",
    "lt": "exclusiveMaximum",
}
_KEYWORDS = {
    "string": {
        "min_len": "minLength",
        "max_len": "maxLength",
        "pattern": "pattern",
    },
    "repeated": {
        "min_items": "minItems",
        "max_items": "maxItems",
        "unique": "uniqueItems",
    },
    "map": {
        "min_pairs": "minProperties",
        "max_pairs": "maxProperties",
    },
    **{kind: _BOUNDS for kind in _NUMBERS},
}


def _apply_rules(fd: FieldDescriptor, schema: dict[str, Any]) -> list[str]:
    """Add the keywords of `fd`'s rules to its `schema` (a list's or a map's element rules to
    its ``items`` or ``additionalProperties``); the names (:func:`projectops.rules.rule_items`)
    of the rules no keyword states."""
    items = rules.rule_items(fd)
    ignore = getattr(rules.field_rules(fd), "ignore", 0)
    if ignore:  # skips some values: no keyword may refuse them
        return list(items)
    targets = {
        "": schema,
        "repeated.items": schema.get("items"),
        "map.values": schema.get("additionalProperties"),
    }
    unsaid = []
    for name, value in items.items():
        prefix, _, rule = name.rpartition(".")  # "repeated.items.string", "min_len"
        where, _, kind = prefix.rpartition(".")  # "repeated.items", "string"
        target = targets.get(where)
        if "[" in name:  # a CEL rule: in words
            target = None
        keyword = _KEYWORDS.get(kind, {}).get(rule)
        count = kind == "int64" and rule == "gte" and value == 0
        if target is not None and keyword:
            _merge(target, keyword, value)
            if kind == "double":
                _drop_words(target, rule)
        elif target is not None and count:
            target["pattern"] = NON_NEGATIVE_INT64_PATTERN  # a count, written as a string
            _merge(target, "minimum", 0)
        else:
            unsaid.append(name)
    return unsaid


def _drop_words(schema: dict[str, Any], bound: str) -> None:
    """Take out of a double's `schema` (a number or a word, value_form's) the words its `bound`
    (``gte``, ``lt``...) refuses: NaN, which no bound holds, and the infinity beyond it."""
    if "anyOf" not in schema:  # rules_in_words' stand-in
        return
    number, words = schema["anyOf"]
    refused = {"NaN", "-Infinity" if bound.startswith("g") else "Infinity"}
    kept = [word for word in words["enum"] if word not in refused]
    schema["anyOf"] = [number, {"enum": kept}]  # new: value_form's are shared


def rules_in_words(of: FieldDescriptor | Descriptor) -> list[str]:
    """The rules that a schema states in words only, in its description: a CEL rule, a bound of
    a 64-bit integer (a JSON string no ``minimum`` binds) or of a float (rounded to 32 bits), a
    length of bytes (in base64 it differs), ``in`` and ``not_in``, every rule of a field with
    ``ignore``, and every rule of a message (docs/contract.md §4.6). A value the schema accepts
    may still break them.

    Args:
        of: a field, or a message: then the rules of it and of every field and message below it.

    Returns:
        Their names as :func:`projectops.rules.rule_items` gives them (``"bytes.max_len"``,
        ``"cel[id]"``), in the proto's order, a message's before its fields'; empty when
        keywords state every rule.
    """
    if isinstance(of, FieldDescriptor):
        return _apply_rules(of, {"items": {}, "additionalProperties": {}})
    found: dict[str, None] = {}  # in order, once
    pending = [of]
    for message in pending:  # it grows as it goes: each message below once
        found.update(dict.fromkeys(rules.rule_items(message)))
        for fd in message.fields:
            found.update(dict.fromkeys(rules_in_words(fd)))
            if fd.message_type is not None and fd.message_type not in pending:
                pending.append(fd.message_type)
    return list(found)


def _merge(schema: dict[str, Any], key: str, value: Any) -> None:
    """Add `key` to `schema`; when it is there already with another value (a REQUIRED string's
    not-blank ``pattern`` and a rule's), ``{key: value}`` joins ``allOf`` instead, so both hold."""
    if key not in schema or schema[key] == value:
        schema[key] = value
    else:
        schema.setdefault("allOf", []).append({key: value})
