"""Plans: each message type's fields in proto order, each with a *kind* (the JSON form of one
value) and a *shape*, the keys accepted on input, and the functions compiled on first use.
Cached for the life of the process, built with those of every type below under one lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import cache
from typing import Any, Final, Literal, cast

from google.protobuf import descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor

from projectops._wire import INT_TYPES_32, INT_TYPES_64, is_map, value_form


class Unsupported(Exception):
    """The fast path does not take this input (invalid, or not modelled): use ``json_format``."""


MAX_DEPTH: Final = 100  # json_format.ParseDict's max_recursion_depth default

# Value kinds: one per JSON form (the two integer widths differ only on output).
STR: Final = 0
ENUM: Final = 1
INT64: Final = 2  # int64, uint64, sint64, fixed64, sfixed64: strings on output
INT32: Final = 3  # int32, uint32, sint32, fixed32, sfixed32: numbers on output
BOOL: Final = 4
DOUBLE: Final = 5
FLOAT: Final = 6
BYTES: Final = 7
MESSAGE: Final = 8
TIMESTAMP: Final = 9
DURATION: Final = 10
WKT: Final = 11  # another well-known type: json_format for that subtree
OPAQUE: Final = 12  # a NullValue field, a group or an enum with custom JSON names

# Field shapes.
SINGLE: Final = 0
REPEATED: Final = 1
MAP: Final = 2

_SCALAR_KINDS: Final = {
    FieldDescriptor.TYPE_STRING: STR,
    FieldDescriptor.TYPE_BYTES: BYTES,
    FieldDescriptor.TYPE_BOOL: BOOL,
    FieldDescriptor.TYPE_DOUBLE: DOUBLE,
    FieldDescriptor.TYPE_FLOAT: FLOAT,
    **dict.fromkeys(INT_TYPES_64, INT64),
    **dict.fromkeys(INT_TYPES_32, INT32),
}
_OWN_WKT: Final = {"google.protobuf.Timestamp": TIMESTAMP, "google.protobuf.Duration": DURATION}
_OTHER_WKT_FILES: Final = {
    f"google/protobuf/{name}.proto" for name in ("any", "empty", "field_mask", "struct", "wrappers")
}
# At the top, a well-known type's JSON is not always an object: json_format's business.
WKT_FILES: Final = {
    *_OTHER_WKT_FILES,
    "google/protobuf/timestamp.proto",
    "google/protobuf/duration.proto",
}


class _Names(dict[int, Any]):
    """Enum numbers to names; an unknown number (open enums) stays a number, as in json_format."""

    def __missing__(self, number: int) -> int:
        return number


class Enum:
    """One enum type: names to numbers, numbers to names (as json_format reads them), openness."""

    __slots__ = ("by_name", "names", "open")

    def __init__(self, enum: EnumDescriptor) -> None:
        self.by_name = {v.name: v.number for v in enum.values}
        self.names = _Names({number: v.name for number, v in enum.values_by_number.items()})
        self.open = not enum.is_closed


class Field:
    """One field of a plan. ``aux``: the nested plan, the enum, a well-known type's class, or
    for a map ``(key_kind, value_kind, value_aux, value_order)``; ``order``: the message whose
    field order to_dict imposes on a well-known type's object (Any, Empty)."""

    __slots__ = ("aux", "json_name", "kind", "name", "oneof", "order", "presence", "shape")

    def __init__(self, fd: FieldDescriptor, oneof: int) -> None:
        self.name = fd.name
        self.json_name = fd.json_name
        self.presence = fd.has_presence
        self.oneof = oneof
        self.order = value_form(fd).message
        if is_map(fd):
            entry = cast(Descriptor, fd.message_type)
            key_kind, _ = _kind(entry.fields_by_name["key"])
            value_kind, value_aux = _kind(entry.fields_by_name["value"])
            self.shape = MAP
            self.kind = value_kind
            self.aux: Any = (key_kind, value_kind, value_aux, self.order)
        else:
            self.shape = SINGLE
            if fd.is_repeated:
                self.shape = REPEATED
            self.kind, self.aux = _kind(fd)


#: A compiled decoder of one message: (JSON object, depth, lenient) -> the message's fields.
Decoder = Callable[[dict[Any, Any], int, bool], dict[str, Any]]


def _unbuilt(*args: Any) -> dict[str, Any]:
    """The ``decode`` and ``encode`` slots of a plan before :func:`ready_plan` compiled them."""
    raise AssertionError("plan used before it was built")


class Plan:
    """One message type. ``decode``: (JSON object, depth, lenient) -> constructor keywords;
    ``encode``: message -> JSON object; each a placeholder until :func:`ready_plan` compiles it."""

    __slots__ = ("decode", "descriptor", "encode", "fields", "inputs", "json_names")

    def __init__(self, descriptor: Descriptor) -> None:
        self.descriptor = descriptor
        self.fields: list[Field] = []
        self.inputs: dict[str, Field] = {}  # JSON names first, then proto names
        self.json_names: frozenset[str] = frozenset()
        self.decode: Decoder = _unbuilt
        self.encode: Callable[[Any], dict[str, Any]] = _unbuilt


_PLANS: dict[Descriptor, Plan] = {}
_BUILDING: dict[Descriptor, Plan] = {}  # plans under construction, under LOCK
#: Held while plans are built and while their functions are compiled.
LOCK: Final = threading.RLock()


def plan_of(descriptor: Descriptor) -> Plan:
    """The plan of `descriptor` (fields filled, functions maybe unbuilt), built on first use."""
    found = _PLANS.get(descriptor)
    if found is not None:
        return found
    with LOCK:
        found = _PLANS.get(descriptor) or _BUILDING.get(descriptor)
        if found is not None:
            return found  # built meanwhile, or being built (a recursive type)
        outermost = not _BUILDING
        built = Plan(descriptor)
        _BUILDING[descriptor] = built
        try:
            _fill(built)
            if outermost:
                _PLANS.update(_BUILDING)
        finally:
            if outermost:
                _BUILDING.clear()
        return built


def _value_aux(field: Field) -> Any:
    """What a value of `field` is read and written with: its `aux`, or a map's values'."""
    if field.shape == MAP:
        return field.aux[2]
    return field.aux


def reachable(root: Plan) -> list[Plan]:
    """`root` (first) and the plans of every message type below it, each once."""
    seen = {root.descriptor: root}
    todo = [root]
    while todo:
        for field in todo.pop().fields:
            if field.kind != MESSAGE:
                continue
            nested = _value_aux(field)
            if nested.descriptor not in seen:
                seen[nested.descriptor] = nested
                todo.append(nested)
    return list(seen.values())


#: What orjson reads or writes otherwise than json, for :func:`holds`: a double or float field
#: (orjson writes 1e-05 as 0.00001, and reads an integer beyond 64 bits as a float), and what
#: json_format reads and writes for the plans (a well-known type but Timestamp and Duration, be it
#: the message itself; a group; an extension), where such a float could hide (an Int64Value).
NOT_FOR_ORJSON: Final = frozenset({DOUBLE, FLOAT, WKT, OPAQUE})


@cache
def holds(descriptor: Descriptor, kinds: frozenset[int | str]) -> bool:
    """Whether a `descriptor` message can hold, at any depth, a value of one of `kinds`: value
    kinds (:data:`NOT_FOR_ORJSON`; a well-known message counts as WKT, an extension as OPAQUE),
    or the full names of well-known types (google.protobuf.Value)."""
    if WKT in kinds and descriptor.file.name in _OTHER_WKT_FILES:
        return True
    for plan in reachable(plan_of(descriptor)):
        if OPAQUE in kinds and plan.descriptor.extension_ranges:
            return True
        for field in plan.fields:
            aux = _value_aux(field)
            if field.kind in kinds or (field.kind == WKT and aux.DESCRIPTOR.full_name in kinds):
                return True
    return False


def ready_plan(
    descriptor: Descriptor,
    ready: dict[Descriptor, Plan],
    slot: Literal["decode", "encode"],
    compiler: Callable[[Plan], Any],
) -> Plan:
    """The plan of `descriptor` with its `slot` compiled by `compiler` in it and every plan below
    it (once per type, under :data:`LOCK`). A type enters the caller's cache `ready` only when
    all its nested functions are compiled, so another thread never calls a placeholder."""
    found = ready.get(descriptor)
    if found is not None:
        return found
    root = plan_of(descriptor)
    with LOCK:
        for nested in reachable(root):
            if getattr(nested, slot) is _unbuilt:
                setattr(nested, slot, compiler(nested))
        ready[descriptor] = root
    return root


def compile_function(
    source: str,
    name: str,
    namespace: dict[str, Any],
) -> Any:
    """The function `name` that the generated `source` defines, with `namespace` as globals."""
    exec(compile(source, f"<projectops._fastcodec {name}>", "exec"), namespace)
    return namespace[name]


def _fill(built: Plan) -> None:
    for fd in built.descriptor.fields:
        oneof = -1  # in no oneof
        if fd.containing_oneof is not None:
            oneof = fd.containing_oneof.index
        field = Field(fd, oneof)
        built.fields.append(field)
        built.inputs[field.json_name] = field  # the last one wins, as in json_format
    for field in built.fields:
        built.inputs.setdefault(field.name, field)
    built.json_names = frozenset(field.json_name for field in built.fields)


def _kind(fd: FieldDescriptor) -> tuple[int, Any]:
    """The value kind of `fd` (of one element, if repeated) and its auxiliary data."""
    if fd.type == FieldDescriptor.TYPE_GROUP:
        return OPAQUE, None
    message_type = fd.message_type
    if message_type is not None:
        own = _OWN_WKT.get(message_type.full_name)
        if own is not None:
            return own, None
        if message_type.file.name in _OTHER_WKT_FILES:
            return WKT, message_factory.GetMessageClass(message_type)
        return MESSAGE, plan_of(message_type)
    enum_type = fd.enum_type
    if enum_type is not None:
        if enum_type.full_name == "google.protobuf.NullValue" or _custom_names(enum_type):
            return OPAQUE, None
        return ENUM, Enum(enum_type)
    return _SCALAR_KINDS[fd.type], None


def _custom_names(enum: EnumDescriptor) -> bool:
    """Whether values of `enum` carry the ``pb.enumvalue.json`` option json_format honours."""
    try:
        extension = descriptor_pool.Default().FindExtensionByName("pb.enumvalue.json")
    except KeyError:
        return False
    return any(v.GetOptions().HasExtension(extension) for v in enum.values)  # type: ignore[arg-type]
