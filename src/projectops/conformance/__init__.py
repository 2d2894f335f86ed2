"""Conformance of any server of this API (extra ``client``): the checks, their runner and
reports, the ``conformance`` and ``proxy`` commands (docs/conformance.md). Names are imported on
first use: importing the package does not import httpx."""

from __future__ import annotations

from typing import TYPE_CHECKING

from projectops._lazy import lazy_attributes

if TYPE_CHECKING:
    from projectops.conformance._catalogue import CHECKS, CheckSpec
    from projectops.conformance._command import command, proxy_command
    from projectops.conformance._report import (
        SKIP_REASONS,
        CheckResult,
        FieldDifference,
        Report,
        write_report,
    )
    from projectops.conformance._runner import run_checks

_WHERE = {
    "CHECKS": "projectops.conformance._catalogue",
    "SKIP_REASONS": "projectops.conformance._report",
    "CheckResult": "projectops.conformance._report",
    "FieldDifference": "projectops.conformance._report",
    "CheckSpec": "projectops.conformance._catalogue",
    "Report": "projectops.conformance._report",
    "command": "projectops.conformance._command",
    "proxy_command": "projectops.conformance._command",
    "run_checks": "projectops.conformance._runner",
    "write_report": "projectops.conformance._report",
}

__all__ = ["CHECKS", "SKIP_REASONS", "CheckResult", "CheckSpec", "FieldDifference", "Report"]
__all__ += ["command", "proxy_command"]
__all__ += ["run_checks", "write_report"]

if not TYPE_CHECKING:
    __getattr__ = lazy_attributes(__name__, _WHERE, extra="client")
