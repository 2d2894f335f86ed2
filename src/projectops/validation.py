"""``google.api.field_behavior = REQUIRED`` (AIP-203) checked over a whole message tree
(docs/contract.md §4): protobuf does not enforce it.
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

__all__ = ["BLANK", "NOT_BLANK_PATTERN", "is_blank", "is_required", "validate", "violations"]

_REQUIRED = field_behavior_pb2.REQUIRED

#: White space (``str.isspace``) spelled out, since regex dialects disagree on ``\s`` (§4.2):
#: a REQUIRED string made of these counts as missing.
BLANK = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
    "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


def _not_blank_pattern(blank: str) -> str:
    """A regex class of one character outside `blank`, as ``\\uXXXX`` escapes and ranges,
    read alike by Python's ``re`` and ECMA-262 (no ``\\s``, no literal control character)."""
    codes = sorted({ord(c) for c in blank})
    runs: list[list[int]] = []
    for code in codes:
        if runs and runs[-1][1] == code - 1:
            runs[-1][1] = code
        else:
            runs.append([code, code])
    parts = [
        f"\\u{low:04x}" if low == high else f"\\u{low:04x}-\\u{high:04x}" for low, high in runs
    ]
    return "[^" + "".join(parts) + "]"


#: The JSON Schema ``pattern`` of a string that is not blank (the schemas' :func:`is_blank`).
NOT_BLANK_PATTERN = _not_blank_pattern(BLANK)


def is_blank(text: str) -> bool:
    """Whether `text` is empty or only :data:`BLANK` characters."""
    return not text.strip(BLANK)


@cache
def is_required(fd: FieldDescriptor) -> bool:
    """Whether `fd` carries ``(google.api.field_behavior) = REQUIRED``."""
    behaviors: list[int] = fd.GetOptions().Extensions[field_behavior_pb2.field_behavior]  # type: ignore[index]
    return _REQUIRED in behaviors


def validate(message: Message) -> None:
    """Check every REQUIRED field in the tree of `message` (docs/contract.md §4.2). Raises
    InvalidArgument: fields are missing, one violation each, ``"is required"`` (§4.3)."""
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
        return is_blank(value)
    if isinstance(value, (bytes, int, float)):
        return not value and not fd.has_presence
    return False
