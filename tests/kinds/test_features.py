"""Every feature over the tests' schema of every kind (tests/kinds/v1/kinds.proto, issue 40 item
2), in process: each is handed the test service's registry instead of ours. The codec both ways,
strict and lenient, against json_format; REQUIRED and the rules; the mock's generated responses
and its serving; the typed client and the handler base; the CLI's flags, ``--help`` and
``describe``; JSON Schema, OpenAPI and the MCP tools' schemas, each validating the codec's
output; the conformance runner and the proxy's judging."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any, cast

import httpx2
import jsonschema
import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

import projectops
from projectops import codec, json_schema, openapi, reference
from projectops._generate import generate
from projectops._wire import is_map, map_key_names
from projectops.cli import main
from projectops.codec import InvalidArgument
from projectops.fixtures import decode_fixtures
from projectops.mcp import operation_tools
from projectops.mock import MockProject, create_mock_app
from projectops.registry import Operation
from projectops.server import RequestContext, create_app
from projectops.validation import is_required, rule_violations, violations
from tests.core.test_codec_differential import check_decode, check_encode, reference_to_dict
from tests.kinds.v1 import kinds_client, kinds_handler, kinds_pb2

REGISTRY = kinds_client.REGISTRY
OPS = REGISTRY.operations()
KEY = "kinds-key"
SEEDS = [f"seed-{i}" for i in range(12)]


def message_types() -> Iterator[type[Message]]:
    """Every message type of the service's rpcs and of the schema's file."""
    seen: dict[str, type[Message]] = {}
    for op in OPS:
        seen.setdefault(op.request_type.DESCRIPTOR.full_name, op.request_type)
        seen.setdefault(op.response_type.DESCRIPTOR.full_name, op.response_type)
    for name in kinds_pb2.DESCRIPTOR.message_types_by_name:
        cls = getattr(kinds_pb2, name)
        seen.setdefault(cls.DESCRIPTOR.full_name, cls)
    yield from seen.values()


TYPES = list(message_types())


def samples(cls: type[Message]) -> Iterator[Message]:
    for seed in SEEDS:
        yield generate(cls, seed)
        yield generate(cls, seed, minimal=True)


# --- the codec ----------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", TYPES, ids=lambda c: c.__name__)
def test_the_codec_writes_and_reads_every_kind_as_json_format_does(cls: type[Message]) -> None:
    for message in samples(cls):
        text = codec.to_json(message)
        assert json.loads(text) == reference_to_dict(message)
        assert check_encode(message) is not None  # the fast path, the same JSON text
        data = json.loads(text)
        for strict in (True, False):
            assert codec.from_json(text, cls, strict=strict) == message
            # Warm: the fast path from the second body of a type on.
            assert codec.from_json(text.encode(), cls, strict=strict) == message
            check_decode(data, cls, strict)


def test_lenient_decoding_ignores_unknown_fields_strict_names_them() -> None:
    data = json.loads(codec.to_json(generate(kinds_pb2.Maps, "x")))
    data["byBool"]["true"] = "kept"
    data["unknownField"] = 1
    lenient = codec.from_json(json.dumps(data), kinds_pb2.Maps, strict=False)
    assert lenient.by_bool[True] == "kept"
    with pytest.raises(InvalidArgument, match="unknownField"):
        codec.from_json(json.dumps(data), kinds_pb2.Maps, strict=True)


# --- REQUIRED and the rules ---------------------------------------------------------------------


def required_fields(descriptor: Descriptor) -> list[FieldDescriptor]:
    return [fd for fd in descriptor.fields if is_required(fd)]


@pytest.mark.parametrize("cls", TYPES, ids=lambda c: c.__name__)
def test_generated_messages_keep_required_and_every_rule(cls: type[Message]) -> None:
    for message in samples(cls):
        assert list(violations(message)) == []
        assert rule_violations(message) == []


REQUIRED = [(cls, fd) for cls in TYPES for fd in required_fields(cast(Descriptor, cls.DESCRIPTOR))]


@pytest.mark.parametrize(
    ("cls", "fd"), REQUIRED, ids=[f"{c.__name__}.{fd.name}" for c, fd in REQUIRED]
)
def test_a_required_field_of_each_kind_left_out_is_named(
    cls: type[Message], fd: FieldDescriptor
) -> None:
    message = generate(cls, "required", minimal=True)
    message.ClearField(fd.name)  # type: ignore[arg-type]
    assert [v.field for v in violations(message)] == [fd.json_name]
    assert fd.json_name in {v.field for v in rule_violations(message)}


def test_a_blank_required_string_is_missing() -> None:
    message = generate(kinds_pb2.GetMapsRequest, "blank", minimal=True)
    message.key = " \t"
    assert [v.field for v in violations(message)] == ["key"]


def test_a_rule_of_each_family_is_enforced() -> None:
    scalars = generate(kinds_pb2.Scalars, "rules")
    scalars.f_int32 = 101
    scalars.f_double = -1
    scalars.f_sint32 = 0
    scalars.f_bytes = b"x" * 17
    scalars.opt_string = "123456789"
    rules = {v.rule for v in rule_violations(scalars)}
    assert {
        "int32.gte_lte",
        "double.gte",
        "sint32.not_in",
        "bytes.max_len",
        "string.max_len",
    } <= rules
    nested = generate(kinds_pb2.Nested, "rules")
    nested.numbers[:] = [1, 1]
    assert "repeated.unique" in {v.rule for v in rule_violations(nested)}
    maps = generate(kinds_pb2.Maps, "rules")
    maps.by_string.update({f"k{i}": i for i in range(11)})
    assert "map.max_pairs" in {v.rule for v in rule_violations(maps)}
    item = generate(kinds_pb2.Item, "rules")
    item.window.seconds = -5
    assert "item.window_positive" in {v.rule for v in rule_violations(item)}


# --- JSON Schema, OpenAPI, MCP ------------------------------------------------------------------


def validator(schema: dict[str, Any]) -> jsonschema.Draft202012Validator:
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def valid(schema: dict[str, Any], data: Any) -> None:
    validator(schema).validate(data)


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_the_json_schemas_and_mcp_tools_take_what_the_codec_writes(op: Operation) -> None:
    tool = {tool.name: tool for tool in operation_tools(REGISTRY)}[op.tool_name]
    assert tool.output_schema is not None
    # Built once each: the formats' patterns cost more to compile than to run.
    inputs = [validator(json_schema.input_schema(op)), validator(tool.input_schema)]
    outputs = [validator(json_schema.output_schema(op)), validator(tool.output_schema)]
    for seed in SEEDS[:6]:
        request = codec.to_dict(generate(op.request_type, seed, minimal=True))
        response = codec.to_dict(generate(op.response_type, seed))
        for check in inputs:
            check.validate(request)
        for check in outputs:
            check.validate(response)


def test_a_map_key_the_codec_refuses_is_refused_by_the_schema_too() -> None:
    """An integer or bool key is a JSON name of that form: a schema allowing any name lets a
    generator (Schemathesis) send one that every server answers 400."""
    schema = json_schema.message_schema(kinds_pb2.Maps, "input")
    written = codec.to_dict(generate(kinds_pb2.Maps, "keys"))
    keyed = [fd for fd in kinds_pb2.Maps.DESCRIPTOR.fields if is_map(fd) and map_key_names(fd)]
    assert keyed  # the test schema has maps with integer and bool keys
    for fd in keyed:
        field_schema = schema["properties"][fd.json_name]["anyOf"][0]
        names = validator(field_schema["propertyNames"])
        value = next(iter(written[fd.json_name].values()))
        for key in ("x", "1.5", " 1", "True", ""):
            assert not names.is_valid(key), (fd.name, key)
            with pytest.raises(projectops.InvalidArgument):
                codec.from_json({fd.json_name: {key: value}}, kinds_pb2.Maps, strict=True)
        for key in written[fd.json_name]:  # what the codec writes, the schema takes
            assert names.is_valid(key), (fd.name, key)


def test_the_openapi_document_describes_the_service_and_takes_what_the_codec_writes() -> None:
    doc = openapi.document(registry=REGISTRY)
    assert set(doc["paths"]) == {op.path for op in OPS}
    components = {"components": doc["components"]}
    for op in OPS:
        post = doc["paths"][op.path]["post"]
        request = post["requestBody"]["content"]["application/json"]["schema"]
        response = post["responses"]["200"]["content"]["application/json"]["schema"]
        for seed in SEEDS[:4]:
            valid({**request, **components}, codec.to_dict(generate(op.request_type, seed)))
            valid({**response, **components}, codec.to_dict(generate(op.response_type, seed)))
        # No body reads as {} (docs/contract.md §1.2): the body is required when {} is refused.
        empty = rule_violations(op.request_type())
        if post["requestBody"]["required"]:
            assert empty, op.name
        else:
            valid({**request, **components}, {})


# --- the server, the handler base, the typed client, the mock -----------------------------------


class Flats(kinds_handler.KindsServiceHandler):
    """Serves get_flat only: the other rpcs answer 501 from the base."""

    def get_flat(
        self, request: kinds_pb2.GetFlatRequest, context: RequestContext[Any], /
    ) -> kinds_pb2.Flat:
        return kinds_pb2.Flat(name="served", count=3, color=kinds_pb2.GREEN)


async def _authenticate(key: str) -> str | None:
    return "project" if key == KEY else None


def test_the_typed_client_calls_a_server_built_on_the_handler_base() -> None:
    import projectops

    app = create_app(Flats(), authenticate=_authenticate, operations=OPS)  # type: ignore[arg-type]

    async def scenario() -> None:
        async with kinds_client.AsyncKindsServiceClient(
            "http://kinds.test", api_key=KEY, transport=httpx2.ASGITransport(app=app)
        ) as client:
            flat = await client.get_flat()
            assert flat == kinds_pb2.Flat(name="served", count=3, color=kinds_pb2.GREEN)
            with pytest.raises(projectops.Unimplemented):
                await client.get_maps(key="k")
            with pytest.raises(projectops.client.InvalidRequest):  # REQUIRED key, nothing sent
                await client.get_maps()

    asyncio.run(scenario())


def test_the_mock_answers_every_rpc_with_generated_answers_that_keep_every_rule() -> None:
    calls: list[Any] = []
    project = MockProject("kinds", {}, calls=calls)
    app = create_mock_app({KEY: project}, docs=False, registry=REGISTRY)

    async def scenario() -> None:
        async with kinds_client.AsyncKindsServiceClient(
            "http://kinds.test", api_key=KEY, transport=httpx2.ASGITransport(app=app)
        ) as client:
            for op in OPS:
                request = generate(op.request_type, "mock")
                response = await client.call(op, request, response_type=op.response_type)
                assert list(violations(response)) == []
                assert rule_violations(response) == []
                again = await client.call(op, request, response_type=op.response_type)
                assert again == response  # the same request, the same response

    asyncio.run(scenario())
    assert [call.operation for call in calls] == [op.name for op in OPS for _ in (1, 2)]


# --- the CLI -----------------------------------------------------------------------------------


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(argv, registry=REGISTRY)
    out, err = capsys.readouterr()
    return code, out, err


def test_the_cli_lists_and_describes_the_services_operations(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(["operations", "--json"], capsys)
    assert code == 0
    assert [row["toolName"] for row in json.loads(out)] == [op.tool_name for op in OPS]
    code, out, _ = run(["describe"], capsys)
    assert code == 0 and all(op.tool_name in out for op in OPS)
    for op in OPS:
        code, out, _ = run(["describe", op.tool_name], capsys)
        assert code == 0 and out == reference.describe(op, registry=REGISTRY)
        code, out, _ = run(["schema", op.tool_name], capsys)
        assert code == 0 and json.loads(out) == json_schema.input_schema(op)


def test_every_flag_kind_reaches_the_request_as_the_json_mapping_has_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 32-bit integer flag was sent as the string "2", which strict decoding refuses: issue 40
    (``--page-size 2``: "expected a 32-bit integer, got the string "2"")."""
    monkeypatch.setenv("SERVICE_API_KEY", KEY)
    monkeypatch.setenv("SERVICE_BACKEND_URL", "http://kinds.test")
    flags = [
        *("--f-double", "1.5", "--f-float", "NaN", "--f-int32", "7", "--f-int64", "-9"),
        *("--f-uint32", "8", "--f-uint64", "18446744073709551615", "--f-sint32", "-3"),
        *("--f-sint64", "4", "--f-fixed32", "5", "--f-fixed64", "6", "--f-sfixed32", "-1"),
        *("--f-sfixed64", "-2", "--f-bool", "--f-string", "s", "--f-bytes", "AAE="),
        *("--f-enum", "RED", "--opt-string", "o", "--opt-int32", "0"),
    ]
    code, out, err = run(["echo-scalars", *flags, "--dry-run"], capsys)
    assert code == 0, err
    body = json.loads(out.split("\n\n", 1)[1])
    assert body["fInt32"] == 7 and body["fUint32"] == 8 and body["optInt32"] == 0
    assert body["fDouble"] == 1.5 and body["fFloat"] == "NaN"
    assert body["fInt64"] == "-9" and body["fBytes"] == "AAE="
    message = codec.from_json(json.dumps(body), kinds_pb2.Scalars, strict=True)
    assert message.f_uint64 == 2**64 - 1 and message.HasField("opt_int32")
    code, out, err = run(["list-items", "--page-size", "2", "--dry-run"], capsys)
    # `after` is REQUIRED and a message: --json-input gives it; the flag alone is refused.
    assert code == 2 and "after" in err
    after = '{"after": "2024-01-01T00:00:00Z"}'
    code, out, err = run(
        ["list-items", "--page-size", "2", "--json-input", after, "--dry-run"], capsys
    )
    assert code == 0, err
    assert json.loads(out.split("\n\n", 1)[1])["pageSize"] == 2


@pytest.mark.parametrize("value", ["2.5", "two", "0x10", "\uff11"])
def test_an_integer_flag_that_is_no_integer_is_a_usage_error(
    value: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SERVICE_API_KEY", KEY)
    monkeypatch.setenv("SERVICE_BACKEND_URL", "http://kinds.test")
    code, _, err = run(["list-items", "--page-size", value, "--dry-run"], capsys)
    assert code == 2 and "--page-size" in err and "expected an integer" in err


def test_the_mocks_fixtures_of_the_test_service_match_exactly_and_partly() -> None:
    nested = codec.to_dict(generate(kinds_pb2.Nested, "fixture"))
    items = codec.to_dict(generate(kinds_pb2.ListItemsResponse, "fixture"))
    maps = {"byBool": {"true": "yes", "false": "no"}, "byInt64": {"-5": {"name": "n"}}}
    document = {
        "projects": [
            {
                "project": "kinds",
                "apiKey": KEY,
                "operations": {
                    "get_maps": [
                        {"request": {"key": "a"}, "response": {**maps, "nodes": {"n": {}}}}
                    ],
                    "list_items": [{"request": {"tag": "t"}, "response": items, "partial": True}],
                    "echo_scalars": [
                        {
                            "request": {"fBool": True, "fInt32": 5},
                            "response": nested,
                            "partial": True,
                        }
                    ],
                },
            }
        ]
    }
    (project,) = decode_fixtures(document, registry=REGISTRY)
    app = create_mock_app(
        {KEY: MockProject("kinds", project.answers)}, docs=False, registry=REGISTRY
    )
    after = {"after": "2024-01-01T00:00:00Z"}
    list_items = REGISTRY.operation("list_items")  # a name alone is looked up in ours

    async def scenario() -> None:
        async with kinds_client.AsyncKindsServiceClient(
            "http://kinds.test", api_key=KEY, transport=httpx2.ASGITransport(app=app)
        ) as client:
            got = await client.get_maps(key=" a ")  # trimmed, as matching reads strings
            assert dict(got.by_bool) == {True: "yes", False: "no"} and got.by_int64[-5].name == "n"
            listed = await client.call(
                list_items, {**after, "tag": "t", "pageSize": 3}, response_type=None
            )
            assert codec.to_dict(listed) == items
            with pytest.raises(projectops.FailedPrecondition):  # listed, and no response matches
                await client.call(list_items, {**after, "tag": "u", "pageSize": 3})
            scalars = codec.to_dict(generate(kinds_pb2.Scalars, "partial", minimal=True))
            echoed = await client.echo_scalars(
                codec.from_json(
                    json.dumps({**scalars, "fBool": True, "fInt32": 5}), kinds_pb2.Scalars
                )
            )
            assert codec.to_dict(echoed) == nested

    asyncio.run(scenario())


def test_the_mcp_tools_of_the_test_service_call_it() -> None:
    from projectops.client import AsyncClient
    from projectops.mcp import call_operation_tool

    app = create_mock_app({KEY: MockProject("kinds", {})}, docs=False, registry=REGISTRY)
    tools = {tool.name: tool for tool in operation_tools(REGISTRY)}
    assert list(tools) == [op.tool_name for op in OPS]

    async def scenario() -> None:
        async with AsyncClient(
            "http://kinds.test", api_key=KEY, transport=httpx2.ASGITransport(app=app)
        ) as client:
            for op in OPS:
                arguments = codec.to_dict(generate(op.request_type, "mcp", minimal=True))
                result = await call_operation_tool(
                    client, op.tool_name, arguments, registry=REGISTRY
                )
                assert not result.is_error, result
                valid(tools[op.tool_name].output_schema or {}, result.structured_content)
            failed = await call_operation_tool(client, "get-maps", {}, registry=REGISTRY)
            assert failed.is_error  # REQUIRED key missing: a sentence, nothing sent

    asyncio.run(scenario())


def test_help_shows_each_flag_with_its_rule(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["echo-scalars", "--help"], capsys)
    assert code == 0
    for flag in ("--f-int32", "--f-double", "--f-bytes", "--f-enum", "--opt-string"):
        assert flag in out
    assert "{RED,GREEN}" in out
