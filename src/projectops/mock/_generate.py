"""Generated example messages: schema-valid, deterministic for a seed, derived from descriptors.

The mock server answers an operation its fixtures do not mention with :func:`generate` of the
operation's response message, seeded from the request (:func:`projectops.fixtures.
generated_answer`), so an rpc added to the proto is served before anyone writes a fixture.

What a generated message holds:

- every REQUIRED field (``google.api.field_behavior``) set, a string to visible text and a list
  to at least one element, so :func:`projectops.validate` passes; other fields are set at
  random (most of them);
- enums from their non-zero values; 64-bit integers sometimes beyond ``2**53`` (the values a
  JSON number would round), 32-bit ones within range; floats exact in 32 bits; strings of
  ASCII letters and digits named after the field; timestamps between 2020 and 2030 in whole
  microseconds; durations under a day;
- nested messages down to :data:`MAX_DEPTH` levels (below it only REQUIRED fields are set),
  lists and maps of at most :data:`MAX_REPEATED` elements; one member of each ``oneof``;
  ``google.protobuf.Struct``/``Value``/``ListValue``/``Any``/``FieldMask`` left unset unless
  REQUIRED (then empty or a small value).

The same seed gives the same message (a PRNG seeded with ``sha256(seed)``); different seeds
almost always give different messages.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any, TypeVar, cast

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from projectops.fixtures import request_key
from projectops.registry import Operation
from projectops.validation import is_required

__all__ = ["MAX_DEPTH", "MAX_REPEATED", "generate"]

M = TypeVar("M", bound=Message)

#: Deepest level of nested messages that gets fields beyond the REQUIRED ones.
MAX_DEPTH = 4
#: Most elements of a generated list or map.
MAX_REPEATED = 3
# A REQUIRED message field that (through others) contains itself would never end; past this
# depth nothing more is set and validation reports it.
_HARD_DEPTH = 32
# How often a field that is not REQUIRED is set.
_SET_CHANCE = 0.8
_INT64_TYPES = {
    FieldDescriptor.TYPE_INT64,
    FieldDescriptor.TYPE_SINT64,
    FieldDescriptor.TYPE_SFIXED64,
    FieldDescriptor.TYPE_UINT64,
    FieldDescriptor.TYPE_FIXED64,
}
_INT32_TYPES = {
    FieldDescriptor.TYPE_INT32,
    FieldDescriptor.TYPE_SINT32,
    FieldDescriptor.TYPE_SFIXED32,
    FieldDescriptor.TYPE_UINT32,
    FieldDescriptor.TYPE_FIXED32,
}
_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
_YEAR_2020 = 1577836800
_YEAR_2030 = 1893456000
_LEFT_UNSET = {
    "google.protobuf.Struct",
    "google.protobuf.Value",
    "google.protobuf.ListValue",
    "google.protobuf.Any",
    "google.protobuf.FieldMask",
}


def generate(message_type: type[M], seed: bytes | str) -> M:
    """A message of `message_type` filled from `seed` (the module docstring says how).

    Args:
        message_type: a generated message class, e.g. ``ops.GetReleaseDetailsResponse``.
        seed: any bytes or text; the same seed gives the same message.

    Returns:
        A new message whose REQUIRED fields are all set.
    """
    data = seed.encode("utf-8") if isinstance(seed, str) else seed
    rng = random.Random(int.from_bytes(hashlib.sha256(data).digest(), "big"))
    message = message_type()
    _fill(message, rng, 0)
    return message


def _fill(message: Message, rng: random.Random, depth: int) -> None:
    descriptor = cast(Descriptor, message.DESCRIPTOR)
    if depth > _HARD_DEPTH:
        return
    if descriptor.full_name in _WELL_KNOWN:
        _WELL_KNOWN[descriptor.full_name](message, rng)
        return
    chosen = {
        oneof.name: rng.choice(oneof.fields)
        for oneof in descriptor.oneofs
        if len(oneof.fields) > 1  # a proto3 `optional` is a oneof of one: a plain field here
    }
    for fd in descriptor.fields:
        required = is_required(fd)
        oneof = fd.containing_oneof
        if oneof is not None and oneof.name in chosen and chosen[oneof.name] is not fd:
            continue
        if not required and (depth >= MAX_DEPTH or rng.random() >= _SET_CHANCE):
            continue
        if fd.message_type is not None and fd.message_type.full_name in _LEFT_UNSET:
            if required and not fd.is_repeated:
                getattr(message, fd.name).SetInParent()
            continue
        _set(message, fd, rng, depth, required)


def _set(
    message: Message, fd: FieldDescriptor, rng: random.Random, depth: int, required: bool
) -> None:
    if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
        target = getattr(message, fd.name)
        key_fd = fd.message_type.fields_by_name["key"]
        value_fd = fd.message_type.fields_by_name["value"]
        for _ in range(rng.randint(1 if required else 0, MAX_REPEATED)):
            key = _scalar(key_fd, rng)
            if value_fd.message_type is not None:
                _fill(target[key], rng, depth + 1)
            else:
                target[key] = _scalar(value_fd, rng)
        return
    if fd.is_repeated:
        target = getattr(message, fd.name)
        for _ in range(rng.randint(1 if required else 0, MAX_REPEATED)):
            if fd.message_type is not None:
                _fill(target.add(), rng, depth + 1)
            else:
                target.append(_scalar(fd, rng))
        return
    if fd.message_type is not None:
        child = getattr(message, fd.name)
        child.SetInParent()
        _fill(child, rng, depth + 1)
        return
    setattr(message, fd.name, _scalar(fd, rng))


def _scalar(fd: FieldDescriptor, rng: random.Random) -> Any:
    kind = fd.type
    if kind == FieldDescriptor.TYPE_STRING:
        tail = "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(4, 12)))
        return f"{fd.name.replace('_', '-')}-{tail}"
    if kind == FieldDescriptor.TYPE_BYTES:
        return rng.randbytes(rng.randint(1, 16))
    if kind == FieldDescriptor.TYPE_BOOL:
        return rng.random() < 0.5
    if kind == FieldDescriptor.TYPE_ENUM:
        enum = fd.enum_type
        numbers = [v.number for v in enum.values if v.number != 0] if enum else []
        return rng.choice(numbers) if numbers else 0
    if kind in _INT64_TYPES:
        # A third beyond 2**53: the values a client that reads JSON numbers as doubles rounds.
        if rng.random() < 1 / 3:
            return rng.randint(2**53 + 1, 2**63 - 1)
        return rng.randint(1, 100_000)
    if kind in _INT32_TYPES:
        return rng.randint(1, 2**31 - 1)
    if kind in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return rng.randint(1, 4_000_000) / 4  # exact in a float32 too
    raise TypeError(f"no example for field {fd.full_name} of type {kind}")  # pragma: no cover


def _timestamp(message: Message, rng: random.Random) -> None:
    message.seconds = rng.randrange(_YEAR_2020, _YEAR_2030)  # type: ignore[attr-defined]
    message.nanos = rng.randrange(0, 1_000_000) * 1000  # type: ignore[attr-defined]


def _duration(message: Message, rng: random.Random) -> None:
    message.seconds = rng.randrange(0, 86_400)  # type: ignore[attr-defined]
    message.nanos = rng.randrange(0, 1_000_000) * 1000  # type: ignore[attr-defined]


def _wrapper(message: Message, rng: random.Random) -> None:
    fd = cast(Descriptor, message.DESCRIPTOR).fields_by_name["value"]
    message.value = _scalar(fd, rng)  # type: ignore[attr-defined]


_WELL_KNOWN = {
    "google.protobuf.Timestamp": _timestamp,
    "google.protobuf.Duration": _duration,
    **{
        f"google.protobuf.{name}Value": _wrapper
        for name in (
            "Double",
            "Float",
            "Int64",
            "UInt64",
            "Int32",
            "UInt32",
            "Bool",
            "String",
            "Bytes",
        )
    },
}


def generated_answer(op: Operation, request: Message) -> Message:
    """The response the mock server generates for `request` of `op` when the project lists no
    answers for `op` (:func:`generate`): schema-valid, seeded from the
    operation's name and the request's :func:`request_key` (so equal requests, trimmed, get
    the same response and different ones almost surely different responses)."""
    seed = f"{op.name}\n{request_key(request)}".encode()
    return generate(op.response_type, hashlib.sha256(seed).digest())
