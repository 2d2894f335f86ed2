"""``projectops proxy``: a validation proxy in front of any server of this API
(docs/conformance.md). Calls are forwarded as they came and answered with what the upstream
answered; an operation's request is decoded as a server does and its answer judged with the
catalogue's checks of one answer, each violation a :class:`Drift`; 200 answers can be recorded
as mock fixtures (:class:`Recording`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from functools import partial
from typing import Any, Literal

import anyio
import anyio.to_thread
from google.protobuf.message import Message
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from projectops._text import outside_text
from projectops.answers import ALLOWED_METHOD, BODY_TOO_LARGE
from projectops.client import AsyncRawClient
from projectops.client.redaction import redact
from projectops.codec import dump, error_body, from_json, to_dict
from projectops.conformance._catalogue import DECODES, judge_answer
from projectops.conventions import API_KEY_HEADER, CONTENT_TYPE, MAX_BODY_BYTES
from projectops.errors import HTTP_STATUS_BY_CODE, ApiError, Code, InvalidArgument, Unavailable
from projectops.fixtures import request_key
from projectops.registry import Operation, operations
from projectops.validation import validate, violations

__all__ = ["STAND_IN_KEY", "Drift", "Recording", "create_proxy_app", "drift"]

#: The ``apiKey`` of the recorded fixtures' first project (then ``-2``, ``-3``, ...).
STAND_IN_KEY = "recorded-key"
Side = Literal["request", "answer"]
# Headers of one connection (RFC 9110 §7.6.1) or that the proxy sets (it asks for identity
# encoding), in any spelling: the client's header check refuses Transfer_Encoding too.
_HOP_BY_HOP = frozenset(
    "connection keepalive proxyauthenticate proxyauthorization proxyconnection te trailer "
    "transferencoding upgrade host contentlength acceptencoding".split()
)
_DETAIL_CHARS = 200
_log = logging.getLogger("projectops.proxy")
_OFF_LOOP_BYTES = 64 * 1024


@dataclass(frozen=True)
class Drift:
    """Where a request or an answer breaks the contract: the catalogue's `check` id (a request:
    ``request.decodes`` or ``request.required``), the `field` path (``""``: the whole body) and
    the `detail`; both outside text, the caller's key redacted."""

    operation: str
    side: Side
    check: str
    field: str
    detail: str

    def line(self) -> str:
        """``drift: <operation> <side> <check> <field>: <detail>``, for stderr."""
        where = self.field or "(the body)"
        return f"drift: {self.operation} {self.side} {self.check} {where}: {self.detail}"

    def json_line(self) -> str:
        """The drift as one line of JSON (ASCII), its fields by name."""
        return json.dumps(asdict(self), ensure_ascii=True)


def drift(
    op: Operation, side: Side, body: bytes, *, status: int = 200, key: str = ""
) -> tuple[list[Drift], Message | None]:
    """The drifts of `body`, a request of `op` or its answer of `status`, with `key` redacted;
    and its message (``None``: it does not decode, or is an error answer). A request decodes as
    a server decodes it, unknown fields ignored (§3.3), and holds its REQUIRED fields (§4); an
    answer is judged by :func:`judge_answer`."""
    message: Message | None
    if side == "request":
        try:  # an empty request is {} (§1.2)
            message = from_json(body if body.strip() else b"{}", op.request_type)
            missing = [f"{v.field}: {v.description}" for v in violations(message)]
            problems = {"request.required": missing}
        except InvalidArgument as exc:
            message, problems = None, {"request.decodes": [exc.message]}
    else:
        verdict = judge_answer(op.response_type, status, body)
        problems = verdict.problems
        message = None if DECODES in problems else verdict.message
    out: list[Drift] = []
    named: set[str] = set()
    # The mapping checks first: they name the fields the decoding check would name again.
    for check, found in sorted(problems.items(), key=lambda item: item[0].endswith("decodes")):
        for problem in found:
            field, what = _split(problem.removeprefix(f"not a {op.response_type.__name__}: "))
            if check.endswith("decodes") and field and field in named:
                continue
            named.add(field)
            field, what = (outside_text(t, _DETAIL_CHARS, [key]) for t in (field, what))
            out.append(Drift(op.name, side, check, field, what))
    return out, message


def _split(problem: str) -> tuple[str, str]:
    """``(field path, what)`` of a ``"<path>: <what>"`` problem, else ``("", problem)``. A path
    holds no space but in a map key, a JSON string (``labels["a: b"]``)."""
    if problem.startswith("the body: "):
        return "", problem[len("the body: ") :]
    at, decoder = 0, json.JSONDecoder()
    while at < len(problem) and problem[at] != " ":
        if problem.startswith(": ", at):
            return problem[:at], problem[at + 2 :]
        try:
            at = decoder.raw_decode(problem, at + 1)[1] if problem.startswith('["', at) else at + 1
        except ValueError:
            break
    return "", problem


class Recording:
    """The 200 answers seen, as a mock fixtures file: one project per key (kept only as a
    hash), ``recorded``/:data:`STAND_IN_KEY`, then ``recorded-2``/``recorded-key-2``, ...; the
    latest answer of one request wins. Left out: an invalid request, an answer holding the key,
    one past `max_answers` answers or `max_bytes` bytes of JSON."""

    def __init__(self, *, max_answers: int, max_bytes: int) -> None:
        self._max_answers, self._max_bytes = max_answers, max_bytes
        # hash of the key -> operation -> request key -> (answer's JSON object, its size)
        self._projects: dict[str, dict[str, dict[str, tuple[dict[str, Any], int]]]] = {}
        self.count = self.bytes = self.left_out = 0
        self._lock = threading.Lock()

    def add(self, op: Operation, key: str, request: Message, response: Message) -> None:
        """Keep the 200 answer of `op` to `request` sent with `key`. Thread-safe."""
        try:
            validate(request)  # the mock could not serve an invalid request
            entry = {"request": to_dict(request), "response": to_dict(response)}
        except InvalidArgument:
            entry = None
        text = "" if entry is None else dump(entry)
        size, wanted = len(text.encode()), request_key(request)
        hashed = hashlib.sha256(key.strip().encode("utf-8", "surrogatepass")).hexdigest()
        with self._lock:
            answers = self._projects.setdefault(hashed, {}).setdefault(op.name, {})
            old = answers.get(wanted)
            grows = size - (old[1] if old else 0)
            if (
                entry is None
                or (key and redact(text, [key]) != text)
                or (old is None and self.count >= self._max_answers)
                or self.bytes + grows > self._max_bytes
            ):
                self.left_out += 1
                return
            answers[wanted] = (entry, size)
            self.count += old is None
            self.bytes += grows

    def fixtures(self) -> dict[str, Any]:
        """The fixtures file's JSON object; with no answer, one project without operations."""
        projects = self._projects or {"": {}}
        return {
            "projects": [
                {
                    "project": _name("recorded", i) + " (apiKey is a stand-in: set the key your "
                    "tests send)",
                    "apiKey": _name(STAND_IN_KEY, i),
                    "operations": {
                        name: [entry for entry, _ in answers.values()]
                        for name, answers in sorted(ops.items())
                    },
                }
                for i, ops in enumerate(projects.values())
            ]
        }

    def write(self, path: str) -> None:
        """Write :meth:`fixtures` to `path` (atomically). Raises OSError."""
        temporary = f"{path}.{os.getpid()}.tmp"
        with open(temporary, "w", encoding="utf-8") as file:
            file.write(dump(self.fixtures(), indent=2) + "\n")
        os.replace(temporary, path)


def _end_to_end(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(k, v) for k, v in headers if re.sub("[^a-z0-9]", "", k.lower()) not in _HOP_BY_HOP]


def _name(base: str, index: int) -> str:
    return base if index == 0 else f"{base}-{index + 1}"


def create_proxy_app(
    upstream: AsyncRawClient,
    *,
    report: Callable[[Drift], None],
    recording: Recording | None = None,
) -> Starlette:
    """The proxy's ASGI app: every call is sent on through `upstream` (the caller closes it);
    the drifts of an operation's call go to `report`, its 200 answers to `recording`."""
    by_path = {op.path: op for op in operations()}

    async def proxy(request: Request) -> Response:
        body = bytearray()
        try:
            async for chunk in request.stream():
                body += chunk
                if len(body) > MAX_BODY_BYTES:
                    return _error(BODY_TOO_LARGE.error(f"the body is over {MAX_BODY_BYTES} bytes"))
        except ClientDisconnect:  # the caller left before its request was whole: no one to answer
            return Response(status_code=400)
        path = request.scope["raw_path"].decode("latin-1")  # as it came: %2F is no "/"
        op = by_path.get(path) if request.method == ALLOWED_METHOD else None
        key = request.headers.get(API_KEY_HEADER, "").strip()
        drifts, sent = drift(op, "request", bytes(body), key=key) if op else ([], None)
        for found in drifts:
            report(found)
        headers = _end_to_end(request.headers.items())
        query = request.scope["query_string"].decode("latin-1")
        target = path + (f"?{query}" if query else "")
        try:
            answer = await upstream.send(request.method, target, bytes(body), headers)
            if answer.truncated:
                cap = f"{upstream.max_response_bytes} bytes (--max-response-bytes)"
                raise Unavailable(f"the upstream's answer is over {cap}")
        except ApiError as exc:  # no complete answer: 504 past the time-out, else 503
            shown = (outside_text(text, 300, [key]) for text in (target, exc.message))
            _log.warning("%s %s: %s", request.method, *shown)
            return _error(exc)
        except ValueError as exc:  # a header the exchange cannot send as it came
            return _error(InvalidArgument(f"cannot forward: {outside_text(str(exc), 200)}"))
        if op is not None:
            judge = partial(drift, op, "answer", answer.body, status=answer.status, key=key)
            # A large answer is judged in a worker thread: other calls go on meanwhile.
            big = len(answer.body) > _OFF_LOOP_BYTES
            drifts, got = await anyio.to_thread.run_sync(judge) if big else judge()
            for found in drifts:
                report(found)
            # `got` is set for a 200 answer that decodes strictly only.
            if recording is not None and sent is not None and got is not None:
                record = partial(recording.add, op, key, sent, got)
                await anyio.to_thread.run_sync(record) if big else record()
        response = Response(answer.body, answer.status)
        response.raw_headers = [
            (k.lower().encode("latin-1"), v.encode("latin-1"))
            for k, v in _end_to_end(answer.headers)
        ] + [(b"content-length", str(len(answer.body)).encode())]
        return response

    methods = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
    return Starlette(routes=[Route("/{path:path}", proxy, methods=methods)])


def _error(exc: ApiError) -> Response:
    status = HTTP_STATUS_BY_CODE[Code(exc.code)]
    return Response(error_body(exc), status, media_type=CONTENT_TYPE)
