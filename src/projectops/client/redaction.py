"""Redaction of the API key from text this process prints, logs or raises (a last line of
defence, docs/contract.md §9).

No message of this package quotes the key, but a server's message, a library's or a user's
could, and not always verbatim. :func:`redact` finds ``SERVICE_API_KEY``'s value and any key
given, however it was written (:func:`projectops._text.redact_secrets`).
:func:`scrub_exception` applies it to an exception and every exception chained to it, so
``str``, ``repr``, ``args`` and formatted tracebacks are clean.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from projectops._text import REDACTED, redact_secrets
from projectops.conventions import API_KEY_ENV
from projectops.errors import ApiError, FieldViolation

__all__ = ["REDACTED", "redact", "scrub_exception"]


def _keys(extra: Iterable[str | None]) -> list[str]:
    keys = {(os.environ.get(API_KEY_ENV) or "").strip(), *(k.strip() for k in extra if k)}
    # Longest first: a key that contains another is replaced whole.
    return sorted((k for k in keys if k), key=len, reverse=True)


def redact(text: str, keys: Iterable[str | None] = ()) -> str:
    """`text` with ``SERVICE_API_KEY``'s value and each of `keys` replaced by ``***``, in any
    of the spellings of the module docstring (blank and ``None`` keys are skipped)."""
    return redact_secrets(text, _keys(keys), REDACTED)


def scrub_exception(exc: BaseException, keys: Iterable[str | None] = ()) -> None:
    """Redact (:func:`redact`) the keys from `exc` in place, and from every exception chained
    to it (``__cause__``, ``__context__``): string ``args``, an
    :class:`~projectops.ApiError`'s ``message`` and violations, and ``__notes__``.

    Mutating keeps each exception's class, traceback and identity, so ``raise`` of it after
    this shows no key in ``str``, ``repr``, ``args`` or a formatted traceback.
    """
    key_list = _keys(keys)
    if not key_list:
        return
    seen: set[int] = set()
    pending: list[BaseException | None] = [exc]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        current.args = tuple(redact(a, key_list) if isinstance(a, str) else a for a in current.args)
        if isinstance(current, ApiError):
            current.message = redact(current.message, key_list)
            current.violations = tuple(
                FieldViolation(
                    field=redact(v.field, key_list), description=redact(v.description, key_list)
                )
                for v in current.violations
            )
        notes = getattr(current, "__notes__", None)
        if isinstance(notes, list):
            notes[:] = [redact(n, key_list) if isinstance(n, str) else n for n in notes]
        pending += [current.__cause__, current.__context__]
