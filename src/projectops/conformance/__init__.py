"""Conformance of any server of this API (extra ``client``): the checks, their runner and
reports, the ``conformance`` and ``proxy`` commands (docs/conformance.md). Names are imported on
first use: importing the package does not import httpx."""

from __future__ import annotations

from typing import TYPE_CHECKING

from projectops._lazy import lazy_attributes, modules_by_name

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

_NAMES = {
    "projectops.conformance._catalogue": "CHECKS CheckSpec",
    "projectops.conformance._command": "command proxy_command",
    "projectops.conformance._report": "SKIP_REASONS CheckResult FieldDifference Report "
    "write_report",
    "projectops.conformance._runner": "run_checks",
}
_WHERE = modules_by_name(_NAMES)

__all__ = [
    "CHECKS",
    "SKIP_REASONS",
    "CheckResult",
    "CheckSpec",
    "FieldDifference",
    "Report",
    "command",
    "proxy_command",
    "run_checks",
    "write_report",
]

if not TYPE_CHECKING:
    __getattr__ = lazy_attributes(__name__, _WHERE, extra="client")
