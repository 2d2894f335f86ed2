"""JSON Schema derived from descriptors: valid 2020-12 schemas that the golden payloads satisfy."""

import itertools
import json
import re
from collections.abc import Callable
from typing import Any

import jsonschema
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, struct_pb2

import projectops
from projectops import json_schema
from projectops.descriptions import description
from projectops.mock import generate
from projectops.rules import rule_items, zero_breaks_rule
from projectops.v1.operations_pb2 import GetReleaseDetailsResponse
from projectops.v1.release_pb2 import Issue
from projectops.validation import is_required, rule_violations
from tests import golden
from tests.synthetic import rules_in_words

OPS = projectops.operations()


def validator(schema: dict[str, Any]) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
@pytest.mark.parametrize("side", ["input", "output"])
def test_every_operation_schema_is_valid_2020_12(op: projectops.Operation, side: str) -> None:
    schema = json_schema.input_schema(op) if side == "input" else json_schema.output_schema(op)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == json_schema.DIALECT
    assert schema["type"] == "object" and "$ref" not in schema  # MCP: an object schema on top
    json.dumps(schema)  # serialisable as it is


def test_every_golden_payload_is_of_an_operation_and_comes_in_pairs() -> None:
    with_payloads = golden.operations()
    assert with_payloads
    named = [stem for stem in golden.stems() if not stem.startswith("error.")]
    assert named == sorted(
        f"{op.name}.{kind}" for op in with_payloads for kind in ("request", "response")
    )


@pytest.mark.parametrize("op", golden.operations(), ids=lambda op: op.name)
def test_golden_payloads_validate_against_their_schemas(op: projectops.Operation) -> None:
    request = json.loads(golden.read(f"{op.name}.request"))
    response = json.loads(golden.read(f"{op.name}.response"))
    validator(json_schema.input_schema(op)).validate(request)
    validator(json_schema.output_schema(op)).validate(response)


def test_error_golden_validates_against_the_error_response_schema() -> None:
    from projectops.v1.error_pb2 import ErrorResponse

    body = json.loads(golden.read("error.invalid_argument"))
    validator(json_schema.message_schema(ErrorResponse)).validate(body)


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_request_schema_shape(op: projectops.Operation) -> None:
    schema = json_schema.input_schema(op)
    fields = op.request_type.DESCRIPTOR.fields
    # REQUIRED, and fields whose default breaks a rule (protovalidate refuses them absent).
    required = [f.json_name for f in fields if is_required(f) or zero_breaks_rule(f)]
    assert schema.get("required", []) == required
    assert schema["additionalProperties"] is False
    assert list(schema["properties"]) == [f.json_name for f in fields]
    for field in fields:
        prop = schema["properties"][field.json_name]
        # The field's comment, then the rules no keyword states in words (a fixed64 is a JSON
        # string: its `gt` has no keyword), as a paragraph of their own.
        said = prop.get("description", "")
        rules_said = said.removeprefix(description(field)).lstrip("\n")
        assert said.startswith(description(field)), said
        assert not rules_said or rules_said.startswith(("Rule: ", "Rules: ")), said
        if field.json_name not in required:  # null reads as the default (docs/contract.md §3)
            assert prop["anyOf"][1] == {"type": "null"}
            prop = prop["anyOf"][0]
        if field.type == field.TYPE_STRING and not field.is_repeated:
            assert prop["type"] == "string"
    assert schema["description"] == description(op.request_type.DESCRIPTOR)
    assert "[" not in schema["description"]  # cross-references read as their text


def test_response_schema_maps_each_wire_form() -> None:
    schema = json_schema.output_schema("get_release_details")
    defs = schema["$defs"]
    assert schema["properties"]["summary"]["$ref"] == "#/$defs/projectops.v1.ReleaseSummary"
    issue = defs["projectops.v1.Issue"]["properties"]
    assert issue["issueId"]["type"] == "string"
    issue_id = re.compile(issue["issueId"]["pattern"])  # digits within int64's range
    assert issue_id.search("-9223372036854775808") and not issue_id.search("9223372036854775808")
    assert issue["status"]["enum"][1:] == [
        "ACTIVE",
        "IGNORED",
        "FIXED",
        "DUPLICATE",
        "IN_PROGRESS_BUG",
        "ARCHIVED_BUG",
        "BLOCKED",
    ]
    assert issue["createTime"]["format"] == "date-time"
    result = defs["projectops.v1.ScenarioResult"]["properties"]
    assert result["runDuration"]["pattern"].endswith("s$(?!\\n)")
    release = defs["projectops.v1.Release"]["properties"]
    assert release["focusAreas"] == {
        "type": "array",
        "items": {"type": "string"},
        "description": release["focusAreas"]["description"],
    }
    assert "additionalProperties" not in defs["projectops.v1.Release"]  # output: open


# The fields a response always holds ("Always set": REQUIRED).
SUMMARY = {"release": {"version": "1.0"}, "openIssues": {}}


@pytest.mark.parametrize(
    ("payload", "valid"),
    [
        (
            {"summary": SUMMARY, "detailedResults": {"issues": [{"issueId": "12", "title": "t"}]}},
            True,
        ),
        ({"summary": SUMMARY, "detailedResults": {"issues": [{"issueId": 12}]}}, False),
        ({"summary": SUMMARY, "detailedResults": {"issues": [{"status": "RESOLVED"}]}}, False),
        ({"summary": {**SUMMARY, "release": {"createTime": "yesterday"}}}, False),
        ({"summary": SUMMARY}, False),  # detailedResults: always set
        ({"summary": {"release": {}}, "detailedResults": {}}, False),  # openIssues too
    ],
)
def test_output_schema_rejects_what_the_codec_never_writes(payload: Any, valid: bool) -> None:
    if valid:  # as the codec writes it: every field without presence too
        message = projectops.from_json(payload, GetReleaseDetailsResponse, strict=True)
        payload = projectops.to_dict(message)
    errors = list(validator(json_schema.output_schema("get_release_details")).iter_errors(payload))
    assert (errors == []) is valid


def test_input_schema_accepts_64_bit_numbers_and_rejects_unknown_properties() -> None:
    schema = json_schema.message_schema(GetReleaseDetailsResponse, "input")
    v = validator(schema)

    # An issue that keeps every rule (those whose default breaks a rule are required of input).
    kept = projectops.to_dict(generate(Issue, "issue", minimal=True))

    def answer(issue: dict[str, Any]) -> dict[str, Any]:
        return {"summary": SUMMARY, "detailedResults": {"issues": [{**kept, **issue}]}}

    assert v.is_valid(answer({"issueId": 9007199254740993}))
    assert v.is_valid(answer({"issueId": "9007199254740993"}))
    assert not v.is_valid(answer({"issueId": "12a"}))
    assert not v.is_valid({"summary": {**SUMMARY, "unknown": 1}, "detailedResults": {}})


def test_well_known_struct_types_use_their_json_form() -> None:
    schema = json_schema.message_schema(struct_pb2.ListValue)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["properties"]["values"]["items"] == {}  # any JSON value


def test_recursive_messages_go_through_defs() -> None:
    T = descriptor_pb2.FieldDescriptorProto
    f = descriptor_pb2.FileDescriptorProto(name="schema_test.proto", package="st", syntax="proto3")
    node = f.message_type.add(name="Node")
    node.field.add(name="name", number=1, type=T.TYPE_STRING, label=1)
    node.field.add(name="children", number=2, type=T.TYPE_MESSAGE, type_name=".st.Node", label=3)
    node.field.add(name="edge", number=3, type=T.TYPE_MESSAGE, type_name=".st.Edge", label=1)
    edge = f.message_type.add(name="Edge")
    edge.field.add(name="target", number=1, type=T.TYPE_MESSAGE, type_name=".st.Edge", label=1)
    edge.field.add(name="weight", number=2, type=T.TYPE_UINT64, label=1)
    descriptor_pool.Default().Add(f)
    schema = json_schema.message_schema(
        descriptor_pool.Default().FindMessageTypeByName("st.Node"), "input"
    )
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["properties"]["children"]["anyOf"][0]["items"] == {"$ref": "#"}
    edge_or_null = {"anyOf": [{"$ref": "#/$defs/st.Edge"}, {"type": "null"}]}  # null: unset
    assert schema["$defs"]["st.Edge"]["properties"]["target"] == edge_or_null
    v = validator(schema)
    assert v.is_valid({"name": None, "edge": {"target": None}})
    assert v.is_valid({"name": "a", "children": [{"edge": {"target": {"weight": "3"}}}]})
    assert not v.is_valid({"children": [{"edge": {"target": {"weight": "-3"}}}]})


# --- the protovalidate rules as keywords (docs/contract.md §4.6) ---------------------------------


def test_the_rules_are_keywords_of_the_output_schema() -> None:
    v = validator(json_schema.output_schema("get_release_details"))

    def written(payload: dict[str, Any]) -> dict[str, Any]:
        """`payload` as the codec writes it (every field without presence)."""
        return projectops.to_dict(projectops.from_json(payload, GetReleaseDetailsResponse))

    good = written({"summary": SUMMARY, "detailedResults": {}})
    assert v.is_valid(good)
    sha = "0123456789abcdef0123456789abcdef01234567"
    good["summary"]["release"]["gitSha"] = sha
    assert v.is_valid(good)
    for where, key, value in (
        ("release", "gitSha", "xyz"),  # pattern
        ("release", "version", ""),  # minLength
        ("openIssues", "total", "-1"),  # a count: the non-negative pattern
    ):
        broken = written({"summary": SUMMARY, "detailedResults": {}})
        broken["summary"][where][key] = value
        assert not v.is_valid(broken), (where, key, value)
    twice = written(
        {"summary": SUMMARY, "detailedResults": {"issues": [{"issueId": "1", "title": "a"}] * 2}}
    )
    assert v.is_valid(twice)  # a CEL rule: said in the description only
    issues = json_schema.output_schema("get_release_details")["$defs"][
        "projectops.v1.ReleaseDetailedResults"
    ]["properties"]["issues"]
    assert issues["description"].endswith("Rule: holds each issueId once.")


def test_the_request_rules_are_keywords_of_the_input_schema() -> None:
    schema = json_schema.input_schema("get_release_details")
    v = validator(schema)
    assert v.is_valid({"version": "1" * 128})
    assert not v.is_valid({"version": "1" * 129})
    assert schema["properties"]["version"]["maxLength"] == 128


def test_every_rule_of_the_schema_is_a_keyword_or_said_in_the_description() -> None:
    """The phrases of `projectops.rules` that no keyword states are in the description."""
    from projectops import rules
    from projectops._wire import value_form

    seen: set[str] = set()
    todo = [
        m.DESCRIPTOR for op in projectops.operations() for m in (op.request_type, op.response_type)
    ]
    while todo:
        message = todo.pop()
        if message.full_name in seen:
            continue
        seen.add(message.full_name)
        schema = json_schema.message_schema(message, "output")
        for phrase in rules.rule_phrases(message):
            assert phrase in schema["description"], (message.full_name, phrase)
        for fd in message.fields:
            prop = schema["properties"][fd.json_name]
            keywords = set(prop) - {"type", "description", "items", "$ref", "format"}
            for phrase in rules.rule_phrases(fd):
                said = phrase in prop.get("description", "")
                assert said or keywords, (fd.full_name, phrase)
            if (nested := value_form(fd).message) is not None:
                todo.append(nested)


def test_the_bounded_number_pattern_takes_exactly_one_to_its_limit() -> None:
    # The integer patterns of the schemas (64-bit strings, map keys, Duration seconds) are built
    # by _wire._at_most: one- and two-digit limits once let through every two-digit number.
    from projectops._wire import _at_most

    for limit in [*range(1, 1200), 2**31 - 1, 2**63]:
        pattern = re.compile(f"(?:{_at_most(limit)})")
        near = {*range(min(limit, 1300) + 1), limit - 1, limit, limit + 1, 10 * limit}
        taken = sorted(n for n in near if pattern.fullmatch(str(n)))
        assert taken == sorted(n for n in near if 1 <= n <= limit), limit


def _request_fields(keep: Callable[[Any], bool]) -> list[tuple[projectops.Operation, Any]]:
    """The top-level request fields that `keep` holds for, of our operations and the test
    schema's: ``(operation, field)`` pairs."""
    from tests.kinds.v1 import kinds_client

    ops = (*projectops.operations(), *kinds_client.REGISTRY.operations())
    return [(op, fd) for op in ops for fd in op.request_type.DESCRIPTOR.fields if keep(fd)]


def _zero_breaking_request_fields() -> list[tuple[projectops.Operation, Any]]:
    found = _request_fields(lambda fd: zero_breaks_rule(fd) and not is_required(fd))
    assert found, "no request field of ours or of the test schema has a rule its default breaks"
    return found


@pytest.mark.parametrize(
    ("op", "fd"), _zero_breaking_request_fields(), ids=lambda x: getattr(x, "name", "")
)
def test_a_request_field_whose_default_breaks_a_rule_is_required_of_input(
    op: projectops.Operation, fd: Any
) -> None:
    # protovalidate judges the default of a field without presence (`not_in: [0]` refuses an
    # absent sint32): the input schema requires the field, and takes no null for it.
    schema = json_schema.input_schema(op)
    assert fd.json_name in schema["required"]
    assert "anyOf" not in schema["properties"][fd.json_name]
    kept = projectops.to_dict(generate(op.request_type, "kept", minimal=True))
    assert validator(schema).is_valid(kept)
    del kept[fd.json_name]
    assert not validator(schema).is_valid(kept)
    assert rule_violations(projectops.from_json(kept, op.request_type))


def _required_scalars() -> list[tuple[projectops.Operation, Any]]:
    found = _request_fields(
        lambda fd: is_required(fd) and not fd.is_repeated and fd.message_type is None
    )
    kinds = {fd.type for _, fd in found}
    F = descriptor_pb2.FieldDescriptorProto
    assert {F.TYPE_BOOL, F.TYPE_ENUM, F.TYPE_INT32, F.TYPE_STRING} <= kinds, kinds
    return found


@pytest.mark.parametrize(("op", "fd"), _required_scalars(), ids=lambda x: getattr(x, "name", ""))
def test_a_required_scalar_holding_its_default_is_refused_by_the_input_schema(
    op: projectops.Operation, fd: Any
) -> None:
    # protovalidate's `required` calls a scalar without presence missing when it holds its
    # default (false, the enum's zero, 0, ""): so does the schema, as validate does.
    schema = json_schema.input_schema(op)
    kept = projectops.to_dict(generate(op.request_type, "kept", minimal=True))
    assert validator(schema).is_valid(kept)
    default = projectops.to_dict(op.request_type())  # the codec writes every default
    kept[fd.json_name] = default[fd.json_name]
    assert not validator(schema).is_valid(kept)
    assert rule_violations(projectops.from_json(kept, op.request_type))


def test_a_lenient_input_schema_takes_what_lenient_decoding_takes_of_an_enum() -> None:
    # The default server ignores an enum name it does not know and reads a number as one
    # (docs/contract.md §3.3): Schemathesis found a map of enum values where the default
    # OpenAPI document refused an unknown name that the server took.
    from tests.kinds.v1 import kinds_pb2

    fd = kinds_pb2.Scalars.DESCRIPTOR.fields_by_name["f_enum"]
    lenient = json_schema.message_schema(kinds_pb2.Scalars, "input", allow_unknown=True)
    strict = json_schema.message_schema(kinds_pb2.Scalars, "input")
    # What json_format reads leniently: an unknown name or number is ignored, a float or a
    # bool read as a number (Schemathesis sent 2.59e-42 for a planted map of enum values).
    for value in ["NOT_A_COLOR", 1, 2.5e-42, True, fd.enum_type.values[1].name]:
        projectops.from_json({fd.json_name: value}, kinds_pb2.Scalars)  # lenient decoding
        assert validator(lenient["properties"][fd.json_name]).is_valid(value)
    assert validator(strict["properties"][fd.json_name]).is_valid(fd.enum_type.values[1].name)
    for value in ["NOT_A_COLOR", 1, 2.5e-42, True]:
        with pytest.raises(projectops.InvalidArgument):
            projectops.from_json({fd.json_name: value}, kinds_pb2.Scalars, strict=True)
        assert not validator(strict["properties"][fd.json_name]).is_valid(value)


@pytest.mark.parametrize(
    ("name", "outside"),
    [("w_int32", 2**31), ("w_int32", -(2**31) - 1), ("w_uint32", 2**32), ("w_uint32", -1)],
)
def test_a_wrapper_has_its_values_form_and_bounds(name: str, outside: int) -> None:
    # Int32Value and the others write their value as the scalar does (the JSON mapping): the
    # schema is the scalar's, bounds included (Schemathesis sent a wrapped int32 past 2**31,
    # which the schema took and the server refused).
    from projectops._wire import value_form
    from tests.kinds.v1 import kinds_pb2

    fd = kinds_pb2.Item.DESCRIPTOR.fields_by_name[name]
    assert value_form(fd) == value_form(fd.message_type.fields_by_name["value"])
    schema = json_schema.message_schema(kinds_pb2.Item, "input")["properties"][fd.json_name]
    assert validator(schema).is_valid(outside - 1 if outside > 0 else outside + 1)
    assert not validator(schema).is_valid(outside)
    with pytest.raises(projectops.InvalidArgument):
        projectops.from_json({fd.json_name: outside}, kinds_pb2.Item)


def test_a_bytes_schema_takes_only_base64_the_codec_reads() -> None:
    # contentEncoding is an annotation: Schemathesis sent "E\x17" for a planted bytes map
    # value, which the schema took and the server refused (invalid_argument).
    from tests.kinds.v1 import kinds_pb2

    fd = kinds_pb2.Scalars.DESCRIPTOR.fields_by_name["f_bytes"]
    schema = json_schema.message_schema(kinds_pb2.Scalars, "input")["properties"][fd.json_name]
    for data in [b"", b"\x00", b"\x00\x01", b"\xfb\xff\xbf", bytes(range(256))]:
        written = projectops.to_dict(kinds_pb2.Scalars(f_bytes=data))[fd.json_name]
        assert validator(schema).is_valid(written)
        assert projectops.from_json({fd.json_name: written}, kinds_pb2.Scalars).f_bytes == data
    for text in ["E\x17", "A", "AAAAA", "AA\n"]:
        assert not validator(schema).is_valid(text)


def test_the_rules_said_in_words_under_a_message_are_its_own_and_its_fields() -> None:
    from tests.kinds.v1 import kinds_pb2

    item = kinds_pb2.Item.DESCRIPTOR
    below = json_schema.rules_in_words(item)
    assert set(rule_items(item)) <= set(below)  # a message's rules: CEL, in words
    for fd in item.fields:
        assert set(json_schema.rules_in_words(fd)) <= set(below)
    assert below and len(below) == len(set(below))


def _kinds_messages() -> list[Any]:
    from tests.kinds.v1 import kinds_pb2

    return list(kinds_pb2.DESCRIPTOR.message_types_by_name.values())


def _probes(fd: Any) -> list[Any]:
    """JSON values of every kind, among them the edges of what decoding reads (docs/contract.md
    §3.6): numbers truncated to 0 or to an enum's number, beyond 32 bits or a float's range, a
    double rounded to a float's bound, the words of floats, digit strings, names."""
    names = [v.name for v in fd.enum_type.values] if fd.enum_type else []
    numbers = [0, 0.5, 1, 1.5, -1, 2, 7, 2**31, 1e30, -1.5e308, 999999.97, 3.5e38]
    return [
        None,
        True,
        False,
        *numbers,
        "",
        "0",
        "1",
        "x",
        "NaN",
        "Infinity",
        "-Infinity",
        "AAAA",
        "2024-05-01T08:00:00Z",
        "60s",
        *names,
        [],
        [1],
        ["x"],
        {},
        {"a": 1},
    ]


def _without_required(schema: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in schema.items() if key != "required"}


@pytest.mark.parametrize("strict", [False, True], ids=["lenient", "strict"])
@pytest.mark.parametrize("message", _kinds_messages(), ids=lambda m: m.name)
def test_what_an_input_schema_takes_of_a_field_decodes_and_breaks_only_rules_in_words(
    message: Any, strict: bool
) -> None:
    # On the test schema: a value the schema of a field takes (under any name the schema
    # lists) decodes as the server of that document decodes it, and what it breaks of the
    # field's own rules is only what the schema says in words. Schemathesis found each kind of
    # gap on planted rpcs: a REQUIRED enum's unknown name (read as its zero), a float beyond
    # 32 bits, "NaN" for a bounded double, a float rounded onto its bound.
    message_type = message_factory.GetMessageClass(message)
    lenient = not strict
    schema = json_schema.message_schema(
        message, "input", allow_unknown=lenient, required_values=True
    )
    check = validator(_without_required(schema))
    by_name = {n: fd for fd in message.fields for n in (fd.json_name, fd.name)}
    for name in schema["properties"]:
        fd = by_name[name]
        said = rules_in_words(fd)
        for value in _probes(fd):
            if not check.is_valid({name: value}):
                continue
            decoded = projectops.from_json({name: value}, message_type, strict=strict)
            own = [v for v in rule_violations(decoded) if v.field == fd.json_name]
            broken = [v.rule for v in own if v.rule not in said]
            assert not broken, (name, value, own)


@pytest.mark.parametrize("message", _kinds_messages(), ids=lambda m: m.name)
def test_a_oneof_set_twice_is_refused_by_the_schema_and_by_any_names_by_the_decoder(
    message: Any,
) -> None:
    message_type = message_factory.GetMessageClass(message)
    schema = json_schema.message_schema(message, "input", allow_unknown=True, required_values=True)
    check = validator(_without_required(schema))
    for oneof in message.oneofs:
        named = [(fd, n) for fd in oneof.fields for n in dict.fromkeys((fd.json_name, fd.name))]
        given = {}
        for fd, name in named:  # a value each member takes: a probe, or a whole message
            made = []
            if fd.message_type is not None:
                member = message_factory.GetMessageClass(fd.message_type)
                made = [projectops.to_dict(generate(member, "member"))]
            taken = [v for v in [*_probes(fd), *made] if check.is_valid({fd.json_name: v})]
            given[name] = next(v for v in taken if v is not None)
        for (a, a_name), (b, b_name) in itertools.combinations(named, 2):
            both = {a_name: given[a_name], b_name: given[b_name]}
            if {a_name, b_name} == {a.json_name, b.json_name}:  # the names the schema lists
                assert not check.is_valid(both), both
            with pytest.raises(projectops.InvalidArgument) as refused:
                projectops.from_json(both, message_type)
            # The violation names the second member set, and the first.
            (violation,) = refused.value.violations
            assert violation.field == b.json_name and a_name in violation.description
            one = {a_name: given[a_name], b_name: None}  # null sets none
            assert check.is_valid(one), one
            projectops.from_json(one, message_type)


def test_a_rule_a_keyword_states_is_not_said_in_words_and_a_float_bound_is() -> None:
    from tests.kinds.v1 import kinds_pb2

    fields = kinds_pb2.Scalars.DESCRIPTOR.fields_by_name
    schema = json_schema.message_schema(kinds_pb2.Scalars, "input")["properties"]
    assert json_schema.rules_in_words(fields["f_int32"]) == []  # minimum, maximum
    assert {"minimum": 1} in schema["fInt32"]["allOf"]  # beside the type's own minimum
    assert "Rule:" not in schema["fInt32"].get("description", "")
    assert json_schema.rules_in_words(fields["f_double"]) == []
    # A float's bound holds of the value rounded to 32 bits (999999.97 is 1e6): in words.
    assert json_schema.rules_in_words(fields["f_float"]) == ["float.lt"]
    assert "Rule: float.lt" in schema["fFloat"]["description"]
