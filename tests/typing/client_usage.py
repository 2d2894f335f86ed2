"""Checked by mypy (see pyproject.toml), not run by pytest: typed use of the HTTP client."""

from typing import assert_type

from google.protobuf.message import Message

from projectops.client import AsyncClient, Client
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
