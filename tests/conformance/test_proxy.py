"""``projectops proxy``: in front of our own servers it answers exactly as they do and stays
quiet; in front of servers broken in one way it reports that one drift, once; its recording
decodes as fixtures and the mock serves the same response to the same request from it; the key
is never written.

Most tests run in-process (httpx2's ASGI transport on both sides, or uvicorn threads on
127.0.0.1); the one that runs the real program is marked slow.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from google.protobuf import message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

import projectops
from projectops.client import AsyncRawClient
from projectops.codec import to_dict, to_json
from projectops.conformance._catalogue import required_fields
from projectops.conformance._proxy import (
    STAND_IN_KEY,
    Recording,
    ValidationProxy,
    Violation,
    find_violations,
)
from projectops.conventions import API_KEY_HEADER, MAX_BODY_BYTES
from projectops.fixtures import FixtureResponse, decode_fixtures, default_fixtures, request_key
from projectops.mock import create_mock_app, generate, load_fixtures
from projectops.rules import rule_kind
from projectops.server import OperationsServiceHandler, create_app
from projectops.validation import is_required
from tests.loopback import LOOPBACK, free_port, stop, wait_until_listening
from tests.openapi.support import serving
from tests.synthetic import with_max_length_string

#: The key the upstreams of these tests accept: one no message of the package could hold.
KEY = "Proxy-Test-Key-5b1f"
TIMEOUT = 20.0
CAP = 4 * 1024 * 1024


@dataclass(frozen=True)
class Got:
    status: int
    content_type: str | None
    body: bytes


def _demo_answers() -> list[tuple[projectops.Operation, FixtureResponse]]:
    """Every (operation, answer) of the default fixtures' first project with a response."""
    project = default_fixtures()[0]
    return [
        (projectops.operation(name), answer)
        for name, answers in project.answers.items()
        for answer in answers
        if answer.error is None
    ]


def _mock(key: str = KEY, fixtures: dict[str, Any] | None = None) -> Starlette:
    """The mock server's app on `fixtures` (default: the default fixtures, their first
    project's key replaced by `key`)."""
    if fixtures is None:
        fixtures = json.loads(
            Path(projectops.__file__).with_name("default_fixtures.json").read_text()
        )
        fixtures["projects"][0]["apiKey"] = key
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "fixtures.json")
        path.write_text(json.dumps(fixtures), encoding="utf-8")
        return create_mock_app(load_fixtures(path), docs=False)


def _service() -> Starlette:
    """``create_app`` with a service that answers each rpc from the default fixtures (not
    the mock's code)."""

    def handler(name: str) -> Callable[..., Message]:
        def answer(self: Any, request: Message, context: Any) -> Message:
            for op, answer in _demo_answers():
                if op.name == name and answer.key == request_key(request):
                    return answer.response
            raise projectops.NotFound(f"no {name} answer for that request")

        return answer

    methods = {op.name: handler(op.name) for op in projectops.operations()}
    service = type("Service", (OperationsServiceHandler,), methods)()
    return create_app(service, authenticate={KEY: "demo"}.get)


def _call(
    upstream: Any,
    calls: list[tuple[str, str, bytes, dict[str, str]]],
    *,
    recording: Recording | None = None,
    timeout: float = TIMEOUT,
    cap: int = CAP,
) -> tuple[list[Got], list[Got], list[Violation]]:
    """Send each (method, path, body, headers) through the proxy and straight to `upstream`
    (an ASGI app); what each answered, and the violations (drift lines) the proxy reported."""
    drifts: list[Violation] = []

    async def main() -> tuple[list[Got], list[Got]]:
        transport = httpx2.ASGITransport(upstream)
        forward = AsyncRawClient(
            "http://upstream", timeout=timeout, max_response_bytes=cap, transport=transport
        )
        app = ValidationProxy(forward, report=drifts.append, recording=recording)
        via: list[Got] = []
        straight: list[Got] = []
        async with (
            httpx2.AsyncClient(transport=httpx2.ASGITransport(app), base_url="http://p") as p,
            httpx2.AsyncClient(transport=transport, base_url="http://upstream") as u,
        ):
            for method, path, body, headers in calls:
                for client, into in ((p, via), (u, straight)):
                    r = await client.request(method, path, content=body, headers=headers)
                    into.append(Got(r.status_code, r.headers.get("content-type"), r.content))
        await forward.aclose()
        return via, straight

    via, straight = anyio.run(main)
    return via, straight, drifts


def _post(op: projectops.Operation, body: bytes, key: str | None = KEY) -> Any:
    return ("POST", op.path, body, {API_KEY_HEADER: key} if key else {})


def _valid(op: projectops.Operation) -> bytes:
    """A request body of `op` that keeps every rule (its REQUIRED fields set), whatever its
    fields: what a test whose request must not drift sends."""
    return to_json(generate(op.request_type, op.name, minimal=True)).encode()


def _ordinary_calls() -> list[tuple[str, str, bytes, dict[str, str]]]:
    """Every answer of the fixtures, and per operation the error responses a client meets: no
    key (to a valid request), a body that is not an object, another method."""
    calls = [_post(op, to_json(answer.request).encode()) for op, answer in _demo_answers()]
    valid = {op.name: body for (op, _), (_, _, body, _) in zip(_demo_answers(), calls, strict=True)}
    for op in projectops.operations():
        derived = to_json(generate(op.request_type, op.name, minimal=True)).encode()
        no_key = _post(op, valid.get(op.name, derived), key=None)
        calls += [no_key, _post(op, b"[]"), ("GET", op.path, b"", {})]
    return calls


@pytest.mark.parametrize("upstream", [_mock, _service], ids=["mock", "create_app"])
def test_in_front_of_our_servers_it_answers_as_they_do_and_stays_quiet(
    upstream: Callable[[], Starlette],
) -> None:
    calls = _ordinary_calls()
    via, straight, drifts = _call(upstream(), calls)
    assert via == straight
    assert {got.status for got in via} > {200}
    # The only drift is the request that is not an object: the client's, not the server's.
    assert {(d.side, d.check) for d in drifts} == {("request", "request.decodes")}
    assert len(drifts) == len(projectops.operations())


# --- broken upstreams -------------------------------------------------------------------------

_INT64 = {
    FieldDescriptor.TYPE_INT64,
    FieldDescriptor.TYPE_UINT64,
    FieldDescriptor.TYPE_SINT64,
    FieldDescriptor.TYPE_FIXED64,
    FieldDescriptor.TYPE_SFIXED64,
}


def _is_timestamp(fd: FieldDescriptor) -> bool:
    return fd.message_type is not None and fd.message_type.full_name.endswith(".Timestamp")


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _break_one(
    data: dict[str, Any],
    descriptor: Descriptor,
    wanted: Callable[[FieldDescriptor], bool],
    new_value: Callable[[Any], Any] | None,
) -> str | None:
    """Break the first `wanted` field (breadth first) of the canonical JSON `data` of a
    `descriptor` message: its (first) value becomes ``new_value(value)``, or with no
    `new_value` its name becomes its proto name. The path of what changed, as written; None
    when no field is wanted."""
    queue: list[tuple[Any, Descriptor, str]] = [(data, descriptor, "")]
    while queue:
        value, message, path = queue.pop(0)
        for fd in message.fields:
            item = value.get(fd.json_name)
            is_map = fd.message_type is not None and fd.message_type.GetOptions().map_entry
            if item in (None, [], {}) or is_map:
                continue
            here = _join(path, fd.json_name)
            if wanted(fd):
                if new_value is None:
                    value[fd.name] = value.pop(fd.json_name)
                    return _join(path, fd.name)
                if fd.is_repeated:
                    item[0] = new_value(item[0])
                    return f"{here}[0]"
                value[fd.json_name] = new_value(item)
                return here
            inner = fd.message_type
            if inner is not None and not inner.full_name.startswith("google.protobuf."):
                for i, element in enumerate(item if fd.is_repeated else [item]):
                    queue.append((element, inner, f"{here}[{i}]" if fd.is_repeated else here))
    return None


#: How an upstream breaks one field of a response -> (which fields, their new value or None
#: for a proto name, the check that must name it).
_BROKEN: dict[str, tuple[Callable[[FieldDescriptor], bool], Any, str]] = {
    "an int64 as a number": (
        lambda fd: fd.message_type is None and fd.type in _INT64,
        int,
        "json.int64-strings",
    ),
    "a snake_case name": (lambda fd: fd.name != fd.json_name, None, "json.camel-case"),
    "an unknown enum name": (
        lambda fd: fd.enum_type is not None,
        lambda _: "NOT_A_VALUE_OF_THIS_ENUM",
        "response.decodes",
    ),
    "a timestamp with an offset": (
        _is_timestamp,
        lambda text: text.replace("Z", "+01:00"),
        "json.timestamps",
    ),
}


def _broken_answer(
    wanted: Callable[[FieldDescriptor], bool], new_value: Any
) -> tuple[projectops.Operation, FixtureResponse, dict[str, Any], str]:
    """The first response of the fixtures with a `wanted` field, broken there: (operation,
    answer, its broken JSON, the path broken); skips the test when no response has one."""
    for op, answer in _demo_answers():
        data = to_dict(answer.response)
        path = _break_one(data, answer.response.DESCRIPTOR, wanted, new_value)
        if path is not None:
            return op, answer, data, path
    pytest.skip("no answer of the default fixtures has such a field")


def _answering(status: int, body: bytes, content_type: str = "application/json") -> Starlette:
    """An upstream that answers every POST with `status` and `body`."""

    async def answer(request: Request) -> Response:
        await request.body()
        return Response(body, status, media_type=content_type)

    return Starlette(routes=[Route("/{path:path}", answer, methods=["POST"])])


@pytest.mark.parametrize("how", list(_BROKEN))
def test_one_broken_field_of_an_answer_is_one_drift_naming_it(how: str) -> None:
    wanted, new_value, check = _BROKEN[how]
    op, answer, data, path = _broken_answer(wanted, new_value)
    upstream = _answering(200, json.dumps(data).encode())
    via, straight, drifts = _call(upstream, [_post(op, to_json(answer.request).encode())])
    assert via == straight
    assert [(d.operation, d.side, d.check, d.field) for d in drifts] == [
        (op.name, "answer", check, path)
    ]
    line = drifts[0].line()
    assert line.startswith(f"drift: {op.name} answer {check} {path}: ")
    assert json.loads(drifts[0].json_line())["field"] == path


@pytest.mark.parametrize(
    ("status", "body", "content_type", "what"),
    [
        (400, b"bad request", "text/plain", "not an ErrorResponse"),
        (404, b'{"code": "internal", "message": "x"}', "application/json", "internal"),
        (400, b'{"code": "no_such_code", "message": "x"}', "application/json", "unknown code"),
    ],
)
def test_an_error_answer_that_breaks_the_error_rule_is_one_drift(
    status: int, body: bytes, content_type: str, what: str
) -> None:
    op = projectops.operations()[0]
    upstream = _answering(status, body, content_type)
    via, straight, drifts = _call(upstream, [_post(op, _valid(op))])
    assert via == straight == [Got(status, straight[0].content_type, body)]
    assert [(d.side, d.check, d.field) for d in drifts] == [("answer", "errors.error-response", "")]
    assert what in drifts[0].detail


@pytest.mark.parametrize("body", [b"<html>oops</html>", b"[]", b'{"a": '])
def test_a_200_that_is_no_json_object_is_one_drift_of_the_body(body: bytes) -> None:
    op = projectops.operations()[0]
    via, straight, drifts = _call(_answering(200, body, "text/html"), [_post(op, _valid(op))])
    assert via == straight
    assert [(d.side, d.check, d.field) for d in drifts] == [("answer", "response.decodes", "")]
    assert drifts[0].line().startswith(f"drift: {op.name} answer response.decodes (the body): ")


def test_a_request_that_drifts_is_reported_on_the_request_side() -> None:
    op, answer, field = next(
        (op, answer, fd.json_name)
        for op, answer in _demo_answers()
        for fd in op.request_type.DESCRIPTOR.fields
        if fd.type == fd.TYPE_STRING and not fd.is_repeated
    )
    data = {**to_dict(answer.request), field: {"not": "a string"}}
    via, straight, drifts = _call(_mock(), [_post(op, json.dumps(data).encode())])
    assert via == straight
    assert [(d.side, d.check, d.field) for d in drifts] == [("request", "request.decodes", field)]


def test_an_unknown_request_field_is_no_drift_a_missing_required_one_is() -> None:
    op, answer = _demo_answers()[0]
    data = {**to_dict(answer.request), "notAFieldOfThisRequest": 1}
    assert _call(_mock(), [_post(op, json.dumps(data).encode())])[2] == []  # §3.3
    op = next((op for op in projectops.operations() if required_fields(op)), None)
    if op is None:
        pytest.skip("no operation's request has a REQUIRED field")
    drifts = _call(_mock(), [_post(op, b"{}")])[2]
    # {} may break other rules too (a field whose default breaks one): those are other checks.
    missing = [(d.side, d.field) for d in drifts if d.check == "request.required"]
    assert missing == [("request", fd.json_name) for fd in required_fields(op)]


def _has_pattern(fd: FieldDescriptor) -> bool:
    found = rule_kind(fd)
    return found is not None and found[0] == "string" and found[1].HasField("pattern")


def test_an_answer_that_breaks_a_rule_draws_a_drift_line_naming_the_field() -> None:
    # Issue 32: a gitSha of "xyz" (a string breaking its pattern), an "Always set" field
    # (detailedResults) left out; a server on 127.0.0.1 answering so.
    op, answer, data, path = _broken_answer(_has_pattern, lambda _: "xyz")
    dropped = next(
        (
            (o, a, fd.json_name)
            for o, a in _demo_answers()
            for fd in o.response_type.DESCRIPTOR.fields
            if is_required(fd)
        ),
        None,
    )
    assert path is not None and dropped is not None, "no answer has a pattern or a REQUIRED field"
    gone, gone_answer, name = dropped
    left_out = {k: v for k, v in to_dict(gone_answer.response).items() if k != name}
    drifts = []
    for o, a, body in ((op, answer, data), (gone, gone_answer, left_out)):
        call = _post(o, to_json(a.request).encode())
        via, straight, found = _call(_answering(200, json.dumps(body).encode()), [call])
        assert via == straight
        drifts += found
    assert [(d.side, d.check, d.field) for d in drifts] == [
        ("answer", "response.rules", path),
        ("answer", "response.rules", name),
    ]
    assert "does not match regex pattern" in drifts[0].detail and "xyz" not in drifts[0].field
    assert drifts[1].line() == f"drift: {gone.name} answer response.rules {name}: is required"


def test_outside_text_is_escaped_and_the_key_redacted() -> None:
    op, answer, data, path = _broken_answer(_is_timestamp, lambda _: f"{KEY} \x1b[2J")
    evil = "evil\x1b]0;title\x07"
    drifts = []
    for body in (data, {**to_dict(answer.response), evil: 1}):
        call = _post(op, to_json(answer.request).encode())
        drifts += _call(_answering(200, json.dumps(body).encode()), [call])[2]
    assert [(d.check, d.field) for d in drifts] == [
        ("json.timestamps", path),
        ("response.decodes", "evil\\x1b]0;title\\x07"),
    ]
    for drift in drifts:
        text = drift.line() + drift.json_line()
        assert KEY not in text
        assert not any(ord(c) < 32 or ord(c) == 127 for c in text)


# --- the recording ------------------------------------------------------------------------------


def test_the_recording_is_fixtures_the_mock_serves_the_same_answers_from(tmp_path: Path) -> None:
    recording = Recording(max_responses=1000, max_bytes=CAP)
    calls = _ordinary_calls()
    via, _, _ = _call(_mock(), calls, recording=recording)
    path = tmp_path / "recorded.json"
    recording.write(str(path))
    text = path.read_text(encoding="utf-8")
    assert KEY not in text
    (project,) = decode_fixtures(text)
    assert project.api_key == STAND_IN_KEY
    assert "stand-in" in project.name
    answered = [got for got in via if got.status == 200]
    assert recording.count == len(answered) == len(_demo_answers())
    stand_in = {API_KEY_HEADER: STAND_IN_KEY}
    replay = [(m, p, body, stand_in if headers else {}) for m, p, body, headers in calls]
    _, served, _ = _call(_mock(fixtures=json.loads(text)), replay)
    assert [got for got in served if got.status == 200] == answered


def test_the_recording_keeps_one_answer_per_request_and_stops_at_its_caps() -> None:
    op, answer = _demo_answers()[0]
    call = _post(op, to_json(answer.request).encode())
    twice = Recording(max_responses=10, max_bytes=CAP)
    _call(_mock(), [call, call], recording=twice)
    assert (twice.count, twice.left_out) == (1, 0)
    few = Recording(max_responses=1, max_bytes=CAP)
    _call(_mock(), _ordinary_calls(), recording=few)
    assert few.count == 1
    assert few.left_out == len(_demo_answers()) - 1
    small = Recording(max_responses=10, max_bytes=10)
    _call(_mock(), [call], recording=small)
    assert (small.count, small.left_out) == (0, 1)
    for recording in (twice, few, small):
        assert len(decode_fixtures(json.dumps(recording.fixtures()))) == 1


def test_a_large_answer_is_judged_and_recorded_as_a_small_one() -> None:
    found = [
        (op, answer, to_dict(answer.response), fd)
        for op, answer in _demo_answers()
        for fd in op.response_type.DESCRIPTOR.fields
        if fd.is_repeated and fd.message_type and not fd.message_type.GetOptions().map_entry
    ]
    if not found:
        pytest.skip("no answer of the default fixtures has a list of messages at its top level")
    op, answer, data, fd = found[0]
    # Generated elements: each keeps the rules, and they differ (a list may hold each once).
    element = message_factory.GetMessageClass(fd.message_type)
    data[fd.json_name] = [to_dict(generate(element, str(i))) for i in range(1000)]
    body = json.dumps(data).encode()
    assert len(body) > 64 * 1024
    recording = Recording(max_responses=10, max_bytes=CAP)
    call = _post(op, to_json(answer.request).encode())
    via, _, drifts = _call(_answering(200, body), [call], recording=recording)
    assert (via[0].status, via[0].body, drifts) == (200, body, [])
    assert recording.count == 1
    (project,) = decode_fixtures(json.dumps(recording.fixtures()))
    assert to_dict(project.answers[op.name][0].response) == data


def test_an_answer_that_holds_the_key_is_not_recorded() -> None:
    def is_text(fd: FieldDescriptor) -> bool:
        return fd.type == FieldDescriptor.TYPE_STRING

    op, answer, data, _ = _broken_answer(is_text, lambda _: f"echo of {KEY.lower()}")
    recording = Recording(max_responses=10, max_bytes=CAP)
    via, _, _ = _call(
        _answering(200, json.dumps(data).encode()),
        [_post(op, to_json(answer.request).encode())],
        recording=recording,
    )
    assert via[0].status == 200
    assert (recording.count, recording.left_out) == (0, 1)
    assert KEY.lower() not in json.dumps(recording.fixtures()).lower()


# --- bounds and forwarding ------------------------------------------------------------------------


def _error_code(got: Got) -> str:
    return str(json.loads(got.body)["code"])


def test_an_answer_over_the_cap_is_503_and_a_late_one_504() -> None:
    op = projectops.operations()[0]
    big = _answering(200, b"[" + b"0," * 600 + b"0]")
    via, straight, _ = _call(big, [_post(op, _valid(op))], cap=1000)
    assert straight[0].status == 200
    assert (via[0].status, _error_code(via[0])) == (503, "unavailable")

    async def never(request: Request) -> Response:
        await anyio.sleep(60)
        return Response(b"{}")

    slow = Starlette(routes=[Route(op.path, never, methods=["POST"])])
    drifts: list[Violation] = []

    async def main() -> httpx2.Response:
        forward = AsyncRawClient(
            "http://upstream",
            timeout=0.05,
            max_response_bytes=CAP,
            transport=httpx2.ASGITransport(slow),
        )
        app = ValidationProxy(forward, report=drifts.append)
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app)) as client:
            return await client.post(f"http://p{op.path}", content=b"{}")

    late = anyio.run(main)
    assert (late.status_code, late.json()["code"]) == (504, "deadline_exceeded")


def test_an_upstream_that_cannot_be_reached_is_503(dead_url: str, no_proxy_in_env: Any) -> None:
    op = projectops.operations()[0]

    async def main() -> httpx2.Response:
        forward = AsyncRawClient(dead_url, timeout=TIMEOUT, max_response_bytes=CAP)
        app = ValidationProxy(forward, report=lambda _: None)
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app)) as client:
            return await client.post(f"http://p{op.path}", content=b"{}")

    got = anyio.run(main)
    assert (got.status_code, got.json()["code"]) == (503, "unavailable")


def test_the_dead_upstreams_log_line_redacts_the_key(
    dead_url: str, no_proxy_in_env: Any, caplog: pytest.LogCaptureFixture
) -> None:
    op = projectops.operations()[0]
    target = f"{op.path}?api_key={KEY}&trace=on"

    async def main() -> httpx2.Response:
        forward = AsyncRawClient(dead_url, timeout=TIMEOUT, max_response_bytes=CAP)
        app = ValidationProxy(forward, report=lambda _: None)
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app)) as client:
            headers = {API_KEY_HEADER: KEY}
            return await client.post(f"http://p{target}", content=b"{}", headers=headers)

    with caplog.at_level(logging.WARNING, logger="projectops.proxy"):
        got = anyio.run(main)
    assert got.status_code == 503
    (line,) = [r.getMessage() for r in caplog.records if r.name == "projectops.proxy"]
    assert op.path in line and "trace=on" in line  # the line says which call failed
    assert "api_key=" in line and KEY not in line  # the query shown, its key redacted


def test_a_body_over_the_limit_is_413_and_not_forwarded() -> None:
    op = projectops.operations()[0]
    calls = 0

    async def count(request: Request) -> Response:
        nonlocal calls
        calls += 1
        return Response(b"{}", media_type="application/json")

    upstream = Starlette(routes=[Route(op.path, count, methods=["POST"])])
    via, _, _ = _call(upstream, [_post(op, b" " * (MAX_BODY_BYTES + 1))])
    assert (via[0].status, _error_code(via[0])) == (413, "resource_exhausted")
    assert calls == 1  # the direct call only


def test_a_caller_that_leaves_in_the_middle_of_its_body_raises_nothing() -> None:
    op = projectops.operations()[0]
    app = ValidationProxy(AsyncRawClient("http://127.0.0.1:9"), report=lambda _: None)
    events = [
        {"type": "http.request", "body": b"{", "more_body": True},
        {"type": "http.disconnect"},
    ]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": op.path,
        "raw_path": op.path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"content-length", b"100")],
        "server": ("127.0.0.1", 80),
    }

    async def receive() -> Any:
        return events.pop(0)

    async def send(message: Any) -> None:
        pass

    anyio.run(app, scope, receive, send)  # no ClientDisconnect comes out
    assert events == []


def test_headers_go_through_as_they_came_both_ways() -> None:
    op, answer = _demo_answers()[0]
    seen: dict[str, list[tuple[bytes, bytes]]] = {}

    def watching(app: Any, name: str) -> Any:
        async def asgi(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http":
                seen[name] = list(scope["headers"])
            await app(scope, receive, send)

        return asgi

    async def answer_with_headers(request: Request) -> Response:
        body = to_json(answer.response).encode()
        return Response(body, headers={"X-Upstream": "yes"}, media_type="application/json")

    upstream = Starlette(routes=[Route(op.path, answer_with_headers, methods=["POST"])])
    headers = {API_KEY_HEADER: KEY, "X-Request-Id": "r-1", "Project-Id": "p", "Cookie": "a=b"}

    async def main() -> httpx2.Response:
        forward = AsyncRawClient(
            "http://upstream",
            timeout=TIMEOUT,
            max_response_bytes=CAP,
            transport=httpx2.ASGITransport(watching(upstream, "upstream")),
        )
        app = watching(ValidationProxy(forward, report=lambda _: None), "proxy")
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app)) as client:
            body = to_json(answer.request).encode()
            return await client.post(f"http://p{op.path}", content=body, headers=headers)

    got = anyio.run(main)
    assert (got.headers["x-upstream"], got.headers["content-type"]) == ("yes", "application/json")
    per_connection = {b"host", b"content-length", b"accept-encoding", b"connection"}
    assert [h for h in seen["upstream"] if h[0] not in per_connection] == [
        h for h in seen["proxy"] if h[0] not in per_connection
    ]
    assert (b"accept-encoding", b"identity") in seen["upstream"]
    assert (API_KEY_HEADER.lower().encode(), KEY.encode()) in seen["upstream"]


#: The hop-by-hop headers of RFC 9110 §7.6.1 (and the obsolete ``Proxy-Connection``), each with
#: a value it could carry; the proxy forwards none of them either way.
_HOP_BY_HOP_HEADERS = {
    "Connection": "keep-alive",
    "Proxy-Connection": "keep-alive",
    "Keep-Alive": "timeout=5",
    "Proxy-Authenticate": 'Basic realm="hop"',
    "Proxy-Authorization": "Basic aG9wOmhvcA==",
    "TE": "trailers",
    "Trailer": "X-Checksum",
    "Transfer-Encoding": "identity",
    "Upgrade": "websocket",
}


@pytest.mark.parametrize("name", sorted(_HOP_BY_HOP_HEADERS))
def test_hop_by_hop_headers_are_dropped_both_ways(name: str) -> None:
    op, answer = _demo_answers()[0]
    hop = {name: _HOP_BY_HOP_HEADERS[name], "X-End-To-End": "kept"}
    seen: list[tuple[bytes, bytes]] = []

    async def upstream_app(request: Request) -> Response:
        seen.extend(request.headers.raw)
        body = to_json(answer.response).encode()
        return Response(body, headers=hop, media_type="application/json")

    upstream = Starlette(routes=[Route(op.path, upstream_app, methods=["POST"])])

    async def main() -> httpx2.Response:
        transport = httpx2.ASGITransport(upstream)
        forward = AsyncRawClient(
            "http://upstream", timeout=TIMEOUT, max_response_bytes=CAP, transport=transport
        )
        app = ValidationProxy(forward, report=lambda _: None)
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app)) as client:
            body = to_json(answer.request).encode()
            headers = {API_KEY_HEADER: KEY, **hop}
            return await client.post(f"http://p{op.path}", content=body, headers=headers)

    got = anyio.run(main)
    assert got.status_code == 200
    forwarded = {k.decode().lower() for k, _ in seen}
    answered = {k.lower() for k in got.headers}
    assert "x-end-to-end" in forwarded and "x-end-to-end" in answered  # the test's own check
    assert name.lower() not in forwarded
    assert name.lower() not in answered


def test_on_real_sockets_it_answers_as_the_upstream(no_proxy_in_env: Any) -> None:
    calls = _ordinary_calls()
    drifts: list[Violation] = []
    with serving(_mock()) as upstream_url:
        forward = AsyncRawClient(upstream_url, timeout=TIMEOUT, max_response_bytes=CAP)
        with serving(ValidationProxy(forward, report=drifts.append)) as proxy_url:
            answers = {}
            for url in (upstream_url, proxy_url):
                with httpx2.Client(base_url=url, timeout=TIMEOUT) as client:
                    answers[url] = [
                        (r.status_code, r.headers.get("content-type"), r.content)
                        for r in (
                            client.request(method, path, content=body, headers=headers)
                            for method, path, body, headers in calls
                        )
                    ]
    assert answers[proxy_url] == answers[upstream_url]
    assert {d.side for d in drifts} == {"request"}


# --- the command ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--upstream", "ftp://example.com"], "--upstream"),
        (["--upstream", "http://user:secret@example.com"], "user name"),
        (["--upstream", "http://127.0.0.1:1", "--base-url", "http://x"], "--upstream"),
        (["--upstream", "http://127.0.0.1:1", "--record", "/no/such/folder/f.json"], "--record"),
        (["--upstream", "http://127.0.0.1:1", "--record", "."], "--record"),
        ([], "--upstream"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(run_cli: Any, args: list[str], says: str) -> None:
    result = run_cli("proxy", *args, "--port", "0")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert says in result.stderr
    assert "secret" not in result.stderr


def _start_proxy(args: list[str], err: Path) -> subprocess.Popen[bytes]:
    """``python -m projectops proxy *args``, its stderr written to `err`."""
    with err.open("wb") as stderr:
        return subprocess.Popen(
            [sys.executable, "-m", "projectops", "proxy", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )


@pytest.mark.slow
def test_the_program_proxies_then_records_on_sigterm_what_the_mock_serves_again(
    mock_server: Any, start_mock_server: Any, tmp_path: Path
) -> None:
    demo_key = "demo-key"  # the session mock server's default fixtures
    port, record, err = free_port(), tmp_path / "recorded.json", tmp_path / "stderr"
    args = ["--upstream", mock_server.base_url, "--port", str(port), "--record", str(record)]
    process = _start_proxy(args, err)
    calls = [(op.path, to_json(answer.request).encode()) for op, answer in _demo_answers()]

    def ask(url: str, key: str) -> list[tuple[int, bytes]]:
        with httpx2.Client(base_url=url, timeout=TIMEOUT) as client:
            return [
                (r.status_code, r.content)
                for r in (
                    client.post(path, content=body, headers={API_KEY_HEADER: key})
                    for path, body in calls
                )
            ]

    try:
        wait_until_listening(process, port, "projectops proxy", err.read_text)
        proxied = ask(f"http://{LOOPBACK}:{port}", demo_key)
    finally:
        code = stop(process)
    assert code == 0, err.read_text()
    assert proxied == ask(mock_server.base_url, demo_key)
    assert {status for status, _ in proxied} == {200}
    logged, recorded = err.read_text(), record.read_text(encoding="utf-8")
    assert "drift:" not in logged
    assert STAND_IN_KEY in logged
    assert demo_key not in logged + recorded
    decode_fixtures(recorded)
    replay = start_mock_server(record)
    assert ask(replay.base_url, STAND_IN_KEY) == proxied


@pytest.mark.slow
def test_an_empty_recording_says_why(mock_server: Any, tmp_path: Path) -> None:
    """``recorded 0 responses`` alone leaves the user guessing: the line says what is recorded."""
    port, record, err = free_port(), tmp_path / "recorded.json", tmp_path / "stderr"
    args = ["--upstream", mock_server.base_url, "--port", str(port), "--record", str(record)]
    process = _start_proxy(args, err)
    try:
        wait_until_listening(process, port, "projectops proxy", err.read_text)
        with httpx2.Client(base_url=f"http://{LOOPBACK}:{port}", timeout=TIMEOUT) as client:
            path = projectops.operations()[0].path
            assert client.post(path, content=b"{}", headers={API_KEY_HEADER: "no"}).status_code
    finally:
        code = stop(process)
    assert code == 0, err.read_text()
    assert "recorded 0 answers" in err.read_text()
    assert "no 200 answer of an operation came through the proxy" in err.read_text()


@pytest.mark.slow
def test_the_program_writes_json_lines_for_a_broken_upstream(tmp_path: Path) -> None:
    op, answer, data, path = _broken_answer(*_BROKEN["an int64 as a number"][:2])
    port, out, err = free_port(), tmp_path / "stdout", tmp_path / "stderr"
    with serving(_answering(200, json.dumps(data).encode())) as upstream_url:
        args = ["proxy", "--json", "--upstream", upstream_url, "--port", str(port)]
        with out.open("wb") as stdout, err.open("wb") as stderr:
            process = subprocess.Popen(
                [sys.executable, "-m", "projectops", *args],
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        try:
            wait_until_listening(process, port, "projectops proxy", err.read_text)
            with httpx2.Client(base_url=f"http://{LOOPBACK}:{port}", timeout=TIMEOUT) as client:
                body = to_json(answer.request).encode()
                got = client.post(op.path, content=body, headers={API_KEY_HEADER: KEY})
        finally:
            code = stop(process)
    assert code == 0, err.read_text()
    assert got.content == json.dumps(data).encode()
    lines = out.read_text().splitlines()
    assert [json.loads(line) for line in lines] == [
        {
            "operation": op.name,
            "side": "answer",
            "check": "json.int64-strings",
            "field": path,
            "detail": json.loads(lines[0])["detail"],
        }
    ]
    logged = err.read_text()
    assert "drift" not in logged
    assert KEY not in logged + out.read_text()


def test_a_percent_encoded_path_goes_upstream_as_it_came_and_is_no_operation() -> None:
    op = projectops.operations()[0]
    prefix, name = op.path.rsplit("/", 1)
    seen: list[tuple[bytes, bytes]] = []

    async def record(scope: Any, receive: Any, send: Any) -> None:
        seen.append((scope["raw_path"], scope["query_string"]))
        await Response(b'{"a": ', 200, media_type="application/json")(scope, receive, send)

    # The operation's name with its first letter percent-encoded: no separator, so forwarded.
    path = f"{prefix}/%{ord(name[0]):02X}{name[1:]}"
    _, _, drifts = _call(record, [("POST", f"{path}?q=%2F", b"[]", {})])
    assert seen == [(path.encode(), b"q=%2F")] * 2
    assert drifts == []  # not judged as an operation


def test_an_encoded_separator_in_the_path_is_refused_and_not_sent() -> None:
    op = projectops.operations()[0]
    prefix, name = op.path.rsplit("/", 1)
    seen: list[bytes] = []

    async def record(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope["raw_path"])
        await Response(b"{}", 200, media_type="application/json")(scope, receive, send)

    paths = [f"{prefix}%2F{name}", f"{prefix}/a%2F..%2F..%2Fadmin", f"{op.path};v=1"]
    via, _, drifts = _call(record, [("POST", path, b"{}", {}) for path in paths])
    assert [got.status for got in via] == [400, 400, 400]
    assert seen == [path.encode() for path in paths]  # the straight calls only
    assert drifts == []


def test_framing_headers_in_any_spelling_are_not_forwarded() -> None:
    op, answer = _demo_answers()[0]
    odd = {"Transfer_Encoding": "chunked", "Content.Length": "1", "KEEP_ALIVE": "x"}
    call = ("POST", op.path, to_json(answer.request).encode(), {API_KEY_HEADER: KEY, **odd})
    via, straight, _ = _call(_mock(), [call])
    assert via == straight and via[0].status == 200


def test_a_request_over_a_rule_is_a_request_rules_drift() -> None:
    op, fd, most = with_max_length_string()
    request = to_dict(generate(op.request_type, "drift", minimal=True))  # keeps every other rule
    request[fd.json_name] = "x" * (most + 1)
    body = json.dumps(request).encode()
    found, message = find_violations(op, "request", body)
    assert message is not None  # it decodes: only the rule is broken
    assert [(v.check, v.field) for v in found] == [("request.rules", fd.json_name)]


def test_an_upstream_client_with_fewer_connections_than_max_calls_is_refused() -> None:
    # A call let in must never wait for a pooled connection within the upstream's time-out
    # (issue 39, item 3): the proxy says so when it is made, not as a 504 later.
    client = AsyncRawClient("http://127.0.0.1:9", max_connections=2)
    with pytest.raises(ValueError, match="max_calls"):
        ValidationProxy(client, report=lambda violation: None, max_calls=3)
    ValidationProxy(client, report=lambda violation: None, max_calls=2)  # as many: taken


def test_a_call_past_max_calls_in_flight_is_503_at_once_and_the_next_is_let_in() -> None:
    """A call counts from its head until it is done; one more is refused without waiting."""
    statuses: list[int] = []

    async def main() -> httpx2.Response:
        arrived = anyio.Event()
        release = anyio.Event()

        async def held(request: Request) -> Response:
            arrived.set()
            await release.wait()
            return Response(b"{}", media_type="application/json")

        upstream = Starlette(routes=[Route("/{path:path}", held, methods=["GET"])])
        transport = httpx2.ASGITransport(upstream)
        forward = AsyncRawClient("http://upstream", timeout=TIMEOUT, transport=transport)
        app = ValidationProxy(forward, report=lambda violation: None, max_calls=1)
        client = httpx2.AsyncClient(transport=httpx2.ASGITransport(app), base_url="http://p")

        async def first() -> None:
            statuses.append((await client.get("/held")).status_code)

        async with client, anyio.create_task_group() as group:
            group.start_soon(first)
            await arrived.wait()
            refused = await client.get("/refused")
            release.set()
        async with httpx2.AsyncClient(
            transport=httpx2.ASGITransport(app), base_url="http://p"
        ) as c:
            statuses.append((await c.get("/after")).status_code)
        await forward.aclose()
        return refused

    refused = anyio.run(main)
    assert (refused.status_code, refused.json()["code"]) == (503, "unavailable")
    assert "(--max-calls)" in refused.json()["message"]
    assert refused.headers["connection"] == "close"
    assert statuses == [200, 200]
