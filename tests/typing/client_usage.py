"""Checked by mypy (see pyproject.toml), not run by pytest: typed use of the HTTP client."""

from typing import assert_type

from google.protobuf.message import Message

from projectops.client import (
    AsyncClient,
    AsyncOperationsServiceClient,
    Client,
    OperationsServiceClient,
)
from projectops.mock import MockServer
from projectops.v1.operations_pb2 import GetReleaseDetailsRequest, GetReleaseDetailsResponse


def release_version(client: Client) -> str:
    untyped = client.call("list-rum-environments")
    assert_type(untyped, Message)
    response = client.call(
        "get-release-details",
        GetReleaseDetailsRequest(version="1.0.0"),
        response_type=GetReleaseDetailsResponse,
    )
    assert_type(response, GetReleaseDetailsResponse)
    return response.summary.release.version


async def release_version_async(client: AsyncClient) -> str:
    response = await client.call(
        "get-release-details", {"version": "1.0.0"}, response_type=GetReleaseDetailsResponse
    )
    assert_type(response, GetReleaseDetailsResponse)
    return response.summary.release.version


def mock_clients(mock: MockServer) -> None:
    """The mock's clients are typed: the generated one by default, else the class given."""
    assert_type(mock.client(), OperationsServiceClient)
    assert_type(mock.client(Client, retries=0), Client)
    assert_type(mock.async_client(), AsyncOperationsServiceClient)
    assert_type(mock.async_client(AsyncClient), AsyncClient)
