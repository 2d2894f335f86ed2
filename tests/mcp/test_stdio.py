"""``projectops mcp`` over stdio with the real ``mcp`` client, against the mock server (issue 4).

tools/list is exactly the registry with its derived schemas; both tools answer with structured
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
from tests.mcp.support import DEMO_KEY, OpenStdio, StdioSession, stdio_session, text_of

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


CALLS = {
    "list-rum-environments": {},
    "get-release-details": {"version": "1.0.0"},
}


@pytest.mark.parametrize("op", projectops.operations(), ids=lambda op: op.tool_name)
def test_every_tool_returns_the_response_as_text_and_valid_structured_content(
    demo: StdioSession, mock_server: Any, op: projectops.Operation
) -> None:
    result = demo.call(op.tool_name, CALLS[op.tool_name])
    assert result.is_error is False, text_of(result)
    structured = result.structured_content
    jsonschema.Draft202012Validator(json_schema.output_schema(op)).validate(structured)
    assert json.loads(text_of(result)) == structured
    # The same answer the HTTP client gets from the service.
    with Client(mock_server.base_url, DEMO_KEY) as client:
        assert structured == projectops.to_dict(client.call(op, CALLS[op.tool_name]))
    assert structured  # the mock answers with data, not an empty message


def test_get_release_details_returns_the_release(demo: StdioSession) -> None:
    result = demo.call("get-release-details", {"version": " 1.0.0 "})  # trimmed by the service
    assert result.is_error is False, text_of(result)
    assert result.structured_content["summary"]["release"]["version"] == "1.0.0"


PREFIX = "Invalid arguments for get-release-details: "


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "version: is required."),
        ({"version": 5}, "version: expected a string, got the number 5."),
        ({"version": "  "}, "version: is required."),  # blank counts as missing
        (
            {"versio": "1.0.0"},
            "versio: expected a known field of GetReleaseDetailsRequest (version), "
            "got an unknown field.",
        ),
    ],
    ids=["missing", "wrong-type", "blank", "misspelt"],
)
def test_invalid_arguments_give_an_error_result_naming_the_field(
    demo: StdioSession, arguments: dict[str, Any], message: str
) -> None:
    result = demo.call("get-release-details", arguments)
    assert result.is_error is True
    assert result.structured_content is None
    assert text_of(result) == PREFIX + message


def test_unknown_release_gives_the_services_400_message(demo: StdioSession) -> None:
    result = demo.call("get-release-details", {"version": "9.9.9"})
    assert result.is_error is True
    text = text_of(result)
    assert text.startswith("The service rejected the request (400 failed_precondition): ")
    assert '"9.9.9"' in text  # the mock's message names the version


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
    result = session.call("list-rum-environments")
    assert result.is_error is True
    assert text_of(result).startswith(f"The API key is missing or invalid: set {API_KEY_ENV} to ")
    assert f"{API_KEY_ENV} is not set" in session.log()  # the start-up warning


def test_the_key_never_appears_in_results_or_the_log(demo: StdioSession) -> None:
    results = [demo.call(name, arguments) for name, arguments in CALLS.items()]
    results.append(demo.call("get-release-details", {"version": "9.9.9"}))
    results.append(demo.call("get-release-details", {}))
    dumped = [result.model_dump_json() for result in results]
    assert not any(DEMO_KEY in text for text in dumped)
    log = demo.log()  # the server's stderr: stdout is the transport
    assert f"serving {len(projectops.operations())} tools on stdio" in log
    assert "get-release-details: ok" in log  # the log does record the calls
    assert DEMO_KEY not in log
