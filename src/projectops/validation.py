"""Validation of messages against ``google.api.field_behavior = REQUIRED`` (AIP-203).

protobuf itself does not enforce field behaviors; this module does, on the whole message tree,
before a client sends a request and after a server decodes one.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import cast

import google.api.field_behavior_pb2 as field_behavior_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from projectops._wire import elements, join, shape, value_form
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
        field_path = join(path, fd.json_name)
        if is_required(fd) and _is_missing(message, fd):
            yield FieldViolation(field=field_path, description="is required")
            continue
        if value_form(fd).message is None:  # no REQUIRED field below a scalar or a WKT
            continue
        if shape(fd) == "single" and not message.HasField(fd.name):
            continue
        for item_path, _, item in elements(fd, getattr(message, fd.name), field_path):
            yield from violations(item, item_path)


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
