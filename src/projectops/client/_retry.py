"""When a call is tried again, and how long it waits first: the clients' retry policy.

No httpx here: the CLI reads :data:`DEFAULT_RETRIES` for its help without importing the
client's dependencies. :class:`~projectops.client._base.BaseClient` applies the policy within
the call's one deadline.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from projectops.registry import Operation

__all__ = ["DEFAULT_RETRIES", "MAX_RETRY_AFTER", "RETRY_STATUSES", "may_retry", "retry_delay"]

#: Extra attempts after the first that a call of a retryable operation makes by default.
DEFAULT_RETRIES = 2
#: Statuses of an answer that asks to try again later: too many requests, bad gateway,
#: unavailable, gateway time-out. No other answer is retried.
RETRY_STATUSES = frozenset({429, 502, 503, 504})
#: The longest ``Retry-After`` honoured, in seconds; a longer one is cut to this (the call's
#: time-out still decides whether the wait is taken at all).
MAX_RETRY_AFTER = 30.0
# Full jitter: retry n (from 0) waits uniformly in [0, min(cap, first * 2**n)) seconds.
_BACKOFF_FIRST = 0.25
_BACKOFF_CAP = 8.0
# Digits of a Retry-After read as seconds: more would be days (cut to the cap anyway).
_RETRY_AFTER_DIGITS = 9


def may_retry(op: Operation, status: int | None) -> bool:
    """Whether a failed attempt of `op` may be repeated.

    Only an rpc marked ``NO_SIDE_EFFECTS`` or ``IDEMPOTENT`` (:attr:`Operation.idempotent`) is
    retried, and only when no answer came (`status` ``None``: the connection was refused or
    reset before an answer) or the answer's `status` is one of :data:`RETRY_STATUSES` (429,
    502, 503, 504). A 4xx other than 429 is the request's fault and would fail again; an
    operation with side effects may have taken effect before its answer was lost.
    """
    return op.idempotent and (status is None or status in RETRY_STATUSES)


def retry_delay(
    retry: int, retry_after: str | None = None, *, rand: Callable[[], float] = random.random
) -> float:
    """Seconds to wait before retry number `retry` (0 for the first retry).

    A ``Retry-After`` given in seconds (ASCII digits) is honoured, cut to
    :data:`MAX_RETRY_AFTER`; an HTTP date, a negative or fractional number, or any other text is
    ignored. Otherwise: exponential backoff with full jitter, a uniform wait in
    ``[0, min(8, 0.25 * 2**retry))`` seconds, so clients that failed together do not come back
    together.

    Written here rather than taken from a retry library: the wait must share the call's one
    deadline (a wait that would cross it is not taken, see :meth:`BaseClient._retry_wait`), and
    the sync and async clients must wait the same way; it is these few lines.
    """
    if retry_after is not None:
        text = retry_after.strip()
        if text.isascii() and text.isdigit() and len(text) <= _RETRY_AFTER_DIGITS:
            return min(float(text), MAX_RETRY_AFTER)
    # 2.0**retry overflows past about 1,000 retries: the exponent stops where the cap holds.
    return rand() * min(_BACKOFF_CAP, _BACKOFF_FIRST * 2.0 ** min(retry, 32))
