"""Generated messages, derived from the descriptors: every REQUIRED field set (down to any
depth), every ``buf.validate`` rule it can satisfy satisfied (docs/contract.md §4.6), the same
for the same seed. The mock's answer to an operation its fixtures do not list, and the request
the conformance runner and the tests send to an operation nobody wrote a fixture for.

What the rules ask and how it is met, rule by rule: lengths, prefixes, suffixes, ``const``,
``in`` and ``not_in`` of strings and bytes; the ranges, ``const``, ``in`` and ``not_in`` of
numbers, enums, durations and timestamps; ``min_items``/``max_items`` and ``unique`` of lists,
``min_pairs``/``max_pairs`` of maps, the ``items``/``keys``/``values`` rules of their elements.
A ``pattern`` is met by the first of a few forms that matches it (the rule's own ``example``
values first, then words, 40 and 64 hexadecimal digits, a UUID, digits, the empty string). CEL
cannot be solved in general: a list's elements hold distinct values in every scalar field (what
a ``this.map(x, x.id).unique()`` asks), and the numbers under a message that has CEL rules of its
own (sums and bounds between its counts) are zero, or the lowest their range allows.
``tests/mock/test_generate.py`` checks a thousand answers per operation with the engine.
"""

from __future__ import annotations

import itertools
import random
import re
import uuid
from collections.abc import Callable
from typing import Any, TypeVar, cast

from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from google.protobuf.message import Message

from projectops.rules import field_rules, message_rules
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
# How often a scalar field that is not REQUIRED is set.
_SET_CHANCE = 0.8
_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
# Tries at a value a list does not hold yet (a bool or a small enum may run out of them).
_UNIQUE_TRIES = 20
# The longest candidate a schema's pattern is run on: short, so that even a backtracking
# pattern costs little (the pattern is the schema's own, compiled by buf lint).
_MAX_CANDIDATE = 64

_NUMBER_KINDS = frozenset(
    "float double int32 int64 uint32 uint64 sint32 sint64 fixed32 fixed64 sfixed32 sfixed64".split()
)


def generate(message_type: type[M], seed: bytes | str, *, minimal: bool = False) -> M:
    """A message filled with plausible values that keep the schema's rules, the same for the
    same seed (docs/contract.md §4.1, §4.6).

    Args:
        message_type: the generated message class to fill.
        seed: any bytes or text; equal seeds give equal messages.
        minimal: set only what the rules need (REQUIRED fields, protovalidate's ``required``,
            a list's ``min_items``), as a request built by hand would be; ``False`` (the
            default): down to :data:`MAX_DEPTH` every singular message field and every list is
            set (a list with one to :data:`MAX_REPEATED` elements), other fields mostly.

    Returns:
        A new `message_type` message.
    """
    message = message_type()
    _Filler(random.Random(seed), minimal).fill(message, 0, False)
    return message


class _Filler:
    """One generation: its random source and whether it sets only what the rules need."""

    def __init__(self, rng: random.Random, minimal: bool) -> None:
        self.rng, self.minimal = rng, minimal

    def fill(self, message: Message, depth: int, zero: bool) -> None:
        """Fill `message`; `zero`: its numbers are zero (a message above has CEL rules)."""
        descriptor = cast(Descriptor, message.DESCRIPTOR)
        if descriptor.full_name in _TIMES:
            low, high = _TIMES[descriptor.full_name]
            message.seconds = self.rng.randrange(low, high)  # type: ignore[attr-defined]
            message.nanos = self.rng.randrange(1_000_000) * 1000  # type: ignore[attr-defined]
            return
        if depth > _HARD_DEPTH or descriptor.full_name in _EMPTY:
            return
        zero = zero or _has_cel(descriptor)
        # A proto3 `optional` is a oneof of one: a plain field here.
        chosen = {o.name: self.rng.choice(o.fields) for o in descriptor.oneofs if len(o.fields) > 1}
        for fd in descriptor.fields:
            oneof, kind, frules = fd.containing_oneof, fd.message_type, field_rules(fd)
            if oneof is not None and chosen.get(oneof.name, fd) is not fd:
                continue
            needed = is_required(fd) or (frules is not None and frules.required)
            if fd.is_repeated:
                low = _count_rules(frules)[0]
                needed = needed or low > 0
            if kind is not None and kind.full_name in _UNSET and not needed:
                continue
            if not needed:
                if self.minimal or depth >= MAX_DEPTH:
                    continue
                # A field with rules is always set: its zero value may break them (min_len).
                always = kind is not None or fd.is_repeated or frules is not None
                if not always and self.rng.random() >= _SET_CHANCE:
                    continue
            self.field(message, fd, frules, depth, zero, needed)

    def field(
        self,
        message: Message,
        fd: FieldDescriptor,
        frules: Any,
        depth: int,
        zero: bool,
        needed: bool,
    ) -> None:
        """Set field `fd` of `message` by its rules `frules` (``None``: it has none)."""
        target = getattr(message, fd.name)
        if not fd.is_repeated:
            if fd.message_type is None:
                setattr(message, fd.name, self.scalar(fd, frules, zero, needed))
            else:
                target.SetInParent()
                self.fill(target, depth + 1, zero)
                _bound_time(target, frules, self.rng)
            return
        low, high = _count_rules(frules)
        count = self.rng.randint(max(1, low), max(max(1, low), min(high, MAX_REPEATED)))
        kind = fd.message_type
        if kind is not None and kind.GetOptions().map_entry:
            key_fd, value_fd = kind.fields_by_name["key"], kind.fields_by_name["value"]
            map_rules = frules.map if frules is not None and frules.HasField("map") else None
            key_rules = map_rules.keys if map_rules is not None else None
            value_rules = map_rules.values if map_rules is not None else None
            for _ in range(count):
                key = self.distinct(lambda: self.scalar(key_fd, key_rules, zero, True), target)
                if value_fd.message_type is not None:
                    self.fill(target[key], depth + 1, zero)
                else:
                    target[key] = self.scalar(value_fd, value_rules, zero, True)
            return
        items = (
            frules.repeated.items if frules is not None and frules.HasField("repeated") else None
        )
        for _ in range(count):
            if kind is None:
                target.append(self.distinct(lambda: self.scalar(fd, items, zero, True), target))
                continue
            element = target.add()
            self.fill(element, depth + 1, zero)
            _bound_time(element, items, self.rng)
            self.unlike_siblings(element, target[:-1], zero or _has_cel(kind))

    def distinct(self, make: Any, held: Any) -> Any:
        """A value from `make` that `held` (a list, or a map's keys) does not hold, if one
        comes within a few tries."""
        value = make()
        for _ in range(_UNIQUE_TRIES):
            if value not in held:
                break
            value = make()
        return value

    def unlike_siblings(self, element: Message, siblings: list[Message], zero: bool) -> None:
        """Give each set string or number field of a list's new `element` a value no earlier
        element has in that field (what a CEL ``unique()`` over a field asks); with `zero`
        (numbers held at zero for the CEL rules of a message), strings only."""
        descriptor = cast(Descriptor, element.DESCRIPTOR)
        for fd in descriptor.fields:
            if fd.is_repeated or fd.message_type is not None or fd.enum_type is not None:
                continue
            if fd.cpp_type == FieldDescriptor.CPPTYPE_BOOL:
                continue
            if zero and fd.cpp_type != FieldDescriptor.CPPTYPE_STRING:
                continue
            seen = {getattr(s, fd.name) for s in siblings}
            if getattr(element, fd.name) not in seen:
                continue
            rules = field_rules(fd)
            value = self.distinct(lambda f=fd, r=rules: self.scalar(f, r, False, True), seen)
            setattr(element, fd.name, value)

    def scalar(self, fd: FieldDescriptor, frules: Any, zero: bool, needed: bool) -> Any:
        """One value of scalar field `fd` keeping `frules` (a ``FieldRules``, or None)."""
        kind = frules.WhichOneof("type") if frules is not None else None
        rules: Any = getattr(frules, kind) if kind is not None else None
        cpp, rng = fd.cpp_type, self.rng
        if fd.type == FieldDescriptor.TYPE_BYTES:
            return _bytes(rules if kind == "bytes" else None, rng)
        if cpp == FieldDescriptor.CPPTYPE_STRING:
            return _string(fd, rules if kind == "string" else None, rng)
        if cpp == FieldDescriptor.CPPTYPE_BOOL:
            if kind == "bool" and rules.HasField("const"):
                return rules.const
            return rng.random() < 0.5
        if cpp == FieldDescriptor.CPPTYPE_ENUM:
            return _enum(fd, rules if kind == "enum" else None, rng)
        return _number(fd, rules if kind in _NUMBER_KINDS else None, rng, zero, needed)


def _has_cel(descriptor: Descriptor) -> bool:
    """Whether `descriptor` has message-level CEL rules."""
    rules = message_rules(descriptor)
    return rules is not None and len(rules.cel) > 0


def _count_rules(frules: Any) -> tuple[int, int]:
    """(fewest, most) elements a list or map field's rules allow; (0, huge) without rules."""
    low, high = 0, 2**63
    if frules is None:
        return low, high
    for kind, least, most in (
        ("repeated", "min_items", "max_items"),
        ("map", "min_pairs", "max_pairs"),
    ):
        if frules.HasField(kind):
            rules = getattr(frules, kind)
            if rules.HasField(least):
                low = getattr(rules, least)
            if rules.HasField(most):
                high = getattr(rules, most)
    return low, high


def _bytes(rules: Any, rng: random.Random) -> bytes:
    if rules is not None and rules.HasField("const"):
        return bytes(rules.const)
    if rules is not None and len(getattr(rules, "in")):
        return bytes(rng.choice(list(getattr(rules, "in"))))
    low, high = 1, 16
    if rules is not None:
        if rules.HasField("len"):
            low = high = rules.len
        low = rules.min_len if rules.HasField("min_len") else low
        high = rules.max_len if rules.HasField("max_len") else max(high, low)
    return rng.randbytes(rng.randint(min(low, high), high))


def _string(fd: FieldDescriptor, rules: Any, rng: random.Random) -> str:
    """A string of field `fd` that keeps its ``StringRules`` `rules` (None: any)."""
    tail = "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(4, 12)))
    text = f"{fd.name.replace('_', '-')}-{tail}"
    if rules is None:
        return text
    if rules.HasField("const"):
        return str(rules.const)
    allowed = list(getattr(rules, "in"))
    if allowed:
        return str(rng.choice(allowed))
    well_known = rules.WhichOneof("well_known")
    if well_known in _WELL_KNOWN:
        text = _WELL_KNOWN[well_known](rng, tail)
    if rules.HasField("pattern"):
        text = _matching(rules.pattern, [*rules.example, text], rng)
    low = max(rules.min_len, rules.len, rules.min_bytes, rules.len_bytes)
    high = min(
        rules.max_len if rules.HasField("max_len") else 2**63,
        rules.max_bytes if rules.HasField("max_bytes") else 2**63,
        rules.len if rules.HasField("len") else 2**63,
        rules.len_bytes if rules.HasField("len_bytes") else 2**63,
    )
    head, rest = rules.prefix, rules.suffix
    if rules.contains and rules.contains not in text:
        rest = rules.contains + rest
    if head or rest or not low <= len(text) <= high:
        room = max(
            0, min(high, max(low, len(text) + len(head) + len(rest))) - len(head) - len(rest)
        )
        middle = (text + "x" * room)[:room] if not rules.HasField("pattern") else text
        text = head + middle + rest
    taken = set(rules.not_in)
    while text in taken:
        text = text[:-1] + rng.choice(_ALPHABET) if text else rng.choice(_ALPHABET)
    return text


def _matching(pattern: str, given: list[str], rng: random.Random) -> str:
    """The first of a few forms of string that `pattern` matches (RE2's ``search``, as the
    rule reads it); the last given one when none does."""
    try:
        compiled = re.compile(pattern)
    except re.error:
        return given[-1]
    forms: tuple[Callable[[], str], ...] = (
        lambda: rng.randbytes(20).hex(),
        lambda: rng.randbytes(32).hex(),
        lambda: str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        lambda: "".join(rng.choice("0123456789") for _ in range(8)),
        lambda: "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(8)),
        lambda: "",
    )
    for form in itertools.chain(given, (make() for make in forms)):
        if len(form) <= _MAX_CANDIDATE and compiled.search(form):
            return form
    return given[-1]


def _enum(fd: FieldDescriptor, rules: Any, rng: random.Random) -> int:
    numbers = [v.number for v in cast(EnumDescriptor, fd.enum_type).values if v.number]
    if rules is not None:
        if rules.HasField("const"):
            return int(rules.const)
        allowed = list(getattr(rules, "in"))
        numbers = [n for n in (allowed or numbers) if n not in set(rules.not_in)]
    return rng.choice(numbers) if numbers else 0


def _number(fd: FieldDescriptor, rules: Any, rng: random.Random, zero: bool, needed: bool) -> Any:
    """A number of field `fd` in the range of its rules (None: any); zero when `zero` and the
    range allows it (a REQUIRED number is never zero: zero counts as missing, §4.2)."""
    cpp = fd.cpp_type
    floating = cpp in (FieldDescriptor.CPPTYPE_FLOAT, FieldDescriptor.CPPTYPE_DOUBLE)
    if floating:
        value: Any = rng.randint(1, 4_000_000) / 4  # exact in a float32 too
        top = 2.0**24
    elif cpp in (FieldDescriptor.CPPTYPE_INT64, FieldDescriptor.CPPTYPE_UINT64):
        big = rng.random() < 1 / 3
        value = rng.randint(2**53 + 1, 2**63 - 1) if big else rng.randint(1, 10**5)
        top = 2**63 - 1
    else:
        value, top = rng.randint(1, 2**31 - 1), 2**31 - 1
    if zero and not needed:
        value = 0
    if rules is None:
        return value
    if rules.HasField("const"):
        return rules.const
    allowed = list(getattr(rules, "in"))
    if allowed:
        return rng.choice(allowed)
    step = 0.25 if floating else 1
    low = rules.gte if rules.HasField("gte") else rules.gt + step if rules.HasField("gt") else None
    high = rules.lte if rules.HasField("lte") else rules.lt - step if rules.HasField("lt") else None
    if low is not None and high is not None and low > high:  # an exclusive range: above `low`
        high = None
    if zero and not needed and (low is None or low <= 0) and (high is None or high >= 0):
        pass
    elif (low is not None and value < low) or (high is not None and value > high):
        start = low if low is not None else min(high, 0) - 10**5 if high is not None else 0
        end = high if high is not None else start + 10**5
        end = min(end, start + 10**5)
        value = start if zero and not needed else _between(start, end, rng, floating)
    taken = set(rules.not_in)
    while value in taken or (needed and value == 0):
        value = value + step if high is None or value + step <= high else value - step
        if abs(value) > top:
            break
    return value


def _between(start: Any, end: Any, rng: random.Random, floating: bool) -> Any:
    if floating:
        return start + (end - start) * rng.random()
    return rng.randint(int(start), int(end))


def _bound_time(message: Message, frules: Any, rng: random.Random) -> None:
    """Move a generated Duration or Timestamp into the range of its rules (None: none)."""
    if frules is None:
        return
    kind = frules.WhichOneof("type")
    if kind not in ("duration", "timestamp"):
        return
    rules = getattr(frules, kind)
    value = message.seconds + message.nanos / 1e9  # type: ignore[attr-defined]

    def seconds(name: str) -> float | None:
        if not rules.HasField(name):
            return None
        bound = getattr(rules, name)
        return float(bound.seconds + bound.nanos / 1e9)

    if rules.HasField("const"):
        message.CopyFrom(rules.const)
        return
    low = seconds("gte") if rules.HasField("gte") else seconds("gt")
    high = seconds("lte") if rules.HasField("lte") else seconds("lt")
    if kind == "timestamp":
        now = 1_700_000_000.0  # a past instant: lt_now holds; gt_now gets a far future
        if rules.HasField("lt_now") and rules.lt_now:
            high = now if high is None else min(high, now)
        if rules.HasField("gt_now") and rules.gt_now:
            low = 4_000_000_000.0 if low is None else max(low, 4_000_000_000.0)
    if (low is None or value > low) and (high is None or value < high):
        return
    if low is not None and high is not None and high > low:
        value = low + (high - low) * rng.random()
    elif low is not None:
        value = low + 1 + rng.randrange(86_400)
    elif high is not None:
        value = high - 1 - rng.randrange(86_400)
    whole = int(value // 1)
    message.seconds, message.nanos = whole, int((value - whole) * 1e6) * 1000  # type: ignore[attr-defined]


_TIMES = {  # the range of their seconds: a random int64 would not be a valid time
    "google.protobuf.Timestamp": (1577836800, 1893456000),  # 2020 to 2030
    "google.protobuf.Duration": (0, 86_400),
}
# Set empty: their JSON is free-form.
_EMPTY = {"google.protobuf.Struct", "google.protobuf.ListValue", "google.protobuf.FieldMask"}
# Unset unless REQUIRED: no empty one has a JSON form (an Any needs a type, a Value a kind).
_UNSET = {"google.protobuf.Any", "google.protobuf.Value"}
# The string forms of StringRules.well_known this generator writes (others: the plain form).
_WELL_KNOWN = {
    "email": lambda rng, tail: f"{tail}@example.com",
    "hostname": lambda rng, tail: f"{tail}.example.com",
    "address": lambda rng, tail: f"{tail}.example.com",
    "uri": lambda rng, tail: f"https://example.com/{tail}",
    "uri_ref": lambda rng, tail: f"/{tail}",
    "uuid": lambda rng, tail: str(uuid.UUID(int=rng.getrandbits(128), version=4)),
    "tuuid": lambda rng, tail: uuid.UUID(int=rng.getrandbits(128), version=4).hex,
    "ip": lambda rng, tail: f"192.0.2.{rng.randint(1, 254)}",
    "ipv4": lambda rng, tail: f"192.0.2.{rng.randint(1, 254)}",
    "ipv6": lambda rng, tail: f"2001:db8::{rng.randint(1, 0xFFFF):x}",
    "host_and_port": lambda rng, tail: f"{tail}.example.com:{rng.randint(1, 65535)}",
}
