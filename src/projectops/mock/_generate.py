"""Generated messages, derived from the descriptors: schema-valid (REQUIRED fields set, down
to any depth), the same for the same seed; the mock's answer to an operation its fixtures do
not list. Down to :data:`MAX_DEPTH` every singular message field is set, others at random."""

from __future__ import annotations

import random
from typing import Any, TypeVar, cast

from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from google.protobuf.message import Message

from projectops.fixtures import request_key
from projectops.registry import Operation
from projectops.validation import is_required

__all__ = ["MAX_DEPTH", "MAX_REPEATED", "generate", "generated_answer"]

M = TypeVar("M", bound=Message)

#: Deepest level of nested messages that gets fields beyond the REQUIRED ones.
MAX_DEPTH = 4
#: Most elements of a generated list or map.
MAX_REPEATED = 3
# A REQUIRED message field that (through others) holds itself would never end: past this depth
# nothing is set, and validation says so.
_HARD_DEPTH = 32
# How often a field that is no singular message and not REQUIRED is set.
_SET_CHANCE = 0.8
_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"


def generate(message_type: type[M], seed: bytes | str) -> M:
    """A message filled with plausible values, the same for the same seed.

    Args:
        message_type: the generated message class to fill.
        seed: any bytes or text; equal seeds give equal messages.

    Returns:
        A new `message_type` message, every singular message field set.
    """
    message = message_type()
    _fill(message, random.Random(seed), 0)
    return message


def generated_answer(op: Operation, request: Message) -> Message:
    """The mock's generated response of an operation for a request.

    Args:
        op: the operation called.
        request: its request.

    Returns:
        A response message of `op`, seeded by the operation and the request's
        :func:`~projectops.fixtures.request_key`: the same request gets the same response.
    """
    return generate(op.response_type, f"{op.name}\n{request_key(request)}")


def _fill(message: Message, rng: random.Random, depth: int) -> None:
    descriptor = cast(Descriptor, message.DESCRIPTOR)
    if descriptor.full_name in _TIMES:
        message.seconds = rng.randrange(*_TIMES[descriptor.full_name])  # type: ignore[attr-defined]
        message.nanos = rng.randrange(1_000_000) * 1000  # type: ignore[attr-defined]
        return
    if depth > _HARD_DEPTH or descriptor.full_name in _EMPTY:
        return
    # A proto3 `optional` is a oneof of one: a plain field here.
    chosen = {o.name: rng.choice(o.fields) for o in descriptor.oneofs if len(o.fields) > 1}
    for fd in descriptor.fields:
        oneof, kind, required = fd.containing_oneof, fd.message_type, is_required(fd)
        if oneof is not None and chosen.get(oneof.name, fd) is not fd:
            continue
        if kind is not None and kind.full_name in _UNSET and not required:
            continue
        always = kind is not None and not fd.is_repeated
        if not (required or (depth < MAX_DEPTH and (always or rng.random() < _SET_CHANCE))):
            continue
        target = getattr(message, fd.name)
        if not fd.is_repeated:
            if kind is None:
                setattr(message, fd.name, _scalar(fd, rng))
            else:
                target.SetInParent()
                _fill(target, rng, depth + 1)
            continue
        for _ in range(rng.randint(1 if required else 0, MAX_REPEATED)):
            if kind is not None and kind.GetOptions().map_entry:
                key, value = _scalar(kind.fields_by_name["key"], rng), kind.fields_by_name["value"]
                if value.message_type is not None:
                    _fill(target[key], rng, depth + 1)
                else:
                    target[key] = _scalar(value, rng)
            elif kind is not None:
                _fill(target.add(), rng, depth + 1)
            else:
                target.append(_scalar(fd, rng))


def _scalar(fd: FieldDescriptor, rng: random.Random) -> Any:
    cpp = fd.cpp_type
    if fd.type == FieldDescriptor.TYPE_BYTES:
        return rng.randbytes(rng.randint(1, 16))
    if cpp == FieldDescriptor.CPPTYPE_STRING:
        tail = "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(4, 12)))
        return f"{fd.name.replace('_', '-')}-{tail}"
    if cpp == FieldDescriptor.CPPTYPE_BOOL:
        return rng.random() < 0.5
    if cpp == FieldDescriptor.CPPTYPE_ENUM:
        numbers = [v.number for v in cast(EnumDescriptor, fd.enum_type).values if v.number]
        return rng.choice(numbers) if numbers else 0
    if cpp in (FieldDescriptor.CPPTYPE_INT64, FieldDescriptor.CPPTYPE_UINT64):
        return rng.randint(2**53 + 1, 2**63 - 1) if rng.random() < 1 / 3 else rng.randint(1, 10**5)
    if cpp in (FieldDescriptor.CPPTYPE_INT32, FieldDescriptor.CPPTYPE_UINT32):
        return rng.randint(1, 2**31 - 1)
    return rng.randint(1, 4_000_000) / 4  # a float or double, exact in a float32 too


_TIMES = {  # the range of their seconds: a random int64 would not be a valid time
    "google.protobuf.Timestamp": (1577836800, 1893456000),  # 2020 to 2030
    "google.protobuf.Duration": (0, 86_400),
}
# Set empty: their JSON is free-form.
_EMPTY = {"google.protobuf.Struct", "google.protobuf.ListValue", "google.protobuf.FieldMask"}
# Unset unless REQUIRED: no empty one has a JSON form (an Any needs a type, a Value a kind).
_UNSET = {"google.protobuf.Any", "google.protobuf.Value"}
