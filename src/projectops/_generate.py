"""Generated messages, derived from the descriptors: every REQUIRED field set (down to any
depth), the ``buf.validate`` rules this schema uses kept (docs/contract.md §4.6), the same for
the same seed. The mock's answer to an operation its fixtures do not list, and the request sent
to an operation nobody wrote a fixture for.

Rules met: a string's ``min_len``, ``max_len`` and ``len``, and its ``pattern`` (the first of a
few forms that matches: the rule's own ``example`` values, the plain form, 40 and 64 hexadecimal
digits, digits, the empty string); a number's ``gt``/``gte``/``lt``/``lte``; a list's
``min_items``/``max_items``; protovalidate's ``required``. CEL cannot be solved in general: a
list's elements hold distinct values in each string and number field (what a
``this.map(x, x.id).unique()`` asks), and the numbers under a message that has CEL rules of its
own (sums and bounds between its counts) are zero, or the lowest their range allows. Other rules
are not looked at: ``tests/mock/test_generate.py`` checks a thousand answers per operation with
the engine, so a rule the schema starts using and this module does not meet fails there.
"""

from __future__ import annotations

import random
import re
from typing import Any, TypeVar, cast

from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from google.protobuf.message import Message

from projectops.rules import field_rules, message_rules, rule_kind
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
# How often a scalar field without rules that is not REQUIRED is set.
_SET_CHANCE = 0.8
_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
# Tries at a value no earlier element of a list has.
_UNIQUE_TRIES = 20


def generate(message_type: type[M], seed: bytes | str, *, minimal: bool = False) -> M:
    """A message filled with plausible values that keep the schema's rules, the same for the
    same seed (docs/contract.md §4.1, §4.6).

    Args:
        message_type: the generated message class to fill.
        seed: any bytes or text; equal seeds give equal messages.
        minimal: set only what the rules need (REQUIRED fields, protovalidate's ``required``,
            a list's ``min_items``), as a request written by hand would be; ``False`` (the
            default): down to :data:`MAX_DEPTH` every singular message field and every list is
            set (one to :data:`MAX_REPEATED` elements), other fields mostly.

    Returns:
        A new `message_type` message.
    """
    message = message_type()
    _fill(message, random.Random(seed), 0, minimal, False)
    return message


def _fill(message: Message, rng: random.Random, depth: int, minimal: bool, zero: bool) -> bool:
    """Fill `message`; `zero`: its numbers are zero (a message above it has CEL rules). Returns
    whether they are (it or a message above has CEL rules)."""
    descriptor = cast(Descriptor, message.DESCRIPTOR)
    if descriptor.full_name in _TIMES:
        message.seconds = rng.randrange(*_TIMES[descriptor.full_name])  # type: ignore[attr-defined]
        message.nanos = rng.randrange(1_000_000) * 1000  # type: ignore[attr-defined]
        return zero
    if depth > _HARD_DEPTH or descriptor.full_name in _EMPTY:
        return zero
    zero = zero or len(getattr(message_rules(descriptor), "cel", ())) > 0
    # A proto3 `optional` is a oneof of one: a plain field here.
    chosen = {o.name: rng.choice(o.fields) for o in descriptor.oneofs if len(o.fields) > 1}
    for fd in descriptor.fields:
        oneof, kind, rules = fd.containing_oneof, fd.message_type, field_rules(fd)
        if oneof is not None and chosen.get(oneof.name, fd) is not fd:
            continue
        low, high = _typed(fd).get("min_items", 0), _typed(fd).get("max_items", MAX_REPEATED)
        needed = is_required(fd) or (rules is not None and rules.required) or low > 0
        if kind is not None and kind.full_name in _UNSET and not needed:
            continue
        # A field with rules or a list is always set: its zero value may break them (min_len).
        always = kind is not None or fd.is_repeated or rules is not None
        wanted = not minimal and depth < MAX_DEPTH and (always or rng.random() < _SET_CHANCE)
        if not (needed or wanted):
            continue
        target = getattr(message, fd.name)
        if not fd.is_repeated:
            if kind is None:
                setattr(message, fd.name, _scalar(fd, rng, zero and not needed))
            else:
                target.SetInParent()
                _fill(target, rng, depth + 1, minimal, zero)
            continue
        for _ in range(rng.randint(max(1, low), max(1, low, min(high, MAX_REPEATED)))):
            if kind is not None and kind.GetOptions().map_entry:
                key, value = _scalar(kind.fields_by_name["key"], rng), kind.fields_by_name["value"]
                if value.message_type is not None:
                    _fill(target[key], rng, depth + 1, minimal, zero)
                else:
                    target[key] = _scalar(value, rng, zero)
            elif kind is not None:
                element = target.add()
                _unlike(element, target[:-1], rng, _fill(element, rng, depth + 1, minimal, zero))
            else:
                target.append(_scalar(fd, rng, zero))
    return zero


def _unlike(element: Message, siblings: list[Message], rng: random.Random, zero: bool) -> None:
    """Give each string and number field of a list's new `element` a value no earlier element
    has (what a CEL ``unique()`` over a field asks); with `zero`, strings only."""
    for fd in cast(Descriptor, element.DESCRIPTOR).fields:
        cpp = fd.cpp_type
        if (
            fd.is_repeated
            or cpp in (fd.CPPTYPE_BOOL, fd.CPPTYPE_ENUM, fd.CPPTYPE_MESSAGE)
            or (zero and cpp != fd.CPPTYPE_STRING)
        ):
            continue
        seen = {getattr(sibling, fd.name) for sibling in siblings}
        for _ in range(_UNIQUE_TRIES):
            if getattr(element, fd.name) not in seen:
                break
            setattr(element, fd.name, _scalar(fd, rng))


def _typed(fd: FieldDescriptor) -> dict[str, Any]:
    """The type-specific rules set on `fd` by name (``max_len``, ``gte``, ...); empty if none."""
    found = rule_kind(fd)
    return {f.name: value for f, value in found[1].ListFields()} if found else {}


def _scalar(fd: FieldDescriptor, rng: random.Random, zero: bool = False) -> Any:
    cpp = fd.cpp_type
    if fd.type == FieldDescriptor.TYPE_BYTES:
        return rng.randbytes(rng.randint(1, 16))
    if cpp == FieldDescriptor.CPPTYPE_STRING:
        return _string(fd, rng)
    if cpp == FieldDescriptor.CPPTYPE_BOOL:
        return rng.random() < 0.5
    if cpp == FieldDescriptor.CPPTYPE_ENUM:
        numbers = [v.number for v in cast(EnumDescriptor, fd.enum_type).values if v.number]
        return rng.choice(numbers) if numbers else 0
    if cpp in (FieldDescriptor.CPPTYPE_INT64, FieldDescriptor.CPPTYPE_UINT64):
        big = rng.random() < 1 / 3
        value: Any = rng.randint(2**53 + 1, 2**63 - 1) if big else rng.randint(1, 10**5)
    elif cpp in (FieldDescriptor.CPPTYPE_INT32, FieldDescriptor.CPPTYPE_UINT32):
        value = rng.randint(1, 2**31 - 1)
    else:
        value = rng.randint(1, 4_000_000) / 4  # a float or double, exact in a float32 too
    step = 1 if isinstance(value, int) else 0.25
    rules = _typed(fd)
    low = rules["gt"] + step if "gt" in rules else rules.get("gte")
    high = rules["lt"] - step if "lt" in rules else rules.get("lte")
    value = 0 if zero else value  # within the range below
    value = value if low is None else max(value, low)
    value = value if high is None else min(value, high)
    return value


def _string(fd: FieldDescriptor, rng: random.Random) -> str:
    """A string of `fd` in the lengths of its rules, matching its ``pattern``."""
    tail = "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(4, 12)))
    text = f"{fd.name.replace('_', '-')}-{tail}"
    rules = _typed(fd)
    if "pattern" in rules:
        # The schema's own pattern (buf lint compiled it), on forms of at most 64 characters.
        forms = [*rules.get("example", ()), text, rng.randbytes(20).hex(), rng.randbytes(32).hex()]
        return str(next((f for f in [*forms, ""] if re.search(rules["pattern"], f)), text))
    low = rules.get("len", rules.get("min_len", 0))
    high = rules.get("len", rules.get("max_len", len(text)))
    return str((text + "x" * low)[: max(low, min(high, len(text)))])


_TIMES = {  # the range of their seconds: a random int64 would not be a valid time
    "google.protobuf.Timestamp": (1577836800, 1893456000),  # 2020 to 2030
    "google.protobuf.Duration": (0, 86_400),
}
# Set empty: their JSON is free-form.
_EMPTY = {"google.protobuf.Struct", "google.protobuf.ListValue", "google.protobuf.FieldMask"}
# Unset unless REQUIRED: no empty one has a JSON form (an Any needs a type, a Value a kind).
_UNSET = {"google.protobuf.Any", "google.protobuf.Value"}
