"""The requests of ``projectops conformance``: raw (invalid bodies, no key, a wrong key) through
the clients' bounded exchange, all within the run's deadline; and what each exchange was, for a
failure's detail."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import projectops
from projectops._text import outside_text
from projectops.client.redaction import redact
from projectops.conventions import API_KEY_HEADER, CONTENT_TYPE

if TYPE_CHECKING:
    import httpx2 as httpx

__all__ = ["DEFAULT_DEADLINE", "MAX_REQUESTS", "BudgetSpent", "DeadlinePassed", "Exchange"]
__all__ += ["Sender"]

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
    """One request and what came back: `status` (``None``: no answer, `problem` says why),
    lower-cased `headers` (repeats joined), `excerpt` (outside text, key redacted)."""

    sent: str
    status: int | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    excerpt: str = ""
    truncated: bool = False
    problem: str = ""

    def shown(self) -> str:
        """``sent ...; got <status> <excerpt>`` (or ``no answer: ...``)."""
        if self.status is None:
            return f"sent {self.sent}; no answer: {self.problem}"
        return f"sent {self.sent}; got {self.status} {self.excerpt}"


class Sender:
    """Raw requests to `base_url`, each within `timeout` s and `max_response_bytes`, all before
    `run_deadline` (a :func:`time.monotonic` instant or ``None``)."""

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
        from projectops.client import RawClient

        self._key = api_key
        self._timeout = timeout
        self._run_deadline = run_deadline
        self.count = 0
        self._raw = RawClient(
            base_url, timeout=timeout, max_response_bytes=max_response_bytes, transport=transport
        )

        self.close = self._raw.close

    def check_deadline(self) -> None:
        if self._run_deadline is not None and time.monotonic() >= self._run_deadline:
            raise DeadlinePassed

    def send(
        self,
        method: str,
        path: str,
        body: bytes | None,
        *,
        key: KeyUse = "own",
        headers: Mapping[str, str] | None = None,
    ) -> tuple[Exchange, bytes]:
        """Send one request: the exchange and the answer's body. Never raises for what the
        server does.

        Raises:
            BudgetSpent: :data:`MAX_REQUESTS` requests were sent already.
            DeadlinePassed: the deadline passed before the request or its whole answer.
        """
        from projectops.client import AnswerTimedOut, ServiceUnreachable

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
        exchange = Exchange(_describe(method, path, body, key, headers))
        try:
            answer = self._raw.send(
                method, path, body, {**sent, **(headers or {})}, deadline=self._run_deadline
            )
        except AnswerTimedOut:
            self.check_deadline()  # the run's bound, not the server, ended it: not judged
            exchange.problem = f"no complete answer within the time-out of {self._timeout:g} s"
            return exchange, b""
        except ServiceUnreachable as exc:
            exchange.problem = outside_text(redact(str(exc), [self._key]), 300)
            return exchange, b""
        values: dict[str, list[str]] = {}
        for name, value in answer.headers:  # linear in their number, one name repeated too
            values.setdefault(name.lower(), []).append(value)
        joined = {name: ", ".join(found) for name, found in values.items()}
        exchange.headers, exchange.truncated = joined, answer.truncated
        encoding = joined.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            exchange.problem = f"Content-Encoding {outside_text(encoding, 40)} not asked for"
            return exchange, b""
        exchange.status = answer.status
        # Redact a head with room for the key in any spelling; a key the head cuts short
        # could show in part at its end, so that end goes.
        room = 12 * len(self._key)
        head = answer.body[: 4 * _ANSWER_CHARS + room]
        text = redact(head.decode("utf-8", "replace"), [self._key])
        text = text[: len(text) - room] if len(answer.body) > len(head) else text
        exchange.excerpt = outside_text(text, _ANSWER_CHARS)
        if answer.truncated or len(answer.body) > len(text):
            more = " or more" if answer.truncated else ""
            exchange.excerpt += f" [{len(answer.body):,} bytes{more}]"
        return exchange, answer.body


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
