"""The report of ``projectops conformance``: lines, JSON, and JUnit XML as pytest writes it; and
the bounds of a run, which the command states too."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from projectops._text import escape, outside_text

__all__ = [
    "DEFAULT_DEADLINE",
    "MAX_CALLS",
    "MAX_JUDGED_BYTES",
    "MAX_REQUESTS",
    "CheckResult",
    "Report",
    "Status",
    "junit_xml",
]
__all__ += ["write_report"]

#: Requests a run sends at most; past it, the remaining checks are skipped.
MAX_REQUESTS = 1000
#: Seconds a whole run may take by default (``--deadline``).
DEFAULT_DEADLINE = 600.0
#: Answers larger than this, in bytes, are not judged (``--max-judged-bytes``, 8 MiB): judging
#: parses and decodes the whole answer, which costs about 15 bytes of memory a byte of many small
#: objects (more for shapes the codec's decode-cost guard still allows).
MAX_JUDGED_BYTES = 8 * 1024 * 1024
#: Calls in flight at most in the proxy (``--max-calls``); its upstream client gets as many
#: connections, so a call let in never waits for one.
MAX_CALLS = 64


Status = Literal["passed", "failed", "skipped"]


@dataclass(frozen=True)
class CheckResult:
    """One check of the catalogue (:data:`~projectops.conformance.CHECKS`) for one operation.

    Attributes:
        id: the check's id, ``auth.no-key``.
        operation: the operation's name; ``""`` for a check of the whole API.
        level: ``"must"`` or ``"should"``, the check's level.
        status: ``"passed"``, ``"failed"`` or ``"skipped"``.
        detail: what failed or why it was skipped, outside text escaped and cut with the key
            redacted (docs/contract.md §9.3, §9.4); ``""`` for a pass.
    """

    id: str
    operation: str
    level: str
    status: Status
    detail: str = ""


@dataclass(frozen=True)
class Report:
    """The result of one conformance run (docs/conformance.md).

    Attributes:
        checks: one result per check and operation.
        requests: the number of requests sent.
        stopped: the deadline, in seconds, that stopped the run before its end; ``None`` (the
            default): the run is complete.
        unimplemented: the operations the server answered 501 ``unimplemented``; none by
            default.
        seconds: how long the run took; 0 by default.
        base_url: the base URL checked, as :func:`projectops.conventions.shown_url` shows it
            (no query, no key); ``""`` by default.
    """

    checks: tuple[CheckResult, ...]
    requests: int
    stopped: float | None = None
    unimplemented: tuple[str, ...] = ()
    seconds: float = 0.0
    base_url: str = ""

    def count(self, status: Status) -> int:
        """How many checks ended with a status.

        Args:
            status: ``"passed"``, ``"failed"`` or ``"skipped"``.

        Returns:
            The number of results in :attr:`checks` with that status.
        """
        return sum(1 for check in self.checks if check.status == status)

    @property
    def must_failed(self) -> bool:
        """Whether a ``must`` check failed."""
        return any(c.status == "failed" and c.level == "must" for c in self.checks)

    def as_json(self) -> dict[str, Any]:
        """The report ``conformance --json`` prints (its keys: that flag's help).

        Returns:
            A new JSON-ready ``dict``.
        """
        return {
            **{status: self.count(status) for status in ("passed", "failed", "skipped")},
            "stopped": self.stopped is not None,
            "unimplemented": list(self.unimplemented),
            "checks": [asdict(check) for check in self.checks],
        }


def write_report(report: Report, as_json: bool) -> None:
    """Write a report to stdout, as ``projectops conformance`` does.

    Args:
        report: the run's report.
        as_json: write :meth:`Report.as_json` as JSON; else a line per check and a summary.
    """
    write = sys.stdout.write
    if as_json:
        write(json.dumps(report.as_json(), indent=2, ensure_ascii=False) + "\n")
        return
    op_width = max((len(c.operation) for c in report.checks), default=0)
    id_width = max((len(c.id) for c in report.checks), default=0)
    for check in report.checks:
        line = f"{check.operation:<{op_width}}  {check.id:<{id_width}}  {check.status}"
        line += f" ({check.level})" if check.status == "failed" else ""
        write(line + (f": {check.detail}" if check.detail else "") + "\n")
    must = sum(1 for c in report.checks if c.status == "failed" and c.level == "must")
    write(
        f"{report.count('passed')} passed, {report.count('failed')} failed ({must} must), "
        f"{report.count('skipped')} skipped; {report.requests} requests sent to "
        f"{outside_text(report.base_url, 200)}"
        + (f"; unimplemented: {', '.join(report.unimplemented)}" if report.unimplemented else "")
        + ("" if report.stopped is None else f"; stopped by --deadline {report.stopped:g} s")
        + "\n"
    )


def _xml(text: str) -> str:
    """`text` escaped so that XML 1.0 can hold it."""
    return escape(text).replace("\ufffe", "\\ufffe").replace("\uffff", "\\uffff")


def junit_xml(report: Report) -> bytes:
    """`report` as UTF-8 JUnit XML in pytest's form: a ``<testcase classname="<operation>"
    name="<check id>">`` per check."""
    from xml.etree import ElementTree  # here: the program imports this module for every command

    name = "projectops conformance"
    suites = ElementTree.Element("testsuites", name=name)
    suite = ElementTree.SubElement(
        suites,
        "testsuite",
        name=name,
        errors="0",
        failures=str(report.count("failed")),
        skipped=str(report.count("skipped")),
        tests=str(len(report.checks)),
        time=f"{report.seconds:.3f}",
        timestamp=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    properties = ElementTree.SubElement(suite, "properties")
    url = _xml(outside_text(report.base_url, 200))
    ElementTree.SubElement(properties, "property", name="base_url", value=url)
    for check in report.checks:
        case = ElementTree.SubElement(
            suite, "testcase", classname=check.operation, name=check.id, time="0.000"
        )
        detail = _xml(check.detail)
        if check.status == "failed":
            failure = ElementTree.SubElement(case, "failure", message=f"{check.level}: {detail}")
            failure.text = detail
        elif check.status == "skipped":
            ElementTree.SubElement(case, "skipped", type="skip", message=detail).text = detail
    return bytes(ElementTree.tostring(suites, encoding="utf-8", xml_declaration=True))
