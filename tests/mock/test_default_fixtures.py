"""The embedded default fixtures match the proto comments: counts add up, orders hold."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from projectops.fixtures import default_fixtures
from projectops.mock import load_fixtures
from projectops.v1 import operations_pb2 as ops
from projectops.v1 import release_pb2 as rel

PROJECTS = {project.name: project for project in default_fixtures()}
OPEN = {rel.ACTIVE, rel.IN_PROGRESS_BUG, rel.BLOCKED}


def releases() -> list[tuple[str, ops.GetReleaseDetailsResponse]]:
    found = []
    for name, project in PROJECTS.items():
        for answer in project.answers["get_release_details"]:
            response = answer.response
            assert isinstance(response, ops.GetReleaseDetailsResponse)
            found.append((name, response))
    return found


def test_projects_and_keys() -> None:
    assert {key: p.name for key, p in load_fixtures().items()} == {
        "demo-key": "demo",
        "other-key": "other",
    }


@pytest.mark.parametrize(("project", "response"), releases(), ids=lambda v: str(v)[:20])
def test_release_summary_is_coherent_with_its_details(
    project: str, response: ops.GetReleaseDetailsResponse
) -> None:
    summary, details = response.summary, response.detailed_results
    release = summary.release
    assert re.fullmatch(r"[0-9a-f]{40}", release.git_sha)
    assert re.fullmatch(r"[0-9a-f]{40}", release.previous_git_sha)
    assert release.previous_version and release.focus_areas

    # Test counts: one entry per environment, sorted by tag, equal to the scenarios' results.
    by_env: dict[str, list[tuple[int, int]]] = {}
    for scenario in details.scenarios:
        assert scenario.focus_area in (*release.focus_areas, "")
        for result in scenario.results:
            by_env.setdefault(result.environment, []).append((scenario.priority, result.status))
            ran = result.status in (rel.PASSED, rel.FAILED)
            assert result.HasField("run_time") == ran
            assert result.HasField("run_duration") == ran
    assert [c.environment for c in summary.test_counts] == sorted(by_env)
    for counts in summary.test_counts:
        rows = by_env[counts.environment]
        priorities = Counter(p for p, _ in rows)
        statuses = Counter(s for _, s in rows)
        assert counts.total == len(rows)
        assert (
            counts.by_priority.high,
            counts.by_priority.medium,
            counts.by_priority.low,
            counts.by_priority.unset,
        ) == (
            priorities[rel.HIGH_PRIORITY],
            priorities[rel.MEDIUM_PRIORITY],
            priorities[rel.LOW_PRIORITY],
            priorities[rel.SCENARIO_PRIORITY_UNSPECIFIED],
        )
        assert (
            counts.by_status.passed,
            counts.by_status.failed,
            counts.by_status.skipped,
            counts.by_status.not_run,
        ) == (
            statuses[rel.PASSED],
            statuses[rel.FAILED],
            statuses[rel.SKIPPED],
            statuses[rel.NOT_RUN],
        )
    scenario_order = [(-s.priority, s.title) for s in details.scenarios]
    assert scenario_order == sorted(scenario_order)

    # Open issues: the statistics are those of the issue records.
    open_issues = [i for i in details.issues if i.status in OPEN]
    severities = Counter(i.severity for i in open_issues)
    statuses = Counter(i.status for i in open_issues)
    stats = summary.open_issues
    assert stats.total == len(open_issues)
    assert (
        stats.low_severity,
        stats.medium_severity,
        stats.high_severity,
        stats.critical_severity,
    ) == (
        severities[rel.LOW_SEVERITY],
        severities[rel.MEDIUM_SEVERITY],
        severities[rel.HIGH_SEVERITY],
        severities[rel.CRITICAL_SEVERITY],
    )
    assert (stats.active, stats.in_progress, stats.blocked) == (
        statuses[rel.ACTIVE],
        statuses[rel.IN_PROGRESS_BUG],
        statuses[rel.BLOCKED],
    )
    issue_order = [(-i.severity, i.issue_id) for i in details.issues]
    assert issue_order == sorted(issue_order)
    scenario_ids = {s.scenario_id for s in details.scenarios}
    assert all(i.scenario_id in scenario_ids for i in details.issues if i.scenario_id)

    # Security scans: most recent first; only finished scans have an end time.
    starts = [s.start_time.ToDatetime() for s in summary.security_scans]
    assert starts == sorted(starts, reverse=True)
    for scan in summary.security_scans:
        finished = scan.status in (rel.COMPLETED, rel.EXCEPTION)
        assert scan.HasField("end_time") == finished
        assert scan.high_or_critical_finding_count <= scan.finding_count


def test_demo_release_exercises_the_interesting_values() -> None:
    [(_, demo)] = [(n, r) for n, r in releases() if n == "demo"]
    assert demo.summary.release.version == "1.0.0"
    assert demo.summary.release.previous_version == "0.9.0"
    statuses = [i.status for i in demo.detailed_results.issues]
    assert statuses.count(rel.ACTIVE) >= 2 and rel.FIXED in statuses
    assert max(i.issue_id for i in demo.detailed_results.issues) > 2**53
    assert {s.status for s in demo.summary.security_scans} == {rel.COMPLETED, rel.IN_PROGRESS}
    assert {t.environment for t in demo.summary.test_counts} == {"QA", "production"}
    assert {s.priority for s in demo.detailed_results.scenarios} == {
        rel.HIGH_PRIORITY,
        rel.MEDIUM_PRIORITY,
        rel.LOW_PRIORITY,
        rel.SCENARIO_PRIORITY_UNSPECIFIED,
    }


def test_other_project_has_no_release_1_0_0_and_its_own_environments() -> None:
    versions = {r.summary.release.version for n, r in releases() if n == "other"}
    assert "1.0.0" not in versions and versions
    envs = {
        name: [
            e.environment
            for a in p.answers["list_rum_environments"]
            for e in a.response.environments  # type: ignore[attr-defined]
        ]
        for name, p in PROJECTS.items()
    }
    assert not set(envs["demo"]) & set(envs["other"])


@pytest.mark.parametrize("project", sorted(PROJECTS))
def test_environments_are_most_recently_seen_first(project: str) -> None:
    [answer] = PROJECTS[project].answers["list_rum_environments"]
    response = answer.response
    assert isinstance(response, ops.ListRumEnvironmentsResponse)
    last_seen = [e.last_seen_time.ToDatetime() for e in response.environments]
    assert last_seen == sorted(last_seen, reverse=True)
    for env in response.environments:
        assert env.first_seen_time.ToDatetime() <= env.last_seen_time.ToDatetime()
