"""Encoding: a message to its JSON object (:func:`to_dict`) or text (:func:`iter_json`) by one
generated function per type (:func:`compile_encoder`). What it does not model (extensions,
groups, NullValue, custom enum JSON names, times out of range) goes to ``json_format``.
"""

from __future__ import annotations

import base64
import json
import keyword
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any, Final, cast

from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message

from projectops._fastcodec._float32 import shortest_float32
from projectops._fastcodec._plans import (
    BOOL,
    BYTES,
    DOUBLE,
    DURATION,
    ENUM,
    FLOAT,
    INT32,
    INT64,
    MAP,
    MESSAGE,
    OPAQUE,
    REPEATED,
    SINGLE,
    STR,
    TIMESTAMP,
    WKT,
    WKT_FILES,
    Field,
    Plan,
    compile_function,
    reachable,
    ready_plan,
)
from projectops._fastcodec._timefmt import format_duration, format_timestamp
from projectops._wire import is_map, value_form

__all__ = ["compile_encoder", "encoding_plan", "iter_json", "json_encoder", "to_dict"]


class _NoPlan(Exception):
    """A message the fast encoder does not model: to_dict runs json_format for it."""


# The options of codec.to_dict (the codec owns them; the differential tests hold the two equal).
_OPTIONS_OUT: Final[dict[str, Any]] = {
    "preserving_proto_field_name": False,
    "always_print_fields_with_no_presence": True,
    "use_integers_for_enums": False,
}

_READY: dict[Descriptor, Plan] = {}  # plans whose encoder, and those of all below, are compiled


def encoding_plan(descriptor: Descriptor) -> Plan:
    """The plan of `descriptor` with its ``encode`` (and those below it) compiled."""
    return ready_plan(descriptor, _READY, "encode", compile_encoder)


def _attribute(name: str) -> str:
    """Generated code reading field `name` of message `m`."""
    if name.isidentifier() and not keyword.iskeyword(name):
        return f"m.{name}"
    return f"getattr(m, {name!r})"


def compile_encoder(target: Plan) -> Callable[[Any], dict[str, Any]]:
    """`target`'s encode function (one raising _NoPlan for a type it does not model)."""
    if target.descriptor.extension_ranges or any(f.kind == OPAQUE for f in target.fields):
        return _no_plan  # extensions print as "[name]", NullValue as null: json_format's
    namespace = dict(_HELPERS)
    literal: list[str] = []  # the leading fields without presence: one dict display
    lines: list[str] = []
    for i, field in enumerate(target.fields):
        namespace[f"A{i}"] = field.aux
        namespace[f"O{i}"] = field.order
        if field.kind == ENUM and field.shape != MAP:
            namespace[f"N{i}"] = field.aux.names
        value = _encode_expression(field, i)
        key = repr(field.json_name)
        if field.presence:
            lines += [f"    if m.HasField({field.name!r}):", f"        out[{key}] = {value}"]
        elif lines:
            lines.append(f"    out[{key}] = {value}")
        else:
            literal.append(f"        {key}: {value},")
    source = [
        "def encode(m):",
        "    out = {",
        *literal,
        "    }",
        *lines,
        "    return out",
    ]
    encode = compile_function("\n".join(source), "encode", namespace)
    return cast(Callable[[Any], dict[str, Any]], encode)


# One field's JSON value by shape and kind: `{v}` reads the field of `m`, `{i}` is its number in
# the plan (its A/N/O names); other kinds go through VALUE_OUT.
_EXPRESSIONS: Final[dict[int, dict[int, str]]] = {
    SINGLE: {
        STR: "{v}",
        INT32: "{v}",
        BOOL: "{v}",
        INT64: "str({v})",
        ENUM: "N{i}[{v}]",
        MESSAGE: "A{i}.encode({v})",
        TIMESTAMP: "TIMESTAMP_OUT({v})",
        DURATION: "DURATION_OUT({v})",
    },
    REPEATED: {
        STR: "list({v})",
        INT32: "list({v})",
        BOOL: "list({v})",
        INT64: "[str(x) for x in {v}]",
        ENUM: "[N{i}[x] for x in {v}]",
        MESSAGE: "list(map(A{i}.encode, {v}))",
    },
}
_OTHER_EXPRESSION: Final = {
    SINGLE: "VALUE_OUT({k}, A{i}, {v}, O{i})",
    REPEATED: "[VALUE_OUT({k}, A{i}, x, O{i}) for x in {v}]",
}


def _encode_expression(field: Field, i: int) -> str:
    """The expression of the JSON value of `field` (number `i` of its plan) of message `m`."""
    if field.shape == MAP:
        return f"MAP_OUT(A{i}, {_attribute(field.name)})"
    other = _OTHER_EXPRESSION[field.shape]
    template = _EXPRESSIONS[field.shape].get(field.kind, other)
    attribute = _attribute(field.name)
    return template.format(v=attribute, i=i, k=field.kind)


def _no_plan(message: Any) -> dict[str, Any]:
    """The encode function of a type the plans do not model."""
    raise _NoPlan


def to_dict(message: Message) -> dict[str, Any]:
    """``codec.to_dict(message)`` (docs/contract.md §3.1), raising what json_format raises."""
    descriptor = cast(Descriptor, message.DESCRIPTOR)
    if descriptor.file.name not in WKT_FILES:
        try:
            return encoding_plan(descriptor).encode(message)
        except (_NoPlan, ValueError):  # ValueError: a Timestamp or Duration out of range
            pass
    from google.protobuf import json_format  # imported by the rare message that needs it

    data = json_format.MessageToDict(message, **_OPTIONS_OUT)
    return _in_field_order(data, descriptor)


def _encode_value(
    kind: int,
    aux: Any,
    value: Any,
    order: Descriptor | None,
) -> Any:
    """One value of any kind (an element, for repeated and map fields)."""
    if kind == STR or kind == INT32 or kind == BOOL:
        return value
    if kind == INT64:
        return str(value)
    if kind == ENUM:
        return aux.names[value]
    if kind == MESSAGE:
        return aux.encode(value)
    if kind == TIMESTAMP:
        return format_timestamp(value)
    if kind == DURATION:
        return format_duration(value)
    if kind == DOUBLE:
        if value - value != 0:  # NaN or an infinity
            return _non_finite(value)
        return value
    if kind == FLOAT:
        if value - value != 0:
            return _non_finite(value)
        return shortest_float32(value)
    if kind == BYTES:
        return base64.b64encode(value).decode("utf-8")
    if kind == WKT:
        from google.protobuf import json_format

        data = json_format.MessageToDict(value, **_OPTIONS_OUT)
        if order is not None and isinstance(data, dict):
            data = _in_field_order(data, order)
        return data
    raise _NoPlan


def _encode_map(aux: Any, value: Any) -> dict[str, Any]:
    key_kind, value_kind, value_aux, value_order = aux
    out: dict[str, Any] = {}
    for key in value:  # json_format's iteration, in the map's order
        text = str(key)
        if key_kind == BOOL:  # JSON's spelling of a bool map key, not Python's
            text = "true" if key else "false"
        out[text] = _encode_value(value_kind, value_aux, value[key], value_order)
    return out


def _non_finite(value: float) -> str:
    if value != value:
        return "NaN"
    if value > 0:
        return "Infinity"
    return "-Infinity"


def _in_field_order(data: dict[str, Any], descriptor: Descriptor) -> dict[str, Any]:
    """`data` (json_format's output: the fallback and other WKTs) with its keys in the order of
    `descriptor`'s fields, as the fast path writes them; unknown keys (an Any's "@type") last."""
    out: dict[str, Any] = {}
    for fd in descriptor.fields:
        if fd.json_name not in data:
            continue
        value = data[fd.json_name]
        nested = value_form(fd).message
        if nested is not None:
            if is_map(fd):
                value = {k: _in_field_order(v, nested) for k, v in value.items()}
            elif fd.is_repeated:
                value = [_in_field_order(v, nested) for v in value]
            else:
                value = _in_field_order(value, nested)
        out[fd.json_name] = value
    for key, value in data.items():
        if key not in out:  # e.g. "@type" of an Any
            out[key] = value
    return out


_BATCH: Final = 256  # elements of a repeated field turned into JSON values and dumped at once
_CHUNK: Final = 1 << 16  # characters iter_json gathers before it yields them


def iter_json(message: Message, indent: int | None) -> Iterator[str]:
    """``codec.dump(to_dict(message), indent=indent)`` in chunks of about 64 Ki characters,
    holding one batch of a repeated field at a time (a map, or a message without a plan, whole).
    Raises ValueError as ``to_dict`` does, possibly after some chunks."""
    descriptor = cast(Descriptor, message.DESCRIPTOR)
    writer = _Writer(indent)
    if descriptor.file.name in WKT_FILES or not _streamable(encoding_plan(descriptor)):
        yield writer.dumps(to_dict(message), 0)
        return
    pieces: list[str] = []
    size = 0
    try:
        for piece in _message_pieces(message, encoding_plan(descriptor), 0, writer):
            pieces.append(piece)
            size += len(piece)
            if size >= _CHUNK:
                yield "".join(pieces)
                pieces.clear()
                size = 0
    except ValueError:
        to_dict(message)  # json_format's own error, as to_dict raises it
        raise
    yield "".join(pieces)


@cache
def json_encoder(indent: int | None) -> json.JSONEncoder:
    """The encoder of ``codec.dump``'s format: `indent` spaces per level, or compact if None.

    Made once per `indent` (``json.dumps`` with options makes one per call) and without the
    circular-reference check: to_dict's values hold no cycle (each dict and list is made anew),
    and the check costs a dictionary entry per container written."""
    separators = (",", ":")
    if indent is not None:
        separators = (",", ": ")
    return json.JSONEncoder(
        indent=indent, separators=separators, ensure_ascii=False, check_circular=False
    )


class _Writer:
    """The punctuation of ``codec.dump``'s format at each level of nesting."""

    __slots__ = ("encode", "indent", "key_separator")

    def __init__(self, indent: int | None) -> None:
        self.indent = indent
        self.encode = json_encoder(indent).encode
        self.key_separator = ":"
        if indent is not None:
            self.key_separator = ": "

    def newline(self, level: int) -> str:
        """What goes before an item at `level` (and before the bracket closing `level` - 1)."""
        if self.indent is None:
            return ""
        return "\n" + " " * (self.indent * level)

    def dumps(self, value: Any, level: int) -> str:
        """`value` (to_dict's values) as JSON text placed at `level`."""
        text = self.encode(value)
        if self.indent and level and (type(value) is dict or type(value) is list):
            # Raw newlines are only json.dumps' own line breaks (a string's are escaped).
            text = text.replace("\n", self.newline(level))
        return text


@cache
def _streamable(plan: Plan) -> bool:
    """Whether every message type below `plan` has an encoder (no json_format fallback)."""
    return all(p.encode is not _no_plan for p in reachable(plan))


@cache
def _deep(plan: Plan) -> bool:
    """Whether `plan` holds a repeated or map field at any depth (written field by field)."""
    return any(f.shape != SINGLE for p in reachable(plan) for f in p.fields)


def _message_pieces(
    message: Any,
    plan: Plan,
    level: int,
    writer: _Writer,
) -> Iterator[str]:
    """Pieces of the JSON object of `message` (to_dict's keys and values, in its order)."""
    yield "{"
    comma = ""  # "," once a member is written
    for field in plan.fields:
        if field.presence and not message.HasField(field.name):
            continue
        value = getattr(message, field.name)
        key = json.dumps(field.json_name, ensure_ascii=False)
        yield comma + writer.newline(level + 1) + key + writer.key_separator
        comma = ","
        if field.shape == REPEATED:
            yield from _list_pieces(field, value, level + 1, writer)
        elif field.shape == MAP:
            yield writer.dumps(_encode_map(field.aux, value), level + 1)
        elif field.kind == MESSAGE and _deep(field.aux):
            yield from _message_pieces(value, field.aux, level + 1, writer)
        else:
            encoded = _encode_value(field.kind, field.aux, value, field.order)
            yield writer.dumps(encoded, level + 1)
    if comma:  # members were written: the brace closes on a line of its own
        yield writer.newline(level) + "}"
    else:
        yield "}"


def _list_pieces(
    field: Field,
    container: Any,
    level: int,
    writer: _Writer,
) -> Iterator[str]:
    """Pieces of the JSON array of a repeated field, `_BATCH` elements at a time."""
    count = len(container)
    if not count:
        yield "[]"
        return
    kind = field.kind
    aux = field.aux
    close = writer.newline(level)
    yield "["
    if kind == MESSAGE and _deep(aux):
        comma = ""  # "," once an element is written
        for i in range(count):
            yield comma + writer.newline(level + 1)
            comma = ","
            yield from _message_pieces(container[i], aux, level + 1, writer)
    else:
        for start in range(0, count, _BATCH):
            batch = container[start : start + _BATCH]
            if kind == MESSAGE:
                values = [aux.encode(x) for x in batch]
            else:
                values = [_encode_value(kind, aux, x, field.order) for x in batch]
            text = writer.dumps(values, level)
            # "[" + the elements, each after its newline + "," ... + close + "]": the elements.
            elements = text[1 : len(text) - 1 - len(close)]
            if start:
                elements = "," + elements
            yield elements
    yield close + "]"


# The names generated code refers to.
_HELPERS: Final[dict[str, Any]] = {
    "TIMESTAMP_OUT": format_timestamp,
    "DURATION_OUT": format_duration,
    "VALUE_OUT": _encode_value,
    "MAP_OUT": _encode_map,
}
