"""``projectops conformance``: our own servers pass every check; a server broken in exactly one
way fails exactly the checks that depend on it; usage errors exit 2; the JSON report's shape.

The servers run with uvicorn in a thread on 127.0.0.1 (in-process); one slow test runs the real
entry point against ``projectops mock-server``.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest
from google.protobuf import json_format
from google.protobuf.message import Message

import projectops
from projectops import conventions
from projectops.conformance import SKIP_REASONS, Report, run_checks
from projectops.conformance._catalogue import (
    CHECKS,
    broken_requests,
    int64_as_numbers,
    required_fields,
    rfc3339_utc,
)
from projectops.fixtures import default_fixtures, request_key
from projectops.mock import create_mock_app, generate, load_fixtures
from projectops.program.failures import EXIT_CONFORMANCE_FAILED
from projectops.rules import rule_kind
from projectops.server import create_app
from projectops.validation import is_required, rule_violations
from tests.openapi.support import serving
from tests.support import RunCli
from tests.synthetic import required_string

DEMO_KEY = "demo-key"
DEFAULT_FIXTURES = str(resources.files("projectops").joinpath("default_fixtures.json"))
# A generous bound per request: a busy 2-core machine.
TIMEOUT = 20.0


def _demo() -> Any:
    return next(p for p in default_fixtures() if p.api_key == DEMO_KEY)


def _failed(report: Report) -> set[str]:
    return {c.id for c in report.checks if c.status == "failed"}


def _check(report: Report, operation: str, check_id: str) -> Any:
    return next(c for c in report.checks if c.operation == operation and c.id == check_id)


# --- servers ----------------------------------------------------------------------------------


class _FixtureService:
    """A ``create_app`` service answering from the default fixtures (not the mock's code)."""

    def __getattr__(self, name: str) -> Callable[..., Message]:
        op = projectops.operation(name)

        def handler(request: Message, context: Any) -> Message:
            for answer in context.project.answers.get(op.name, ()):
                if answer.key == request_key(request):
                    return answer.response
            raise projectops.FailedPrecondition(f"no {op.name} answer for that request")

        return handler


def _service_app(*, strict: bool = False) -> Any:
    projects = {p.api_key: p for p in default_fixtures()}
    return create_app(_FixtureService(), authenticate=projects.get, strict=strict)  # type: ignore[arg-type]


@dataclass
class _Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class _Answer:
    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes


Before = Callable[[_Seen], "_Answer | dict[str, str] | None"]
After = Callable[[_Seen, _Answer], _Answer]


def _broken(app: Any, *, before: Before | None = None, after: After | None = None) -> Any:
    """`app` behind an ASGI middleware that breaks one thing: `before` may answer instead of
    the app or change the request headers; `after` may change the app's answer."""

    async def wrapped(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        seen = _Seen(scope["method"], scope["path"], headers, body)
        change = before(seen) if before else None
        if isinstance(change, _Answer):
            await _send(send, change)
            return
        if isinstance(change, dict):
            scope = {**scope, "headers": [(k.encode(), v.encode()) for k, v in change.items()]}
        sent = False

        async def replay() -> dict[str, Any]:
            nonlocal sent
            if sent:
                return {"type": "http.disconnect"}
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        answer = _Answer(0, [], b"")

        async def keep(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                answer.status, answer.headers = message["status"], list(message["headers"])
            elif message["type"] == "http.response.body":
                answer.body += message.get("body", b"")

        await app(scope, replay, keep)
        await _send(send, after(seen, answer) if after else answer)

    return wrapped


async def _send(send: Any, answer: _Answer) -> None:
    headers = [(k, v) for k, v in answer.headers if k.lower() != b"content-length"]
    headers.append((b"content-length", str(len(answer.body)).encode()))
    await send({"type": "http.response.start", "status": answer.status, "headers": headers})
    await send({"type": "http.response.body", "body": answer.body})


def _error(status: int, code: str, message: str) -> _Answer:
    body = json.dumps({"code": code, "message": message, "violations": []}).encode()
    return _Answer(status, [(b"content-type", b"application/json")], body)


def _reencode(convert: Callable[[Message], Any]) -> After:
    """An `after` that writes every 200 response's message as `convert` makes it."""

    def after(seen: _Seen, answer: _Answer) -> _Answer:
        if answer.status != 200:
            return answer
        op = projectops.operation(seen.path)
        message = projectops.from_json(answer.body, op.response_type)
        return _Answer(200, answer.headers, json.dumps(convert(message)).encode())

    return after


def _timestamps_with_offset(value: Any) -> Any:
    if isinstance(value, str) and rfc3339_utc(value):
        return value[:-1] + "+00:00"
    if isinstance(value, dict):
        return {k: _timestamps_with_offset(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_timestamps_with_offset(v) for v in value]
    return value


def _no_json_body(seen: _Seen) -> bool:
    try:
        return not isinstance(json.loads(seen.body), dict)
    except ValueError:
        return True


def _ignore_key(seen: _Seen) -> dict[str, str]:
    return {**seen.headers, "service-api-key": DEMO_KEY}


def _400_before_401(seen: _Seen) -> _Answer | None:
    if "service-api-key" not in seen.headers and _no_json_body(seen):
        return _error(400, "invalid_argument", "the body is not valid JSON")
    return None


def _500_for_bad_body(seen: _Seen, answer: _Answer) -> _Answer:
    if answer.status == 400 and _no_json_body(seen):
        return _Answer(500, answer.headers, answer.body)
    return answer


def _empty(seen: _Seen) -> _Answer:
    """200 with a generated response of the operation (it keeps every rule of the schema, and
    is no fixture's), as the codec writes it."""
    message = generate(projectops.operation(seen.path).response_type, "another answer")
    return _Answer(
        200, [(b"content-type", b"application/json")], projectops.to_json(message).encode()
    )


def _project_from_header(seen: _Seen) -> _Answer | None:
    return _empty(seen) if "project-id" in seen.headers and seen.method == "POST" else None


def _no_allow_header(seen: _Seen, answer: _Answer) -> _Answer:
    return _Answer(
        answer.status, [h for h in answer.headers if h[0].lower() != b"allow"], answer.body
    )


def _no_body_limit(seen: _Seen, answer: _Answer) -> _Answer:
    if answer.status == 413:
        return _error(400, "invalid_argument", "the body is not what was expected")
    return answer


def _required_not_checked(seen: _Seen, answer: _Answer) -> _Answer:
    return _empty(seen) if answer.status == 400 and b"is required" in answer.body else answer


def _blank_refused_as(code: str, blank: Callable[[str], bool]) -> Before:
    """A `before` answering 400 `code` to a body with a REQUIRED string that `blank` calls
    blank, as a handler would (the server's validation leaves it through)."""

    def before(seen: _Seen) -> _Answer | None:
        op = projectops.operation(seen.path) if seen.path in _PATHS else None
        data = _json_object(seen)
        for fd in required_fields(op) if op else ():
            value = data.get(fd.json_name)
            if isinstance(value, str) and value and blank(value):
                return _error(400, code, f"{fd.json_name} names nothing")
        return None

    return before


def _json_object(seen: _Seen) -> dict[str, Any]:
    try:
        data = json.loads(seen.body)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _plain_401(seen: _Seen, answer: _Answer) -> _Answer:
    if answer.status == 401:
        return _Answer(401, [(b"content-type", b"text/plain")], b"Unauthorized")
    return answer


def _other_message(seen: _Seen, answer: _Answer) -> _Answer:
    # The generated message decodes, keeps every JSON form and rule, and is no fixture's.
    return _empty(seen) if answer.status == 200 else answer


def _violations(rename: Callable[[str], str]) -> After:
    """An `after` that gives each violation of a 400 the field path `rename` makes of it."""

    def after(seen: _Seen, answer: _Answer) -> _Answer:
        if answer.status != 400:
            return answer
        error = json.loads(answer.body)
        for violation in error.get("violations", []):
            violation["field"] = rename(violation.get("field", ""))
        return _Answer(400, answer.headers, json.dumps(error).encode())

    return after


_PATHS = frozenset(op.path for op in projectops.operations())


def _unknown_path_served(seen: _Seen) -> _Answer | None:
    if seen.path not in _PATHS:
        return _Answer(200, [(b"content-type", b"application/json")], b"{}")
    return None


def _add_to_200(change: Callable[[dict[str, Any]], None]) -> After:
    """An `after` that changes the JSON object of every 200 response in place with `change`."""

    def after(seen: _Seen, answer: _Answer) -> _Answer:
        if answer.status != 200:
            return answer
        data = json.loads(answer.body)
        change(data)
        return _Answer(200, answer.headers, json.dumps(data).encode())

    return after


def _rules_broken(breaks: Callable[[Message], None]) -> After:
    """An `after` that changes the message of every 200 response with `breaks`."""

    def after(seen: _Seen, answer: _Answer) -> _Answer:
        if answer.status != 200:
            return answer
        message = projectops.from_json(answer.body, projectops.operation(seen.path).response_type)
        breaks(message)
        return _Answer(200, answer.headers, projectops.to_json(message).encode())

    return after


def _required_left_out(message: Message) -> None:
    for fd in message.DESCRIPTOR.fields:
        if is_required(fd):
            message.ClearField(fd.name)


def _patterns_broken(message: Message) -> None:
    """Each string with a pattern that "xyz" does not match set to "xyz" (a git SHA, say),
    in every message of the tree."""
    for fd in message.DESCRIPTOR.fields:
        found = rule_kind(fd)
        if (
            found
            and found[0] == "string"
            and found[1].pattern
            and not re.search(found[1].pattern, "xyz")
        ):
            setattr(message, fd.name, "xyz")
        elif fd.message_type is None or fd.message_type.GetOptions().map_entry:
            continue
        elif fd.is_repeated:
            for child in getattr(message, fd.name):
                _patterns_broken(child)
        elif message.HasField(fd.name):  # not an unset one: a recursive type never ends
            _patterns_broken(getattr(message, fd.name))


def _request_rules_not_checked(seen: _Seen) -> _Answer | None:
    """200 to a request that breaks a rule of the schema other than REQUIRED; a body over the
    limit still gets the app's 413 (whitespace around ``{}`` is a request that may break one)."""
    if len(seen.body) > conventions.MAX_BODY_BYTES:
        return None
    op = projectops.operation(seen.path) if seen.path in _PATHS else None
    try:
        request = projectops.from_json(seen.body, op.request_type) if op else None
    except projectops.InvalidArgument:
        return None
    broken = rule_violations(request) if request is not None else []
    # Not one that lacks a REQUIRED field: that is request.required's (0 breaks `gte: 1` too).
    return _empty(seen) if broken and all(v.rule != "required" for v in broken) else None


def _wrong_type(data: dict[str, Any]) -> None:
    # Every top-level field of both responses is an object or a list: true is neither.
    first = next(iter(data), None)
    if first is not None:
        data[first] = True


def _mock_app() -> Any:
    return create_mock_app(load_fixtures(), docs=False)


# breakage -> (the app, the checks it must fail: no more, no fewer)
BROKEN: Mapping[str, tuple[Callable[[], Any], set[str]]] = {
    "answers 400 before 401": (
        lambda: _broken(_mock_app(), before=_400_before_401),
        {"auth.before-body"},
    ),
    "ignores the key": (
        lambda: _broken(_mock_app(), before=_ignore_key),
        {"auth.no-key", "auth.wrong-key", "auth.before-body"},
    ),
    "int64 as numbers": (
        lambda: _broken(_mock_app(), after=_reencode(lambda m: int64_as_numbers(m)[0])),
        {"json.int64-strings"},
    ),
    # Strict decoding refuses an enum as a number too: that check depends on it.
    "enums as integers": (
        lambda: _broken(
            _mock_app(),
            after=_reencode(
                lambda m: json_format.MessageToDict(
                    m, use_integers_for_enums=True, always_print_fields_with_no_presence=True
                )
            ),
        ),
        {"json.enum-names", "response.decodes"},
    ),
    "snake_case names": (
        lambda: _broken(
            _mock_app(),
            after=_reencode(
                lambda m: json_format.MessageToDict(
                    m, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
                )
            ),
        ),
        {"json.camel-case"},
    ),
    "timestamps without Z": (
        lambda: _broken(
            _mock_app(),
            after=_reencode(lambda m: _timestamps_with_offset(projectops.to_dict(m))),
        ),
        {"json.timestamps"},
    ),
    # The 500 carries the code invalid_argument: the error-body check depends on it.
    "500 instead of 400 for a bad body": (
        lambda: _broken(_mock_app(), after=_500_for_bad_body),
        {"request.not-object", "errors.error-response"},
    ),
    "Project-Id header obeyed": (
        lambda: _broken(_mock_app(), before=_project_from_header),
        {"auth.scope-headers"},
    ),
    "405 without Allow": (
        lambda: _broken(_mock_app(), after=_no_allow_header),
        {"http.method"},
    ),
    "no body limit": (
        lambda: _broken(_mock_app(), after=_no_body_limit),
        {"http.body-limit"},
    ),
    # What protobuf-es and Go's protojson write by default.
    "zero values left out": (
        lambda: _broken(_mock_app(), after=_reencode(json_format.MessageToDict)),
        {"json.zero-values"},
    ),
    "a blank REQUIRED field answered failed_precondition": (
        lambda: _broken(
            _mock_app(), before=_blank_refused_as("failed_precondition", lambda v: not v.strip())
        ),
        {"request.required"},
    ),
    # ECMA-262's \s lacks U+001C..U+001F and U+0085: such a server lets them through.
    "white space of JavaScript's \\s only": (
        lambda: _broken(
            _mock_app(),
            before=_blank_refused_as("failed_precondition", lambda v: "\x1c" in v or "\x85" in v),
        ),
        {"request.required"},
    ),
    "REQUIRED not checked": (
        lambda: _broken(_mock_app(), after=_required_not_checked),
        {"request.required"},
    ),
    "401 without an ErrorResponse": (
        lambda: _broken(_mock_app(), after=_plain_401),
        {"errors.error-response"},
    ),
    "unknown request fields refused": (
        lambda: _service_app(strict=True),
        {"request.unknown-fields"},
    ),
    "answers another message than the fixture's": (
        lambda: _broken(_mock_app(), after=_other_message),
        {"fixtures.response"},
    ),
    # A broken rule's 400 must name the field (request.rules), a missing one's should.
    "violations without a field path": (
        lambda: _broken(_mock_app(), after=_violations(lambda field: "")),
        {"errors.violation-paths", "request.rules"},
    ),
    "violations with a wrong field path": (
        lambda: _broken(_mock_app(), after=_violations(lambda field: f"request.{field}_name")),
        {"errors.violation-paths", "request.rules"},
    ),
    "a request breaking a rule answered 200": (
        lambda: _broken(_mock_app(), before=_request_rules_not_checked),
        {"request.rules"},
    ),
    # Issue 32: the "Always set" fields (detailedResults) dropped, a gitSha of "xyz".
    "REQUIRED response fields left out": (
        lambda: _broken(_mock_app(), after=_rules_broken(_required_left_out)),
        {"response.rules", "fixtures.response"},
    ),
    "strings that break their pattern": (
        lambda: _broken(_mock_app(), after=_rules_broken(_patterns_broken)),
        {"response.rules", "fixtures.response"},
    ),
    "unknown path answered 200": (
        lambda: _broken(_mock_app(), before=_unknown_path_served),
        {"http.unknown-path"},
    ),
    # A lenient decoder ignores an unknown field, so the fixtures still match.
    "200 answers with an unknown field": (
        lambda: _broken(_mock_app(), after=_add_to_200(lambda d: d.update(extraField=1))),
        {"response.decodes"},
    ),
    # No decoder takes true for an object or a list: the fixture comparison depends on it.
    "200 answers with a field of the wrong JSON type": (
        lambda: _broken(_mock_app(), after=_add_to_200(_wrong_type)),
        {"response.decodes", "fixtures.response"},
    ),
}

#: Checks shown by a broken server of another schema (tests/client/test_conformance_schema.py):
#: neither real request has a field whose proto name differs from its JSON name, nor an int64.
TESTED_ON_A_SYNTHETIC_SCHEMA = frozenset({"request.proto-names", "request.int64-numbers"})


@pytest.fixture(scope="module")
def mock_url() -> Iterator[str]:
    with serving(_mock_app()) as url:
        yield url


class _Switch:
    """An ASGI app that passes each request to :attr:`app`, which a test sets: one uvicorn for
    the module's many servers, since starting and stopping one costs about 0.2 s a test."""

    app: Any = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        await self.app(scope, receive, send)


@pytest.fixture(scope="module")
def _switch() -> Iterator[tuple[_Switch, str]]:
    switch = _Switch()
    with serving(switch) as url:  # type: ignore[arg-type]
        yield switch, url


@pytest.fixture
def serve(_switch: tuple[_Switch, str]) -> Iterator[Callable[[Any], str]]:
    """``serve(app) -> base URL`` of `app` served on 127.0.0.1 (the module's one uvicorn)."""
    switch, url = _switch

    def start(app: Any) -> str:
        switch.app = app
        return url

    yield start
    switch.app = None


def test_every_check_has_a_server_broken_in_its_way() -> None:
    shown = set().union(*(expected for _, expected in BROKEN.values()))
    # A check added to the catalogue without a breakage that fails it fails here.
    assert set(CHECKS) - shown - TESTED_ON_A_SYNTHETIC_SCHEMA == set()
    assert shown | TESTED_ON_A_SYNTHETIC_SCHEMA <= set(CHECKS)


# --- our servers pass -------------------------------------------------------------------------

OPS = projectops.operations()
#: Operations whose request has a REQUIRED field, and those whose `{}` is a valid request.
WITH_REQUIRED = [op for op in OPS if required_fields(op)]
WITHOUT_REQUIRED = [op for op in OPS if not required_fields(op)]
#: What a skip may say when the check cannot apply to an operation of this schema.
#: Why a check the derived request's 200 examines may still be skipped: nothing of the
#: operation's schema for it to examine (the reasons, not their wording: tests never parse text).
CANNOT_APPLY = frozenset({"not-applicable", "nothing-to-send", "not-held"})


def _most_requests(ops: Any) -> int:
    rules = [list(broken_requests(op, generate(op.request_type, "", minimal=True))) for op in ops]
    return sum(32 + 4 * len(required_fields(op)) + len(r) for op, r in zip(ops, rules, strict=True))


@pytest.mark.parametrize("make_app", [_mock_app, _service_app], ids=["mock", "create_app"])
def test_our_servers_pass_every_check_with_the_default_fixtures(
    make_app: Any, serve: Callable[[Any], str]
) -> None:
    report = run_checks(serve(make_app()), DEMO_KEY, project=_demo(), timeout=TIMEOUT)
    assert _failed(report) == set(), [c for c in report.checks if c.status == "failed"]
    assert not report.must_failed and report.unimplemented == ()
    # Every operation gets every check of the catalogue.
    assert len(report.checks) == len(CHECKS) * len(OPS)
    # Only checks that cannot apply are skipped, each saying why (and those of 200 responses for
    # an operation the fixtures have no response of).
    # Read from the typed reason, not the sentence: a rule no derived value breaks alone (an
    # enum's defined_only, a CEL rule) is as inapplicable as a request without REQUIRED fields.
    for check in report.checks:
        if check.status == "skipped":
            allowed = {"not-applicable", "not-held", "nothing-to-send"}
            if check.operation not in _demo().answers:
                allowed |= {"no-success", "no-fixture-response"}
            assert check.reason in allowed, check
    assert report.requests <= _most_requests(OPS)


def test_without_fixtures_every_operation_is_called_with_a_request_derived_from_the_schema(
    mock_url: str,
) -> None:
    report = run_checks(mock_url, DEMO_KEY, timeout=TIMEOUT)
    assert _failed(report) == set()
    listed = _demo().answers  # the mock refuses other requests of these (failed_precondition)
    for op in OPS:
        if op in WITH_REQUIRED:
            assert _check(report, op.name, "request.required").status == "passed"
        for check_id, spec in CHECKS.items():
            check = _check(report, op.name, check_id)
            if spec.needs_success and op.name in listed and op in WITH_REQUIRED:
                assert check.status == "skipped" and "--fixtures" in check.detail, check
            elif check.status == "skipped":  # the derived request was answered 200
                assert check.reason in CANNOT_APPLY | {"no-fixture-response"}, check
        if op.name not in listed or op in WITHOUT_REQUIRED:
            for check_id in ("response.decodes", "response.rules", "auth.scope-headers"):
                assert _check(report, op.name, check_id).status == "passed"


def test_a_partly_implemented_server_reports_the_rest_unimplemented(
    serve: Callable[[Any], str], run_cli: RunCli
) -> None:
    # The README's server: a subclass of the generated base overriding one rpc.
    from projectops.server import OperationsServiceHandler

    served = next(op for op in OPS if op.name in _demo().answers)
    answer = _demo().answers[served.name][0]
    Partial = type(
        "Partial",
        (OperationsServiceHandler,),
        {served.name: lambda self, request, context: answer.response},
    )
    projects = {p.api_key: p for p in default_fixtures()}
    url = serve(create_app(Partial(), authenticate=projects.get))
    result = run_cli(
        "conformance", "--json", "--fixtures", DEFAULT_FIXTURES, "--base-url", url, key=DEMO_KEY
    )
    assert result.returncode == 0, result.stdout
    report = json.loads(result.stdout)
    assert report["unimplemented"] == [op.name for op in OPS if op is not served]
    assert report["failed"] == 0
    for check in report["checks"]:
        if check["operation"] != served.name and check["status"] == "skipped":
            assert check["detail"] in {
                f"{check['operation']} is not implemented (501 unimplemented)",
                f"the request of {check['operation']} has no REQUIRED field",
            }, check


def test_checks_the_request_budget_cut_short_say_so(
    mock_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # request.required sends a REQUIRED string missing, then blank in several ways: a budget
    # of the three auth checks and one more request cuts it short.
    op = next((op for op in OPS if required_string(op)), None)
    if op is None:
        pytest.skip("no operation's request has a REQUIRED string field")
    monkeypatch.setattr("projectops.conformance._runner.MAX_REQUESTS", 4)
    report = run_checks(mock_url, DEMO_KEY, project=_demo(), timeout=TIMEOUT, operations=[op])
    assert report.requests == 4 and report.unimplemented == ()
    for check_id in ("request.required", "errors.violation-paths", "http.body-limit"):
        check = _check(report, op.name, check_id)
        assert (check.status, check.detail) == (
            "skipped",
            "not run: the run's limit of 4 requests was reached",
        ), check
    assert not any("not implemented" in c.detail for c in report.checks)


def test_operation_limits_the_run(run_cli: RunCli, mock_url: str) -> None:
    op = OPS[-1]
    result = run_cli(
        "conformance", "--json", "--operation", op.tool_name, "--base-url", mock_url, key=DEMO_KEY
    )
    assert result.returncode == 0, result.stderr
    assert {c["operation"] for c in json.loads(result.stdout)["checks"]} == {op.name}


# --- broken servers fail exactly what depends on the breakage -----------------------------


@pytest.mark.parametrize("breakage", list(BROKEN))
def test_a_server_broken_in_one_way_fails_exactly_the_checks_that_depend_on_it(
    breakage: str, serve: Callable[[Any], str]
) -> None:
    make_app, expected = BROKEN[breakage]
    report = run_checks(serve(make_app()), DEMO_KEY, project=_demo(), timeout=TIMEOUT)
    assert _failed(report) == expected, [c for c in report.checks if c.status == "failed"]
    for check in report.checks:
        if check.status == "failed":
            assert "sent " in check.detail
            assert "\n" not in check.detail
    assert report.must_failed == any(CHECKS[c].level == "must" for c in expected)


def test_a_check_that_saw_nothing_to_check_is_skipped_not_passed(
    serve: Callable[[Any], str],
) -> None:
    # `200 {}` to everything: no error response, no 64-bit integer, no enum, no timestamp.
    def always_200(seen: _Seen) -> _Answer:
        return _Answer(200, [(b"content-type", b"application/json")], b"{}")

    report = run_checks(serve(_broken(_mock_app(), before=always_200)), DEMO_KEY, project=_demo())
    for check in report.checks:
        if check.id.startswith("errors.") or check.id in {
            "json.int64-strings",
            "json.enum-names",
            "json.timestamps",
        }:
            assert check.status == "skipped" and check.detail, check


def test_a_failure_shows_what_was_sent_and_what_came_back_without_the_key(
    run_cli: RunCli, serve: Callable[[Any], str]
) -> None:
    def echo_key(seen: _Seen) -> _Answer | None:
        if seen.headers.get("service-api-key", "").startswith(DEMO_KEY):
            text = f"\x1b[31m{seen.headers['service-api-key']}".encode()
            return _Answer(400, [(b"content-type", b"text/plain")], text)
        return None

    url = serve(_broken(_mock_app(), before=echo_key))
    result = run_cli("conformance", "--base-url", url, key=DEMO_KEY)
    assert result.returncode == EXIT_CONFORMANCE_FAILED, result.stderr
    op = OPS[0]
    lines = result.stdout.splitlines()
    line = next(li for li in lines if "auth.wrong-key" in li and li.startswith(op.name + " "))
    assert f"failed (must): expected 401; sent POST {op.path} (a wrong key)" in line
    assert "got 400" in line and "\\x1b[31m" in line
    assert DEMO_KEY not in result.stdout + result.stderr
    assert "\x1b" not in result.stdout


# --- the command --------------------------------------------------------------------------


def test_the_json_report(run_cli: RunCli, mock_url: str) -> None:
    result = run_cli(
        "conformance",
        "--json",
        "--fixtures",
        DEFAULT_FIXTURES,
        "--base-url",
        mock_url,
        key=DEMO_KEY,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert set(report) == {
        *("passed", "failed", "skipped", "examined", "total"),
        *("stopped", "unimplemented", "checks"),
    }
    assert report["examined"] == report["passed"] + report["failed"]
    assert report["total"] == len(report["checks"])
    assert report["stopped"] is False and report["unimplemented"] == []
    checks = report["checks"]
    assert report["failed"] == 0
    assert report["passed"] + report["skipped"] == len(checks) == len(CHECKS) * len(OPS)
    assert report["passed"] == sum(c["status"] == "passed" for c in checks)
    for check in checks:
        assert set(check) == {"id", "operation", "level", "status", "detail", "reason"} | {
            "differences"
        }
        assert (check["reason"] in SKIP_REASONS) == (check["status"] == "skipped"), check
        assert check["level"] == CHECKS[check["id"]].level
        assert check["operation"] in {op.name for op in OPS}


def test_a_must_failure_exits_6_and_only_should_failures_exit_0(
    run_cli: RunCli, serve: Callable[[Any], str]
) -> None:
    url = serve(BROKEN["ignores the key"][0]())
    result = run_cli("conformance", "--base-url", url, key=DEMO_KEY)
    assert result.returncode == EXIT_CONFORMANCE_FAILED
    # Every operation's three key checks: no key, a wrong key, no key and a bad body.
    failed = 3 * len(OPS)
    summary = next(line for line in result.stdout.splitlines() if " checks examined: " in line)
    assert f", {failed} failed ({failed} must); " in summary
    url = serve(BROKEN["405 without Allow"][0]())
    result = run_cli("conformance", "--base-url", url, key=DEMO_KEY, base_url=None)
    assert result.returncode == 0, result.stdout


@pytest.mark.parametrize(
    ("args", "key", "base_url", "said"),
    [
        ((), None, "http://127.0.0.1:9", "SERVICE_API_KEY"),
        ((), DEMO_KEY, None, "--base-url"),
        (
            ("--fixtures", "/nonexistent/fixtures.json"),
            DEMO_KEY,
            "http://127.0.0.1:9",
            "cannot read",
        ),
        (("--fixtures", DEFAULT_FIXTURES), "no-such-key", "http://127.0.0.1:9", "no project"),
        (("--fixtures", "/"), DEMO_KEY, "http://127.0.0.1:9", "not a regular file"),
        (("--timeout", "0"), DEMO_KEY, "http://127.0.0.1:9", "--timeout"),
        (("--deadline", "0"), DEMO_KEY, "http://127.0.0.1:9", "--deadline"),
        (("--deadline", "nan"), DEMO_KEY, "http://127.0.0.1:9", "--deadline"),
        (("--operation", "no_such_operation"), DEMO_KEY, "http://127.0.0.1:9", "--operation"),
        (("--no-such-flag",), DEMO_KEY, "http://127.0.0.1:9", "unknown option"),
        (("--junit-xml", "/no/such/folder/r.xml"), DEMO_KEY, "http://127.0.0.1:9", "--junit-xml"),
        (("--junit-xml", "."), DEMO_KEY, "http://127.0.0.1:9", "--junit-xml"),
    ],
)
def test_a_usage_error_exits_2_with_one_line(
    run_cli: RunCli, args: tuple[str, ...], key: str | None, base_url: str | None, said: str
) -> None:
    result = run_cli("conformance", *args, key=key, base_url=base_url)
    assert result.returncode == 2, result
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and said in result.stderr, result.stderr


def test_a_bad_fixtures_file_is_a_usage_error_naming_the_field(
    run_cli: RunCli, tmp_path: Path
) -> None:
    path = tmp_path / "fixtures.json"
    path.write_text(
        '{"projects": [{"project": "p", "apiKey": "key-1", "operations": {"nope": []}}]}'
    )
    result = run_cli(
        "conformance", "--fixtures", str(path), key="key-1", base_url="http://127.0.0.1:9"
    )
    assert result.returncode == 2
    assert "projects[0].operations.nope: unknown operation" in result.stderr


@pytest.mark.slow
def test_the_entry_point_against_the_mock_server(mock_server: Any, run_cli_process: RunCli) -> None:
    result = run_cli_process(
        "conformance", "--fixtures", DEFAULT_FIXTURES, key=DEMO_KEY, base_url=mock_server.base_url
    )
    assert result.returncode == 0, result.stdout + result.stderr
    summary = next(line for line in result.stdout.splitlines() if " checks examined: " in line)
    assert " failed (0 must); " in summary
    rows = [line.split() for line in result.stdout.splitlines()]
    for op in OPS:
        assert [op.name, "auth.no-key", "passed"] in rows
        # An operation the fixtures have no response of (one added since) gets a derived request.
        if op.name in _demo().answers:
            assert [op.name, "fixtures.response", "passed"] in rows


def _junit_shape(root: ElementTree.Element) -> dict[str, set[str]]:
    """Tag -> the attributes of its elements, over the tree."""
    shape: dict[str, set[str]] = {}
    for element in root.iter():
        shape.setdefault(element.tag, set()).update(element.attrib)
    return shape


def test_junit_xml_has_a_testcase_per_check(
    run_cli: RunCli, serve: Callable[[Any], str], tmp_path: Path
) -> None:
    # The details hold an echoed ESC, which XML 1.0 cannot hold: it is escaped.
    def echo(seen: _Seen) -> _Answer | None:
        if seen.headers.get("service-api-key", "").endswith("-not-a-key"):
            return _Answer(400, [(b"content-type", b"text/plain")], b"\x1b[31m\x00\xef\xbf\xbf")
        return None

    path = tmp_path / "junit.xml"
    url = serve(_broken(_mock_app(), before=echo))
    result = run_cli("conformance", "--junit-xml", str(path), "--base-url", url, key=DEMO_KEY)
    assert result.returncode == EXIT_CONFORMANCE_FAILED, result.stderr
    suite = ElementTree.parse(path).getroot().find("testsuite")
    assert suite is not None
    cases = suite.findall("testcase")
    assert [(c.get("classname"), c.get("name")) for c in cases] == [
        (op.name, check_id) for op in OPS for check_id in CHECKS
    ]
    failed = [c for c in cases if c.find("failure") is not None]
    skipped = [c for c in cases if c.find("skipped") is not None]
    assert suite.get("tests") == str(len(cases))
    assert suite.get("failures") == str(len(failed)) and suite.get("skipped") == str(len(skipped))
    assert {c.get("name") for c in failed} == {"auth.wrong-key", "errors.error-response"}
    for case in failed:
        failure = case.find("failure")
        assert failure is not None and "sent " in (failure.text or "")
        assert "\x1b" not in (failure.text or "") and "\\x1b" in (failure.text or "")
    assert all((c.find("skipped").get("message") or "") for c in skipped)  # type: ignore[union-attr]
    # As a JUnit reader of CI tools reads it, where one is installed (dev: junitparser).
    if importlib.util.find_spec("junitparser") is not None:
        from junitparser import JUnitXml

        (read,) = JUnitXml.fromfile(str(path))
        assert (read.tests, read.failures, read.skipped) == (len(cases), len(failed), len(skipped))


@pytest.mark.slow
def test_junit_xml_is_shaped_as_pytest_writes_it(
    run_cli: RunCli, mock_url: str, tmp_path: Path
) -> None:
    (tmp_path / "test_three.py").write_text(
        "import pytest\n"
        "def test_passes(): pass\n"
        "def test_fails(): assert False\n"
        "def test_skipped(): pytest.skip('why')\n"
    )
    theirs = tmp_path / "pytest.xml"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={theirs}"],
        cwd=tmp_path,
        capture_output=True,
        check=False,
    )
    ours = tmp_path / "ours.xml"
    run_cli("conformance", "--junit-xml", str(ours), "--base-url", mock_url, key=DEMO_KEY)
    pytest_shape = _junit_shape(ElementTree.parse(theirs).getroot())
    our_shape = _junit_shape(ElementTree.parse(ours).getroot())
    # Every element and attribute pytest writes for a run of passes, failures and skips.
    pytest_shape.pop("properties", None)
    for tag, attributes in pytest_shape.items():
        if tag == "failure":
            continue  # our mock run has none; the in-process test covers <failure message>
        assert attributes - {"hostname"} <= our_shape.get(tag, set()), tag


@pytest.mark.parametrize("size", [9, 400])
def test_an_answer_is_shown_with_one_note_only_when_cut(size: int) -> None:
    import httpx2

    from projectops.conformance._runner import RunClient

    body = ("é" * size + DEMO_KEY).encode()
    transport = httpx2.MockTransport(lambda _: httpx2.Response(400, content=body))
    client = RunClient(
        "http://x", DEMO_KEY, timeout=TIMEOUT, max_response_bytes=2**20, transport=transport
    )
    shown = client.send("POST", OPS[0].path, b"{}")[0].excerpt
    assert DEMO_KEY not in shown
    if size < 100:
        assert shown == "é" * size + "***"
    else:
        assert shown.count("[") == 1 and shown.endswith(" more characters cut]"), shown


def test_a_server_that_cannot_be_reached_is_shown_without_the_key() -> None:
    import httpx2

    from projectops.conformance._runner import RunClient

    def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError(f"refused for {DEMO_KEY}")

    transport = httpx2.MockTransport(refuse)
    client = RunClient(
        "http://x", DEMO_KEY, timeout=TIMEOUT, max_response_bytes=99, transport=transport
    )
    assert "refused for ***" in client.send("POST", OPS[0].path, b"{}")[0].problem


# --- a report that says what it examined --------------------------------------------------


def _first_string(data: Any) -> list[str | int] | None:
    """The keys leading to the first string in `data` (a response's JSON), or ``None``."""
    if isinstance(data, str):
        return []
    items = data.items() if isinstance(data, dict) else enumerate(data)
    for key, value in items if isinstance(data, dict | list) else ():
        found = _first_string(value)
        if found is not None:
            return [key, *found]
    return None


def test_a_fixture_mismatch_names_the_field_with_both_values_cut_and_escaped(
    serve: Callable[[Any], str], run_cli: RunCli
) -> None:
    answers = {
        name: found[0]
        for name, found in _demo().answers.items()
        if found and found[0].response is not None
    }
    leaves = {
        name: _first_string(json_format.MessageToDict(a.response)) for name, a in answers.items()
    }
    name, keys = next((name, keys) for name, keys in leaves.items() if keys)
    op, fixture = projectops.operation(name), answers[name]
    expected = json.loads(projectops.to_json(fixture.response))
    changed = json.loads(json.dumps(expected))
    holder = changed
    for key in keys[:-1]:
        holder = holder[key]
    received = "\x1b[31m" + "x" * 300
    holder[keys[-1]] = received
    path = "".join(f"[{key}]" if isinstance(key, int) else f".{key}" for key in keys).lstrip(".")

    def differ(seen: _Seen, answer: _Answer) -> _Answer:
        if seen.path != op.path or answer.status != 200:
            return answer
        return _Answer(200, answer.headers, json.dumps(changed).encode())

    url = serve(_broken(_mock_app(), after=differ))
    report = run_checks(url, DEMO_KEY, project=_demo(), timeout=TIMEOUT, operations=[op])
    check = _check(report, op.name, "fixtures.response")
    assert check.status == "failed"
    (difference,) = check.differences
    assert difference.path == path
    original = expected
    for key in keys:
        original = original[key]
    assert difference.expected == json.dumps(original, ensure_ascii=False)
    assert difference.received is not None
    # The JSON text of the value (control characters as JSON escapes them), cut with a count.
    assert difference.received.startswith('"\\u001b[31mxxx') and "\x1b" not in difference.received
    assert difference.received.endswith(" more characters cut]")
    assert (
        f"differs from the fixture's in 1 field(s); the first differing response: {path} is "
        in (check.sentence())
    )
    result = run_cli(
        "conformance",
        "--fixtures",
        DEFAULT_FIXTURES,
        "--operation",
        op.tool_name,
        "--base-url",
        url,
        key=DEMO_KEY,
    )
    line = next(li for li in result.stdout.splitlines() if " fixtures.response " in li)
    assert f"{path} is {difference.received}, expected {difference.expected}" in line
    as_json = run_cli(
        "conformance",
        "--json",
        "--fixtures",
        DEFAULT_FIXTURES,
        "--operation",
        op.tool_name,
        "--base-url",
        url,
        key=DEMO_KEY,
    )
    (listed,) = [c for c in json.loads(as_json.stdout)["checks"] if c["id"] == "fixtures.response"]
    assert listed["differences"] == [
        {"path": path, "expected": difference.expected, "received": difference.received}
    ]


def test_the_summary_says_how_much_was_examined_and_groups_the_skips_with_their_remedy(
    run_cli: RunCli, mock_url: str
) -> None:
    result = run_cli("conformance", "--json", "--base-url", mock_url, key=DEMO_KEY)
    report = json.loads(result.stdout)
    text = run_cli("conformance", "--base-url", mock_url, key=DEMO_KEY).stdout.splitlines()
    total = len(CHECKS) * len(OPS)
    examined = report["passed"] + report["failed"]
    assert f"{examined} of {total} checks examined: " in "\n".join(text)
    groups = [line for line in text if re.match(r"[0-9]+ skipped \(", line)]
    assert sum(int(line.split(" ", 1)[0]) for line in groups) == report["skipped"]
    for line in groups:  # each says why, and what would examine them
        reason = next(r for r, (why, _) in SKIP_REASONS.items() if f"): {why}; " in line)
        assert line.endswith(SKIP_REASONS[reason][1])
    reasons = {c["reason"] for c in report["checks"] if c["status"] == "skipped"}
    assert len(groups) == len(reasons)
    if any(c["reason"] == "no-success" for c in report["checks"]):  # the mock refuses some
        assert any("--fixtures FILE" in line for line in groups)


def test_every_detail_reads_as_a_sentence(serve: Callable[[Any], str]) -> None:
    report = run_checks(serve(_mock_app()), DEMO_KEY, timeout=TIMEOUT)
    for check in report.checks:
        assert not check.detail.endswith((": none", ":", ";")), check
        assert "no value derived to break" not in check.detail, check
        if check.status != "skipped":
            assert check.reason == "", check
        else:
            assert check.reason in SKIP_REASONS and check.detail, check
