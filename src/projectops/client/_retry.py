"""When a call is tried again, and how long it waits first (no HTTP library: the CLI reads it)."""

from __future__ import annotations

import random
from collections.abc import Callable

from projectops.registry import Operation

#: Extra attempts of a retryable call by default.
DEFAULT_RETRIES = 2
#: Statuses that ask to try again later; no other response is retried.
RETRY_STATUSES = frozenset({429, 502, 503, 504})
#: The longest ``Retry-After`` honoured, in seconds.
MAX_RETRY_AFTER = 30.0
_BACKOFF_FIRST = 0.25
_BACKOFF_CAP = 8.0
_RETRY_AFTER_DIGITS = 9  # more would be days, cut to the cap anyway


def may_retry(op: Operation, status: int | None) -> bool:
    """Whether a failed attempt of `op` may be repeated: `op` is idempotent, and no response came
    (`status` ``None``) or its status is in :data:`RETRY_STATUSES`."""
    return op.idempotent and (status is None or status in RETRY_STATUSES)


def retry_delay(
    retry: int,
    retry_after: str | None = None,
    *,
    rand: Callable[[], float] = random.random,
) -> float:
    """Seconds to wait before retry number `retry` (0 for the first): a ``Retry-After`` in
    whole seconds, cut to :data:`MAX_RETRY_AFTER`; else full jitter in
    ``[0, min(8, 0.25 * 2**retry))``. Own code: the wait shares the call's one deadline."""
    if retry_after is not None:
        text = retry_after.strip()
        if text.isascii() and text.isdigit() and len(text) <= _RETRY_AFTER_DIGITS:
            return min(float(text), MAX_RETRY_AFTER)
    # 2.0**retry overflows past about 1,000 retries: the exponent stops where the cap holds.
    return rand() * min(_BACKOFF_CAP, _BACKOFF_FIRST * 2.0 ** min(retry, 32))
