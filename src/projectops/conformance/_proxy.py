"""``projectops proxy``: a validation proxy in front of any server of this API
(docs/conformance.md). Calls are forwarded as they came and answered with what the upstream
answered; once the response is sent, an operation's request is decoded as a server does and its
answer judged with the catalogue's checks of one response, in a bounded number of worker threads,
each violation a :class:`Violation`; 200 responses can be recorded as mock fixtures
(:class:`Recording`).

What it refuses to forward, with an ``ErrorResponse``: a request target with a dot segment, a
``#``, a ``;`` or a percent-encoded separator (``%2F``, ``%5C``, ``%3B``), or anything else
that would not reach the upstream below its base path as it came (what is forwarded is what is
judged); a body over ``max_request_bytes`` (413, read by the server adapter's
:func:`projectops.server.read_body`) or not whole within ``body_timeout`` (408); a call past
``max_calls`` in flight (503).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import threading
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import asdict, dataclass
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

import anyio
import anyio.to_thread
import httpx2
from google.protobuf.message import Message
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from projectops._text import REDACTED, outside_text, redact_secrets
from projectops.client import AsyncRawClient
from projectops.codec import dump, from_json, to_dict
from projectops.conformance._catalogue import DECODES, Problem, decode_problem, judge_response
from projectops.conformance._report import MAX_CALLS, MAX_JUDGED_BYTES
from projectops.conventions import (
    API_KEY_HEADER,
    DEFAULT_BODY_TIMEOUT,
    MAX_BODY_BYTES,
    header_key,
)
from projectops.error_cases import ALLOWED_METHOD, BODY_TIMED_OUT
from projectops.errors import ApiError, DeadlineExceeded, InvalidArgument, Unavailable
from projectops.fixtures import request_key
from projectops.registry import REGISTRY, Operation, Registry
from projectops.server import error_response, read_body
from projectops.validation import REQUIRED_RULE, rule_violations, violations

__all__ = [
    "JUDGING_WORKERS",
    "NOT_JUDGED",
    "STAND_IN_KEY",
    "Recording",
    "ValidationProxy",
    "Violation",
    "find_violations",
]

#: The ``apiKey`` of the recorded fixtures' first project (then ``-2``, ``-3``, ...).
STAND_IN_KEY = "recorded-key"
#: Worker threads that judge calls at once; as many more calls may wait for one, and a call
#: past those is not judged (its memory would wait with it).
JUDGING_WORKERS = 2
#: The check of the drift line of a call that was forwarded but not judged, saying why.
NOT_JUDGED = "proxy.not-judged"
Side = Literal["request", "answer"]
# Headers of one connection (RFC 9110 §7.6.1) or that the proxy sets (it asks for identity
# encoding), in any spelling: the client's header check refuses Transfer_Encoding too. The
# headers a Connection header names are dropped as well, both ways.
_HOP_BY_HOP = frozenset(
    "connection keepalive proxyauthenticate proxyauthorization proxyconnection te trailer "
    "transferencoding upgrade host contentlength acceptencoding".split()
)
# The key header as a server reads it: any case, "-" or "_" (CGI); and the other credentials
# a client may send along, which a recording must not hold either.
_KEY_HEADER = header_key(API_KEY_HEADER)
_CREDENTIALS = frozenset({_KEY_HEADER, "authorization", "cookie"})
_DETAIL_CHARS = 200
# Separators percent-encoded, as a lower-cased path holds them: an upstream may decode them
# before it splits the path into segments.
_ENCODED_SEPARATORS = ("%2f", "%5c", "%3b")
_log = logging.getLogger("projectops.proxy")
# The methods forwarded (and HEAD, which Starlette's Route adds to GET); another is 405.
_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


@dataclass(frozen=True)
class Violation:
    """Where a request or a response breaks the contract: the catalogue's `check` id (a request:
    ``request.decodes``, ``request.required`` or ``request.rules``), the `field` path (``""``:
    the whole body) and the `detail`; both outside text, the caller's key redacted."""

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
        return json.dumps(asdict(self))  # ensure_ascii by default


def find_violations(
    op: Operation, side: Side, body: bytes, *, status: int = 200, secrets: Sequence[str] = ()
) -> tuple[list[Violation], Message | None]:
    """The violations of one side of a call of `op`, and its message.

    Args:
        op: the operation called.
        side: ``"request"``: `body` decodes as a server decodes it, unknown fields ignored
            (docs/contract.md §3.3), holds its REQUIRED fields (§4) and keeps the schema's
            rules (§4.6, when protovalidate is installed); ``"answer"``: `body`
            is judged by :func:`judge_response` as the response of `status`.
        body: the whole body, as it came.
        status: the response's HTTP status (for ``"answer"``).
        secrets: the credentials the caller sent (the key in every header spelling,
            ``Authorization``, ``Cookie``), redacted from each drift's texts.

    Returns:
        The violations, and the message (``None``: it does not decode, or is an error response).
    """
    message: Message | None
    if side == "request":
        try:  # an empty request is {} (§1.2)
            message = from_json(body if body.strip() else b"{}", op.request_type)
            # REQUIRED is walked again by rule_violations: a request is small, and the engine
            # may be missing (extra `server`), when REQUIRED alone is judged.
            missing = [Problem(v.field, v.description, REQUIRED_RULE) for v in violations(message)]
            problems = {"request.required": missing}
            with suppress(ImportError):
                broken = [v for v in rule_violations(message) if v.rule != REQUIRED_RULE]
                problems["request.rules"] = [
                    Problem(v.field, v.description, v.rule) for v in broken
                ]
        except InvalidArgument as exc:
            message = None
            problems = {"request.decodes": [decode_problem(exc)]}
    else:
        verdict = judge_response(op.response_type, status, body)
        problems = verdict.problems
        message = None if DECODES in problems else verdict.message
    out: list[Violation] = []
    named: set[str] = set()
    # The mapping checks first: they name the fields the decoding check would name again.
    for check, found in sorted(problems.items(), key=lambda item: item[0].endswith("decodes")):
        for problem in found:
            path = problem.path or ""
            if check.endswith("decodes") and path and path in named:
                continue
            named.add(path)
            # The edge: the peer's text redacted, escaped and cut, once.
            field = outside_text(path, _DETAIL_CHARS, secrets)
            what = outside_text(problem.what, _DETAIL_CHARS, secrets)
            out.append(Violation(op.name, side, check, field, what))
    return out, message


class Recording:
    """The 200 responses seen, as a mock fixtures file: one project per key (kept only as a
    hash), ``recorded``/:data:`STAND_IN_KEY`, then ``recorded-2``/``recorded-key-2``, ...; the
    latest answer of one request wins.

    Left out (counted in `left_out`): a 200 response that drew a drift or was not judged, or whose
    request drew one (:meth:`leave_out`); a response that holds a credential the caller sent (the
    key, ``Authorization``, ``Cookie``); a new answer past `max_responses` answers or `max_bytes`
    bytes of JSON. A project exists only with a response in it, so the limits bound the projects
    too.

    Args:
        max_responses: answers kept at most (``--record-max-responses``).
        max_bytes: bytes of the responses' JSON kept at most (``--record-max-bytes``).
    """

    def __init__(self, *, max_responses: int, max_bytes: int) -> None:
        self._max_responses = max_responses
        self._max_bytes = max_bytes
        # hash of the key -> operation -> request key -> (response's JSON object, its size)
        self._projects: dict[str, dict[str, dict[str, tuple[dict[str, Any], int]]]] = {}
        # The summary's figures: answers kept, bytes of their JSON, answers left out.
        self.count = 0
        self.bytes = 0
        self.left_out = 0
        self._lock = threading.Lock()

    def add(
        self,
        op: Operation,
        key: str,
        request: Message,
        response: Message,
        credentials: Sequence[str] = (),
    ) -> None:
        """Keep the 200 response `response` of `op` to `request`, sent with `key` (the project: the
        key header's value, stripped) and `credentials` (every credential the caller sent, `key`
        included: a response that echoes one is left out). `request` keeps REQUIRED and the
        rules: the caller judged it, as the mock could not serve it otherwise. Thread-safe."""
        entry = {"request": to_dict(request), "response": to_dict(response)}
        text = dump(entry)
        size = len(text.encode())
        wanted = request_key(request)
        hashed = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
        echoed = redact_secrets(text, [key, *credentials], REDACTED) != text
        with self._lock:
            answers = self._projects.get(hashed, {}).get(op.name, {})
            old = answers.get(wanted)
            grows = size - (old[1] if old else 0)
            if (
                echoed
                or (old is None and self.count >= self._max_responses)
                or self.bytes + grows > self._max_bytes
            ):
                self.left_out += 1
                return
            self._projects.setdefault(hashed, {}).setdefault(op.name, {})[wanted] = (entry, size)
            self.count += old is None
            self.bytes += grows

    def leave_out(self) -> None:
        """Count a 200 response that is not recorded for a drift it or its request drew (the drift
        lines name it), so the summary agrees with them. Thread-safe."""
        with self._lock:
            self.left_out += 1

    def fixtures(self) -> dict[str, Any]:
        """The fixtures file's JSON object; with no response, one project without operations."""
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
        """Write :meth:`fixtures` to `path` atomically: through a new file of an unpredictable
        name in the same folder (``tempfile.mkstemp``: created, never opened through a link),
        then renamed over `path` (a link at `path` is replaced, not followed). Raises OSError."""
        folder, name = os.path.split(os.path.abspath(path))
        descriptor, temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
        try:
            with open(descriptor, "w", encoding="utf-8") as file:
                file.write(dump(self.fixtures(), indent=2) + "\n")
            os.replace(temporary, path)
        except BaseException:
            os.unlink(temporary)
            raise


def _credential_parts(name: str, value: str) -> list[str]:
    """What an echo of the header `name: value` may show of a credential: the whole value of
    the key (any spelling), ``Authorization`` or ``Cookie``, and the parts an echo may hold
    alone (an ``Authorization`` token after its scheme, a cookie, a cookie's value) of at
    least 8 characters; else nothing."""
    if header_key(name) not in _CREDENTIALS or not value.strip():
        return []
    pairs = value.split(";")
    parts = [
        *value.split(None, 1)[1:],  # an Authorization token after its scheme
        *pairs,  # a cookie
        *(pair.partition("=")[2] for pair in pairs),  # a cookie's value
    ]
    return [value.strip(), *(part.strip() for part in parts if len(part.strip()) >= 8)]


def _end_to_end(headers: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """`headers` without those of one connection: the hop-by-hop ones and the ones a
    ``Connection`` header names (RFC 9110 §7.6.1), in any spelling."""
    dropped = set(_HOP_BY_HOP)
    for name, value in headers:
        if header_key(name) == "connection":
            dropped.update(header_key(token) for token in value.split(","))
    return [(k, v) for k, v in headers if header_key(k) not in dropped]


def _name(base: str, index: int) -> str:
    return base if index == 0 else f"{base}-{index + 1}"


def _refused_target(path: str, target: str, base_url: str) -> str | None:
    """Why the request target `target` (`path` as sent, percent-encoded, with its query) cannot
    be forwarded to below `base_url` as it came; ``None``: it can. Refused: no leading ``/``, a
    ``#`` or ``\\``, a dot segment (``.``, ``..``, percent-encoded too), a separator sent
    percent-encoded (``%2F``, ``%5C``, ``%3B``, any case) or a ``;`` (a path parameter: an
    upstream that decodes or strips them before it normalises would read ``..%2f`` or ``..;``
    as a dot segment), or any other difference between what the HTTP client would send and
    ``base path + target``."""
    dots = any(unquote(segment) in (".", "..") for segment in path.split("/"))
    if dots or not path.startswith("/") or "#" in target or "\\" in path:
        return "it holds a dot segment ('.' or '..'), a '#' or a '\\', or does not start with '/'"
    if ";" in path or any(encoded in path.lower() for encoded in _ENCODED_SEPARATORS):
        return "it holds a path parameter (';') or an encoded separator (%2F, %5C, %3B)"
    expected = urlsplit(base_url).path + target
    try:
        sent = httpx2.URL(base_url + target).raw_path.decode("ascii")
    except (httpx2.InvalidURL, UnicodeDecodeError):
        return "it is not a valid URL path"
    if sent != expected:
        return "the upstream would be sent another path"
    return None


class ValidationProxy:
    """The validation proxy, an ASGI application beside the server adapter's
    (docs/conformance.md): each call forwarded to the upstream as it came and answered with its
    answer, then judged in a worker thread; at most `max_calls` HTTP calls in flight (counted on
    the event loop's thread), one more answered 503 ``unavailable`` at once, its body unread,
    ``Connection: close``. It answers every path and method.

    Args:
        upstream: the exchange every call is sent on through (the caller closes it); its
            ``base_url`` is the upstream, whose path every forwarded target stays below. Its
            ``max_connections`` must be `max_calls` at least: a call let in never waits for a
            pooled connection, so its ``timeout`` is the upstream's time alone.
        report: called with each drift, from the event loop's thread.
        recording: where the 200 responses go (``None``, the default: not recorded).
        max_request_bytes: the largest request body forwarded, in bytes (default
            :data:`projectops.conventions.MAX_BODY_BYTES`); above it, 413 and nothing sent.
        max_judged_bytes: the largest answer judged, in bytes (:data:`MAX_JUDGED_BYTES` by
            default); a larger one is forwarded and one :data:`NOT_JUDGED` drift says so.
        workers: threads that judge at once (:data:`JUDGING_WORKERS` by default); a call that
            finds them busy and as many waiting is not judged (one :data:`NOT_JUDGED` drift).
        max_calls: calls in flight at most, from the request's head to the end of its judging
            (:data:`MAX_CALLS` by default); one more is answered 503 ``unavailable`` at once,
            its body not read, and the connection closed.
        body_timeout: seconds a request body may take to arrive whole, however slowly it
            trickles, then 408 ``deadline_exceeded`` and nothing is sent
            (:data:`projectops.conventions.DEFAULT_BODY_TIMEOUT` by default; ``None``: no limit).
        registry: the operations judged; :data:`projectops.registry.REGISTRY` by default.

    Raises:
        ValueError: `upstream` has fewer than `max_calls` connections.
    """

    def __init__(
        self,
        upstream: AsyncRawClient,
        *,
        report: Callable[[Violation], None],
        recording: Recording | None = None,
        max_request_bytes: int = MAX_BODY_BYTES,
        max_judged_bytes: int = MAX_JUDGED_BYTES,
        workers: int = JUDGING_WORKERS,
        max_calls: int = MAX_CALLS,
        body_timeout: float | None = DEFAULT_BODY_TIMEOUT,
        registry: Registry = REGISTRY,
    ) -> None:
        if upstream.max_connections < max_calls:
            raise ValueError(
                f"the upstream's client has {upstream.max_connections} connections, fewer than "
                f"max_calls ({max_calls}): calls would wait for one within their time-out"
            )
        self._upstream = upstream
        self._report = report
        self._recording = recording
        self._max_request_bytes = max_request_bytes
        self._max_judged_bytes = max_judged_bytes
        self._max_calls = max_calls
        self._body_timeout = body_timeout
        self._by_path = {op.path: op for op in registry.operations()}
        self._judges = anyio.CapacityLimiter(workers)
        # Calls being judged or waiting for a judge, counted here (on the loop's thread only): the
        # limiter's own statistics lag, since run_sync yields once before it borrows, and calls
        # arriving together would all pass.
        self._waiting = 0
        # HTTP calls in flight, from the request's head to the end of its judging.
        self._calls = 0
        route = Route("/{path:path}", self._forward, methods=_METHODS)
        self._router = Starlette(routes=[route])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one ASGI connection (``http``; ``lifespan`` and others go to the router).

        Args:
            scope: the connection's ASGI scope.
            receive: its ASGI receive callable.
            send: its ASGI send callable.
        """
        if scope["type"] != "http":
            await self._router(scope, receive, send)
            return
        if self._calls >= self._max_calls:
            busy = Unavailable(
                f"the proxy has {self._max_calls} calls in flight (--max-calls); try again later"
            )
            await error_response(busy, headers={"Connection": "close"})(scope, receive, send)
            return
        self._calls += 1
        try:
            await self._router(scope, receive, send)
        finally:
            self._calls -= 1

    async def _forward(self, request: Request) -> Response:
        """Forward `request` to the upstream; its response, the call's judging as its background."""
        path = request.scope["raw_path"].decode("latin-1")  # as it came: %2F is no "/"
        query = request.scope["query_string"].decode("latin-1")
        headers = request.headers.items()
        # The first header a server could read as the key, and every credential sent.
        keys = (v.strip() for k, v in headers if header_key(k) == _KEY_HEADER and v.strip())
        key = next(keys, "")
        secrets = [part for k, v in headers for part in _credential_parts(k, v)]
        target = path + (f"?{query}" if query else "")
        refused = _refused_target(path, target, self._upstream.base_url)
        # A percent-encoded path is never an operation's (docs/contract.md §2.4): not judged.
        op = self._by_path.get(path) if request.method == ALLOWED_METHOD else None
        if refused is not None:
            shown = outside_text(path, 100, secrets)
            why = f"the proxy refuses the target '{shown}': {refused}"
            return error_response(InvalidArgument(why))
        try:
            body = await read_body(
                request.receive,
                max_request_bytes=self._max_request_bytes,
                content_length=request.headers.get("content-length"),
                timeout=self._body_timeout,
            )
        except DeadlineExceeded as late:  # the caller's lateness: 408, as the adapter responses it
            return error_response(late, BODY_TIMED_OUT.http_status, BODY_TIMED_OUT.headers)
        except ApiError as exc:  # 413, as the server adapter responses it
            return error_response(exc)
        except ClientDisconnect:  # the caller left before its request was whole: no one to answer
            return Response(status_code=400)
        try:
            answer = await self._upstream.send(request.method, target, body, _end_to_end(headers))
            if answer.truncated:
                cap = f"{self._upstream.max_response_bytes} bytes (--max-response-bytes)"
                raise Unavailable(f"the upstream's answer is over {cap}")
        except ApiError as exc:  # no complete answer: 504 past the time-out, else 503
            texts = (outside_text(text, 300, secrets) for text in (target, exc.message))
            _log.warning("%s %s: %s", request.method, *texts)
            return error_response(exc)
        except ValueError as exc:  # a header the exchange cannot send as it came
            why = outside_text(str(exc), 200, secrets)
            return error_response(InvalidArgument(f"cannot forward: {why}"))
        if answer.status not in range(200, 600):  # a final response: a 1xx cannot end an exchange
            bad = Unavailable(f"the upstream answered with the status {answer.status}")
            return error_response(bad, status=502)
        # The response goes out first; judging it (and the request) follows, in a worker.
        task = None
        if op is not None:
            task = BackgroundTask(self._judge, op, body, answer.status, answer.body, key, secrets)
        response = Response(answer.body, answer.status, background=task)
        response.raw_headers = [
            (k.lower().encode("latin-1"), v.encode("latin-1"))
            for k, v in _end_to_end(answer.headers)
        ] + [(b"content-length", str(len(answer.body)).encode())]
        return response

    async def _judge(
        self, op: Operation, body: bytes, status: int, answer: bytes, key: str, secrets: list[str]
    ) -> None:
        """Judge one forwarded call in a worker thread, after its response went out."""
        if self._waiting >= 2 * self._judges.total_tokens:
            busy = f"{self._waiting} calls are being judged or waiting for it"
            self._report(Violation(op.name, "answer", NOT_JUDGED, "", f"not judged: {busy}"))
            self._left_out(status)
            return
        judged: bytes | None = answer
        # Over the limit, the response is not judged; the request still is: --max-request-bytes
        # bound it.
        if len(answer) > self._max_judged_bytes:
            why = f"the answer is {len(answer):,} bytes, over the {self._max_judged_bytes:,} judged"
            self._report(Violation(op.name, "answer", NOT_JUDGED, "", f"not judged: {why}"))
            judged = None
        self._waiting += 1
        try:
            reported = await anyio.to_thread.run_sync(
                self._judge_call, op, body, status, judged, key, secrets, limiter=self._judges
            )
        except Exception as exc:  # judging promises never to raise: should it, a drift says so,
            # in one redacted line, where a traceback would show the response's text raw
            why = outside_text(f"{type(exc).__name__}: {exc}", _DETAIL_CHARS, secrets)
            reported = [Violation(op.name, "answer", NOT_JUDGED, "", f"judging failed: {why}")]
            self._left_out(status)
        finally:
            self._waiting -= 1
        for found in reported:
            self._report(found)

    def _judge_call(
        self,
        op: Operation,
        body: bytes,
        status: int,
        answer: bytes | None,
        key: str,
        secrets: list[str],
    ) -> list[Violation]:
        """The violations of one call (in a worker thread; `answer` ``None``: not judged); its 200
        answer recorded when both sides decode."""
        in_request, sent = find_violations(op, "request", body, secrets=secrets)
        if answer is None:
            self._left_out(status)
            return in_request
        found, got = find_violations(op, "answer", answer, status=status, secrets=secrets)
        # `got` is set for a 200 response that decodes strictly only; a request that breaks a
        # rule is not recorded: the mock would refuse it.
        if sent is None or got is None or in_request:
            self._left_out(status)
        elif self._recording is not None:
            self._recording.add(op, key, sent, got, secrets)
        return in_request + found

    def _left_out(self, status: int) -> None:
        """Count a 200 response not recorded for a drift it or its request drew."""
        if self._recording is not None and status == 200:
            self._recording.leave_out()
