"""Generated messages, derived from the descriptors: every REQUIRED field set (down to any
depth), the ``buf.validate`` rules this schema uses kept (docs/contract.md §4.6), the same for
the same seed. The mock's response to an operation its fixtures do not list, and the request sent
to an operation nobody wrote a fixture for.

Rules met: a string's ``min_len``, ``max_len`` and ``len``, and its ``pattern`` (the first of a
few forms that matches: the rule's own ``example`` values, the plain form, 40 and 64 hexadecimal
digits, the empty string); a number's ``gt``/``gte``/``lt``/``lte`` (the value is held within
them); a list's ``min_items``/``max_items``; protovalidate's ``required``. CEL cannot be solved
in general: the strings (a random tail of 4 to 12 characters) and numbers (up to 10^9, or past
2^53) practically never repeat within a list, which is what a ``this.map(x, x.id).unique()``
asks, and the numbers under a message that has CEL rules of its own (sums and bounds between
its counts) are zero, or the nearest value their range allows. Other rules
are not looked at: ``tests/mock/test_generate.py`` checks a thousand answers per operation with
the engine, so a rule the schema starts using and this module does not meet fails there.
"""

from __future__ import annotations

import math
import random
import re
from typing import Any, TypeVar, cast

from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from google.protobuf.message import Message

from projectops.rules import field_rules, message_rules, typed_rules, zero_breaks_rule
from projectops.validation import is_required

__all__ = ["MAX_DEPTH", "MAX_REPEATED", "generate"]

M = TypeVar("M", bound=Message)

#: Deepest level of nested messages that gets fields beyond the REQUIRED ones.
MAX_DEPTH = 4
#: Most elements of a generated list or map (more when its ``min_items`` asks).
MAX_REPEATED = 3
# A REQUIRED message field that (through others) holds itself would never end: past this depth
# nothing is set, and validation says so.
_HARD_DEPTH = 32
_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"


def generate(
    message_type: type[M],
    seed: bytes | str,
    *,
    minimal: bool = False,
) -> M:
    """A message filled with plausible values that keep the schema's rules, the same for the
    same seed (docs/contract.md §4.1, §4.6).

    Args:
        message_type: the generated message class to fill.
        seed: any bytes or text; equal seeds give equal messages.
        minimal: set only what the rules need (REQUIRED fields, protovalidate's ``required``,
            a list's ``min_items``), as a request written by hand would be; ``False`` (the
            default): down to ``MAX_DEPTH`` (4) levels every field is set, a list with one to
            ``MAX_REPEATED`` (3) elements.

    Returns:
        A new `message_type` message.
    """
    message = message_type()
    rng = random.Random(seed)
    _fill(message, rng, 0, minimal, False)
    return message


def _fill(
    message: Message,
    rng: random.Random,
    depth: int,
    minimal: bool,
    zero: bool,
) -> None:
    """Fill `message`; `zero`: its numbers are zero (a message above it has CEL rules)."""
    descriptor = cast(Descriptor, message.DESCRIPTOR)
    name = descriptor.full_name
    if name in _TIMES:
        message.seconds = rng.randrange(*_TIMES[name])  # type: ignore[attr-defined]
        message.nanos = rng.randrange(1_000_000) * 1000  # type: ignore[attr-defined]
        return
    if depth > _HARD_DEPTH or name in _EMPTY:
        return
    cel = getattr(message_rules(descriptor), "cel", ())
    zero = zero or len(cel) > 0
    # A proto3 `optional` is a oneof of one: a plain field here.
    chosen: dict[str, FieldDescriptor] = {}
    for group in descriptor.oneofs:
        if len(group.fields) > 1:
            chosen[group.name] = rng.choice(group.fields)
    for fd in descriptor.fields:
        oneof = fd.containing_oneof
        if oneof is not None and chosen.get(oneof.name, fd) is not fd:
            continue
        kind = fd.message_type
        rules = field_rules(fd)
        typed = typed_rules(fd)
        low = typed.get("min_items", 0)
        high = typed.get("max_items", MAX_REPEATED)
        validated_required = rules is not None and rules.required  # protovalidate's
        needed = is_required(fd) or validated_required or low > 0
        # A scalar whose default breaks its rule (a range from 1, `not_in: [0]`, `min_len`) is
        # as good as REQUIRED: protovalidate judges the zero of a field without presence.
        needed = needed or zero_breaks_rule(fd)
        # Every field is set (but see _UNSET): a zero may break a rule (min_len), or repeat in
        # a list (unique()).
        unset_kind = kind is not None and kind.full_name in _UNSET
        skipped = minimal or depth >= MAX_DEPTH or unset_kind
        if not needed and skipped:
            continue
        target = getattr(message, fd.name)
        if not fd.is_repeated:
            if kind is None:
                value = _scalar(fd, rng, zero and not needed, needed)
                setattr(message, fd.name, value)
            else:
                target.SetInParent()
                _fill(target, rng, depth + 1, minimal, zero)
            continue
        fewest = max(1, low)
        most = max(1, low, min(high, MAX_REPEATED))
        for _ in range(rng.randint(fewest, most)):
            if kind is not None and kind.GetOptions().map_entry:
                key = _scalar(kind.fields_by_name["key"], rng)
                value_fd = kind.fields_by_name["value"]
                if value_fd.message_type is not None:
                    _fill(target[key], rng, depth + 1, minimal, zero)
                else:
                    target[key] = _scalar(value_fd, rng, zero)
            elif kind is not None:
                _fill(target.add(), rng, depth + 1, minimal, zero)
            else:
                target.append(_scalar(fd, rng, zero))


def _scalar(
    fd: FieldDescriptor,
    rng: random.Random,
    zero: bool = False,
    needed: bool = False,
) -> Any:
    """A value of `fd`; `needed`: the field must be set (REQUIRED), so it is not a default."""
    cpp = fd.cpp_type
    if fd.type == FieldDescriptor.TYPE_BYTES:
        return rng.randbytes(rng.randint(1, 16))
    if cpp == FieldDescriptor.CPPTYPE_STRING:
        return _string(fd, rng)
    if cpp == FieldDescriptor.CPPTYPE_BOOL:  # a REQUIRED bool is set only when true
        return needed or rng.random() < 0.5
    if cpp == FieldDescriptor.CPPTYPE_ENUM:
        values = cast(EnumDescriptor, fd.enum_type).values
        numbers = [v.number for v in values if v.number]
        if not numbers:
            return 0
        return rng.choice(numbers)
    value: Any
    if cpp in (FieldDescriptor.CPPTYPE_INT64, FieldDescriptor.CPPTYPE_UINT64):
        big = rng.random() < 1 / 3
        if big:
            value = rng.randint(2**53 + 1, 2**63 - 1)
        else:
            value = rng.randint(1, 10**9)
    elif cpp in (FieldDescriptor.CPPTYPE_INT32, FieldDescriptor.CPPTYPE_UINT32):
        value = rng.randint(1, 2**31 - 1)
    else:
        value = rng.randint(1, 4_000_000) / 4  # a float or double, exact in a float32 too
    # The smallest step between two values: the next value past an exclusive bound.
    step: float = 1
    if isinstance(value, float):
        step = 0.25
    rules = typed_rules(fd)
    low = rules.get("gte", -math.inf)
    if "gt" in rules:
        low = rules["gt"] + step
    high = rules.get("lte", math.inf)
    if "lt" in rules:
        high = rules["lt"] - step
    if zero:
        value = 0
    return min(max(value, low), high)


def _string(fd: FieldDescriptor, rng: random.Random) -> str:
    """A string of `fd` in the lengths of its rules, matching its ``pattern``."""
    tail_length = rng.randint(4, 12)
    tail = "".join(rng.choice(_ALPHABET) for _ in range(tail_length))
    text = f"{fd.name.replace('_', '-')}-{tail}"
    rules = typed_rules(fd)
    if "pattern" in rules:
        # The schema's own pattern (buf lint compiled it), on forms of at most 64 characters.
        examples = rules.get("example", ())
        hex40 = rng.randbytes(20).hex()
        hex64 = rng.randbytes(32).hex()
        forms = [*examples, text, hex40, hex64, ""]
        for form in forms:
            if re.search(rules["pattern"], form):
                return str(form)
        return text
    low = rules.get("len", rules.get("min_len", 0))
    high = rules.get("len", rules.get("max_len", len(text)))
    padded = text + "x" * low
    length = max(low, min(high, len(text)))
    return str(padded[:length])


_TIMES = {  # the range of their seconds: a random int64 would not be a valid time
    "google.protobuf.Timestamp": (1577836800, 1893456000),  # 2020 to 2030
    "google.protobuf.Duration": (0, 86_400),
}
# Set empty: their JSON is free-form.
_EMPTY = {"google.protobuf.Struct", "google.protobuf.ListValue", "google.protobuf.FieldMask"}
# Unset unless REQUIRED: no empty one has a JSON form (an Any needs a type, a Value a kind).
_UNSET = {"google.protobuf.Any", "google.protobuf.Value"}
