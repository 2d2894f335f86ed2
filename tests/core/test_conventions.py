"""HTTP conventions of docs/contract.md §1 and §2."""

import pytest

import projectops
from projectops import conventions


def test_constants_of_the_spec() -> None:
    assert projectops.API_KEY_HEADER == "Service-Api-Key"
    assert projectops.API_KEY_ENV == "SERVICE_API_KEY"
    assert projectops.BASE_URL_ENV == "SERVICE_BACKEND_URL"
    assert conventions.CONTENT_TYPE == "application/json"


@pytest.mark.parametrize(
    ("tool", "name"),
    [
        ("count-open-things", "count_open_things"),
        *((op.tool_name, op.name) for op in projectops.operations()),
    ],
)
def test_tool_name_maps_to_operation_name(tool: str, name: str) -> None:
    assert projectops.operation_name(tool) == name
    assert projectops.tool_name(name) == tool
    assert projectops.operation_path(name) == f"/api/mcp/{name}"


@pytest.mark.parametrize(
    ("url", "normalized"),
    [
        ("http://127.0.0.1:8787", "http://127.0.0.1:8787"),
        ("http://127.0.0.1:8787///", "http://127.0.0.1:8787"),
        ("https://api.example.test/base/", "https://api.example.test/base"),
        ("  https://api.example.test  ", "https://api.example.test"),
    ],
)
def test_base_url_is_normalized(url: str, normalized: str) -> None:
    assert projectops.normalize_base_url(url) == normalized


@pytest.mark.parametrize(
    "url",
    [
        "",
        "127.0.0.1:8787",
        "/api",
        "ftp://example.test",
        "http://",
        "http://h/?q=1",
        "http://[::1",
        "http://[zz]/",
        "http://h:99999",
        "http://h:port",
    ],
)
def test_base_url_must_be_absolute_http(url: str) -> None:
    with pytest.raises(projectops.InvalidBaseUrl, match="base URL"):
        projectops.normalize_base_url(url)
