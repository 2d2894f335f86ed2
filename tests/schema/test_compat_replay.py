"""Compatibility replay: the released payloads still decode, and today's payloads still decode
with the released schema.

``tests/golden/released/`` holds the golden payloads of version 0.1.0 exactly as released (never
edit them; record a new set when the next version is released). ``proto/released.binpb`` is the
released schema. Both directions are checked:

- today's code decodes every released payload strictly and writes back everything it held;
- a reader built from the released descriptors (message classes in a private pool, as a client
  of 0.1.0 has them) decodes every payload of today's ``tests/golden/`` and keeps every value of
  every field the released schema names (a value of an enum that the release does not know reads
  as that enum's zero value, as the README promises).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

import projectops
from projectops import contract
from tests.golden import GOLDEN, message_type, stems
from tests.golden import RELEASED as RELEASED_GOLDEN

REPO = Path(__file__).resolve().parents[2]
RELEASED_POOL = contract.load((REPO / "proto" / "released.binpb").read_bytes())
RELEASED_OPERATIONS = sorted(
    op.name
    for op in contract.operations(RELEASED_POOL, ["projectops/v1/operations.proto"]).values()
)


def test_the_released_payloads_are_kept() -> None:
    """A request and a response of every released operation, and an error."""
    assert RELEASED_OPERATIONS
    assert stems(RELEASED_GOLDEN) == [
        "error.invalid_argument",
        *(f"{name}.{kind}" for name in RELEASED_OPERATIONS for kind in ("request", "response")),
    ]


def contains(whole: Any, part: Any) -> bool:
    """Whether JSON `whole` holds every value of `part` (objects may hold more keys)."""
    if isinstance(part, dict):
        return isinstance(whole, dict) and all(
            key in whole and contains(whole[key], value) for key, value in part.items()
        )
    if isinstance(part, list):
        return (
            isinstance(whole, list)
            and len(whole) == len(part)
            and all(contains(w, p) for w, p in zip(whole, part, strict=True))
        )
    return bool(whole == part)


@pytest.mark.parametrize("stem", stems(RELEASED_GOLDEN))
def test_todays_code_decodes_the_released_payloads_strictly(stem: str) -> None:
    text = (RELEASED_GOLDEN / f"{stem}.json").read_text()
    message = projectops.from_json(text, message_type(stem), strict=True)
    # Written back, nothing of the released payload is lost (new fields may be added).
    assert contains(json.loads(projectops.to_json(message)), json.loads(text))


def released_class(full_name: str) -> type[Message]:
    return message_factory.GetMessageClass(RELEASED_POOL.FindMessageTypeByName(full_name))


def as_released(data: Any, descriptor: Descriptor) -> Any:
    """What a released reader must see of JSON `data`: only the fields the released message
    names, with enum names it does not know read as the enum's zero value."""
    kept: dict[str, Any] = {}
    for field in descriptor.fields:
        if field.json_name not in data:
            continue
        value = data[field.json_name]
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            value_field = field.message_type.fields_by_name["value"]
            kept[field.json_name] = {k: released_value(v, value_field) for k, v in value.items()}
        elif field.is_repeated:
            kept[field.json_name] = [released_value(v, field) for v in value]
        else:
            kept[field.json_name] = released_value(value, field)
    return kept


def released_value(value: Any, field: FieldDescriptor) -> Any:
    if field.enum_type is not None and value not in field.enum_type.values_by_name:
        return field.enum_type.values_by_number[0].name
    if field.message_type is not None and not field.message_type.full_name.startswith(
        "google.protobuf."
    ):
        return as_released(value, field.message_type)
    return value


def _released(stem: str) -> bool:
    """Whether the release has the message of golden file `stem` (a newer operation's not)."""
    try:
        RELEASED_POOL.FindMessageTypeByName(message_type(stem).DESCRIPTOR.full_name)
    except KeyError:
        return False
    return True


@pytest.mark.parametrize("stem", [stem for stem in stems(GOLDEN) if _released(stem)])
def test_the_released_schema_decodes_todays_payloads(stem: str) -> None:
    full_name = message_type(stem).DESCRIPTOR.full_name
    cls = released_class(full_name)
    assert cls.DESCRIPTOR.file.pool is RELEASED_POOL  # not the generated runtime classes
    text = (GOLDEN / f"{stem}.json").read_text()
    message = json_format.Parse(text, cls(), ignore_unknown_fields=True)
    written = json_format.MessageToDict(message, always_print_fields_with_no_presence=True)
    expected = as_released(json.loads(text), cls.DESCRIPTOR)
    assert contains(written, expected), (written, expected)


def test_the_replay_sees_a_lost_field() -> None:
    """The check bites: a payload whose released field does not survive is reported."""
    cls = released_class("projectops.v1.RumEnvironment")
    expected = as_released({"environment": "QA", "sessionCount": "3"}, cls.DESCRIPTOR)
    written = json_format.MessageToDict(cls(environment="QA"))
    assert expected == {"environment": "QA", "sessionCount": "3"}
    assert not contains(written, expected)
    unknown = as_released({"environment": "QA", "brandNew": 1}, cls.DESCRIPTOR)
    assert unknown == {"environment": "QA"}
