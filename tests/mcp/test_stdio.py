"""``projectops mcp`` over stdio with the real ``mcp`` client, against the mock server (issue 4).

tools/list is exactly the registry with its derived schemas; every tool answers with structured
content valid against their output schemas; every failure is an ``isError`` result with one
sentence, and the API key never shows in a result or in the server's log.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest

import projectops
from projectops import API_KEY_ENV, BASE_URL_ENV, json_schema
from projectops.client import Client
from tests.mcp.support import (
    DEMO_KEY,
    NO_ARGUMENTS,
    WITH_REQUIRED,
    OpenStdio,
    StdioSession,
    demo_arguments,
    required_fields,
    stdio_session,
    text_of,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def demo(mock_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[StdioSession]:
    """One tool server with project demo's key, for the tests that only call it."""
    errlog = tmp_path_factory.mktemp("mcp") / "server.log"
    with stdio_session(
        {BASE_URL_ENV: mock_server.base_url, API_KEY_ENV: DEMO_KEY}, errlog
    ) as session:
        yield session


def test_initialize_advertises_tools_only(demo: StdioSession) -> None:
    assert demo.init.server_info.name == "projectops"
    assert demo.init.server_info.version == projectops.__version__
    capabilities = demo.init.capabilities
    assert capabilities.tools is not None
    assert (capabilities.resources, capabilities.prompts, capabilities.logging) == (None,) * 3


def test_tools_list_is_the_registry_with_derived_schemas(demo: StdioSession) -> None:
    tools = demo.list_tools()
    assert [tool.name for tool in tools] == [op.tool_name for op in projectops.operations()]
    for tool, op in zip(tools, projectops.operations(), strict=True):
        assert tool.description == op.description
        assert tool.input_schema == json_schema.input_schema(op)
        assert tool.output_schema == json_schema.output_schema(op)
        assert tool.input_schema["type"] == tool.output_schema["type"] == "object"


@pytest.mark.parametrize("op", projectops.operations(), ids=lambda op: op.tool_name)
def test_every_tool_returns_the_response_as_text_and_valid_structured_content(
    demo: StdioSession, mock_server: Any, op: projectops.Operation
) -> None:
    result = demo.call(op.tool_name, demo_arguments(op))
    assert result.is_error is False, text_of(result)
    structured = result.structured_content
    jsonschema.Draft202012Validator(json_schema.output_schema(op)).validate(structured)
    assert json.loads(text_of(result)) == structured
    # The same response the HTTP client gets from the service.
    with Client(mock_server.base_url, DEMO_KEY) as client:
        assert structured == projectops.to_dict(client.call(op, demo_arguments(op)))
    # The mock answers with data, not an empty message (unless the response has no field).
    assert structured or not op.response_type.DESCRIPTOR.fields


def test_required_strings_are_trimmed_by_the_service(demo: StdioSession) -> None:
    arguments = demo_arguments(WITH_REQUIRED)
    padded = {k: f" {v} " if isinstance(v, str) else v for k, v in arguments.items()}
    result = demo.call(WITH_REQUIRED.tool_name, padded)
    assert result.is_error is False, text_of(result)
    assert (
        result.structured_content
        == demo.call(WITH_REQUIRED.tool_name, arguments).structured_content
    )


FIELD = required_fields(WITH_REQUIRED)[0]
PREFIX = f"Invalid arguments for {WITH_REQUIRED.tool_name}: "
KNOWN = ", ".join(fd.json_name for fd in WITH_REQUIRED.request_type.DESCRIPTOR.fields)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, f"{FIELD}: is required."),
        ({FIELD: 5}, f"{FIELD}: expected a string, got the number 5."),
        ({FIELD: "  "}, f"{FIELD}: is required."),  # blank counts as missing
        (
            {FIELD + "x": "1"},
            f"{FIELD}x: expected a known field of {WITH_REQUIRED.request_type.__name__} "
            f"({KNOWN}), got an unknown field.",
        ),
    ],
    ids=["missing", "wrong-type", "blank", "misspelt"],
)
def test_invalid_arguments_give_an_error_result_naming_the_field(
    demo: StdioSession, arguments: dict[str, Any], message: str
) -> None:
    result = demo.call(WITH_REQUIRED.tool_name, arguments)
    assert result.is_error is True
    assert result.structured_content is None
    assert text_of(result) == PREFIX + message


def test_an_unknown_request_gives_the_services_400_message(demo: StdioSession) -> None:
    result = demo.call(WITH_REQUIRED.tool_name, {FIELD: "9.9.9"})
    assert result.is_error is True
    text = text_of(result)
    assert text.startswith("The service rejected the request (400 failed_precondition): ")
    assert '"9.9.9"' in text  # the mock's message names the request


def test_unknown_tool_is_a_protocol_error(demo: StdioSession) -> None:
    # Imported here, not at the top: the MCP SDK costs a second at collection in every worker.
    from mcp import MCPError, types

    with pytest.raises(MCPError) as caught:
        demo.call("no-such-tool", {})
    assert caught.value.code == types.INVALID_PARAMS
    assert "no-such-tool" in str(caught.value)


def test_missing_key_still_starts_and_lists_but_calls_fail(
    open_stdio: OpenStdio, mock_server: Any
) -> None:
    session = open_stdio({BASE_URL_ENV: mock_server.base_url})
    assert len(session.list_tools()) == len(projectops.operations())
    result = session.call(NO_ARGUMENTS.tool_name)
    assert result.is_error is True
    assert text_of(result).startswith(f"The API key is missing or invalid: set {API_KEY_ENV} to ")
    assert f"{API_KEY_ENV} is not set" in session.log()  # the start-up warning


def test_the_key_never_appears_in_results_or_the_log(demo: StdioSession) -> None:
    results = [demo.call(op.tool_name, demo_arguments(op)) for op in projectops.operations()]
    results.append(demo.call(WITH_REQUIRED.tool_name, {FIELD: "9.9.9"}))
    results.append(demo.call(WITH_REQUIRED.tool_name, {}))
    dumped = [result.model_dump_json() for result in results]
    assert not any(DEMO_KEY in text for text in dumped)
    log = demo.log()  # the server's stderr: stdout is the transport
    assert f"serving {len(projectops.operations())} tools on stdio" in log
    assert f"{NO_ARGUMENTS.tool_name}: ok" in log  # the log does record the calls
    assert DEMO_KEY not in log
