"""Redaction of the API key from outside text (docs/contract.md §9.4). The client redacts
outside text where it enters a message and marks those errors (:func:`mark_redacted`);
:func:`scrub_exception` redacts the others (an interceptor's, a library's) and their chain.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any, TypeVar

from projectops._text import REDACTED, redact_secrets
from projectops.conventions import API_KEY_ENV
from projectops.errors import ApiError, FieldViolation

__all__ = ["REDACTED", "mark_redacted", "redact", "redact_values", "scrub_exception"]

_MARK = "_projectops_redacted"
E = TypeVar("E", bound=BaseException)


def redact(text: str, keys: Iterable[str | None] = ()) -> str:
    """Redact the API key from a text that may quote it (docs/contract.md §9.4).

    Args:
        text: the text, e.g. an exception's message or a server's response.
        keys: more secrets to redact besides ``SERVICE_API_KEY``'s value; ``None`` items are
            skipped.

    Returns:
        `text` with every spelling of each key (as servers that ignore case read it) replaced by
        :data:`REDACTED`, ``***``.
    """
    secrets = [os.environ.get(API_KEY_ENV), *keys]
    return redact_secrets(text, secrets, REDACTED)


def redact_values(value: Any, keys: Iterable[str | None] = ()) -> Any:
    """Redact the API key from every string of a JSON value, object keys too (docs/contract.md
    §9.4): what the CLI prints and the tool server returns of a response that echoed the key.

    Args:
        value: JSON values as :func:`projectops.codec.to_dict` returns them (``dict``, ``list``,
            ``str``, numbers, booleans, ``None``).
        keys: more secrets besides ``SERVICE_API_KEY``'s value, as :func:`redact` takes them.

    Returns:
        A new value of the same shape, each string passed through :func:`redact`.
    """
    if isinstance(value, str):
        return redact(value, keys)
    if isinstance(value, dict):
        return {redact(k, keys): redact_values(v, keys) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_values(v, keys) for v in value]
    return value


def mark_redacted(exc: E) -> E:
    """Mark an exception as redacted already, so that :func:`scrub_exception` leaves its text
    alone (for exceptions built from texts redacted where they were quoted).

    Args:
        exc: the exception.

    Returns:
        `exc` itself, marked.
    """
    setattr(exc, _MARK, True)
    return exc


def scrub_exception(exc: BaseException, keys: Iterable[str | None] = ()) -> None:
    """Redact the API key in place from an exception and its chain (docs/contract.md §9.4).

    The string ``args``, ``__notes__`` and an :class:`~projectops.ApiError`'s message and
    violations of `exc`, its ``__cause__`` and ``__context__`` are redacted, bar those
    :func:`mark_redacted` marked; class, traceback and identity are kept.

    Args:
        exc: the exception about to be raised or shown.
        keys: more secrets besides ``SERVICE_API_KEY``'s value.
    """
    keys = [*keys]
    seen: set[int] = set()
    pending: list[BaseException | None] = [exc]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        pending += [current.__cause__, current.__context__]
        if getattr(current, _MARK, False):
            continue
        current.args = tuple(_redact_text(arg, keys) for arg in current.args)
        if isinstance(current, ApiError):
            current.message = redact(current.message, keys)
            current.violations = tuple(_redact_violation(v, keys) for v in current.violations)
        notes = getattr(current, "__notes__", None)
        if isinstance(notes, list):
            notes[:] = [_redact_text(note, keys) for note in notes]


def _redact_text(value: object, keys: list[str | None]) -> object:
    """`value` redacted if it is a text, else `value` itself."""
    if isinstance(value, str):
        return redact(value, keys)
    return value


def _redact_violation(
    violation: FieldViolation,
    keys: list[str | None],
) -> FieldViolation:
    field = redact(violation.field, keys)
    description = redact(violation.description, keys)
    return FieldViolation(field=field, description=description)
