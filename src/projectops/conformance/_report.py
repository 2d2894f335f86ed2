"""The report of ``projectops conformance``: each check's result, the run's counts, and the
lines or JSON the command prints."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from projectops._text import outside_text
from projectops.conventions import normalize_base_url

__all__ = ["CheckResult", "Report", "Status", "write_report"]

Status = Literal["passed", "failed", "skipped"]


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one check for one operation.

    Attributes:
        id: the check id (:data:`projectops.conformance.CHECKS`), e.g. ``auth.no-key``.
        operation: the operation name, e.g. ``get_release_details``.
        level: ``must`` or ``should``.
        status: ``passed``, ``failed`` or ``skipped``.
        detail: why it failed (what was sent, what came back) or was skipped; ``""`` when
            it passed. Escaped, cut and with the key redacted.
    """

    id: str
    operation: str
    level: str
    status: Status
    detail: str = ""

    def as_json(self) -> dict[str, str]:
        """The report's entry: ``{"id", "operation", "level", "status", "detail"}``."""
        return {
            "id": self.id,
            "operation": self.operation,
            "level": self.level,
            "status": self.status,
            "detail": self.detail,
        }


@dataclass(frozen=True)
class Report:
    """Every check of a run, and how many requests it sent.

    Attributes:
        checks: one result per check and operation.
        requests: how many requests the run sent.
        stopped: the run's deadline in seconds when it passed before every check ran (those
            not run are ``skipped``, saying so); ``None`` when the run was complete.
    """

    checks: tuple[CheckResult, ...]
    requests: int
    stopped: float | None = None

    def count(self, status: Status) -> int:
        """How many checks have `status`."""
        return sum(1 for check in self.checks if check.status == status)

    @property
    def must_failed(self) -> bool:
        """Whether a ``must`` check failed (the server breaks the contract)."""
        return any(c.status == "failed" and c.level == "must" for c in self.checks)

    def as_json(self) -> dict[str, Any]:
        """``{"passed": n, "failed": n, "skipped": n, "stopped": bool, "checks": [...]}``
        (``stopped``: the deadline passed before every check ran)."""
        return {
            "passed": self.count("passed"),
            "failed": self.count("failed"),
            "skipped": self.count("skipped"),
            "stopped": self.stopped is not None,
            "checks": [check.as_json() for check in self.checks],
        }


def write_report(report: Report, as_json: bool, base_url: str) -> None:
    """Write `report` to standard output: with `as_json` the JSON of :meth:`Report.as_json`,
    else one line per check and a summary naming `base_url` (escaped)."""
    write = sys.stdout.write
    if as_json:
        write(json.dumps(report.as_json(), indent=2, ensure_ascii=False) + "\n")
        return
    _write_lines(report.checks)
    must = sum(1 for c in report.checks if c.status == "failed" and c.level == "must")
    write(
        f"{report.count('passed')} passed, {report.count('failed')} failed ({must} must), "
        f"{report.count('skipped')} skipped; {report.requests} requests sent to "
        f"{outside_text(normalize_base_url(base_url), 200)}"
        + ("" if report.stopped is None else f"; stopped by --deadline {report.stopped:g} s")
        + "\n"
    )


def _write_lines(checks: Sequence[CheckResult]) -> None:
    op_width = max((len(c.operation) for c in checks), default=0)
    id_width = max((len(c.id) for c in checks), default=0)
    for check in checks:
        line = f"{check.operation:<{op_width}}  {check.id:<{id_width}}  {check.status}"
        if check.status == "failed":
            line += f" ({check.level})"
        if check.detail:
            line += f": {check.detail}"
        sys.stdout.write(line + "\n")
