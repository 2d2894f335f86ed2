"""The raw request runner of ``projectops conformance``: requests of the checks' making
(invalid bodies, no key, a wrong key), each bounded as a whole and read up to a cap, through
the sync client's deadline transport; and what each exchange was, for a failure's detail."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import projectops
from projectops._text import outside_text
from projectops.client.redaction import redact
from projectops.conventions import API_KEY_HEADER, CONTENT_TYPE

if TYPE_CHECKING:
    import httpx

__all__ = [
    "DEFAULT_DEADLINE",
    "MAX_REQUESTS",
    "NOT_JSON",
    "BudgetSpent",
    "DeadlinePassed",
    "Exchange",
    "KeyUse",
    "Sender",
]

#: Requests a run sends at most; past it, the remaining checks are skipped.
MAX_REQUESTS = 1000
#: Seconds a whole run may take by default (``--deadline``).
DEFAULT_DEADLINE = 600.0


# How the key header of a request is set: the key in use, none, or a key no server knows.
KeyUse = Literal["own", "none", "wrong"]

# Characters of a sent body and of an answer shown in a failure's detail.
_SENT_CHARS = 80
_ANSWER_CHARS = 300


class BudgetSpent(Exception):
    """The run sent :data:`MAX_REQUESTS` requests; the check at hand is skipped."""


class DeadlinePassed(BudgetSpent):
    """The run's deadline (``--deadline``) passed; the check at hand is skipped."""


@dataclass
class Exchange:
    """One request sent and what came back (`status` ``None``: no answer, `problem` says
    why)."""

    sent: str
    status: int | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    truncated: bool = False
    problem: str = ""

    def shown(self, key: str) -> str:
        """``sent ...; got <status> <body>`` (or ``no answer: ...``), safe to print."""
        if self.status is None:
            got = f"no answer: {self.problem}"
        else:
            text = self.body.decode("utf-8", "replace")
            got = f"got {self.status} {outside_text(redact(text, [key]), _ANSWER_CHARS)}"
        return f"sent {self.sent}; {got}"

    def json_value(self) -> Any:
        """The body as parsed JSON, or a marker object when it is none."""
        try:
            return json.loads(self.body)
        except (ValueError, RecursionError):
            return NOT_JSON


NOT_JSON = object()


class Sender:
    """Raw HTTP requests with the key header (or without), each bounded as a whole by
    `timeout` and read up to `max_response_bytes`: the sync client's deadline transport and
    answer reading, with bodies of the caller's making.

    `run_deadline` (a :func:`time.monotonic` instant, or ``None``) bounds every request
    together: a request is cut short when it passes, and none is sent after it.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float,
        max_response_bytes: int,
        transport: httpx.BaseTransport | None = None,
        run_deadline: float | None = None,
    ) -> None:
        import httpx

        from projectops.client._base import no_cookies, own_headers_only
        from projectops.client._transport import DeadlineTransport

        self._base_url = base_url
        self._key = api_key
        self._wrong_key = f"{api_key}-not-a-key"
        self._timeout = timeout
        self._limit = max_response_bytes
        self._run_deadline = run_deadline
        self.count = 0
        self._http = httpx.Client(
            timeout=timeout,
            transport=transport or DeadlineTransport(base_url),
            follow_redirects=False,
            cookies=no_cookies(),
        )
        own_headers_only(self._http)

    def close(self) -> None:
        """Close the connections."""
        self._http.close()

    def send(
        self,
        method: str,
        path: str,
        body: bytes | None,
        *,
        key: KeyUse = "own",
        headers: Mapping[str, str] | None = None,
    ) -> Exchange:
        """Send one request; never raises for what the server does (no answer, a time-out).

        Raises:
            BudgetSpent: :data:`MAX_REQUESTS` requests were sent already.
            DeadlinePassed: the run's deadline passed before the request was sent, or before
                its answer was complete (then it is not judged).
        """
        import httpx

        from projectops.client._transport import DEADLINE, Expired, raw_chunks

        if self.count >= MAX_REQUESTS:
            raise BudgetSpent
        now = time.monotonic()
        deadline = now + self._timeout
        if self._run_deadline is not None:
            if now >= self._run_deadline:
                raise DeadlinePassed
            deadline = min(deadline, self._run_deadline)
        self.count += 1
        sent_headers = {
            "Content-Type": CONTENT_TYPE,
            "Accept": CONTENT_TYPE,
            "Accept-Encoding": "identity",
            "User-Agent": f"projectops/{projectops.__version__} conformance",
        }
        if key != "none":
            sent_headers[API_KEY_HEADER] = self._key if key == "own" else self._wrong_key
        sent_headers.update(headers or {})
        exchange = Exchange(_describe(method, path, body, key, headers))
        request = self._http.build_request(
            method, self._base_url + path, headers=sent_headers, content=body
        )
        token = DEADLINE.set(deadline)
        buffer = bytearray()
        try:
            response = self._http.send(request, stream=True)
            try:
                exchange.status = response.status_code
                exchange.headers = dict(response.headers)
                encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
                if encoding not in ("", "identity"):
                    exchange.problem = (
                        f"Content-Encoding {outside_text(encoding, 40)} not asked for"
                    )
                    exchange.status = None
                    return exchange
                for chunk in raw_chunks(response):
                    room = self._limit - len(buffer)
                    if len(chunk) > room:
                        buffer += chunk[:room]
                        exchange.truncated = True
                        break
                    buffer += chunk
                    if time.monotonic() > deadline:
                        raise Expired  # a caller's transport: checked between chunks
            finally:
                response.close()
        except httpx.TimeoutException:
            exchange.status, exchange.problem = None, self._late()
        except Expired:
            exchange.status, exchange.problem = None, self._late()
        except httpx.RequestError as exc:
            reason = outside_text(redact(str(exc) or type(exc).__name__, [self._key]), 200)
            exchange.status, exchange.problem = None, f"cannot reach {self._base_url}: {reason}"
        finally:
            DEADLINE.reset(token)
        if exchange.status is None and self._cut_short(deadline):
            # The run's bound, not the server, ended this one: its check is not judged.
            raise DeadlinePassed
        exchange.body = bytes(buffer)
        return exchange

    def _cut_short(self, deadline: float) -> bool:
        """Whether the request whose bound was `deadline` ended at the run's deadline, before
        its own time-out."""
        run_deadline = self._run_deadline
        return (
            run_deadline is not None
            and deadline == run_deadline
            and time.monotonic() >= run_deadline
        )

    def _late(self) -> str:
        return f"no complete answer within the time-out of {self._timeout:g} s"


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
    shown = outside_text(body.decode("utf-8", "replace"), _SENT_CHARS)
    return f"{text} with the body {shown}"
