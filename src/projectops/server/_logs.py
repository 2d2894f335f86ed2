"""The mock server's log filters: warnings a peer can provoke are rate-limited, and the access
log never shows a query string (:func:`install_log_filters`)."""

from __future__ import annotations

import logging
import time

from projectops._text import outside_text

__all__ = ["install_log_filters"]


class _QueryStringFilter(logging.Filter):
    """Drops the query string from uvicorn's access-log lines: a key or token some client put
    in a URL never reaches the log."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str):
            path = args[2].partition("?")[0]
            record.args = (*args[:2], outside_text(path, 200), *args[3:])
        return True


class _RateLimitFilter(logging.Filter):
    """At most `burst` records of one message template per `window` seconds; the first record
    let through after a quiet spell says how many were dropped. A peer that can make the
    server warn (malformed requests, refused connections) cannot flood its log."""

    def __init__(self, burst: int = 10, window: float = 10.0) -> None:
        super().__init__()
        self._burst = burst
        self._window = window
        self._seen: dict[tuple[str, str], tuple[float, int, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, str(record.msg))
        now = time.monotonic()
        start, count, dropped = self._seen.get(key, (now, 0, 0))
        if now - start >= self._window:
            start, count = now, 0
        if count >= self._burst:
            self._seen[key] = (start, count, dropped + 1)
            return False
        self._seen[key] = (start, count + 1, 0)
        if dropped:
            record.msg = f"({dropped} similar messages dropped) {record.msg}"
        if len(self._seen) > 1000:  # message templates are few; never let this grow
            self._seen.clear()
        return True


def install_log_filters() -> None:
    """Rate-limit uvicorn's and asyncio's warnings; cut query strings from the access log.

    Idempotent; called in every process that serves (:meth:`LimitedConfig.configure_logging`).
    """
    for name in ("uvicorn.error", "asyncio"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, _RateLimitFilter) for f in logger.filters):
            logger.addFilter(_RateLimitFilter())
    access = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, _QueryStringFilter) for f in access.filters):
        access.addFilter(_QueryStringFilter())
