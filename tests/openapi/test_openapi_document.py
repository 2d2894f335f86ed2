"""The OpenAPI document: valid OpenAPI 3.1, derived from the registry, golden payloads validate."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path, PurePosixPath
from typing import Any

import jsonschema
import pytest
import referencing
from google.protobuf import descriptor_pb2

import projectops
from projectops import error_cases, json_schema, openapi
from projectops.codec import to_dict
from projectops.errors import Code
from projectops.fixtures import default_fixtures
from projectops.registry import REGISTRY, SERVICE, Operation
from projectops.rules import zero_breaks_rule
from projectops.v1.error_pb2 import ErrorResponse
from projectops.validation import BLANK, NOT_BLANK_PATTERN, is_required, rule_violations
from tests.synthetic import rpc_with, rules_in_words

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
CONTRACT = (Path(__file__).resolve().parents[2] / "docs" / "contract.md").read_text()
OPS = projectops.operations()
DOC = openapi.document()
# A handler may raise the error of any code: every code's status is a response of each operation
# (the 405 of a method but POST is no response of an operation's call).
# And the 408 of a request body that arrives too slowly (error_cases.BODY_TIMED_OUT).
ERROR_STATUSES = sorted(
    {str(status) for status in projectops.HTTP_STATUS_BY_CODE.values()}
    | {str(error_cases.BODY_TIMED_OUT.http_status)}
)


def component_validator(doc: dict[str, Any], ref: str) -> jsonschema.Draft202012Validator:
    """A validator of the component `ref`, resolving references inside the document."""
    resource = referencing.Resource.from_contents(doc, referencing.jsonschema.DRAFT202012)
    registry: referencing.Registry[Any] = referencing.Registry().with_resource("urn:doc", resource)
    return jsonschema.Draft202012Validator(
        {"$ref": f"urn:doc{ref}"},
        registry=registry,
        format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER,
    )


def test_document_is_valid_openapi_3_1() -> None:
    # Imported in the tests, not at the top: it costs ~0.3 s at collection in every worker.
    import openapi_spec_validator

    openapi_spec_validator.validate(DOC, cls=openapi_spec_validator.OpenAPIV31SpecValidator)
    assert DOC["openapi"].startswith("3.1.")
    json.dumps(DOC)  # serialisable as it is


def test_info_and_servers() -> None:
    assert DOC["info"]["version"] == projectops.__version__
    assert projectops.description(SERVICE) != ""
    assert DOC["info"]["description"].startswith(projectops.description(SERVICE) + "\n\n## ")
    assert DOC["servers"] == [{"url": projectops.DEFAULT_BASE_URL}]
    other = openapi.document("https://ops.example.com/base//")
    assert other["servers"] == [{"url": "https://ops.example.com/base"}]
    assert DOC["servers"] == [{"url": projectops.DEFAULT_BASE_URL}]  # a fresh dict each call
    with pytest.raises(ValueError, match="absolute"):
        openapi.document("ops.example.com")


def test_a_relative_server_names_no_host() -> None:
    # What the docs routes serve when no base URL is configured: the reader's own origin.
    import openapi_spec_validator

    relative = openapi.document(None)
    assert relative["servers"] == [{"url": "/"}]
    openapi_spec_validator.validate(relative)
    assert openapi.document("/ops/")["servers"] == [{"url": "/ops"}]
    assert openapi.document("/")["servers"] == [{"url": "/"}]
    # Each of these is another host to a browser (a network-path reference, "\" read as "/",
    # tabs and newlines dropped), or no path at all.
    for foreign in ("//evil.example", "/\\evil.example", "/\t/evil.example", "/\n/x", "/ x", "/?x"):
        with pytest.raises(projectops.InvalidBaseUrl, match="relative server"):
            openapi.document(foreign)


def test_every_operation_is_one_post_path() -> None:
    assert list(DOC["paths"]) == [op.path for op in OPS]
    scheme = DOC["components"]["securitySchemes"][openapi.SECURITY_SCHEME]
    assert scheme == {**scheme, "type": "apiKey", "in": "header", "name": "Service-Api-Key"}
    for op in OPS:
        item = DOC["paths"][op.path]
        assert list(item) == ["post"]
        post = item["post"]
        assert post["operationId"] == op.name
        assert post["summary"] == op.summary and post["description"] == op.description
        assert post["security"] == [{openapi.SECURITY_SCHEME: []}]
        assert post["x-idempotency-level"] == descriptor_pb2.MethodOptions.IdempotencyLevel.Name(
            op.method.GetOptions().idempotency_level
        )
        assert "deprecated" not in post
        assert sorted(post["responses"]) == sorted(["200", *ERROR_STATUSES])
        body = post["requestBody"]["content"]["application/json"]["schema"]
        assert body == {"$ref": f"#/components/schemas/{op.request_type.DESCRIPTOR.full_name}"}
        # An empty body reads as `{}`: wrong only for a request with a REQUIRED field, or one
        # whose default breaks a rule.
        fields = op.request_type.DESCRIPTOR.fields
        required = any(is_required(fd) or zero_breaks_rule(fd) for fd in fields)
        assert post["requestBody"]["required"] == required
    tags = [DOC["paths"][op.path]["post"]["tags"][0] for op in OPS]
    assert [t["name"] for t in DOC["tags"]] == list(dict.fromkeys(tags))
    proto_files = {PurePosixPath(name).stem for name in _package_files()}
    assert set(tags) <= proto_files


def test_error_responses_come_from_the_error_table() -> None:
    for op in OPS:
        responses = DOC["paths"][op.path]["post"]["responses"]
        for case in openapi.ERROR_CASES:
            if case in openapi.OUTSIDE_OPERATIONS:
                continue
            response = responses[str(case.http_status)]
            assert f"`{case.code}`: {case.situation}" in response["description"]
            assert response["content"]["application/json"]["schema"] == {
                "$ref": "#/components/schemas/projectops.v1.ErrorResponse"
            }
    inside = [case for case in openapi.ERROR_CASES if case not in openapi.OUTSIDE_OPERATIONS]
    assert {case.http_status for case in inside} == set(map(int, ERROR_STATUSES))


def test_no_operation_and_wrong_method_are_stated_once_outside_the_operations() -> None:
    """404 (no path item to hold it) and 405 (not a response of a POST) are not among any POST's
    responses, nor a GET tools would offer as a call; the document states them once."""
    for op in OPS:
        assert list(DOC["paths"][op.path]) == ["post"]
        responses = DOC["paths"][op.path]["post"]["responses"]
        assert "405" not in responses
        # A handler's not_found is a response of the call; an unknown path's is not.
        assert error_cases.NO_OPERATION.situation not in responses["404"]["description"]
        assert "`projectops.NotFound`" in responses["404"]["description"]
    outside = {entry["status"]: entry for entry in DOC["x-answers-outside-operations"]}
    assert sorted(outside) == [404, 405]
    assert outside[404]["code"] == "not_found" and outside[405]["code"] == "unimplemented"
    assert outside[405]["headers"] == {"Allow": "POST"}
    for status, entry in outside.items():
        assert entry["example"]["code"] == entry["code"]
        error_validator().validate(entry["example"])
        assert f"- {status} `{entry['code']}`: {entry['situation']}" in DOC["info"]["description"]
    assert "`Allow: POST`" in DOC["info"]["description"]


def error_validator() -> jsonschema.Draft202012Validator:
    return component_validator(DOC, "#/components/schemas/projectops.v1.ErrorResponse")


def test_error_response_requires_code_and_message_and_names_every_code() -> None:
    error = DOC["components"]["schemas"]["projectops.v1.ErrorResponse"]
    assert error["required"][:2] == ["code", "message"]
    assert error["properties"]["code"]["enum"] == [code.value for code in Code]
    validator = error_validator()
    assert not validator.is_valid({"code": "string", "message": "x"})
    assert not validator.is_valid({"code": "internal", "violations": []})
    assert validator.is_valid({"code": "internal", "message": "x", "violations": []})


def test_every_error_answer_has_example_bodies_of_its_codes() -> None:
    validator = error_validator()
    for op in OPS:
        for status, response in DOC["paths"][op.path]["post"]["responses"].items():
            if status == "200":
                continue
            examples = response["content"]["application/json"]["examples"]
            assert examples, (op.name, status)
            codes = {case.code for case in openapi.ERROR_CASES if str(case.http_status) == status}
            for example in examples.values():
                validator.validate(example["value"])
                assert example["value"]["code"] in codes
                assert example["value"]["message"].strip()
    for op in OPS:  # the codec's and validate's own errors
        missing = DOC["paths"][op.path]["post"]["responses"]["400"]
        values = [e["value"] for e in missing["content"]["application/json"]["examples"].values()]
        assert values[0]["message"] == "the body: expected a JSON object, got an array"
        for fd in op.request_type.DESCRIPTOR.fields:
            if is_required(fd):
                violation = {"field": fd.json_name, "description": "is required"}
                assert violation in values[1]["violations"]


def test_components_are_the_json_schema_builder_output() -> None:
    schemas = DOC["components"]["schemas"]
    from projectops.v1 import error_pb2, operations_pb2, release_pb2, rum_environment_pb2

    every = {
        m.full_name
        for module in (error_pb2, operations_pb2, release_pb2, rum_environment_pb2)
        for m in module.DESCRIPTOR.message_types_by_name.values()
    }
    assert every <= set(schemas)
    for op in OPS:
        defs = json_schema.message_schema(op.response_type).get("$defs", {})  # none when flat
        for name, schema in defs.items():  # same builder, refs aside
            assert json.dumps(schemas[name]).replace("#/components/schemas/", "#/$defs/") == (
                json.dumps(schema)
            )
        request = schemas[op.request_type.DESCRIPTOR.full_name]
        fields = [fd for fd in op.request_type.DESCRIPTOR.fields if is_required(fd)]
        # And a field whose default breaks a rule: protovalidate refuses it absent.
        wanted = [
            fd for fd in op.request_type.DESCRIPTOR.fields if fd in fields or zero_breaks_rule(fd)
        ]
        assert request.get("required", []) == [fd.json_name for fd in wanted]
        for fd in fields:  # blank counts as missing, as validate has it
            if fd.type == fd.TYPE_STRING:
                assert request["properties"][fd.json_name]["pattern"] == NOT_BLANK_PATTERN
    assert "additionalProperties" not in request  # the default server ignores unknown fields
    strict = openapi.document(strict=True)["components"]["schemas"]
    assert strict["projectops.v1.GetReleaseDetailsRequest"]["additionalProperties"] is False
    refs = {m for m in json.dumps(DOC).split('"') if m.startswith("#/components/schemas/")}
    assert {ref.rsplit("/", 1)[1] for ref in refs} <= set(schemas)  # no dangling $ref


def _package_files() -> list[str]:
    files, todo = [], [SERVICE.file]
    while todo:
        file = todo.pop()
        if file.package == SERVICE.file.package and file.name not in files:
            files.append(file.name)
            todo.extend(file.dependencies)
    return files


@pytest.mark.parametrize(
    "op",
    [projectops.operation(p.name.split(".")[0]) for p in sorted(GOLDEN.glob("*.request.json"))],
    ids=lambda op: op.name,
)
def test_golden_payloads_validate_against_the_document(op: Operation) -> None:
    post = DOC["paths"][op.path]["post"]
    request = json.loads((GOLDEN / f"{op.name}.request.json").read_text())
    response = json.loads((GOLDEN / f"{op.name}.response.json").read_text())
    content = "application/json"
    component_validator(DOC, post["requestBody"]["content"][content]["schema"]["$ref"]).validate(
        request
    )
    component_validator(
        DOC, post["responses"]["200"]["content"][content]["schema"]["$ref"]
    ).validate(response)
    error = json.loads((GOLDEN / "error.invalid_argument.json").read_text())
    component_validator(
        DOC, post["responses"]["400"]["content"][content]["schema"]["$ref"]
    ).validate(error)


def test_examples_are_the_default_fixtures_validated() -> None:
    schemas = DOC["components"]["schemas"]
    for op in OPS:
        post = DOC["paths"][op.path]["post"]
        fixtures = [
            (project, answer)
            for project in default_fixtures()
            for answer in project.answers.get(op.name, ())
        ]
        requests = post["requestBody"]["content"]["application/json"].get("examples", {})
        shown = [(e["summary"], e["value"]) for e in requests.values()]
        assert [value for _, value in shown] == [to_dict(a.request) for _, a in fixtures]
        assert all(
            project.name in summary
            for (summary, _), (project, _) in zip(shown, fixtures, strict=True)
        )
        for media, ref in (
            (post["requestBody"]["content"]["application/json"], "request_type"),
            (post["responses"]["200"]["content"]["application/json"], "response_type"),
        ):
            message = getattr(op, ref)
            examples = [example["value"] for example in media.get("examples", {}).values()]
            if not examples:
                continue
            assert schemas[message.DESCRIPTOR.full_name]["examples"] == examples
            validator = component_validator(DOC, media["schema"]["$ref"])
            for value in examples:
                validator.validate(value)
                # What the codec writes, exactly: a strict decode re-encodes to the same JSON.
                decoded = projectops.from_json(value, message, strict=True)
                assert projectops.to_dict(decoded) == value


def _synthetic_operation(level: str, deprecated: bool) -> Operation:
    """An operation of a private pool whose rpc has the given options, and a comment."""
    return dataclasses.replace(rpc_with(level, deprecated), description="Ping. Answers.")


@pytest.mark.parametrize(
    ("level", "deprecated"), [("NO_SIDE_EFFECTS", True), ("IDEMPOTENT", False)]
)
def test_idempotency_level_and_deprecation_come_from_the_rpc_options(
    level: str, deprecated: bool
) -> None:
    op = _synthetic_operation(level, deprecated)
    item = openapi._operation(op, openapi._Components(strict=False, registry=REGISTRY), {})
    assert item["x-idempotency-level"] == level
    assert item.get("deprecated", False) is deprecated


@pytest.mark.parametrize(
    ("level", "read_only", "idempotent"),
    [
        ("NO_SIDE_EFFECTS", True, True),
        ("IDEMPOTENT", False, True),
        ("IDEMPOTENCY_UNKNOWN", False, False),
    ],
)
def test_read_only_and_idempotent_hints_follow_the_level(
    level: str, read_only: bool, idempotent: bool
) -> None:
    item = openapi._operation(
        _synthetic_operation(level, False),
        openapi._Components(strict=False, registry=REGISTRY),
        {},
    )
    assert (item["x-read-only"], item["x-idempotent"]) == (read_only, idempotent)
    assert "deprecated" not in item


def test_every_operation_states_the_hints_of_its_rpc() -> None:
    for op in OPS:
        post = DOC["paths"][op.path]["post"]
        assert post["x-idempotency-level"] == op.idempotency
        assert (post["x-read-only"], post["x-idempotent"]) == (op.read_only, op.idempotent)


def test_answers_require_every_field_without_presence_and_requests_do_not() -> None:
    schemas = DOC["components"]["schemas"]
    for op in OPS:
        post = DOC["paths"][op.path]["post"]
        for ref, answer in (
            (post["responses"]["200"]["content"]["application/json"]["schema"]["$ref"], True),
            (post["requestBody"]["content"]["application/json"]["schema"]["$ref"], False),
        ):
            name = ref.rsplit("/", 1)[1]
            message = op.response_type if answer else op.request_type
            fields = message.DESCRIPTOR.fields
            wanted = [
                fd.json_name
                for fd in fields
                if is_required(fd)
                or (answer and not fd.has_presence)
                or (not answer and zero_breaks_rule(fd))
            ]
            assert schemas[name].get("required", []) == wanted, name
            # What the codec writes of the empty message is a response exactly when the empty
            # message keeps the rules the schema states as keywords (no REQUIRED message field
            # missing, no minimum unmet; a rule said in words it may break); without a field
            # the codec writes it is not. A response schema is the codec's form: of a REQUIRED
            # scalar it states that the key is there, not which value counts as missing (the
            # input schemas do), so such responses are left out.
            scalars = [fd for fd in fields if is_required(fd) and not fd.message_type]
            if answer and wanted and not scalars:
                validator = component_validator(DOC, ref)
                empty = to_dict(message())
                in_words = rules_in_words(message.DESCRIPTOR)
                broken = [v.rule for v in rule_violations(message())]
                keeps = all(rule in in_words for rule in broken)
                assert validator.is_valid(empty) == keeps, name
                if keeps:
                    del empty[wanted[-1]]
                    assert not validator.is_valid(empty)
    for name, schema in schemas.items():  # nested answer messages too
        if name.endswith(".input") or "properties" not in schema:
            continue
        message = SERVICE.file.pool.FindMessageTypeByName(name)
        presence = {fd.json_name for fd in message.fields if not fd.has_presence}
        if name in _answer_messages():
            assert presence <= set(schema.get("required", [])), name


def _answer_messages() -> set[str]:
    """Full names of every message a response reaches (responses and ErrorResponse)."""
    seen: set[str] = set()
    todo = [op.response_type.DESCRIPTOR for op in OPS] + [ErrorResponse.DESCRIPTOR]
    while todo:
        message = todo.pop()
        if message.full_name in seen or message.full_name.startswith("google.protobuf."):
            continue
        seen.add(message.full_name)
        todo += [fd.message_type for fd in message.fields if fd.message_type is not None]
    return seen


def test_white_space_is_one_set_in_the_contract_validation_and_the_schemas() -> None:
    section = CONTRACT.split("4.2. ", 1)[1].split("4.3. ", 1)[0]
    listed: set[str] = set()
    for low, high in re.findall(r"U\+([0-9A-F]{4})(?:\u2013U\+([0-9A-F]{4}))?", section):
        listed |= {chr(c) for c in range(int(low, 16), int(high or low, 16) + 1)}
    listed -= {"\ufeff", "\u200b"}  # named as what is not white space
    assert listed == set(BLANK) == {chr(c) for c in range(0x110000) if chr(c).isspace()}
    assert f"exactly these {len(BLANK)} characters" in section
    pattern = re.compile(NOT_BLANK_PATTERN)
    assert {chr(c) for c in range(0x10000) if not pattern.fullmatch(chr(c))} == set(BLANK)


def test_render_json_and_yaml() -> None:
    import yaml

    text = openapi.render("http://127.0.0.1:9999", "json")
    assert json.loads(text) == openapi.document("http://127.0.0.1:9999")
    assert text.endswith("}\n")
    assert yaml.safe_load(openapi.render(fmt="yaml")) == DOC
    with pytest.raises(openapi.RenderError, match="unknown format 'xml'"):
        openapi.render(fmt="xml")


def test_yaml_without_pyyaml_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "yaml", None)  # import yaml now raises ImportError
    with pytest.raises(openapi.RenderError, match="PyYAML"):
        openapi.render(fmt="yaml")
