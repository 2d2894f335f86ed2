"""What both clients take from their one base (:mod:`projectops.client._base`): configuration
from arguments and the environment, a repr without the key, and the request's checks without
I/O (:func:`prepare_request`, :func:`request_message`), which the CLI's ``--dry-run``, the
tool server and the typed clients rely on.
"""

from __future__ import annotations

from typing import Any

import pytest

import projectops
from projectops.client import AsyncClient, Client, InvalidRequest, MissingBaseUrl
from projectops.client._base import BaseClient, prepare_request, request_message
from projectops.v1.operations_pb2 import GetReleaseDetailsRequest, ListRumEnvironmentsRequest
from tests.support import KEY

GET = projectops.operation("get_release_details")


@pytest.mark.parametrize("client_type", [Client, AsyncClient])
def test_configuration_falls_back_to_environment_and_has_no_default_address(
    client_type: type[Client] | type[AsyncClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SERVICE_BACKEND_URL", raising=False)
    monkeypatch.delenv("SERVICE_API_KEY", raising=False)
    with pytest.raises(MissingBaseUrl, match="SERVICE_BACKEND_URL") as caught:
        client_type()  # never a guessed address that would receive the key
    assert isinstance(caught.value, ValueError)
    assert not client_type("http://127.0.0.1:1").has_api_key  # no key never fails here

    monkeypatch.setenv("SERVICE_BACKEND_URL", "https://ops.example.com/root/")
    monkeypatch.setenv("SERVICE_API_KEY", KEY)
    from_env = client_type()
    assert from_env.base_url == "https://ops.example.com/root"
    assert from_env.has_api_key
    assert client_type("http://127.0.0.1:1").base_url == "http://127.0.0.1:1"  # argument wins


@pytest.mark.parametrize("url", ["127.0.0.1:8787", "ftp://127.0.0.1", "http://h/?q=1", ""])
def test_bad_base_url_fails_at_construction(url: str) -> None:
    with pytest.raises(ValueError, match="base URL"):
        Client(url)
    with pytest.raises(ValueError, match="base URL"):
        AsyncClient(url)


def test_repr_never_shows_the_key() -> None:
    with Client("http://127.0.0.1:1", KEY) as client:
        assert KEY not in repr(client) and KEY not in str(client)
        assert "http://127.0.0.1:1" in repr(client)
    assert KEY not in repr(AsyncClient("http://127.0.0.1:1", api_key=KEY))


def test_both_clients_stand_on_the_one_base() -> None:
    assert issubclass(Client, BaseClient) and issubclass(AsyncClient, BaseClient)


@pytest.mark.parametrize(
    ("timeout", "limit", "error"),
    [(0, 1, ValueError), (-1.5, 1, ValueError), (None, 0, ValueError), (None, 1.5, TypeError)],
)
def test_a_timeout_or_limit_that_cannot_work_fails_at_construction(
    timeout: float | None, limit: Any, error: type[Exception]
) -> None:
    with pytest.raises(error):
        Client("http://127.0.0.1:1", timeout=timeout, max_response_bytes=limit)
    with pytest.raises(error):
        AsyncClient("http://127.0.0.1:1", timeout=timeout, max_response_bytes=limit)


def test_an_empty_base_url_variable_counts_as_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERVICE_BACKEND_URL", "")
    with pytest.raises(MissingBaseUrl, match="SERVICE_BACKEND_URL"):
        Client()


def test_a_key_with_surrounding_blanks_is_used_stripped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERVICE_API_KEY", f"  {KEY}\n")
    monkeypatch.setenv("SERVICE_BACKEND_URL", "http://127.0.0.1:1")
    client = Client()
    assert client.has_api_key and KEY not in repr(client)
    monkeypatch.setenv("SERVICE_API_KEY", "   ")
    assert not Client().has_api_key  # blanks only: no key


# --- the request's checks, without I/O -----------------------------------------------------


def test_prepare_request_gives_the_validated_message_of_any_form() -> None:
    expected = GetReleaseDetailsRequest(version="1.0.0")
    assert prepare_request("get-release-details", {"version": "1.0.0"}) == expected
    assert prepare_request(GET.path, expected) is expected  # a message is not copied
    assert prepare_request("list_rum_environments") == ListRumEnvironmentsRequest()


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        (None, "version"),
        ({"version": " "}, "version"),
        ({"version": "1.0.0", "nope": 1}, "nope"),  # strict: local input has no unknown fields
        (GetReleaseDetailsRequest(), "version"),
    ],
)
def test_prepare_request_names_the_field_of_an_invalid_request(request_: Any, field: str) -> None:
    with pytest.raises(InvalidRequest) as caught:
        prepare_request(GET, request_)
    assert caught.value.http_status is None  # found locally
    assert [v.field for v in caught.value.violations] == [field]


def test_prepare_request_refuses_what_is_not_the_operations_request() -> None:
    with pytest.raises(TypeError, match="GetReleaseDetailsRequest"):
        prepare_request(GET, ListRumEnvironmentsRequest())
    with pytest.raises(TypeError, match="not str"):
        prepare_request(GET, '{"version": "1.0.0"}')  # type: ignore[arg-type]
    with pytest.raises(LookupError):
        prepare_request("delete-everything")


def test_request_message_takes_the_message_or_the_fields_not_both() -> None:
    message = GetReleaseDetailsRequest(version="2.0.0")
    assert request_message(GET, message, {}) is message
    assert request_message(GET, message, {"version": None}) is message  # unset keywords
    built = request_message(GET, None, {"version": "2.0.0"})
    assert built == message
    with pytest.raises(TypeError, match="not both"):
        request_message(GET, message, {"version": "3.0.0"})
