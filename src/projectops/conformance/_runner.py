"""``projectops conformance``: the API contract (``docs/contract.md``) as checks run against any
server of this API.

For each operation of the registry it sends a bounded set of requests, derived from the
descriptors and the catalogue of :mod:`projectops.conformance` (no operation, path or field is
named here), and judges each answer: one line per check (operation, check id, ``passed``,
``failed`` or ``skipped``, and for a failure what was sent and what came back, escaped, cut and
with the key redacted), or with ``--json`` a report::

    {"passed": 30, "failed": 1, "skipped": 9, "stopped": false,
     "checks": [{"id": "auth.no-key", "operation": "get_release_details", "level": "must",
                 "status": "passed", "detail": ""}, ...]}

``must`` checks hold the contract; ``should`` checks this package's design. The exit code is 0
when no ``must`` check failed and the run was not stopped by ``--deadline``,
:data:`EXIT_CONFORMANCE_FAILED` (6) otherwise (a stopped run left checks, ``must`` ones among
them, not run: the server is not shown to conform), 2 for a usage error (no key, an unreadable
fixtures file, ...).

``--fixtures FILE`` (the mock server's format, :mod:`projectops.fixtures`) gives the
requests known to succeed: those of the project whose ``apiKey`` is the key in use. Each is
checked to be answered with the fixture's response, and the checks that judge a 200 answer use
them; an operation without one has those checks ``skipped``, saying why.

Bounds: at most :data:`MAX_FIXTURE_REQUESTS` fixture requests per operation, so at most
``30 + 2 x (REQUIRED top-level request fields)`` requests per operation, and never more than
:data:`MAX_REQUESTS` in a run. Each request is bounded as a whole by ``--timeout`` (connecting
to the answer's last byte: the sync client's deadline transport), each answer is read up
to ``--max-response-bytes``, and the run as a whole by ``--deadline`` (:data:`DEFAULT_DEADLINE`:
1,000 requests to a server that never answers would take 1,000 time-outs). Past it no request
is sent, one under way is cut short and not judged, and the checks not run are ``skipped``.
The requests are raw (the runner must send invalid bodies), through
the client's own transport pieces (:mod:`projectops.client._transport`); redirects are never
followed and no cookie is kept.

This module imports httpx only when a run starts, so ``projectops --help`` stays quick.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

from google.protobuf.descriptor import Descriptor

from projectops._text import outside_text
from projectops.answers import (
    ALLOWED_METHOD,
    BODY_TOO_LARGE,
    MALFORMED_BODY,
    MISSING_REQUIRED,
    NO_OPERATION,
    UNAUTHENTICATED,
    WRONG_METHOD,
)
from projectops.client.failures import EXIT_CONFORMANCE_FAILED
from projectops.codec import from_json, read_error_body, to_dict, to_json
from projectops.conformance._catalogue import (
    CHECKS,
    JSON_CHECKS,
    error_problem,
    int64_as_numbers,
    mapping_problems,
    proto_names,
    required_fields,
    unknown_field_name,
)
from projectops.conformance._http import (
    DEFAULT_DEADLINE,
    MAX_REQUESTS,
    NOT_JSON,
    BudgetSpent,
    DeadlinePassed,
    Exchange,
    KeyUse,
    Sender,
)
from projectops.conformance._report import CheckResult, Report, Status
from projectops.conventions import (
    MAX_BODY_BYTES,
    normalize_base_url,
    operation_path,
)
from projectops.errors import InvalidArgument
from projectops.fixtures import (
    FixtureAnswer,
    FixtureProject,
)
from projectops.registry import Operation, operations

if TYPE_CHECKING:
    import httpx

__all__ = [
    "DEFAULT_DEADLINE",
    "EXIT_CONFORMANCE_FAILED",
    "MAX_FIXTURE_REQUESTS",
    "MAX_REQUESTS",
    "CheckResult",
    "Report",
    "run_checks",
]

#: Fixture requests sent per operation (the first ones of the file).
MAX_FIXTURE_REQUESTS = 20

# What a failure's detail is cut to as a whole (several requests may be named).
_DETAIL_CHARS = 1000


def _fail(*parts: str) -> tuple[Status, str]:
    return "failed", outside_text("; ".join(parts), _DETAIL_CHARS)


_PASS: tuple[Status, str] = ("passed", "")
_401 = UNAUTHENTICATED.http_status
_MALFORMED = MALFORMED_BODY.http_status
_MISSING = MISSING_REQUIRED.http_status


class _OperationRun:
    """The checks of one operation: the requests they send and their results."""

    def __init__(
        self,
        sender: Sender,
        key: str,
        op: Operation,
        project: FixtureProject | None,
        *,
        known_paths: frozenset[str],
        deadline: float | None,
    ) -> None:
        self._sender = sender
        self._key = key
        self._op = op
        self._project = project
        self._known_paths = known_paths
        self._deadline = deadline
        #: Whether the run's deadline stopped a check of this operation.
        self.stopped = False
        self._good: tuple[FixtureAnswer, ...] = (
            project.answers.get(op.name, ())[:MAX_FIXTURE_REQUESTS] if project else ()
        )
        self._exchanges: list[Exchange] = []
        self._results: dict[str, tuple[Status, str]] = {}
        # The answer each known-good request got, to compare its variants with.
        self._good_answers: list[Exchange] = []

    def _post(
        self,
        body: bytes | None,
        *,
        key: KeyUse = "own",
        headers: Mapping[str, str] | None = None,
        method: str = ALLOWED_METHOD,
        path: str | None = None,
    ) -> Exchange:
        exchange = self._sender.send(
            method, self._op.path if path is None else path, body, key=key, headers=headers
        )
        self._exchanges.append(exchange)
        return exchange

    @contextmanager
    def _check(self, check_id: str) -> Iterator[None]:
        try:
            yield
        except DeadlinePassed:
            self.stopped = True
            self._results[check_id] = self._not_run()
        except BudgetSpent:
            self._results[check_id] = ("skipped", f"the run's limit of {MAX_REQUESTS} requests")

    def _not_run(self) -> tuple[Status, str]:
        return ("skipped", f"not run: the run's --deadline of {self._deadline:g} s passed")

    def _no_success(self) -> tuple[Status, str]:
        if self._project is None:
            why = "no --fixtures given"
        else:
            why = f"the --fixtures project {self._project.name!r} has no answer of it"
        return (
            "skipped",
            f"no request of {self._op.name} known to succeed ({why}); --fixtures gives one: "
            "an answer of the operation for the project whose apiKey is the key in use",
        )

    def run(self) -> list[CheckResult]:
        """Run every check of the catalogue for the operation, in the catalogue's order."""
        sample = to_json(self._good[0].request).encode() if self._good else b"{}"
        steps = (
            ("auth.no-key", lambda: self._status(self._post(sample, key="none"), _401)),
            ("auth.wrong-key", lambda: self._status(self._post(sample, key="wrong"), _401)),
            ("auth.before-body", lambda: self._status(self._post(b"{", key="none"), _401)),
            ("request.required", self._required),
            ("request.not-object", self._not_object),
            ("fixtures.response", self._fixtures),
            ("auth.scope-headers", self._scope_headers),
            ("request.proto-names", lambda: self._variant(proto_names, "field names")),
            ("request.int64-numbers", lambda: self._variant(int64_as_numbers, "int64 values")),
            ("request.unknown-fields", self._unknown_field),
            ("http.method", self._method),
            ("http.unknown-path", self._unknown_path),
            ("http.body-limit", self._body_limit),
        )
        for check_id, step in steps:
            if self.stopped:
                # Not judged on what the deadline kept from happening (no fixture answer).
                self._results[check_id] = self._not_run()
                continue
            with self._check(check_id):
                outcome = step()
                if outcome is not None:
                    self._results[check_id] = outcome
        self._judge_successes()
        self._results["errors.error-response"] = self._error_bodies()
        if self.stopped:
            # Judged on the answers that came before the deadline: a failure stands, a pass
            # or a skip for want of an answer would claim more than was seen.
            for check_id in ("errors.error-response", "response.decodes", *JSON_CHECKS):
                if self._results[check_id][0] != "failed":
                    self._results[check_id] = self._not_run()
        out = []
        for check_id, spec in CHECKS.items():
            missed = self._not_run() if self.stopped else ("skipped", "not run")
            status, detail = self._results.get(check_id, missed)
            out.append(CheckResult(check_id, self._op.name, spec.level, status, detail))
        return out

    # --- the checks ---------------------------------------------------------------------------

    def _status(self, exchange: Exchange, wanted: int) -> tuple[Status, str]:
        if exchange.status == wanted:
            return _PASS
        return _fail(f"expected {wanted}", exchange.shown(self._key))

    def _required(self) -> None:
        fields = required_fields(self._op)
        if not fields:
            reason = f"the request of {self._op.name} has no REQUIRED field"
            self._results["request.required"] = ("skipped", reason)
            self._results["errors.violation-paths"] = ("skipped", reason)
            return
        base = to_dict(self._good[0].request) if self._good else {}
        failures: list[str] = []
        unnamed: list[str] = []
        for fd in fields:
            rest = {k: v for k, v in base.items() if k not in (fd.json_name, fd.name)}
            variants = [("missing", rest)]
            if fd.type == fd.TYPE_STRING and not fd.is_repeated:
                variants.append(("blank", {**rest, fd.json_name: " "}))
            for how, data in variants:
                exchange = self._post(json.dumps(data).encode())
                if exchange.status != _MISSING or not exchange.body.strip():
                    failures.append(f"{fd.json_name} {how}: expected {_MISSING} with a message")
                    failures.append(exchange.shown(self._key))
                    continue
                error = read_error_body(exchange.body)
                if how == "missing" and (
                    error is None or fd.json_name not in {v.field for v in error.violations}
                ):
                    unnamed.append(f"no violation names {fd.json_name!r}")
                    unnamed.append(exchange.shown(self._key))
        self._results["request.required"] = _fail(*failures) if failures else _PASS
        self._results["errors.violation-paths"] = _fail(*unnamed) if unnamed else _PASS

    def _not_object(self) -> tuple[Status, str]:
        failures: list[str] = []
        for body in (b"[]", b"{"):
            exchange = self._post(body)
            if exchange.status != _MALFORMED:
                failures += [f"expected {_MALFORMED}", exchange.shown(self._key)]
        return _fail(*failures) if failures else _PASS

    def _fixtures(self) -> tuple[Status, str]:
        if not self._good:
            return self._no_success()
        failures: list[str] = []
        for answer in self._good:
            exchange = self._post(to_json(answer.request).encode())
            self._good_answers.append(exchange)
            if exchange.status != 200:
                failures += ["expected 200", exchange.shown(self._key)]
                continue
            try:
                got = from_json(exchange.body, self._op.response_type)
            except InvalidArgument as exc:
                failures += [f"not a {self._op.response_type.__name__}: {exc.message}"]
                failures.append(exchange.shown(self._key))
                continue
            if got != answer.response:
                failures += ["the answer differs from the fixture's response"]
                failures.append(exchange.shown(self._key))
        return _fail(*failures) if failures else _PASS

    def _same(
        self, exchange: Exchange, what: str, base: Exchange | None = None
    ) -> tuple[Status, str]:
        """Whether `exchange` got the answer `base` got (default: the first known-good
        request's), compared as parsed JSON."""
        base = self._good_answers[0] if base is None else base
        if exchange.status == base.status and exchange.json_value() == base.json_value():
            return _PASS
        return _fail(
            f"{what}: expected the answer of the canonical request ({base.status})",
            exchange.shown(self._key),
        )

    def _scope_headers(self) -> tuple[Status, str]:
        if not self._good_answers:
            return self._no_success()
        name = self._project.name if self._project else ""
        other = f"not-{name}" if name else "another-project"
        headers = {"Project-Id": other, "Organization-Id": other}
        exchange = self._post(to_json(self._good[0].request).encode(), headers=headers)
        return self._same(exchange, "with Project-Id/Organization-Id of another project")

    def _variant(self, make: Any, what: str) -> tuple[Status, str]:
        if not self._good_answers:
            return self._no_success()
        for answer, base in zip(self._good, self._good_answers, strict=False):
            data, changed = make(answer.request)
            if changed:
                exchange = self._post(json.dumps(data).encode())
                return self._same(exchange, f"{what} in their other form", base)
        return (
            "skipped",
            f"no request of {self._op.name} known to succeed has {what} with another form",
        )

    def _unknown_field(self) -> tuple[Status, str]:
        if not self._good_answers:
            return self._no_success()
        data = to_dict(self._good[0].request)
        data[unknown_field_name(cast(Descriptor, self._op.request_type.DESCRIPTOR))] = "x"
        exchange = self._post(json.dumps(data).encode())
        return self._same(exchange, "with an unknown field")

    def _method(self) -> tuple[Status, str]:
        exchange = self._post(None, method="GET")
        wanted = WRONG_METHOD.http_status
        if exchange.status != wanted:
            return _fail(f"expected {wanted}", exchange.shown(self._key))
        for name, value in (WRONG_METHOD.headers or {}).items():
            got = {v.strip().upper() for v in exchange.headers.get(name.lower(), "").split(",")}
            if value.upper() not in got:
                return _fail(f"expected the header {name}: {value}", exchange.shown(self._key))
        return _PASS

    def _unknown_path(self) -> tuple[Status, str]:
        path = operation_path(f"{self._op.name}_unknown")
        while path in self._known_paths:
            path += "_x"
        exchange = self._post(b"{}", path=path)
        return self._status(exchange, NO_OPERATION.http_status)

    def _body_limit(self) -> tuple[Status, str]:
        body = b"{" + b" " * MAX_BODY_BYTES + b"}"
        return self._status(self._post(body), BODY_TOO_LARGE.http_status)

    def _judge_successes(self) -> None:
        """``response.decodes`` and the JSON-mapping checks, over every 200 answer."""
        ok = [e for e in self._exchanges if e.status == 200]
        checks = ("response.decodes", *JSON_CHECKS)
        if not ok:
            skipped = self._no_success() if not self._good else ("skipped", "no 200 answer")
            for check_id in checks:
                self._results[check_id] = skipped
            return
        failures: dict[str, list[str]] = {check_id: [] for check_id in checks}
        response_type = self._op.response_type
        for exchange in ok:
            if exchange.truncated:
                failures["response.decodes"] += ["larger than --max-response-bytes"]
                continue
            try:
                from_json(exchange.body, response_type, strict=True)
            except InvalidArgument as exc:
                failures["response.decodes"] += [
                    f"not a {response_type.__name__}: {outside_text(exc.message, 300)}",
                    exchange.shown(self._key),
                ]
            data = exchange.json_value()
            if data is NOT_JSON:
                continue
            for check_id, problems in mapping_problems(
                data, cast(Descriptor, response_type.DESCRIPTOR)
            ).items():
                if problems and not failures[check_id]:
                    failures[check_id] += [
                        ", ".join(outside_text(p, 200) for p in problems),
                        f"in the answer to {exchange.sent}",
                    ]
        for check_id, found in failures.items():
            self._results[check_id] = _fail(*found) if found else _PASS

    def _error_bodies(self) -> tuple[Status, str]:
        failures: list[str] = []
        for exchange in self._exchanges:
            if exchange.status is None or 200 <= exchange.status < 300:
                continue
            problem = error_problem(exchange.status, exchange.body)
            if problem is not None:
                failures += [problem, exchange.shown(self._key)]
            if len(failures) >= 6:
                break
        return _fail(*failures) if failures else _PASS


def run_checks(
    base_url: str,
    api_key: str,
    *,
    project: FixtureProject | None = None,
    timeout: float = 30.0,
    max_response_bytes: int = 32 * 1024 * 1024,
    transport: httpx.BaseTransport | None = None,
    deadline: float | None = DEFAULT_DEADLINE,
    of: Sequence[Operation] | None = None,
) -> Report:
    """Run every check against the server at `base_url` with `api_key`.

    Args:
        base_url: the server's root (normalised with
            :func:`~projectops.conventions.normalize_base_url`).
        api_key: the project API key in use.
        project: the fixtures project whose ``apiKey`` is `api_key`: its answers are the
            requests known to succeed; ``None``: the checks that need a 200 are skipped.
        timeout: seconds one request may take as a whole.
        max_response_bytes: the largest answer body read, in bytes.
        transport: an ``httpx.BaseTransport`` to send through instead of the network.
        deadline: seconds the whole run may take (``None``: no bound but the per-request
            `timeout` and :data:`MAX_REQUESTS`). Past it no request is sent, the one under way
            is cut short and not judged, and the checks not run are ``skipped``, saying so
            (:attr:`Report.stopped`).
        of: the operations to check (default: the registry's, :func:`projectops.operations`);
            an operation of another schema is checked the same way, from its descriptors.

    Returns:
        The :class:`Report`: one :class:`CheckResult` per check and operation.

    Raises:
        projectops.InvalidBaseUrl: `base_url` is not an absolute http(s) URL.
    """
    url = normalize_base_url(base_url)
    ops = tuple(operations() if of is None else of)
    sender = Sender(
        url,
        api_key,
        timeout=timeout,
        max_response_bytes=max_response_bytes,
        transport=transport,
        run_deadline=None if deadline is None else time.monotonic() + deadline,
    )
    known_paths = frozenset(op.path for op in ops)
    stopped = False
    try:
        results: list[CheckResult] = []
        for op in ops:
            run = _OperationRun(
                sender, api_key, op, project, known_paths=known_paths, deadline=deadline
            )
            results += run.run()
            stopped = stopped or run.stopped
    finally:
        sender.close()
    return Report(tuple(results), sender.count, stopped=deadline if stopped else None)
