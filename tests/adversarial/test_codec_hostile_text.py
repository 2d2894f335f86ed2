"""Hostile JSON text through each path of ``from_json`` (docs/contract.md §3.5, §6): a type's
first small body (json_format, no orjson), the compiled fast path under orjson (the extra
``fast``), and the same without orjson. Every path answers the same ``InvalidArgument`` naming
what is wrong, and none raises anything else, however deep, long or malformed the text.

On ``tests.synthetic.NODE``, a float-free recursive type that the orjson path reads.
"""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest

import projectops
from projectops import codec
from tests.synthetic import NODE

DEEP = 100_000

HOSTILE = {
    "objects nested 100,000 deep": '{"child":' * DEEP + "{}" + "}" * DEEP,
    "arrays nested 100,000 deep": '{"children":' + "[" * DEEP + "]" * DEEP + "}",
    "9 MB of empty objects": '{"children":[' + ",".join(["{}"] * 3_000_000) + "]}",
    "an integer of 5,000 digits": '{"count":' + "9" * 5000 + "}",
    "an integer of 400 digits": '{"count":1' + "0" * 400 + "}",
    "just beyond int64": '{"count":-9223372036854775809}',
    "NaN": '{"count":NaN}',
    "a lone surrogate": '{"label":"\\ud800"}',
    "a byte-order mark": '\ufeff{"label":"x"}',
    "a truncated body": '{"label":"x"',
    "a string for a message": '{"child":"x"}',
    "a string in a list of messages": '{"children":[{}, "x"]}',
    "not an object": "[1, 2, 3]",
}


def paths(body: str | bytes) -> list[Any]:
    """What from_json gives for `body` by each path: the message, or the error's type, text
    and violations."""

    def outcome() -> Any:
        try:
            return projectops.from_json(body, NODE)
        except projectops.InvalidArgument as exc:
            return ("InvalidArgument", str(exc), exc.violations)

    found = []
    with mock.patch.object(codec, "_warm", lambda *_: False):
        found.append(outcome())
    with mock.patch.object(codec, "_warm", lambda *_: True):
        found.append(outcome())
        with mock.patch.object(codec, "_orjson", lambda: None):
            found.append(outcome())
    return found


@pytest.mark.parametrize("name", HOSTILE)
@pytest.mark.parametrize("form", ["str", "bytes"])
def test_hostile_text_gets_the_same_invalid_argument_by_every_path(name: str, form: str) -> None:
    text = HOSTILE[name]
    body: str | bytes = text.encode("utf-8", "surrogatepass") if form == "bytes" else text
    first, *others = paths(body)
    assert all(other == first for other in others), (first, others)
    assert first[0] == "InvalidArgument", first


def test_invalid_utf8_gets_the_same_invalid_argument_by_every_path() -> None:
    first, *others = paths(b'{"label":"\xff\xfe"}')
    assert all(other == first for other in others)
    assert first[0] == "InvalidArgument"
    assert "UTF-8" in first[1]


def test_the_decode_cost_guard_refuses_before_any_path_parses() -> None:
    loads = mock.Mock(side_effect=AssertionError("parsed"))
    with mock.patch.object(codec.json, "loads", loads):
        first, *others = paths(HOSTILE["9 MB of empty objects"])
    assert all(other == first for other in others)
    assert "memory" in first[1]
    loads.assert_not_called()
