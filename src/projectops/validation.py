"""Validation of messages against ``google.api.field_behavior = REQUIRED`` (AIP-203).

protobuf itself does not enforce field behaviors; this module does, on the whole message tree,
before a client sends a request and after a server decodes one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from typing import cast

import google.api.field_behavior_pb2 as field_behavior_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from projectops._wire import is_map
from projectops.errors import FieldViolation, InvalidArgument

__all__ = ["is_required", "validate", "violations"]

_REQUIRED = field_behavior_pb2.REQUIRED


@cache
def is_required(fd: FieldDescriptor) -> bool:
    """Whether `fd` carries ``(google.api.field_behavior) = REQUIRED``."""
    behaviors: list[int] = fd.GetOptions().Extensions[field_behavior_pb2.field_behavior]  # type: ignore[index]
    return _REQUIRED in behaviors


def validate(message: Message) -> None:
    """Check every REQUIRED field in the tree of `message`.

    A REQUIRED field is missing when it is unset, an empty list or map, a zero number or enum
    without explicit presence, or a string that is empty or only white space.

    Raises:
        InvalidArgument: one or more fields are missing; ``violations`` holds one
            :class:`FieldViolation` per field (``field`` path in camelCase, e.g.
            ``summary.release.version``; ``description`` ``"is required"``).
    """
    found = list(violations(message))
    if not found:
        return
    text = "; ".join(f"{v.field}: {v.description}" for v in found)
    raise InvalidArgument(text, found)


def violations(message: Message, path: str = "") -> Iterator[FieldViolation]:
    """Yield a :class:`FieldViolation` for each missing REQUIRED field under `message`."""
    descriptor = cast(Descriptor, message.DESCRIPTOR)
    for fd in descriptor.fields:
        field_path = f"{path}.{fd.json_name}" if path else fd.json_name
        if is_required(fd) and _is_missing(message, fd):
            yield FieldViolation(field=field_path, description="is required")
            continue
        if fd.message_type is None:
            continue
        value = getattr(message, fd.name)
        if is_map(fd):
            if fd.message_type.fields_by_name["value"].message_type is not None:
                for key, item in value.items():
                    yield from violations(item, f"{field_path}[{json.dumps(key)}]")
        elif fd.is_repeated:
            for i, item in enumerate(value):
                yield from violations(item, f"{field_path}[{i}]")
        elif message.HasField(fd.name):
            yield from violations(value, field_path)


def _is_missing(message: Message, fd: FieldDescriptor) -> bool:
    if fd.is_repeated:
        return len(getattr(message, fd.name)) == 0
    if fd.has_presence:
        if not message.HasField(fd.name):
            return True
    value = getattr(message, fd.name)
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, (bytes, int, float)):
        return not value and not fd.has_presence
    return False
