"""Checked by mypy (see pyproject.toml), not run by pytest: typed use of the generated bindings."""

from typing import Any, assert_type

from projectops.client import AsyncOperationsServiceClient, OperationsServiceClient
from projectops.server import OperationsServiceHandler, RequestContext, create_app
from projectops.v1 import operations_pb2 as ops


def release_version(client: OperationsServiceClient) -> str:
    details = client.get_release_details(version="1.0.0")
    assert_type(details, ops.GetReleaseDetailsResponse)
    same = client.get_release_details(ops.GetReleaseDetailsRequest(version="1.0.0"))
    assert_type(same, ops.GetReleaseDetailsResponse)
    assert_type(client.list_rum_environments(), ops.ListRumEnvironmentsResponse)
    return details.summary.release.version


async def release_version_async(client: AsyncOperationsServiceClient) -> str:
    details = await client.get_release_details(version="1.0.0")
    assert_type(details, ops.GetReleaseDetailsResponse)
    return details.summary.release.version


class Releases(OperationsServiceHandler):
    """A partial implementation: one rpc; the base answers the others 501 ``unimplemented``, so
    this keeps type-checking when the proto gains an rpc."""

    async def get_release_details(
        self, request: ops.GetReleaseDetailsRequest, context: RequestContext[str]
    ) -> ops.GetReleaseDetailsResponse:
        return ops.GetReleaseDetailsResponse()


class Service(OperationsServiceHandler):
    """One sync and one async method, checked against the base's signatures."""

    def list_rum_environments(
        self, request: ops.ListRumEnvironmentsRequest, context: RequestContext[str]
    ) -> ops.ListRumEnvironmentsResponse:
        return ops.ListRumEnvironmentsResponse()

    async def get_release_details(
        self, request: ops.GetReleaseDetailsRequest, context: RequestContext[str]
    ) -> ops.GetReleaseDetailsResponse:
        return ops.GetReleaseDetailsResponse()


def keys(api_key: str) -> str | None:
    return {"k-1": "demo"}.get(api_key)


handler: OperationsServiceHandler = Service()
app: Any = create_app(Service(), authenticate=keys)
partial: Any = create_app(Releases(), authenticate=keys)
