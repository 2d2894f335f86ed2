"""Short retry backoff for in-process client tests: :func:`shorten_backoff`.

The clients wait up to 0.25 s, then 0.5 s, ... (full jitter) before retrying a 429/502/503/504
or a refused connection. A test about what a call ends with, not about the wait, needs none of
that time; the policy's waits are tested on :func:`~projectops.client._retry.retry_delay`
itself (test_retries.py beside this module).
"""

from __future__ import annotations

import random

import pytest

from projectops.client import _base
from projectops.client._retry import retry_delay

#: The backoff's jitter is drawn from ``[0, JITTER)`` instead of ``[0, 1)``: waits of at most
#: a few milliseconds.
JITTER = 0.02


def shorten_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make both clients' backoff waits ``JITTER`` times as long for the test.

    Every attempt is still made (the count and the policy are unchanged), and a
    ``Retry-After`` is still honoured in full.
    """

    def short(retry: int, retry_after: str | None = None) -> float:
        return retry_delay(retry, retry_after, rand=lambda: JITTER * random.random())

    monkeypatch.setattr(_base, "retry_delay", short)
