"""Generated answers, derived from the descriptors of every operation of the registry: valid
(REQUIRED and every protovalidate rule, checked by the engine), deterministic, every message
field set, every list holding an element and every field without presence written; and
generated requests, which set only what the rules need."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

import projectops
from projectops.mock import generate, generated_response
from projectops.mock._generate import MAX_DEPTH
from projectops.rules import field_rules
from projectops.validation import is_required, rule_violations
from tests.hypothesis_profiles import examples
from tests.kinds.v1 import kinds_client
from tests.synthetic import required_string

#: Ours, and the tests' schema of every kind (maps keyed by bool and integers, well-known types).
OPERATIONS = (*projectops.operations(), *kinds_client.REGISTRY.operations())
SEEDS = [str(i) for i in range(5)]
#: Generated answers checked with the engine per operation (docs/contract.md §4.6); fewer for
#: the tests' schema of every kind, whose messages cost the engine more (the fast suite's time).
ANSWERS = 1000
KINDS_ANSWERS = 100
#: Left unset unless REQUIRED: no empty one has a JSON form.
UNSET = {"google.protobuf.Any", "google.protobuf.Value"}


def _message_fields(descriptor: Descriptor) -> Iterator[FieldDescriptor]:
    """The fields of `descriptor` that hold messages of this API (not well-known types)."""
    for fd in descriptor.fields:
        if fd.message_type is not None and not fd.message_type.full_name.startswith("google."):
            yield fd


def _unset_message_fields(message: Message, data: dict[str, Any], depth: int) -> Iterator[str]:
    """Where `message` (and `data`, its JSON) leaves out a singular message field above
    MAX_DEPTH, or its JSON a field without presence."""
    descriptor = message.DESCRIPTOR
    for fd in descriptor.fields:
        where = f"{descriptor.full_name}.{fd.name}"
        if not fd.has_presence and fd.json_name not in data:
            yield f"{where}: not written"
        oneof = fd.containing_oneof
        chosen = (
            oneof is None or len(oneof.fields) == 1 or message.WhichOneof(oneof.name) == fd.name
        )
        if fd.message_type is not None and not fd.is_repeated and depth < MAX_DEPTH:
            if chosen and fd.message_type.full_name not in UNSET:
                if not message.HasField(fd.name):
                    yield f"{where}: not set"
    for fd in _message_fields(descriptor):
        value = getattr(message, fd.name)
        entry = fd.message_type
        if entry.GetOptions().map_entry and not list(_message_fields(entry)):
            continue  # a map of scalars or well-known types, whose JSON is no object
        if entry.GetOptions().map_entry:
            # JSON's spelling of a key: "true", not Python's "True".
            pairs = [(value[k], data[fd.json_name][json.dumps(k).strip('"')]) for k in value]
        elif fd.is_repeated:
            pairs = list(zip(value, data[fd.json_name], strict=True))
        else:
            pairs = [(value, data[fd.json_name])] if message.HasField(fd.name) else []
        for child, child_data in pairs:
            if isinstance(child, Message):
                yield from _unset_message_fields(child, child_data, depth + 1)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: op.name)
def test_a_generated_answer_sets_every_message_field_and_writes_every_field_without_presence(
    op: projectops.Operation, seed: str
) -> None:
    message = generate(op.response_type, seed)
    assert list(_unset_message_fields(message, projectops.to_dict(message), 0)) == []


@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: op.name)
def test_generated_messages_are_valid_deterministic_and_survive_the_codec(
    op: projectops.Operation,
) -> None:
    for seed in SEEDS:
        message = generate(op.response_type, seed)
        projectops.validate(message)
        assert generate(op.response_type, seed) == message
        # Through the codec and back, exactly (int64s travel as strings).
        assert projectops.from_json(projectops.to_json(message), op.response_type) == message


_INT64S = (FieldDescriptor.CPPTYPE_INT64, FieldDescriptor.CPPTYPE_UINT64)


def _int64s(message: Any) -> Iterator[int]:
    for fd, value in message.ListFields():
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            key, held = (
                fd.message_type.fields_by_name["key"],
                fd.message_type.fields_by_name["value"],
            )
            for k, item in value.items():
                if key.cpp_type in _INT64S:
                    yield k
                if isinstance(item, Message):
                    yield from _int64s(item)
                elif held.cpp_type in _INT64S:
                    yield item
            continue
        for item in value if fd.is_repeated else [value]:
            if isinstance(item, Message):
                yield from _int64s(item)
            elif fd.cpp_type in (fd.CPPTYPE_INT64, fd.CPPTYPE_UINT64):
                yield item


def _holds_int64(descriptor: Descriptor, seen: frozenset[str] = frozenset()) -> bool:
    if descriptor.full_name in seen:
        return False
    return any(
        fd.cpp_type in (fd.CPPTYPE_INT64, fd.CPPTYPE_UINT64)
        or (
            fd.message_type is not None
            and _holds_int64(fd.message_type, seen | {descriptor.full_name})
        )
        for fd in descriptor.fields
        if not fd.containing_type.full_name.startswith("google.")
    )


@pytest.mark.parametrize(
    "op",
    [op for op in OPERATIONS if _holds_int64(op.response_type.DESCRIPTOR)],
    ids=lambda op: op.name,
)
def test_generated_answers_hold_int64s_beyond_2_53(op: projectops.Operation) -> None:
    values = [v for i in range(20) for v in _int64s(generate(op.response_type, str(i)))]
    assert any(value > 2**53 for value in values)


@pytest.mark.parametrize(
    "op", [op for op in OPERATIONS if required_string(op)], ids=lambda op: op.name
)
def test_generated_answers_differ_for_different_requests(op: projectops.Operation) -> None:
    name = required_string(op).name  # type: ignore[union-attr]
    answers = {
        projectops.to_json(generated_response(op, op.request_type(**{name: v})))
        for v in ("1", "2", "3")
    }
    assert len(answers) == 3
    # Trimmed strings are the same request, as in matching.
    trimmed = generated_response(op, op.request_type(**{name: " 1 "}))
    assert trimmed == generated_response(op, op.request_type(**{name: "1"}))


def _empty_lists(message: Message, depth: int) -> Iterator[str]:
    """The lists and maps left empty in `message` above MAX_DEPTH (well-known types aside)."""
    descriptor = message.DESCRIPTOR
    for fd in descriptor.fields:
        value = getattr(message, fd.name)
        if fd.is_repeated and depth < MAX_DEPTH and not len(value):
            yield f"{descriptor.full_name}.{fd.name}"
        if fd.message_type is None or fd.message_type.full_name.startswith("google."):
            continue
        if fd.message_type.GetOptions().map_entry:
            children = (
                list(value.values()) if fd.message_type.fields_by_name["value"].message_type else []
            )
        elif fd.is_repeated:
            children = list(value)
        else:
            children = [value] if message.HasField(fd.name) else []
        for child in children:
            yield from _empty_lists(child, depth + 1)


@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: op.name)
def test_a_thousand_generated_answers_keep_every_rule_and_hold_an_element_in_every_list(
    op: projectops.Operation,
) -> None:
    kinds = op in kinds_client.REGISTRY.operations()
    for i in range(examples(KINDS_ANSWERS if kinds else ANSWERS)):  # a quarter in `fast`
        message = generate(op.response_type, f"{op.name}\n{i}")  # as generated_response seeds
        assert rule_violations(message) == [], (i, projectops.to_dict(message))
        assert list(_empty_lists(message, 0)) == [], i


@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: op.name)
def test_a_generated_request_sets_its_required_fields_only_and_keeps_every_rule(
    op: projectops.Operation,
) -> None:
    for seed in SEEDS:
        request = generate(op.request_type, seed, minimal=True)
        assert rule_violations(request) == []
        assert generate(op.request_type, seed, minimal=True) == request
        for fd, _ in request.ListFields():  # what REQUIRED or protovalidate's `required` asks
            rules = field_rules(fd)
            if is_required(fd) or (rules is not None and rules.required):
                continue
            # Or a rule its default breaks (a range from 1, `not_in: [0]`): set, as REQUIRED.
            without = copy.deepcopy(request)
            without.ClearField(fd.name)
            assert fd.json_name in {v.field for v in rule_violations(without)}, fd.name
