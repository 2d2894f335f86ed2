"""A fast path for the protobuf JSON mapping, agreeing with ``json_format`` on what it accepts.

The codec (``projectops.codec``) owns the mapping options; this module makes them cheap.
``json_format`` walks every field in Python through reflection, which makes it 10-25 times
slower than ``json.loads``/``json.dumps``. Here each message type gets a *plan*, built once from
its descriptor and cached: two small Python functions generated for that type (one to decode,
one to encode), in which every field is a few inlined lines chosen by its type.

- :func:`to_dict` reads the fields of a message along its plan and returns exactly what
  ``json_format.MessageToDict(message, preserving_proto_field_name=False,
  always_print_fields_with_no_presence=True, use_integers_for_enums=False)`` returns, with the
  keys in proto field order at every level (what ``codec.to_dict`` produces). For anything it
  does not model (extensions, groups, ``google.protobuf.NullValue`` fields, custom enum JSON
  names, an out-of-range Timestamp or Duration) it runs ``json_format`` itself, so it returns
  or raises what ``codec.to_dict`` does.
- :func:`from_dict` checks and converts a parsed JSON object along the plan into the keyword
  arguments of the generated class, whose constructor (upb, in C) builds the nested messages.
  It returns the message ``json_format.ParseDict(data, message_type(),
  ignore_unknown_fields=not strict)`` builds; in strict mode it also refuses what the codec's
  strict rule refuses (enum values that are not names). It accepts only inputs whose outcome it
  knows to be that success. On everything else (every error, and the few valid forms it does
  not model, such as ``"1e3"`` or ``"+5"`` for an integer) it raises :class:`Unsupported`, and
  the caller runs ``json_format``, which produces the result or names the error as before.

The mapping is the protobuf JSON mapping (ProtoJSON, https://protobuf.dev/programming-guides/json/)
as the installed ``json_format`` implements it, quirks included: lowerCamelCase or proto field
names, 64-bit integers as strings or numbers, integral floats for integers, ``"NaN"``,
``"Infinity"`` and ``"-Infinity"`` for floating point, standard and URL-safe base64 for bytes,
enum names (and numbers, in lenient mode), unknown enum names dropped in lenient mode, ``null``
as "not set", RFC 3339 timestamps with any offset, ``"<seconds>s"`` durations. Well-known types
other than Timestamp and Duration (Struct, Value, ListValue, the wrappers, FieldMask, Empty,
Any) are handed to ``json_format`` for their subtree only.

``tests/core/test_codec_differential.py`` holds both functions to ``json_format`` on generated
messages and on inputs of every shape, valid or not.
"""

from __future__ import annotations

import base64
import copy
import datetime
import json
import keyword
import math
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final, TypeVar, cast

from google.protobuf import descriptor_pool, json_format, message_factory
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from google.protobuf.internal import type_checkers
from google.protobuf.message import Message

from projectops._wire import is_map, value_form

__all__ = ["Unsupported", "from_dict", "iter_json", "to_dict"]

M = TypeVar("M", bound=Message)


class Unsupported(Exception):
    """The fast path does not take this input: decode it with ``json_format`` instead.

    Raised for every input ``json_format`` rejects and for the few valid forms the fast path
    does not model; it does not say which of the two it is.
    """


class _NoPlan(Exception):
    """A message the fast encoder does not model: to_dict runs json_format for it."""


# The options of codec.to_dict (the codec owns them; the differential tests hold the two equal).
_OPTIONS_OUT: Final[dict[str, Any]] = {
    "preserving_proto_field_name": False,
    "always_print_fields_with_no_presence": True,
    "use_integers_for_enums": False,
}
_MAX_DEPTH: Final = 100  # json_format.ParseDict's max_recursion_depth default
_FLOAT_MAX: Final = 3.4028234663852886e38  # the largest finite float32 (json_format's bound)
_SPECIAL_FLOATS: Final = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_UNPAIRED_SURROGATE: Final = re.compile(  # json_format's
    "[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]"
)
_EXTENSION_NAME: Final = re.compile(r"\[[a-zA-Z0-9\._]*\]$")  # json_format's
_NUMBER: Final = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?", re.ASCII)
_TIMESTAMP: Final = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,9}))?"
    r"(Z|[+-][0-9]{2}:[0-9]{2})",
    re.ASCII,
)
_TIMESTAMP_SECONDS_MIN: Final = -62135596800  # 0001-01-01T00:00:00Z
_TIMESTAMP_SECONDS_MAX: Final = 253402300799  # 9999-12-31T23:59:59Z
_DURATION_SECONDS_MAX: Final = 315576000000
_EPOCH_ORDINAL: Final = datetime.date(1970, 1, 1).toordinal()
_CACHE_SIZE: Final = 8192  # entries of each timestamp cache before it starts over

# Value kinds: one per JSON form (the two integer widths differ only on output).
_STR: Final = 0
_ENUM: Final = 1
_INT64: Final = 2  # int64, uint64, sint64, fixed64, sfixed64: strings on output
_INT32: Final = 3  # int32, uint32, sint32, fixed32, sfixed32: numbers on output
_BOOL: Final = 4
_DOUBLE: Final = 5
_FLOAT: Final = 6
_BYTES: Final = 7
_MESSAGE: Final = 8
_TIMESTAMP_KIND: Final = 9
_DURATION_KIND: Final = 10
_WKT: Final = 11  # another well-known type: json_format for that subtree
_OPAQUE: Final = 12  # a NullValue field, a group or an enum with custom JSON names

# Field shapes.
_SINGLE: Final = 0
_REPEATED: Final = 1
_MAP: Final = 2

_SCALAR_KINDS: Final = {
    FieldDescriptor.TYPE_STRING: _STR,
    FieldDescriptor.TYPE_BYTES: _BYTES,
    FieldDescriptor.TYPE_BOOL: _BOOL,
    FieldDescriptor.TYPE_DOUBLE: _DOUBLE,
    FieldDescriptor.TYPE_FLOAT: _FLOAT,
    FieldDescriptor.TYPE_INT64: _INT64,
    FieldDescriptor.TYPE_UINT64: _INT64,
    FieldDescriptor.TYPE_SINT64: _INT64,
    FieldDescriptor.TYPE_FIXED64: _INT64,
    FieldDescriptor.TYPE_SFIXED64: _INT64,
    FieldDescriptor.TYPE_INT32: _INT32,
    FieldDescriptor.TYPE_UINT32: _INT32,
    FieldDescriptor.TYPE_SINT32: _INT32,
    FieldDescriptor.TYPE_FIXED32: _INT32,
    FieldDescriptor.TYPE_SFIXED32: _INT32,
}
_OWN_WKT: Final = {
    "google.protobuf.Timestamp": _TIMESTAMP_KIND,
    "google.protobuf.Duration": _DURATION_KIND,
}
_OTHER_WKT_FILES: Final = {
    "google/protobuf/any.proto",
    "google/protobuf/empty.proto",
    "google/protobuf/field_mask.proto",
    "google/protobuf/struct.proto",
    "google/protobuf/wrappers.proto",
}
# At the top, a well-known type's JSON is not always an object: json_format's business.
_WKT_FILES: Final = {
    *_OTHER_WKT_FILES,
    "google/protobuf/timestamp.proto",
    "google/protobuf/duration.proto",
}


# --------------------------------------------------------------------------------------------
# Plans


class _Names(dict[int, Any]):
    """Enum numbers to names; an unknown number (open enums) stays a number, as in json_format."""

    def __missing__(self, number: int) -> int:
        return number


class _Enum:
    """One enum type: names to numbers, numbers to names (as json_format reads them), openness."""

    __slots__ = ("by_name", "names", "open")

    def __init__(self, enum: EnumDescriptor) -> None:
        self.by_name: dict[str, int] = {v.name: v.number for v in enum.values}
        self.names = _Names({n: v.name for n, v in enum.values_by_number.items()})
        self.open: bool = not enum.is_closed


class _Field:
    """One field of a plan. ``aux`` is the nested plan, the enum, the class of a well-known type,
    or for a map ``(key_kind, value_kind, value_aux, value_order)``; ``order`` is the message
    whose field order codec.to_dict imposes on a well-known type's object (Any, Empty)."""

    __slots__ = ("aux", "json_name", "kind", "name", "oneof", "order", "presence", "shape")

    def __init__(self, fd: FieldDescriptor, oneof: int) -> None:
        self.name: str = fd.name
        self.json_name: str = fd.json_name
        self.presence: bool = fd.has_presence
        self.oneof = oneof
        self.order: Descriptor | None = value_form(fd).message
        if is_map(fd):
            entry = cast(Descriptor, fd.message_type)
            key_kind, _ = _kind(entry.fields_by_name["key"])
            value_kind, value_aux = _kind(entry.fields_by_name["value"])
            self.shape = _MAP
            self.kind = value_kind
            self.aux: Any = (key_kind, value_kind, value_aux, self.order)
        else:
            self.shape = _REPEATED if fd.is_repeated else _SINGLE
            self.kind, self.aux = _kind(fd)


def _decode_unbuilt(data: dict[Any, Any], depth: int, lenient: bool) -> dict[str, Any]:
    raise AssertionError("plan used before it was built")


def _encode_unbuilt(message: Any) -> dict[str, Any]:
    raise AssertionError("plan used before it was built")


class _Plan:
    """One message type: its fields, the keys accepted on input, and its generated functions."""

    __slots__ = ("decode", "descriptor", "encode", "fields", "inputs", "json_names")

    def __init__(self, descriptor: Descriptor) -> None:
        self.descriptor = descriptor
        self.fields: list[_Field] = []
        self.inputs: dict[str, _Field] = {}  # JSON names first, then proto names
        self.json_names: frozenset[str] = frozenset()
        # (JSON object, depth, lenient) -> constructor keyword arguments
        self.decode: Callable[[dict[Any, Any], int, bool], dict[str, Any]] = _decode_unbuilt
        # message -> JSON object
        self.encode: Callable[[Any], dict[str, Any]] = _encode_unbuilt


_PLANS: dict[Descriptor, _Plan] = {}
_BUILDING: dict[Descriptor, _Plan] = {}  # plans under construction, under _LOCK
_LOCK = threading.RLock()


def _plan(descriptor: Descriptor) -> _Plan:
    """The plan of `descriptor`, built on first use (with those of the types it refers to)."""
    plan = _PLANS.get(descriptor)
    if plan is not None:
        return plan
    with _LOCK:
        plan = _PLANS.get(descriptor) or _BUILDING.get(descriptor)
        if plan is not None:
            return plan  # built meanwhile, or being built (a recursive type)
        outermost = not _BUILDING
        plan = _BUILDING[descriptor] = _Plan(descriptor)
        try:
            _fill(plan)
            if outermost:
                for built in _BUILDING.values():
                    built.decode = _compile_decoder(built)
                    built.encode = _compile_encoder(built)
                _PLANS.update(_BUILDING)
        finally:
            if outermost:
                _BUILDING.clear()
        return plan


def _fill(plan: _Plan) -> None:
    descriptor = plan.descriptor
    oneofs = {o.full_name: i for i, o in enumerate(descriptor.oneofs)}
    for fd in descriptor.fields:
        oneof = -1 if fd.containing_oneof is None else oneofs[fd.containing_oneof.full_name]
        field = _Field(fd, oneof)
        plan.fields.append(field)
        plan.inputs[field.json_name] = field  # the last one wins, as in json_format
    for field in plan.fields:
        plan.inputs.setdefault(field.name, field)
    plan.json_names = frozenset(field.json_name for field in plan.fields)


def _kind(fd: FieldDescriptor) -> tuple[int, Any]:
    """The value kind of `fd` (of one element, if repeated) and its auxiliary data."""
    if fd.type == FieldDescriptor.TYPE_GROUP:
        return _OPAQUE, None
    message_type = fd.message_type
    if message_type is not None:
        own = _OWN_WKT.get(message_type.full_name)
        if own is not None:
            return own, None
        if message_type.file.name in _OTHER_WKT_FILES:
            return _WKT, message_factory.GetMessageClass(message_type)
        return _MESSAGE, _plan(message_type)
    enum_type = fd.enum_type
    if enum_type is not None:
        if enum_type.full_name == "google.protobuf.NullValue" or _custom_names(enum_type):
            return _OPAQUE, None
        return _ENUM, _Enum(enum_type)
    return _SCALAR_KINDS[fd.type], None


def _custom_names(enum: EnumDescriptor) -> bool:
    """Whether values of `enum` carry the ``pb.enumvalue.json`` option json_format honours."""
    try:
        extension = descriptor_pool.Default().FindExtensionByName("pb.enumvalue.json")
    except KeyError:
        return False
    return any(v.GetOptions().HasExtension(extension) for v in enum.values)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# Code generation: one decoder and one encoder per message type, each field inlined by kind.


def _attribute(name: str) -> str:
    if name.isidentifier() and not keyword.iskeyword(name):
        return f"m.{name}"
    return f"getattr(m, {name!r})"


def _compile(source: str, name: str, namespace: dict[str, Any]) -> Any:
    namespace.update(_HELPERS)
    exec(compile(source, f"<projectops._fastcodec {name}>", "exec"), namespace)
    return namespace[name]


def _compile_decoder(plan: _Plan) -> Callable[[dict[Any, Any], int, bool], dict[str, Any]]:
    namespace: dict[str, Any] = {"PLAN": plan, "JSON_NAMES": plan.json_names}
    lines = [
        "def decode(d, depth, lenient):",
        "    if depth > MAX_DEPTH:",
        "        raise U",
        "    if not d.keys() <= JSON_NAMES:  # proto names or unknown keys",
        "        d = NORMALIZE(PLAN, d, lenient)",
        "    out = {}",
    ]
    oneofs = sorted({f.oneof for f in plan.fields if f.oneof >= 0})
    lines += [f"    o{i} = 0" for i in oneofs]
    for i, field in enumerate(plan.fields):
        namespace[f"A{i}"] = field.aux
        if field.kind == _ENUM and field.shape == _SINGLE:
            namespace[f"E{i}"] = field.aux.by_name
        kind, shape = field.kind, field.shape
        key, name = repr(field.json_name), repr(field.name)
        if kind == _OPAQUE or (shape == _SINGLE and kind == _WKT and _is_value(field.aux)):
            # null is a value here (null_value): json_format's business
            lines += [f"    v = d.get({key}, MISSING)", "    if v is None:", "        raise U"]
            lines.append("    if v is not MISSING:")
        else:
            lines += [f"    v = d.get({key})", "    if v is not None:"]
        body = [f"o{field.oneof} += 1"] if field.oneof >= 0 else []
        if shape == _SINGLE:
            body += _decode_single(kind, i, name)
        elif shape == _REPEATED:
            body += ["if type(v) is not list:", "    raise U"]
            if kind == _MESSAGE:
                body.append(
                    f"out[{name}] = [A{i}.decode(x, depth + 1, lenient) if type(x) is dict"
                    " else BAD() for x in v]"
                )
            elif kind == _STR:  # a lone surrogate: upb's UTF-8 check fails, as json_format does
                body += [
                    "for x in v:",
                    "    if type(x) is not str:",
                    "        raise U",
                    f"out[{name}] = v",
                ]
            else:
                body.append(f"out[{name}] = REPEATED({kind}, A{i}, v, depth + 1, lenient)")
        else:
            body.append(f"out[{name}] = MAP(A{i}, v, depth + 1, lenient)")
        lines += ["        " + line for line in body]
    for i in oneofs:  # two members of one oneof: json_format refuses
        lines += [f"    if o{i} > 1:", "        raise U"]
    lines.append("    return out")
    return cast(
        Callable[[dict[Any, Any], int, bool], dict[str, Any]],
        _compile("\n".join(lines), "decode", namespace),
    )


def _decode_single(kind: int, i: int, name: str) -> list[str]:
    """Lines that check a non-null JSON value `v` and store it as ``out[name]``."""
    if kind == _STR:  # a lone surrogate: upb's UTF-8 check fails, as json_format does
        return ["if type(v) is not str:", "    raise U", f"out[{name}] = v"]
    if kind == _INT64 or kind == _INT32:
        return [
            "if type(v) is str and v.isdigit() and v.isascii() and len(v) < 21:",
            f"    out[{name}] = int(v)",
            "elif type(v) is int:",
            f"    out[{name}] = v",
            "else:",
            f"    out[{name}] = INTEGER(v)",
        ]
    if kind == _ENUM:
        return [
            f"x = E{i}.get(v)",  # an unhashable value: TypeError, Unsupported in from_dict
            "if x is not None:",
            f"    out[{name}] = x",
            "else:",
            f"    x = ENUM(A{i}, v, lenient)",
            "    if x is not SKIP:",
            f"        out[{name}] = x",
        ]
    if kind == _BOOL:
        return ["if type(v) is not bool:", "    raise U", f"out[{name}] = v"]
    if kind == _MESSAGE:
        return [
            "if type(v) is not dict:",
            "    raise U",
            f"out[{name}] = A{i}.decode(v, depth + 1, lenient)",
        ]
    if kind == _TIMESTAMP_KIND or kind == _DURATION_KIND:
        function = "TIMESTAMP" if kind == _TIMESTAMP_KIND else "DURATION"
        return [
            "if type(v) is not str or depth >= MAX_DEPTH:",
            "    raise U",
            f"out[{name}] = {function}(v)",
        ]
    return [f"out[{name}] = VALUE({kind}, A{i}, v, depth + 1, lenient)"]


def _compile_encoder(plan: _Plan) -> Callable[[Any], dict[str, Any]]:
    if plan.descriptor.extension_ranges or any(f.kind == _OPAQUE for f in plan.fields):
        return _no_plan  # extensions print as "[name]", NullValue as null: json_format's
    namespace: dict[str, Any] = {}
    literal: list[str] = []  # the leading fields without presence: one dict display
    lines: list[str] = []
    for i, field in enumerate(plan.fields):
        namespace[f"A{i}"] = field.aux
        namespace[f"O{i}"] = field.order
        if field.kind == _ENUM and field.shape != _MAP:
            namespace[f"N{i}"] = field.aux.names
        value = _encode_expression(field, i)
        key = repr(field.json_name)
        if field.presence:
            lines += [f"    if m.HasField({field.name!r}):", f"        out[{key}] = {value}"]
        elif lines:
            lines.append(f"    out[{key}] = {value}")
        else:
            literal.append(f"        {key}: {value},")
    source = ["def encode(m):", "    out = {", *literal, "    }", *lines, "    return out"]
    return cast(Callable[[Any], dict[str, Any]], _compile("\n".join(source), "encode", namespace))


def _encode_expression(field: _Field, i: int) -> str:
    """The expression of the JSON value of `field` (number `i` of its plan) of message `m`."""
    kind, shape, value = field.kind, field.shape, _attribute(field.name)
    if shape == _SINGLE:
        if kind == _STR or kind == _INT32 or kind == _BOOL:
            return value
        if kind == _INT64:
            return f"str({value})"
        if kind == _ENUM:
            return f"N{i}[{value}]"
        if kind == _MESSAGE:
            return f"A{i}.encode({value})"
        if kind == _TIMESTAMP_KIND:
            return f"TIMESTAMP_OUT({value})"
        if kind == _DURATION_KIND:
            return f"DURATION_OUT({value})"
        return f"VALUE_OUT({kind}, A{i}, {value}, O{i})"
    if shape == _REPEATED:
        if kind == _STR or kind == _INT32 or kind == _BOOL:
            return f"list({value})"
        if kind == _INT64:
            return f"[str(x) for x in {value}]"
        if kind == _ENUM:
            return f"[N{i}[x] for x in {value}]"
        if kind == _MESSAGE:
            return f"list(map(A{i}.encode, {value}))"
        return f"[VALUE_OUT({kind}, A{i}, x, O{i}) for x in {value}]"
    return f"MAP_OUT(A{i}, {value})"


def _no_plan(message: Any) -> dict[str, Any]:
    raise _NoPlan


# --------------------------------------------------------------------------------------------
# Decoding


def from_dict(data: Mapping[str, Any], message_type: type[M], *, strict: bool) -> M:
    """Decode a parsed JSON object into a new `message_type`, or raise :class:`Unsupported`.

    Args:
        data: the JSON object as ``json.loads`` returns it (``dict``, ``list``, ``str``,
            ``int``, ``float``, ``bool`` and ``None`` inside; other types are not accepted).
        message_type: the generated message class.
        strict: refuse unknown fields, unknown enum names and enum numbers (the codec's strict
            mode); otherwise ignore the first two and read numbers as json_format does.

    Returns:
        The message ``json_format.ParseDict(data, message_type(),
        ignore_unknown_fields=not strict)`` builds.

    Raises:
        Unsupported: for any input the fast path does not accept, valid or not; the caller
            then decodes it with json_format, which produces the result or the error.
    """
    if type(data) is not dict:
        if not isinstance(data, Mapping):
            raise Unsupported
        data = dict(data)
    descriptor = cast(Descriptor, message_type.DESCRIPTOR)
    if descriptor.file.name in _WKT_FILES:
        raise Unsupported
    try:
        kwargs = _plan(descriptor).decode(data, 1, not strict)
    except TypeError:  # a list or an object where an enum name belongs
        raise Unsupported from None
    try:
        return message_type(**kwargs)
    except Exception:  # a range check of upb, the one json_format's setattr meets too
        raise Unsupported from None


def _normalize(plan: _Plan, data: dict[Any, Any], lenient: bool) -> dict[str, Any]:
    """`data` with JSON names for keys and unknown keys dropped, if json_format would do that."""
    out: dict[str, Any] = {}
    inputs = plan.inputs
    for key, value in data.items():
        field = inputs.get(key)
        if field is None:
            if (
                not lenient
                or type(key) is not str
                or _EXTENSION_NAME.match(key)  # json_format looks for an extension: an error
                or (not key.isascii() and _UNPAIRED_SURROGATE.search(key))  # upb fails
            ):
                raise Unsupported
            continue
        if field.json_name in out:  # both names of one field: json_format merges or overwrites
            raise Unsupported
        out[field.json_name] = value
    return out


_SKIP: Final[Any] = object()  # an unknown enum name in lenient mode: the value is dropped
_MISSING: Final[Any] = object()


def _bad() -> Any:
    raise Unsupported


def _integer(value: Any) -> int:
    """An integer field's value in the forms not inlined: negative strings, integral floats."""
    kind = type(value)
    if kind is int:
        return cast(int, value)
    if kind is str:
        digits = value[1:] if value[:1] == "-" else value
        if digits.isdigit() and digits.isascii() and len(digits) <= 20:
            return int(value)
    elif kind is float and value.is_integer():  # 1e3, 5.0: json_format takes them
        return int(value)
    raise Unsupported  # the range is upb's to check, as it is for json_format's setattr


def _enum(enum: _Enum, value: Any, lenient: bool) -> Any:
    """An enum value that is not a known name: a number, or an unknown name (dropped)."""
    kind = type(value)
    if kind is str:
        if lenient:
            try:
                int(value)  # json_format reads "1" as the number 1
            except ValueError:
                return _SKIP  # an unknown name reads as "not set"
    elif kind is int and lenient and (enum.open or value in enum.names):
        return value  # the range is upb's to check
    raise Unsupported


def _decode_value(kind: int, aux: Any, value: Any, depth: int, lenient: bool) -> Any:
    """One value of any kind (an element, for repeated and map fields), or _SKIP."""
    kind_of_value = type(value)
    if kind == _STR:
        if kind_of_value is str and (value.isascii() or not _UNPAIRED_SURROGATE.search(value)):
            return value
    elif kind == _ENUM:
        if kind_of_value is str:
            number = aux.by_name.get(value)
            if number is not None:
                return number
        return _enum(aux, value, lenient)
    elif kind == _INT64 or kind == _INT32:
        return _integer(value)
    elif kind == _BOOL:
        if kind_of_value is bool:
            return value
    elif kind == _MESSAGE:
        if kind_of_value is dict:
            return aux.decode(value, depth, lenient)
    elif kind == _TIMESTAMP_KIND:
        if kind_of_value is str and depth <= _MAX_DEPTH:
            return _decode_timestamp(value)
    elif kind == _DURATION_KIND:
        if kind_of_value is str and depth <= _MAX_DEPTH:
            return _decode_duration(value)
    elif kind == _DOUBLE or kind == _FLOAT:
        number = _decode_float(value, kind_of_value)
        # json_format refuses a float beyond float32's range (where upb would store infinity)
        if kind == _DOUBLE or number - number != 0 or -_FLOAT_MAX <= number <= _FLOAT_MAX:
            return number
    elif kind == _BYTES:
        if kind_of_value is str:
            try:  # json_format's own expression: standard and URL-safe alphabets, lax padding
                encoded = value.encode("utf-8")
                return base64.urlsafe_b64decode(encoded + b"=" * (4 - len(encoded) % 4))
            except ValueError:
                pass
    elif kind == _WKT:
        if value is not None or _is_value(aux):
            return _decode_wkt(aux, value, depth, lenient)
    raise Unsupported


def _decode_float(value: Any, kind_of_value: type) -> float:
    if kind_of_value is float:
        if value - value == 0:  # finite (json.loads reads NaN and Infinity as floats)
            return cast(float, value)
    elif kind_of_value is int:
        if -(2**1000) < value < 2**1000:  # float() could overflow
            return float(value)
    elif kind_of_value is str:
        special = _SPECIAL_FLOATS.get(value)
        if special is not None:
            return special
        if _NUMBER.fullmatch(value):
            number = float(value)
            if number - number == 0:
                return number
    raise Unsupported


def _decode_repeated(kind: int, aux: Any, value: list[Any], depth: int, lenient: bool) -> Any:
    items = [_decode_value(kind, aux, item, depth, lenient) for item in value]
    if kind == _ENUM:
        return [item for item in items if item is not _SKIP]
    return items


def _decode_map(aux: Any, value: Any, depth: int, lenient: bool) -> dict[Any, Any]:
    if type(value) is not dict:
        raise Unsupported
    key_kind, value_kind, value_aux, _ = aux
    out: dict[Any, Any] = {}
    for key, item in value.items():
        if type(key) is not str:
            raise Unsupported
        map_key: Any
        if key_kind == _STR:
            if not key.isascii() and _UNPAIRED_SURROGATE.search(key):
                raise Unsupported
            map_key = key
        elif key_kind == _BOOL:
            if key == "true":
                map_key = True
            elif key == "false":
                map_key = False
            else:
                raise Unsupported
        else:  # integer keys, strings of digits
            digits = key[1:] if key[:1] == "-" else key
            if not (digits.isdigit() and digits.isascii() and len(digits) <= 20):
                raise Unsupported
            map_key = int(key)
        if map_key in out:  # "1" and "01": json_format overwrites or merges
            raise Unsupported
        if item is None and value_kind != _WKT:
            raise Unsupported
        out[map_key] = _decode_value(value_kind, value_aux, item, depth, lenient)
    return {k: v for k, v in out.items() if v is not _SKIP}


# "YYYY-MM-DDTHH:" -> seconds since the epoch, and "MM:SS" -> seconds; filled as met.
_HOUR_SECONDS: dict[str, int] = {}
_MINUTE_TEXT: Final = [f"{m:02d}:{s:02d}" for m in range(60) for s in range(60)]
_MINUTE_SECONDS: Final = {text: i for i, text in enumerate(_MINUTE_TEXT)}


def _decode_timestamp(value: str) -> dict[str, int]:
    """Timestamp.FromJsonString (which json_format calls), as constructor arguments."""
    # The usual form first: UTC, an hour met before, whole or fractional seconds.
    if value[-1:] == "Z" and len(value) >= 20:
        hour = _HOUR_SECONDS.get(value[:14])  # "YYYY-MM-DDTHH:"
        rest = _MINUTE_SECONDS.get(value[14:19])  # "MM:SS"
        if hour is not None and rest is not None:
            if len(value) == 20:
                return {"seconds": hour + rest}
            fraction = value[20:-1]
            if (
                value[19] == "."
                and len(fraction) <= 9
                and fraction.isdigit()
                and fraction.isascii()
            ):
                return {"seconds": hour + rest, "nanos": _nanos(fraction)}
    match = _TIMESTAMP.fullmatch(value)
    if match is None:
        return _wkt_from_string("Timestamp", value)
    year, month, day, hours, minutes, secs, fraction, offset = match.groups()
    h, m, s = int(hours), int(minutes), int(secs)
    if h > 23 or m > 59 or s > 59:
        return _wkt_from_string("Timestamp", value)
    try:
        days = datetime.date(int(year), int(month), int(day)).toordinal() - _EPOCH_ORDINAL
    except ValueError:
        raise Unsupported from None
    hour = days * 86400 + h * 3600
    if len(_HOUR_SECONDS) >= _CACHE_SIZE:
        _HOUR_SECONDS.clear()
    _HOUR_SECONDS[value[:14]] = hour
    seconds = hour + m * 60 + s
    if offset != "Z":
        shift = (int(offset[1:3]) * 60 + int(offset[4:6])) * 60
        seconds = seconds - shift if offset[0] == "+" else seconds + shift
    if not _TIMESTAMP_SECONDS_MIN <= seconds <= _TIMESTAMP_SECONDS_MAX:
        raise Unsupported
    if fraction is None:
        return {"seconds": seconds}
    return {"seconds": seconds, "nanos": _nanos(fraction)}


def _decode_duration(value: str) -> dict[str, int]:
    """Duration.FromJsonString (which json_format calls), as constructor arguments."""
    whole, point, fraction = value[:-1].partition(".")
    negative = whole[:1] == "-"
    digits = whole[1:] if negative else whole
    if (
        value[-1:] == "s"
        and digits.isdigit()
        and digits.isascii()
        and len(digits) <= 12
        and (not point or (fraction.isdigit() and fraction.isascii() and len(fraction) <= 9))
    ):
        seconds = int(digits)
        if seconds > _DURATION_SECONDS_MAX:
            raise Unsupported
        nanos = _nanos(fraction) if point else 0  # the fraction takes the sign of the string
        return (
            {"seconds": -seconds, "nanos": -nanos}
            if negative
            else {"seconds": seconds, "nanos": nanos}
        )
    return _wkt_from_string("Duration", value)


def _nanos(fraction: str) -> int:
    """Nanoseconds of 1 to 9 fractional digits: exactly FromJsonString's
    ``round(float("0." + fraction) * 1e9)``, whose float error stays far below one half."""
    return int(fraction.ljust(9, "0"))


def _wkt_from_string(name: str, value: str) -> dict[str, int]:
    """The rarer forms: the type's own FromJsonString, exactly what json_format calls."""
    from google.protobuf import duration_pb2, timestamp_pb2

    message: Any = timestamp_pb2.Timestamp() if name == "Timestamp" else duration_pb2.Duration()
    try:
        message.FromJsonString(value)
    except Exception:
        raise Unsupported from None
    return {"seconds": message.seconds, "nanos": message.nanos}


def _is_value(cls: Any) -> bool:
    """Whether `cls` is google.protobuf.Value, where null is a value (null_value)."""
    return cast(bool, cls.DESCRIPTOR.full_name == "google.protobuf.Value")


def _decode_wkt(cls: type[Message], value: Any, depth: int, lenient: bool) -> Message:
    """A Struct, Value, ListValue, wrapper, FieldMask, Empty or Any, by json_format itself."""
    if cls.DESCRIPTOR.full_name == "google.protobuf.Any":
        if not lenient:
            raise Unsupported  # the codec's strict walk judges an Any's keys as fields of Any
        value = copy.deepcopy(value)  # json_format moves "@type" to the end of the object
    message = cls()
    try:
        # json_format counts depth from the root: the subtree gets what is left of it.
        json_format.ParseDict(
            value, message, ignore_unknown_fields=lenient, max_recursion_depth=101 - depth
        )
    except Exception:
        raise Unsupported from None
    return message


# --------------------------------------------------------------------------------------------
# Encoding


def to_dict(message: Message) -> dict[str, Any]:
    """The JSON object of `message` in the protobuf JSON mapping, keys in proto field order.

    Equal to ``codec.to_dict``: lowerCamelCase keys, enum names, 64-bit integers as strings,
    RFC 3339 timestamps, ``"<seconds>s"`` durations, base64 bytes, ``"NaN"``/``"Infinity"``
    for non-finite floats; fields without presence always written, the others only when set.
    What the plans do not model goes through json_format, so this returns or raises what
    ``codec.to_dict`` does.
    """
    descriptor = cast(Descriptor, message.DESCRIPTOR)
    if descriptor.file.name not in _WKT_FILES:
        try:
            return _plan(descriptor).encode(message)
        except (_NoPlan, ValueError):  # ValueError: a Timestamp or Duration out of range
            pass
    data = json_format.MessageToDict(message, **_OPTIONS_OUT)
    return _in_field_order(data, descriptor)


def _encode_value(kind: int, aux: Any, value: Any, order: Descriptor | None) -> Any:
    """One value of any kind (an element, for repeated and map fields)."""
    if kind == _STR or kind == _INT32 or kind == _BOOL:
        return value
    if kind == _INT64:
        return str(value)
    if kind == _ENUM:
        return aux.names[value]
    if kind == _MESSAGE:
        return aux.encode(value)
    if kind == _TIMESTAMP_KIND:
        return _encode_timestamp(value)
    if kind == _DURATION_KIND:
        return _encode_duration(value)
    if kind == _DOUBLE:
        return value if value - value == 0 else _non_finite(value)
    if kind == _FLOAT:
        return type_checkers.ToShortestFloat(value) if value - value == 0 else _non_finite(value)
    if kind == _BYTES:
        return base64.b64encode(value).decode("utf-8")
    if kind == _WKT:
        data = json_format.MessageToDict(value, **_OPTIONS_OUT)
        if order is not None and isinstance(data, dict):
            data = _in_field_order(data, order)
        return data
    raise _NoPlan


def _encode_map(aux: Any, value: Any) -> dict[str, Any]:
    key_kind, value_kind, value_aux, value_order = aux
    out: dict[str, Any] = {}
    for key in value:  # json_format's iteration, in the map's order
        text = ("true" if key else "false") if key_kind == _BOOL else str(key)
        out[text] = _encode_value(value_kind, value_aux, value[key], value_order)
    return out


def _non_finite(value: float) -> str:
    if value != value:
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


_HOUR_TEXT: dict[int, str] = {}  # hours since the epoch -> "YYYY-MM-DDTHH:"


def _encode_timestamp(timestamp: Any) -> str:
    """Timestamp.ToJsonString: UTC with ``Z``, and 0, 3, 6 or 9 fractional digits."""
    seconds: int = timestamp.seconds
    nanos: int = timestamp.nanos
    if not _TIMESTAMP_SECONDS_MIN <= seconds <= _TIMESTAMP_SECONDS_MAX or not (
        0 <= nanos < 1_000_000_000
    ):
        raise ValueError("Timestamp out of range")  # to_dict lets json_format raise its error
    hours, rest = divmod(seconds, 3600)
    prefix = _HOUR_TEXT.get(hours)
    if prefix is None:
        days, hour = divmod(hours, 24)
        prefix = f"{datetime.date.fromordinal(days + _EPOCH_ORDINAL).isoformat()}T{hour:02d}:"
        if len(_HOUR_TEXT) >= _CACHE_SIZE:
            _HOUR_TEXT.clear()
        _HOUR_TEXT[hours] = prefix
    text = prefix + _MINUTE_TEXT[rest]
    if nanos == 0:
        return text + "Z"
    if nanos % 1_000_000 == 0:
        return f"{text}.{nanos // 1_000_000:03d}Z"
    if nanos % 1000 == 0:
        return f"{text}.{nanos // 1000:06d}Z"
    return f"{text}.{nanos:09d}Z"


def _encode_duration(duration: Any) -> str:
    """Duration.ToJsonString: a sign, whole seconds, 0, 3, 6 or 9 fractional digits, ``s``."""
    seconds: int = duration.seconds
    nanos: int = duration.nanos
    if not -_DURATION_SECONDS_MAX <= seconds <= _DURATION_SECONDS_MAX:
        raise ValueError("Duration out of range")  # to_dict lets json_format raise its error
    if nanos == 0:
        return f"{seconds}s"
    if not -1_000_000_000 < nanos < 1_000_000_000 or seconds < 0 < nanos or nanos < 0 < seconds:
        raise ValueError("Duration out of range")
    sign = ""
    if nanos < 0:  # and seconds <= 0
        sign, seconds, nanos = "-", -seconds, -nanos
    if nanos % 1_000_000 == 0:
        return f"{sign}{seconds}.{nanos // 1_000_000:03d}s"
    if nanos % 1000 == 0:
        return f"{sign}{seconds}.{nanos // 1000:06d}s"
    return f"{sign}{seconds}.{nanos:09d}s"


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
    out.update((k, v) for k, v in data.items() if k not in out)  # e.g. "@type" of an Any
    return out


# --------------------------------------------------------------------------------------------
# Streaming encoding: the JSON text of to_dict's object, a piece at a time


_BATCH: Final = 256  # elements of a repeated field turned into JSON values and dumped at once
_CHUNK: Final = 1 << 16  # characters iter_json gathers before it yields them


def iter_json(message: Message, indent: int | None) -> Iterator[str]:
    """The JSON text of `message`, in chunks of about 64 Ki characters whose concatenation is
    ``json.dumps(to_dict(message), indent=indent, separators=..., ensure_ascii=False)`` as
    ``codec.dump`` writes it.

    Only one batch of elements of a repeated field is held as Python values at a time, and
    messages holding repeated fields are written field by field, so the memory this takes does
    not grow with the message (a map field is still written whole). A message the plans do not
    model is written whole, from ``to_dict``.

    Raises:
        ValueError: what ``to_dict`` raises (a Timestamp or Duration out of range), possibly
            after some chunks were yielded.
    """
    descriptor = cast(Descriptor, message.DESCRIPTOR)
    writer = _Writer(indent)
    if descriptor.file.name in _WKT_FILES or not _streamable(_plan(descriptor)):
        yield writer.dumps(to_dict(message), 0)
        return
    pieces: list[str] = []
    size = 0
    try:
        for piece in _message_pieces(message, _plan(descriptor), 0, writer):
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


class _Writer:
    """The punctuation of ``codec.dump``'s format at each level of nesting."""

    __slots__ = ("indent", "key_separator", "separators")

    def __init__(self, indent: int | None) -> None:
        self.indent = indent
        self.separators = (",", ": ") if indent is not None else (",", ":")
        self.key_separator = self.separators[1]

    def newline(self, level: int) -> str:
        """What goes before an item at `level` (and before the bracket closing `level` - 1)."""
        return "" if self.indent is None else "\n" + " " * (self.indent * level)

    def dumps(self, value: Any, level: int) -> str:
        """`value` (to_dict's values) as JSON text placed at `level`."""
        text = json.dumps(value, indent=self.indent, separators=self.separators, ensure_ascii=False)
        if self.indent and level and (type(value) is dict or type(value) is list):
            # Raw newlines are only json.dumps' own line breaks (a string's are escaped).
            text = text.replace("\n", self.newline(level))
        return text


_STREAMABLE: dict[Descriptor, bool] = {}
_DEEP: dict[Descriptor, bool] = {}


def _reachable(plan: _Plan) -> list[_Plan]:
    """`plan` and the plans of every message type below it."""
    seen = {plan.descriptor: plan}
    todo = [plan]
    while todo:
        for field in todo.pop().fields:
            if field.kind != _MESSAGE:
                continue
            nested = field.aux[2] if field.shape == _MAP else field.aux
            if nested.descriptor not in seen:
                seen[nested.descriptor] = nested
                todo.append(nested)
    return list(seen.values())


def _streamable(plan: _Plan) -> bool:
    """Whether every message type below `plan` has an encoder (no json_format fallback)."""
    known = _STREAMABLE.get(plan.descriptor)
    if known is None:
        known = _STREAMABLE[plan.descriptor] = all(
            p.encode is not _no_plan for p in _reachable(plan)
        )
    return known


def _deep(plan: _Plan) -> bool:
    """Whether a message of `plan` can hold a repeated or map field at any depth: it is
    written field by field instead of whole."""
    known = _DEEP.get(plan.descriptor)
    if known is None:
        known = _DEEP[plan.descriptor] = any(
            f.shape != _SINGLE for p in _reachable(plan) for f in p.fields
        )
    return known


def _message_pieces(message: Any, plan: _Plan, level: int, writer: _Writer) -> Iterator[str]:
    """Pieces of the JSON object of `message` (to_dict's keys and values, in its order)."""
    yield "{"
    first = True
    for field in plan.fields:
        if field.presence and not message.HasField(field.name):
            continue
        value = getattr(message, field.name)
        yield (
            ("" if first else ",")
            + writer.newline(level + 1)
            + json.dumps(field.json_name, ensure_ascii=False)
            + writer.key_separator
        )
        first = False
        if field.shape == _REPEATED:
            yield from _list_pieces(field, value, level + 1, writer)
        elif field.shape == _MAP:
            yield writer.dumps(_encode_map(field.aux, value), level + 1)
        elif field.kind == _MESSAGE and _deep(field.aux):
            yield from _message_pieces(value, field.aux, level + 1, writer)
        else:
            yield writer.dumps(_encode_value(field.kind, field.aux, value, field.order), level + 1)
    yield "}" if first else writer.newline(level) + "}"


def _list_pieces(field: _Field, container: Any, level: int, writer: _Writer) -> Iterator[str]:
    """Pieces of the JSON array of a repeated field, `_BATCH` elements at a time."""
    count = len(container)
    if not count:
        yield "[]"
        return
    kind, aux = field.kind, field.aux
    close = writer.newline(level)
    yield "["
    if kind == _MESSAGE and _deep(aux):
        for i in range(count):
            yield ("," if i else "") + writer.newline(level + 1)
            yield from _message_pieces(container[i], aux, level + 1, writer)
    else:
        for start in range(0, count, _BATCH):
            batch = container[start : start + _BATCH]
            if kind == _MESSAGE:
                values = [aux.encode(x) for x in batch]
            else:
                values = [_encode_value(kind, aux, x, field.order) for x in batch]
            text = writer.dumps(values, level)
            # "[" + the elements, each after its newline + "," ... + close + "]": the elements.
            yield ("," if start else "") + text[1 : len(text) - 1 - len(close)]
    yield close + "]"


# The names generated code refers to.
_HELPERS: Final[dict[str, Any]] = {
    "U": Unsupported,
    "MAX_DEPTH": _MAX_DEPTH,
    "MISSING": _MISSING,
    "SKIP": _SKIP,
    "NORMALIZE": _normalize,
    "BAD": _bad,
    "INTEGER": _integer,
    "ENUM": _enum,
    "VALUE": _decode_value,
    "REPEATED": _decode_repeated,
    "MAP": _decode_map,
    "TIMESTAMP": _decode_timestamp,
    "DURATION": _decode_duration,
    "TIMESTAMP_OUT": _encode_timestamp,
    "DURATION_OUT": _encode_duration,
    "VALUE_OUT": _encode_value,
    "MAP_OUT": _encode_map,
}
