"""The tools' input schemas and the codec agree on accept/reject (the codec is the validator).

Over the golden requests and hypothesis-made JSON objects around each request message: the JSON
Schema (2020-12) of ``projectops schema <tool>`` accepts exactly what strict decoding plus
``validate`` (REQUIRED, the client's check) and the protovalidate rules (the server's, which the
schema states as keywords: a ``minimum``, a ``maxLength``) accept, so an agent that follows the
schema is never refused by the server; but for the rules it says in words only
(``json_schema.rules_in_words``: a CEL rule, a bound of a 64-bit integer, ``not_in``), which a
value it accepts may break. Over our operations and the test schema's (tests/kinds/v1).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from google.protobuf.descriptor import Descriptor
from hypothesis import given, settings
from hypothesis import strategies as st

import projectops
from projectops import json_schema
from projectops.client import InvalidRequest, prepare_request
from projectops.validation import rule_violations
from tests.hypothesis_profiles import examples
from tests.kinds.v1 import kinds_client
from tests.synthetic import rules_in_words

OPS = (*projectops.operations(), *kinds_client.REGISTRY.operations())

GOLDEN = Path(__file__).resolve().parents[1] / "golden"

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False),
    st.text(max_size=8),
    st.sampled_from(["", " ", "1.0.0", " 1.0.0 ", "\t"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)


@cache
def _validator(op: projectops.Operation) -> jsonschema.Draft202012Validator:
    """The input schema's validator, built once per tool: building it costs more than a check."""
    return jsonschema.Draft202012Validator(json_schema.input_schema(op))


@cache
def _in_words(message: Descriptor) -> frozenset[str]:
    """The rules under `message` that the schema says in words only, as violations name them."""
    return rules_in_words(message)


def _agree(op: projectops.Operation, arguments: Any) -> None:
    schema_ok = _validator(op).is_valid(arguments)
    try:
        broken = rule_violations(prepare_request(op, arguments))
    except InvalidRequest:
        assert not schema_ok, (op.name, arguments)
        return
    if not schema_ok:
        assert broken, (op.name, arguments)
        return
    unstated = [v for v in broken if v.rule not in _in_words(op.request_type.DESCRIPTOR)]
    assert unstated == [], (op.name, arguments)


@pytest.mark.parametrize(
    "path", sorted(GOLDEN.glob("*.request.json")), ids=lambda path: path.name.split(".")[0]
)
def test_golden_requests_are_accepted_by_both(path: Path) -> None:
    _agree(projectops.operation(path.name.split(".")[0]), json.loads(path.read_text()))


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
@settings(max_examples=examples(150), deadline=None)
@given(data=st.data())
def test_schema_and_codec_agree_on_made_up_arguments(
    op: projectops.Operation, data: st.DataObject
) -> None:
    names = [fd.json_name for fd in op.request_type.DESCRIPTOR.fields]
    keys = (
        st.sampled_from([*names, *(n + "x" for n in names), "other"])
        if names
        else st.text(max_size=4)
    )
    arguments = data.draw(st.dictionaries(keys, values, max_size=3))
    _agree(op, arguments)
