"""Decoding: a parsed JSON object to the keyword arguments of its class, by one generated
function per type (:func:`compile_decoder`); the helpers below serve the rarer forms. What it is
not sure ``json_format`` accepts raises ``Unsupported``, and the codec runs ``json_format``.
"""

from __future__ import annotations

import base64
import copy
import math
import re
from collections.abc import Mapping
from typing import Any, Final, TypeVar, cast

from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message

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
    MAX_DEPTH,
    MESSAGE,
    OPAQUE,
    REPEATED,
    SINGLE,
    STR,
    TIMESTAMP,
    WKT,
    WKT_FILES,
    Decoder,
    Enum,
    Plan,
    Unsupported,
    compile_function,
    ready_plan,
)
from projectops._fastcodec._timefmt import parse_duration, parse_timestamp
from projectops._wire import FLOAT_MAX, FLOAT_TYPES, INT_TYPES_32

__all__ = ["compile_decoder", "decoding_plan", "from_dict"]

M = TypeVar("M", bound=Message)

_SPECIAL_FLOATS: Final = {
    "NaN": math.nan,
    "Infinity": math.inf,
    "-Infinity": -math.inf,
}
_UNPAIRED_SURROGATE: Final = re.compile(  # json_format's
    "[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]"
)
_EXTENSION_NAME: Final = re.compile(r"\[[a-zA-Z0-9\._]*\]$")  # json_format's
_NUMBER: Final = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?", re.ASCII)

_READY: dict[Descriptor, Plan] = {}  # plans whose decoder, and those of all below, are compiled


def decoding_plan(descriptor: Descriptor) -> Plan:
    """The plan of `descriptor` with its ``decode`` (and those below it) compiled."""
    return ready_plan(descriptor, _READY, "decode", compile_decoder)


def compile_decoder(target: Plan) -> Decoder:
    """`target`'s decode function; it raises Unsupported, TypeError or ValueError."""
    namespace = {
        **_HELPERS,
        "PLAN": target,
        "JSON_NAMES": target.json_names,
    }
    lines = [
        "def decode(d, depth, lenient):",
        "    if depth > MAX_DEPTH:",
        "        raise U",
        "    if not JSON_NAMES.issuperset(d):  # proto names or unknown keys",
        "        d = NORMALIZE(PLAN, d, lenient)",
        "    out = {}",
    ]
    oneofs = sorted({f.oneof for f in target.fields if f.oneof >= 0})
    lines += [f"    o{i} = 0" for i in oneofs]
    for i, field in enumerate(target.fields):
        namespace[f"A{i}"] = field.aux
        if field.kind == ENUM and field.shape == SINGLE:
            namespace[f"E{i}"] = field.aux.by_name
        kind = field.kind
        shape = field.shape
        key = repr(field.json_name)
        name = repr(field.name)
        count = []
        if field.oneof >= 0:
            count.append(f"o{field.oneof} += 1")
        if kind == OPAQUE or (shape != MAP and kind == WKT and _is_value(field.aux)):
            # null is a value here (null_value), and json_format fails on a list's: its business
            lines += [f"    v = d.get({key}, MISSING)", "    if v is None:", "        raise U"]
            lines.append("    if v is not MISSING:")
            decoded = count + _decode_any(kind, shape, i, name)
            lines += ["        " + line for line in decoded]
            continue
        lines.append(f"    v = d.get({key})")
        # The value of the usual type is tested first: one test, not a None test and a type
        # test, for most values read (each test is bytecode run per field of every object).
        usual = _USUAL.get((shape, kind))
        if usual is not None:
            test, value = usual
            lines += [f"    if {test}:", *("        " + c for c in count)]
            lines.append(f"        out[{name}] = {value.format(i=i)}")
            lines.append("    elif v is not None:")
        else:
            lines.append("    if v is not None:")
        decoded = count + _decode_any(kind, shape, i, name)
        lines += ["        " + line for line in decoded]
    for i in oneofs:  # two members of one oneof: json_format refuses
        lines += [f"    if o{i} > 1:", "        raise U"]
    lines.append("    return out")
    return cast(
        Decoder,
        compile_function("\n".join(lines), "decode", namespace),
    )


# (shape, kind) -> the test of a value of the usual JSON type and the expression of its field
# value; `{i}` is the field's number in the plan. Anything else non-null goes to _decode_any.
_USUAL: Final = {
    (SINGLE, STR): ("type(v) is str", "v"),
    (SINGLE, BOOL): ("type(v) is bool", "v"),
    # json_format's own test: no space, then int(); "1.5" and 2**64 are json_format's to judge.
    (SINGLE, INT64): ("type(v) is str and ' ' not in v", "int(v)"),
    (SINGLE, INT32): ("type(v) is int", "v"),
    (SINGLE, MESSAGE): ("type(v) is dict", "A{i}.decode(v, depth + 1, lenient)"),
    (SINGLE, TIMESTAMP): ("type(v) is str and depth < MAX_DEPTH", "TIMESTAMP(v)"),
    (SINGLE, DURATION): ("type(v) is str and depth < MAX_DEPTH", "DURATION(v)"),
    (REPEATED, MESSAGE): (
        "type(v) is list",
        "[A{i}.decode(x, depth + 1, lenient) if type(x) is dict else BAD() for x in v]",
    ),
}


def _decode_any(
    kind: int,
    shape: int,
    i: int,
    name: str,
) -> list[str]:
    """Lines that check a non-null JSON value `v` not of the usual type (:data:`_USUAL`) and
    store it as ``out[name]``, or raise."""
    if (shape, kind) in _USUAL and kind not in (INT64, INT32):
        return ["raise U"]  # a string for a message, a number for a string: json_format's
    # An integer in another form (a number for an int64, "-1", 5.0) goes to VALUE too.
    if shape == MAP:
        return [f"out[{name}] = MAP(A{i}, v, depth + 1, lenient)"]
    if shape == REPEATED:
        return [
            "if type(v) is not list:",
            "    raise U",
            f"out[{name}] = REPEATED({kind}, A{i}, v, depth + 1, lenient)",
        ]
    if kind == ENUM:
        return [
            f"x = E{i}.get(v)",  # an unhashable value: TypeError, Unsupported in from_dict
            "if x is not None:",
            f"    out[{name}] = x",
            "else:",
            f"    x = ENUM(A{i}, v, lenient)",
            "    if x is not SKIP:",
            f"        out[{name}] = x",
        ]
    return [f"out[{name}] = VALUE({kind}, A{i}, v, depth + 1, lenient)"]


def from_dict(
    data: Mapping[str, Any],
    message_type: type[M],
    *,
    strict: bool,
) -> M:
    """What ``json_format.ParseDict(data, message_type(), ignore_unknown_fields=not strict)``
    builds (strict also refuses enum numbers), or Unsupported for what the fast path does not
    accept, valid or not."""
    if type(data) is not dict:
        if not isinstance(data, Mapping):
            raise Unsupported
        data = dict(data)
    descriptor = cast(Descriptor, message_type.DESCRIPTOR)
    plan = _READY.get(descriptor)  # a well-known type never enters it
    if plan is None:
        if descriptor.file.name in WKT_FILES:
            raise Unsupported
        plan = decoding_plan(descriptor)
    try:
        kwargs = plan.decode(data, 1, not strict)
    except (TypeError, ValueError):  # an unhashable enum value; a time text refused
        raise Unsupported from None
    try:
        return message_type(**kwargs)
    except Exception:  # a range check of upb, the one json_format's setattr meets too
        raise Unsupported from None


def _normalize(
    target: Plan,
    data: dict[Any, Any],
    lenient: bool,
) -> dict[str, Any]:
    """`data` with JSON names for keys and unknown keys dropped, if json_format would do that."""
    out: dict[str, Any] = {}
    inputs = target.inputs
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


_BOOL_KEYS: Final = {"true": True, "false": False}  # a bool map key as JSON writes it
_SKIP: Final[Any] = object()  # an unknown enum name in lenient mode: the value is dropped
_MISSING: Final[Any] = object()


def _bad() -> Any:
    raise Unsupported


def _integer(value: Any) -> int:
    """An integer field's value in the forms not inlined: numbers, negative strings.

    A float (1e3, 5.0, which json_format takes) is left to json_format: orjson reads an integer
    beyond 64 bits as a float, and -9223372036854775809 would round into int64's range.
    """
    kind = type(value)
    if kind is int:
        return cast(int, value)
    # json_format's own test, then int(): "-5", "\t5" and other digits than ASCII's pass too.
    if kind is str and " " not in value:
        return int(value)  # a ValueError is from_dict's Unsupported
    raise Unsupported  # the range is upb's to check, as it is for json_format's setattr


def _enum(enum: Enum, value: Any, lenient: bool) -> Any:
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


def _decode_value(
    kind: int,
    aux: Any,
    value: Any,
    depth: int,
    lenient: bool,
) -> Any:
    """One value of any kind (an element, for repeated and map fields), or _SKIP."""
    kind_of_value = type(value)
    if kind == STR:
        if kind_of_value is str and (value.isascii() or not _UNPAIRED_SURROGATE.search(value)):
            return value
    elif kind == ENUM:
        if kind_of_value is str:
            number = aux.by_name.get(value)
            if number is not None:
                return number
        return _enum(aux, value, lenient)
    elif kind == INT64 or kind == INT32:
        if kind == INT32 and kind_of_value is str and not lenient:
            raise Unsupported  # strict takes a 32-bit integer as a number only: the codec says so
        return _integer(value)
    elif kind == BOOL:
        if kind_of_value is bool:
            return value
    elif kind == MESSAGE:
        if kind_of_value is dict:
            return aux.decode(value, depth, lenient)
    elif kind == TIMESTAMP:
        if kind_of_value is str and depth <= MAX_DEPTH:
            return parse_timestamp(value)
    elif kind == DURATION:
        if kind_of_value is str and depth <= MAX_DEPTH:
            return parse_duration(value)
    elif kind == DOUBLE or kind == FLOAT:
        number = _decode_float(value, kind_of_value)
        # json_format refuses a float beyond float32's range (where upb would store infinity)
        if kind == DOUBLE or number - number != 0 or -FLOAT_MAX <= number <= FLOAT_MAX:
            return number
    elif kind == BYTES:
        if kind_of_value is str:
            try:  # json_format's own expression: standard and URL-safe alphabets, lax padding
                encoded = value.encode("utf-8")
                padding = b"=" * (4 - len(encoded) % 4)
                return base64.urlsafe_b64decode(encoded + padding)
            except ValueError:
                pass
    elif kind == WKT:
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


def _decode_repeated(
    kind: int,
    aux: Any,
    value: list[Any],
    depth: int,
    lenient: bool,
) -> Any:
    items = [_decode_value(kind, aux, item, depth, lenient) for item in value]
    if kind == ENUM:
        return [item for item in items if item is not _SKIP]
    return items


def _decode_map(
    aux: Any,
    value: Any,
    depth: int,
    lenient: bool,
) -> dict[Any, Any]:
    if type(value) is not dict:
        raise Unsupported
    key_kind, value_kind, value_aux, _ = aux
    out: dict[Any, Any] = {}
    for key, item in value.items():
        if type(key) is not str:
            raise Unsupported
        map_key: Any
        if key_kind == STR:
            if not key.isascii() and _UNPAIRED_SURROGATE.search(key):
                raise Unsupported
            map_key = key
        elif key_kind == BOOL:
            map_key = _BOOL_KEYS.get(key)
            if map_key is None:  # json_format takes "true" and "false" alone
                raise Unsupported
        else:  # integer keys, strings of digits
            map_key = _integer(key)
        if map_key in out:  # "1" and "01": json_format overwrites or merges
            raise Unsupported
        if item is None and value_kind != WKT:
            raise Unsupported
        out[map_key] = _decode_value(value_kind, value_aux, item, depth, lenient)
    return {k: v for k, v in out.items() if v is not _SKIP}


def _is_value(cls: type[Message]) -> bool:
    """Whether `cls` is google.protobuf.Value, where null is a value (null_value)."""
    return cls.DESCRIPTOR.full_name == "google.protobuf.Value"


def _decode_wkt(
    cls: type[Message],
    value: Any,
    depth: int,
    lenient: bool,
) -> Message:
    """A Struct, Value, ListValue, wrapper, FieldMask, Empty or Any, by json_format itself."""
    if cls.DESCRIPTOR.full_name == "google.protobuf.Any":
        if not lenient:
            raise Unsupported  # the codec's strict walk judges an Any's keys as fields of Any
        value = copy.deepcopy(value)  # json_format moves "@type" to the end of the object
    elif cls.DESCRIPTOR.fields_by_name.get("value") is not None:  # a wrapper
        wrapped = cls.DESCRIPTOR.fields_by_name["value"].type
        # What the codec's walk refuses: true for a FloatValue, "5" for an Int32Value (strict).
        if type(value) is bool and wrapped in FLOAT_TYPES:
            raise Unsupported
        if not lenient and type(value) is str and wrapped in INT_TYPES_32:
            raise Unsupported
    from google.protobuf import json_format  # imported by the rare input that needs it

    message = cls()
    try:
        # json_format counts depth from the root: the subtree gets what is left of it.
        json_format.ParseDict(
            value, message, ignore_unknown_fields=lenient, max_recursion_depth=101 - depth
        )
    except Exception:
        raise Unsupported from None
    return message


# The names generated code refers to.
_HELPERS: Final[dict[str, Any]] = {
    "U": Unsupported,
    "MAX_DEPTH": MAX_DEPTH,
    "MISSING": _MISSING,
    "SKIP": _SKIP,
    "NORMALIZE": _normalize,
    "BAD": _bad,
    "ENUM": _enum,
    "VALUE": _decode_value,
    "REPEATED": _decode_repeated,
    "MAP": _decode_map,
    "TIMESTAMP": parse_timestamp,
    "DURATION": parse_duration,
}
