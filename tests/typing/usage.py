"""Checked by mypy (see pyproject.toml), not run by pytest: typed use of the generated messages."""

import projectops
from projectops.v1 import release_pb2
from projectops.v1.operations_pb2 import GetReleaseDetailsRequest, GetReleaseDetailsResponse


def failed_in(response: GetReleaseDetailsResponse, environment: str) -> int:
    for counts in response.summary.test_counts:
        if counts.environment == environment:
            return counts.by_status.failed
    return 0


def active_titles(response: GetReleaseDetailsResponse) -> list[str]:
    return [i.title for i in response.detailed_results.issues if i.status == release_pb2.ACTIVE]


def decode(text: str) -> GetReleaseDetailsResponse:
    response = projectops.from_json(text, GetReleaseDetailsResponse)
    request = GetReleaseDetailsRequest(version="1.0.0")
    projectops.validate(request)
    return response
