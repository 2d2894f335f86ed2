"""``projectops conformance``: the contract's checks run against any server of this API
(docs/conformance.md, which states the requests sent, the skips and the bounds).

The requests are raw (invalid bodies, no key, a wrong key) through the clients' bounded
probe, all within the run's deadline. Each answer is judged once, as it comes
(:func:`~projectops.conformance._catalogue.judge_response`), in a worker thread the run stops
waiting for at its deadline plus one time-out; a response over the judged size
(:data:`~projectops.conformance._report.MAX_JUDGED_BYTES`) is not judged, which bounds the
run's memory whatever the responses' shape. A check passes only when it examined what it checks,
else it is ``skipped``, saying why. At most ``32 + 4 x (REQUIRED top-level
fields) + (rules of top-level request fields)`` requests per operation, :data:`MAX_REQUESTS` in
all.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, cast

import httpx2
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message

import projectops
from projectops import conventions, error_cases, registry
from projectops._generate import generate
from projectops._text import escape, outside_text
from projectops.client import RawClient, ResponseTimedOut, ServiceUnreachable
from projectops.codec import to_dict, to_json
from projectops.conformance import _catalogue, _report
from projectops.conformance._report import (
    MAX_REQUESTS,
    CheckResult,
    FieldDifference,
    Report,
    SkipReason,
    Status,
)
from projectops.conventions import API_KEY_HEADER, CONTENT_TYPE
from projectops.fixtures import FixtureProject
from projectops.registry import Operation

__all__ = ["MAX_FIXTURE_REQUESTS", "run_checks"]

# How the key header of a request is set: the key in use, none, or a key no server knows.
KeyUse = Literal["own", "none", "wrong"]

# Characters of a sent body and of a response shown in a failure's detail.
_SENT_CHARS = 80
_RESPONSE_CHARS = 300
# Characters of a check's detail in the report.
_DETAIL_CHARS = 1000


class BudgetSpent(Exception):
    """The run sent :data:`MAX_REQUESTS` requests; the check at hand is skipped."""


class DeadlinePassed(BudgetSpent):
    """The run's deadline (``--deadline``) passed; the check at hand is skipped."""


@dataclass
class Probe:
    """One request and what came back: `status` (``None``: no response, `problem` says why),
    `headers` found by their lower-cased names (repeats joined), `excerpt` (outside text, key
    redacted)."""

    sent: str
    status: int | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    excerpt: str = ""
    truncated: bool = False
    problem: str = ""
    #: Whole, but over the judged size: only its bytes' digest was taken.
    unjudged: bool = False

    def shown(self) -> str:
        """``sent ...; got <status> <excerpt>`` (or ``no response: ...``)."""
        if self.status is None:
            return f"sent {self.sent}; no answer: {self.problem}"
        return f"sent {self.sent}; got {self.status} {self.excerpt}"


class RunClient:
    """The conformance run's client, within the run's bounds: raw requests to `base_url`,
    each within `timeout` s and `max_response_bytes`, all before `run_deadline` (a
    :func:`time.monotonic` instant or ``None``); answers up to `max_judged_bytes` judged, each
    by `run_deadline` plus `timeout` (or within `timeout`)."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float,
        max_response_bytes: int,
        transport: httpx2.BaseTransport | None = None,
        run_deadline: float | None = None,
        max_judged_bytes: int = _report.MAX_JUDGED_BYTES,
    ) -> None:
        self._key = api_key
        self._timeout = timeout
        self._run_deadline = run_deadline
        self.count = 0
        self.max_judged_bytes = max_judged_bytes
        self._raw = RawClient(
            base_url,
            timeout=timeout,
            max_response_bytes=max_response_bytes,
            transport=transport,
            secrets=[api_key],
        )
        self.close = self._raw.close

    def shown(self, text: str, limit: int) -> str:
        """`text` (outside text, or ours quoting it) safe for the report: the key redacted in
        every spelling (the wrong key sent holds it too), escaped, cut to `limit` characters."""
        return outside_text(text, limit, [self._key])

    def check_deadline(self) -> None:
        if self._run_deadline is not None and time.monotonic() >= self._run_deadline:
            raise DeadlinePassed

    def judge(self, response_type: type[Message], probe: Probe, body: bytes) -> _catalogue.Verdict:
        """The verdict on a whole response; over :attr:`max_judged_bytes`, only its digest
        (`probe` marked ``unjudged``). Judging runs in a daemon thread that the run stops
        waiting for at its deadline plus one time-out (without a deadline: after one time-out).

        Raises:
            DeadlinePassed: the judging ran past the run's deadline plus one time-out.
        """
        if len(body) > self.max_judged_bytes:
            probe.unjudged = True
            return _catalogue.Verdict(digest=hashlib.sha256(body).hexdigest())
        status = probe.status or 0
        done: list[_catalogue.Verdict] = []
        failed: list[BaseException] = []

        def work() -> None:
            # judge_response promises never to raise; should it, the thread's failure is named
            # here, in one redacted line, not taken for the deadline nor printed as a traceback.
            try:
                done.append(_catalogue.judge_response(response_type, status, body))
            except BaseException as exc:  # whatever it is, it is reported
                failed.append(exc)

        # A daemon: an abandoned one does not hold the process at its exit.
        worker = threading.Thread(target=work, name="projectops-judge", daemon=True)
        worker.start()
        end = time.monotonic() if self._run_deadline is None else self._run_deadline
        worker.join(max(0.0, end + self._timeout - time.monotonic()))
        if failed:
            check = _catalogue.ERRORS
            if status == 200:
                check = _catalogue.DECODES
            why = f"not judged: judging failed ({type(failed[0]).__name__}: {failed[0]})"
            return _catalogue.Verdict(problems={check: [_catalogue.Problem(None, why)]})
        if not done:
            raise DeadlinePassed
        return done[0]

    def send(
        self,
        method: str,
        path: str,
        body: bytes | None,
        *,
        key: KeyUse = "own",
        headers: Mapping[str, str] | None = None,
    ) -> tuple[Probe, bytes]:
        """Send one request: the probe and the response's body. Never raises for what the
        server does.

        Raises:
            BudgetSpent: :data:`MAX_REQUESTS` requests were sent already.
            DeadlinePassed: the deadline passed before the request or its whole response.
        """
        if self.count >= MAX_REQUESTS:
            raise BudgetSpent
        self.check_deadline()
        self.count += 1
        sent = {
            "Content-Type": CONTENT_TYPE,
            "Accept": CONTENT_TYPE,
            "User-Agent": f"projectops/{projectops.__version__} conformance",
        }
        if key != "none":
            sent[API_KEY_HEADER] = self._key if key == "own" else f"{self._key}-not-a-key"
        probe = Probe(_describe(method, path, body, key, headers))
        try:
            answer = self._raw.send(
                method, path, body, {**sent, **(headers or {})}, deadline=self._run_deadline
            )
        except ValueError as exc:  # a header the probe refuses to send: nothing went out
            probe.problem = f"not sent: {self.shown(str(exc), 300)}"
            return probe, b""
        except ResponseTimedOut:
            self.check_deadline()  # the run's bound, not the server, ended it: not judged
            probe.problem = f"no complete answer within the time-out of {self._timeout:g} s"
            return probe, b""
        except ServiceUnreachable as exc:
            probe.problem = outside_text(str(exc), 300)  # the key redacted by the client
            return probe, b""
        # Looked up in any case, a repeated name's values joined (in time linear in their
        # number); Latin-1, as the client decoded them.
        probe.headers = httpx2.Headers(answer.headers, encoding="latin-1")
        probe.truncated = answer.truncated
        encoding = probe.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            probe.problem = f"Content-Encoding {outside_text(encoding, 40)} not asked for"
            return probe, b""
        probe.status = answer.status
        # All of the (capped) body: outside_text's note then counts every character cut.
        probe.excerpt = self.shown(answer.body.decode("utf-8", "replace"), _RESPONSE_CHARS)
        if answer.truncated:
            probe.excerpt += f" [{len(answer.body):,} bytes or more]"
        return probe, answer.body


def _describe(
    method: str, path: str, body: bytes | None, key: KeyUse, headers: Mapping[str, str] | None
) -> str:
    """What a request was, for a failure's detail; the key is never shown."""
    who = {"own": "the key in use", "none": "no key", "wrong": "a wrong key"}[key]
    extra = "".join(f", {name}: {value}" for name, value in (headers or {}).items())
    text = f"{method} {path} ({who}{outside_text(extra, 120)})"
    if body is None:
        return text
    if len(body) > _SENT_CHARS * 4:
        return f"{text} with a body of {len(body):,} bytes"
    return f"{text} with the body {outside_text(body.decode('utf-8', 'replace'), _SENT_CHARS)}"


#: Fixture requests sent per operation (the first ones of the file).
MAX_FIXTURE_REQUESTS = 20


@dataclass(frozen=True)
class _Outcome:
    """A check's outcome, before it is a :class:`CheckResult`: its status, detail (not yet
    redacted, escaped and cut) and, when skipped, the reason."""

    status: Status
    detail: str = ""
    reason: SkipReason | Literal[""] = ""


_PASS = _Outcome("passed")
# The checks judged on every response, and what a 200 response must hold to examine each.
_HELD = {
    _catalogue.DECODES: "",
    _catalogue.RULES: "a message that decodes, or protovalidate is not installed (extra server)",
    _catalogue.CAMEL_CASE: "a field whose JSON name differs from its proto name",
    _catalogue.INT64_STRINGS: "a 64-bit integer",
    _catalogue.ENUM_NAMES: "an enum value",
    _catalogue.TIMESTAMPS: "a timestamp",
    _catalogue.ZERO_VALUES: "a field without presence",
    _catalogue.ERRORS: "",
}
_MALFORMED = error_cases.MALFORMED_BODY.http_status
_MISSING = error_cases.MISSING_REQUIRED.http_status
_INVALID = str(error_cases.MISSING_REQUIRED.code)
_NOT_IMPLEMENTED = error_cases.NOT_IMPLEMENTED.http_status
_FIXTURES = "fixtures.response"
_REQUIRED = "request.required"
_VIOLATION_PATHS = "errors.violation-paths"
# Characters of a value, and of a field's path, in a fixtures.response difference.
_VALUE_CHARS = 100


class _Refusal(NamedTuple):
    """What a request breaking one rule of a field got: `refused` passed when it was answered
    400 ``invalid_argument``; `named` passed when a violation named the field, failed when none
    did, ``None`` when it was not refused."""

    refused: _Outcome
    named: _Outcome | None = None


def _fail(*parts: str) -> _Outcome:
    # Several requests may be named; the whole is cut, the key redacted, by _OperationRun.run.
    return _Outcome("failed", "; ".join(parts))


def _skip(reason: SkipReason, detail: str) -> _Outcome:
    return _Outcome("skipped", detail, reason)


class _Unimplemented(Exception):
    """501 ``unimplemented`` to a request with the key in use."""


class _OperationRun:
    """The checks of one operation: the requests they send and their results."""

    def __init__(
        self,
        client: RunClient,
        op: Operation,
        project: FixtureProject | None,
        *,
        known_paths: frozenset[str],
        deadline: float | None,
    ) -> None:
        self._client = client
        self._op = op
        self._project = project
        self._known_paths = known_paths
        self._deadline = deadline
        self.stopped = False
        self.unimplemented = False
        self.spent = False
        given = project.answers.get(op.name, ()) if project else ()
        # (request, the fixture's response or None), known to succeed; without one, a request
        # derived from the schema (REQUIRED fields set, every rule kept; `{}` without them).
        self._good: list[tuple[Message, Message | None]] = [
            (a.request, a.response) for a in given[:MAX_FIXTURE_REQUESTS] if a.error is None
        ] or [(generate(op.request_type, op.name, minimal=True), None)]
        # Each known-good request answered 200, with the digest of its response.
        self._responded: list[tuple[Message, str]] = []
        self._results: dict[str, _Outcome] = {}
        # Where the first response that differs from its fixture's does (fixtures.response).
        self._differences: tuple[FieldDifference, ...] = ()
        self._failures: dict[str, list[str]] = {check: [] for check in _HELD}
        self._examined: set[str] = set()
        self._got_200 = False
        self._unjudged = 0  # responses over the judged size

    def _post(
        self,
        body: bytes | None,
        *,
        key: KeyUse = "own",
        headers: Mapping[str, str] | None = None,
        method: str = error_cases.ALLOWED_METHOD,
        path: str | None = None,
    ) -> tuple[Probe, _catalogue.Verdict | None]:
        """Send a request and judge its response (``None``: no whole response to judge)."""
        probe, body = self._client.send(
            method, path or self._op.path, body, key=key, headers=headers
        )
        if probe.status is None:
            return probe, None
        if probe.truncated:
            if probe.status == 200:
                self._examined.add(_catalogue.DECODES)
                too_large = _catalogue.Problem(None, "larger than --max-response-bytes")
                self._note(_catalogue.DECODES, [too_large], probe)
            return probe, None
        verdict = self._client.judge(self._op.response_type, probe, body)
        del body
        if probe.unjudged:
            self._unjudged += 1
            return probe, verdict
        # Another path's or method's 2xx is no response of the operation.
        ours = path is None and method == error_cases.ALLOWED_METHOD
        if ours or probe.status not in range(200, 300):
            self._got_200 |= probe.status == 200
            self._examined |= verdict.examined
            for check, problems in verdict.problems.items():
                self._note(check, problems, probe)
        error = verdict.error
        if ours and key == "own" and probe.status == _NOT_IMPLEMENTED and error:
            if error.code == error_cases.NOT_IMPLEMENTED.code:
                raise _Unimplemented
        return probe, verdict

    def _note(self, check: str, problems: list[_catalogue.Problem], probe: Probe) -> None:
        if len(self._failures[check]) < 6:  # three responses' worth
            # The edge: each problem said once, the key redacted, escaped and cut.
            shown = ", ".join(self._client.shown(p.text(), 200) for p in problems)
            self._failures[check] += [shown, probe.shown()]

    @contextmanager
    def _check(self, check_id: str) -> Iterator[None]:
        try:
            yield
        except DeadlinePassed:
            self.stopped = True
        except BudgetSpent:  # the check's result, and those of the checks it held, are `missed`
            self.spent = True
        except _Unimplemented:
            self.unimplemented = True
        except ImportError as exc:  # protovalidate (extra `server`), for the rule checks
            self._results[check_id] = _skip("not-installed", f"{exc.name} is not installed")

    def _no_success(self) -> _Outcome:
        if self._good[0][1] is not None:  # a fixture's request, not the derived one
            why = "none of the --fixtures requests was"
        elif self._project is None:
            why = "no --fixtures was given, and the request derived from the schema was not"
        else:
            why = (
                f"the --fixtures project {self._project.name!r} has no response of it, and the "
                "request derived from the schema was not"
            )
        return _skip("no-success", f"no request of {self._op.name} was answered 200: {why}")

    def _unauthorized(self, body: bytes, key: KeyUse) -> _Outcome:
        """Whether `body` sent without the key, or with a wrong one, gets 401."""
        return self._status(self._post(body, key=key)[0], error_cases.UNAUTHENTICATED.http_status)

    def run(self) -> list[CheckResult]:
        sample = to_json(self._good[0][0]).encode()
        # Each step's outcome, or the outcomes of the checks it judges (by check id).
        steps = (
            ("auth.no-key", lambda: self._unauthorized(sample, key="none")),
            ("auth.wrong-key", lambda: self._unauthorized(sample, key="wrong")),
            ("auth.before-body", lambda: self._unauthorized(b"{", key="none")),
            (_REQUIRED, self._required),
            ("request.not-object", self._not_object),
            ("request.rules", self._rules),
            (_FIXTURES, self._known_good),
            ("auth.scope-headers", self._scope_headers),
            ("request.proto-names", lambda: self._form(_catalogue.proto_names, "field names")),
            (
                "request.int64-numbers",
                lambda: self._form(_catalogue.int64_as_numbers, "int64 values"),
            ),
            ("request.unknown-fields", self._unknown_field),
            ("http.method", self._method),
            ("http.unknown-path", self._unknown_path),
            ("http.body-limit", self._body_limit),
        )
        for check_id, step in steps:
            if self.stopped or self.unimplemented:
                break
            with self._check(check_id):
                outcome = step()
                if isinstance(outcome, _Outcome):
                    outcome = {check_id: outcome}
                self._results.update(outcome)
        for check_id, held in _HELD.items():
            if self._failures[check_id]:
                self._results[check_id] = _fail(*self._failures[check_id])
            elif self.stopped or self.unimplemented or self.spent:
                continue  # a pass, or a skip for want of a response, would claim too much
            elif check_id in self._examined:
                self._results[check_id] = _PASS
            elif self._unjudged:
                limit = f"--max-judged-bytes ({self._client.max_judged_bytes:,} bytes)"
                self._results[check_id] = _skip(
                    "not-judged", f"responses over {limit} are not judged"
                )
            elif not _catalogue.CHECKS[check_id].needs_success:  # it judges the error responses
                self._results[check_id] = _skip("no-error-response", "only 2xx responses came")
            elif not self._got_200:
                self._results[check_id] = self._no_success()
            else:
                self._results[check_id] = _skip("not-held", f"no 200 response held {held}")
        missed = _skip("unimplemented", f"{self._op.name} is not implemented (501 unimplemented)")
        if self.stopped:
            missed = _skip(
                "deadline", f"not run: the run's --deadline of {self._deadline:g} s passed"
            )
        elif self.spent:
            limit = f"{MAX_REQUESTS:,} requests"
            missed = _skip("request-limit", f"not run: the run's limit of {limit} was reached")
        results = []
        for check_id, spec in _catalogue.CHECKS.items():
            outcome = self._results.get(check_id, missed)
            # A server's text (an unknown code, a field's value) may echo the key: never shown.
            detail = self._client.shown(outcome.detail, _DETAIL_CHARS)
            differences = self._differences if check_id == _FIXTURES else ()
            results.append(
                CheckResult(
                    check_id,
                    self._op.name,
                    spec.level,
                    outcome.status,
                    detail,
                    outcome.reason,
                    differences,
                )
            )
        return results

    # --- the checks ---------------------------------------------------------------------------

    def _status(self, probe: Probe, wanted: int) -> _Outcome:
        return _PASS if probe.status == wanted else _fail(f"expected {wanted}", probe.shown())

    def _required(self) -> dict[str, _Outcome]:
        """``request.required``, and ``errors.violation-paths`` judged on the same answers."""
        fields = _catalogue.required_fields(self._op)
        if not fields:
            reason = f"the request of {self._op.name} has no REQUIRED field"
            none = _skip("not-applicable", reason)
            return {_REQUIRED: none, _VIOLATION_PATHS: none}
        base = to_dict(self._good[0][0])
        failures: list[str] = []
        unnamed: list[str] = []
        named = False
        for fd in fields:
            rest = {k: v for k, v in base.items() if k not in (fd.json_name, fd.name)}
            variants = [("missing", rest)]
            if fd.type == fd.TYPE_STRING and not fd.is_repeated:
                variants += [
                    ("blank", {**rest, fd.json_name: blank}) for blank in _catalogue.BLANK_TRIES
                ]
            for how, data in variants:
                refusal = self._invalid(
                    f"{fd.json_name} {how}", fd.json_name, json.dumps(data).encode()
                )
                if refusal.refused.status == "failed":
                    failures.append(refusal.refused.detail)
                if refusal.named is _PASS:
                    named = True
                elif refusal.named is not None:
                    unnamed.append(refusal.named.detail)
        paths = _skip("no-error-response", f"no {_MISSING} {_INVALID} response came")
        if unnamed:
            paths = _fail(*unnamed)
        elif named:
            paths = _PASS
        required = _PASS
        if failures:
            required = _fail(*failures)
        return {_REQUIRED: required, _VIOLATION_PATHS: paths}

    def _invalid(self, label: str, name: str, body: bytes) -> _Refusal:
        """Send `body`, which breaks a rule of the field `name` (`label` names the request in a
        failure): whether it was refused, and whether the refusal named the field."""
        probe, verdict = self._post(body)
        error = verdict.error if verdict else None
        if probe.status != _MISSING or error is None or error.code != _INVALID:
            return _Refusal(_fail(f"{label}: expected {_MISSING} {_INVALID}", probe.shown()))
        if name in {v.field for v in error.violations}:
            return _Refusal(_PASS, _PASS)
        return _Refusal(_PASS, _fail(f"{label}: no violation names {name!r}", probe.shown()))

    def _rules(self) -> _Outcome:
        """One request per rule of a top-level request field, breaking it alone."""
        broken = list(_catalogue.broken_requests(self._op, self._good[0][0]))
        failures: list[str] = []
        underived = [f"{name} {rule}" for name, rule, r in broken if r is None]
        for name, rule, request in broken:
            if request is None:
                continue
            # The label: "version string.max_len". A refusal that names no field fails too.
            refusal = self._invalid(f"{name} {rule}", name, to_json(request).encode())
            outcomes = (refusal.refused, refusal.named or _PASS)
            failures += [outcome.detail for outcome in outcomes if outcome.status == "failed"]
        if failures:
            return _fail(*failures)
        if not broken:
            return _skip("not-applicable", f"the request of {self._op.name} has no rule")
        if not underived:
            return _PASS
        # A CEL rule, a rule of a list, a bound at the type's end: no value breaks it alone.
        unsent = f"no value breaking one rule alone was derived for {', '.join(underived)}"
        if len(underived) == len(broken):
            return _skip("not-applicable", f"{unsent}, so no request was sent")
        return _Outcome(
            "passed", f"each request breaking one rule was refused; {unsent}, unchecked"
        )

    def _not_object(self) -> _Outcome:
        failures: list[str] = []
        for body in (b"[]", b"{"):
            probe, _ = self._post(body)
            if probe.status != _MALFORMED:
                failures += [f"expected {_MALFORMED}", probe.shown()]
        return _fail(*failures) if failures else _PASS

    def _known_good(self) -> _Outcome:
        failures: list[str] = []
        compared = False
        unjudged = False
        for request, expected in self._good:
            probe, verdict = self._post(to_json(request).encode())
            if probe.status == 200 and verdict is not None:
                self._responded.append((request, verdict.digest))
            unjudged |= probe.unjudged
            if expected is None or probe.unjudged:  # none to compare with, or too large
                continue
            compared = True
            if probe.status != 200 or verdict is None or verdict.message is None:
                failures += [f"expected 200 and a {self._op.response_type.__name__}", probe.shown()]
            elif verdict.message != expected:
                failures.append(self._differs(probe, expected, verdict.message))
        if compared:
            return _fail(*failures) if failures else _PASS
        if unjudged:
            limit = f"--max-judged-bytes ({self._client.max_judged_bytes:,} bytes)"
            return _skip("not-judged", f"the responses to compare were over {limit}")
        return _skip("no-fixture-response", f"--fixtures has no response of {self._op.name}")

    def _differs(self, probe: Probe, expected: Message, received: Message) -> str:
        """The sentence of a 200 response that is not the fixture's; the first such response's
        differing fields become :attr:`CheckResult.differences`."""
        count, found = _catalogue.response_differences(expected, received)
        if not self._differences:
            self._differences = tuple(
                FieldDifference(
                    self._client.shown(path, _VALUE_CHARS),
                    self._value(expected_value),
                    self._value(received_value),
                )
                for path, expected_value, received_value in found
            )
        return f"sent {probe.sent}; the response differs from the fixture's in {count} field(s)"

    def _value(self, value: Any) -> str | None:
        """A JSON value of a compared response as the report shows it; ``None``: absent."""
        if value is _catalogue.ABSENT:
            return None
        return self._client.shown(json.dumps(value, ensure_ascii=False), _VALUE_CHARS)

    def _same(
        self,
        label: str,
        make: Callable[[Message], tuple[Any, int]],
        *,
        headers: Mapping[str, str] | None = None,
        what: str = "",
    ) -> _Outcome:
        """Send `make`'s form of the first request answered 200 that it changes; pass when the
        answer is that request's."""
        if not self._responded:
            return self._no_success()
        for request, digest in self._responded:
            data, changed = make(request)
            if changed:
                probe, verdict = self._post(json.dumps(data).encode(), headers=headers)
                if probe.status == 200 and verdict is not None and verdict.digest == digest:
                    return _PASS
                wanted = "expected the answer of the canonical request (200)"
                return _fail(f"{label}: {wanted}", probe.shown())
        return _skip(
            "nothing-to-send",
            f"no request of {self._op.name} known to succeed has {what} with another form",
        )

    def _scope_headers(self) -> _Outcome:
        # A header value is visible ASCII: a project named "café" is sent as "not-caf\xe9".
        name = self._project.name if self._project else "another-project"
        stand_in = escape(name).encode("ascii", "backslashreplace").decode("ascii")
        other = f"not-{stand_in[:100]}"
        return self._same(
            "with Project-Id/Organization-Id of another project",
            lambda request: (to_dict(request), 1),
            headers={"Project-Id": other, "Organization-Id": other},
        )

    def _form(self, make: Callable[[Message], tuple[Any, int]], what: str) -> _Outcome:
        return self._same(f"{what} in their other form", make, what=what)

    def _unknown_field(self) -> _Outcome:
        name = _catalogue.unknown_field_name(cast(Descriptor, self._op.request_type.DESCRIPTOR))
        return self._same("with an unknown field", lambda r: ({**to_dict(r), name: "x"}, 1))

    def _method(self) -> _Outcome:
        probe, _ = self._post(None, method="GET")
        if probe.status != error_cases.WRONG_METHOD.http_status:
            return _fail(f"expected {error_cases.WRONG_METHOD.http_status}", probe.shown())
        for name, value in error_cases.WRONG_METHOD.headers.items():
            got = {v.strip().upper() for v in probe.headers.get(name.lower(), "").split(",")}
            if value.upper() not in got:
                return _fail(f"expected the header {name}: {value}", probe.shown())
        return _PASS

    def _unknown_path(self) -> _Outcome:
        path = conventions.operation_path(f"{self._op.name}_unknown")
        while path in self._known_paths:
            path += "_x"
        return self._status(self._post(b"{}", path=path)[0], error_cases.NO_OPERATION.http_status)

    def _body_limit(self) -> _Outcome:
        body = b"{" + b" " * conventions.MAX_BODY_BYTES + b"}"
        return self._status(self._post(body)[0], error_cases.BODY_TOO_LARGE.http_status)


def run_checks(
    base_url: str,
    api_key: str,
    *,
    project: FixtureProject | None = None,
    timeout: float = conventions.DEFAULT_CALL_TIMEOUT,
    max_response_bytes: int = conventions.DEFAULT_MAX_RESPONSE_BYTES,
    transport: httpx2.BaseTransport | None = None,
    deadline: float | None = _report.DEFAULT_DEADLINE,
    operations: Sequence[Operation] | None = None,
    max_judged_bytes: int = _report.MAX_JUDGED_BYTES,
) -> Report:
    """Run every check of the catalogue against a server of the API (docs/conformance.md).

    Args:
        base_url: the server's root URL (docs/contract.md §1.4).
        api_key: a valid API key of a project of that server.
        project: the fixtures project of that key, whose answers (not errors) give requests
            known to succeed; ``None`` (the default): only ``{}``, for an operation without
            REQUIRED fields, and the checks that need a 200 response of the others are skipped.
        timeout: seconds one request may take as a whole; 30 by default.
        max_response_bytes: the largest answer body read, in bytes; 32 MiB by default.
        transport: an ``httpx2.BaseTransport`` instead of the network (an app in the same
            process); ``None`` (the default): the network.
        deadline: seconds the whole run may take, 600 by default; the checks it cuts short are
            skipped saying so; judging a response may end one `timeout` past it. ``None``:
            bounded only by `timeout` and the run's 1,000 requests at most.
        operations: the operations to check; ``None`` (the default): every operation of the
            registry.
        max_judged_bytes: the largest answer judged, in bytes (8 MiB by default); the checks a
            larger one would feed are skipped, saying so.

    Returns:
        The run's :class:`Report`.

    Raises:
        projectops.InvalidBaseUrl: `base_url` is not an absolute http(s) URL.
    """
    url = conventions.normalize_base_url(base_url, secrets=[api_key])
    ops = tuple(registry.operations() if operations is None else operations)
    start = time.monotonic()
    client = RunClient(
        url,
        api_key,
        timeout=timeout,
        max_response_bytes=max_response_bytes,
        transport=transport,
        run_deadline=None if deadline is None else start + deadline,
        max_judged_bytes=max_judged_bytes,
    )
    known_paths = frozenset(op.path for op in ops)
    results: list[CheckResult] = []
    stopped = False
    unimplemented: list[str] = []
    try:
        for op in ops:
            run = _OperationRun(client, op, project, known_paths=known_paths, deadline=deadline)
            results += run.run()
            stopped = stopped or run.stopped
            if run.unimplemented:
                unimplemented.append(op.name)
    finally:
        client.close()
    return Report(
        tuple(results),
        client.count,
        stopped=deadline if stopped else None,
        unimplemented=tuple(unimplemented),
        seconds=time.monotonic() - start,
        base_url=conventions.shown_url(url, [api_key]),
    )
