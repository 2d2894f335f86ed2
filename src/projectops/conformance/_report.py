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
    "SKIP_REASONS",
    "CheckResult",
    "FieldDifference",
    "Report",
    "SkipReason",
    "Status",
    "junit_xml",
    "write_report",
]

#: Requests a run sends at most; past it, the remaining checks are skipped.
MAX_REQUESTS = 1000
#: Seconds a whole run may take by default (``--deadline``).
DEFAULT_DEADLINE = 600.0
#: Responses larger than this, in bytes, are not judged (``--max-judged-bytes``, 8 MiB): judging
#: parses and decodes the whole response, which costs about 15 bytes of memory a byte of many small
#: objects (more for shapes the codec's decode-cost guard still allows).
MAX_JUDGED_BYTES = 8 * 1024 * 1024
#: Calls in flight at most in the proxy (``--max-calls``); its upstream client gets as many
#: connections, so a call let in never waits for one.
MAX_CALLS = 64


Status = Literal["passed", "failed", "skipped"]

#: Why a check was skipped, as :attr:`CheckResult.reason` says it.
SkipReason = Literal[
    "no-success",
    "no-fixture-response",
    "not-held",
    "not-applicable",
    "nothing-to-send",
    "no-error-response",
    "unimplemented",
    "deadline",
    "request-limit",
    "not-installed",
    "not-judged",
]

#: Skip reason -> (why, in the words of a sentence's subject; what would examine the check).
SKIP_REASONS: dict[str, tuple[str, str]] = {
    "no-success": (
        "no request of the operation was answered 200",
        "--fixtures FILE with a response of the operation for the key's project (a known-good "
        "request) would examine them",
    ),
    "no-fixture-response": (
        "no fixture response of the operation was there to compare with",
        "--fixtures FILE with a response of the operation would examine them",
    ),
    "not-held": (
        "no 200 response held what they examine (a field of that kind)",
        "a known-good request in --fixtures whose response holds one would examine them",
    ),
    "not-applicable": (
        "the request message has nothing they examine (a REQUIRED field, a rule a value breaks "
        "alone)",
        "nothing would: they do not apply to this schema",
    ),
    "nothing-to-send": (
        "no known-good request sets a field they write in another form",
        "a known-good request in --fixtures that sets such a field would examine them",
    ),
    "no-error-response": (
        "no error response of the kind they examine came",
        "nothing on this side: the server answered the requests meant to fail otherwise",
    ),
    "unimplemented": (
        "the operation is not implemented (501 unimplemented)",
        "the server implementing the operation would examine them",
    ),
    "deadline": (
        "the run's --deadline passed first",
        "a longer --deadline, or fewer operations (--operation), would examine them",
    ),
    "request-limit": (
        f"the run's limit of {MAX_REQUESTS:,} requests was reached first",
        "fewer operations a run (--operation) would examine them",
    ),
    "not-installed": (
        "protovalidate, the rules engine, is not installed",
        "pip install 'projectops[server]' would examine them",
    ),
    "not-judged": (
        "the responses were over --max-judged-bytes",
        "a larger --max-judged-bytes would examine them",
    ),
}


@dataclass(frozen=True)
class FieldDifference:
    """One field where a response differs from the fixture's response (``fixtures.response``).

    Attributes:
        path: the field's path as violations name it (docs/contract.md §4.4):
            ``environments[0].name``; outside text escaped and cut, the key redacted.
        expected: the fixture's value as JSON, escaped, cut with a count and the key redacted;
            ``None``: the fixture's response does not have the field.
        received: the server's value, shown as `expected` is; ``None``: the response does not
            have the field.
    """

    path: str
    expected: str | None
    received: str | None

    def sentence(self) -> str:
        """This difference as the report's line shows it.

        Returns:
            ``<path> is <received>, expected <expected>``, ``absent`` for a missing side.
        """
        # A JSON text is never empty: `or` stands for a missing side only.
        return f"{self.path} is {self.received or 'absent'}, expected {self.expected or 'absent'}"


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
        reason: why it was skipped, a key of :data:`SKIP_REASONS`; ``""`` (the default) when
            it was not.
        differences: the fields where a response differs from the fixture's (the first
            differing response's, ``fixtures.response`` only); none by default.
    """

    id: str
    operation: str
    level: str
    status: Status
    detail: str = ""
    reason: SkipReason | Literal[""] = ""
    differences: tuple[FieldDifference, ...] = ()

    def sentence(self) -> str:
        """The detail and the differences, as the report's line shows them after the status.

        Returns:
            :attr:`detail`, then each of :attr:`differences`; ``""`` for a pass.
        """
        if not self.differences:
            return self.detail
        fields = "; ".join(difference.sentence() for difference in self.differences)
        return f"{self.detail}; the first differing response: {fields}"


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

    @property
    def examined(self) -> int:
        """How many checks were examined: passed or failed, not skipped.

        Returns:
            The number of results in :attr:`checks` that are not ``"skipped"``.
        """
        return len(self.checks) - self.count("skipped")

    def skips(self) -> dict[SkipReason | Literal[""], list[CheckResult]]:
        """The skipped checks by reason, the reasons in :data:`SKIP_REASONS`' order.

        Returns:
            A new ``dict``: reason -> its skipped results, in the report's order.
        """
        order = [*SKIP_REASONS, ""]
        grouped: dict[SkipReason | Literal[""], list[CheckResult]] = {}
        for check in sorted(self.checks, key=lambda check: order.index(check.reason)):
            if check.status == "skipped":
                grouped.setdefault(check.reason, []).append(check)
        return grouped

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
            "examined": self.examined,
            "total": len(self.checks),
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
        sentence = check.sentence()
        write(line + (f": {sentence}" if sentence else "") + "\n")
    for line in _summary(report):
        write(line + "\n")


def _summary(report: Report) -> list[str]:
    """The lines after the checks' in the text report: what was examined of how much, the
    skips grouped by reason with what would examine them, and the run's bounds.

    Args:
        report: the run's report.

    Returns:
        A new list of lines, without line feeds.
    """
    must = sum(1 for c in report.checks if c.status == "failed" and c.level == "must")
    lines = [
        f"{report.examined} of {len(report.checks)} checks examined: "
        f"{report.count('passed')} passed, {report.count('failed')} failed ({must} must); "
        f"{report.count('skipped')} skipped; {report.requests} requests sent to "
        f"{outside_text(report.base_url, 200)}"
    ]
    if report.unimplemented:
        lines.append(f"unimplemented: {', '.join(report.unimplemented)}")
    if report.stopped is not None:
        lines.append(f"stopped by --deadline {report.stopped:g} s")
    for reason, skipped in report.skips().items():
        ids = ", ".join(dict.fromkeys(check.id for check in skipped))
        operations = len({check.operation for check in skipped})
        why, remedy = SKIP_REASONS.get(reason, ("as each line says", "see each line"))
        lines.append(
            f"{len(skipped)} skipped ({ids}; in {operations} operation(s)): {why}; {remedy}"
        )
    return lines


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
        detail = _xml(check.sentence())
        if check.status == "failed":
            failure = ElementTree.SubElement(case, "failure", message=f"{check.level}: {detail}")
            failure.text = detail
        elif check.status == "skipped":
            ElementTree.SubElement(case, "skipped", type="skip", message=detail).text = detail
    return bytes(ElementTree.tostring(suites, encoding="utf-8", xml_declaration=True))
