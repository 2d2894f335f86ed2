"""Redaction of the API key from text this process prints, logs or raises (a last line of
defence, DESIGN.md "Trust").

No message of this package quotes the key, but a server's message, a library's or a user's
could, and not always verbatim. :func:`redact` finds a key however it was written: in any
letter case, percent-encoded (``%41``), repr- or JSON-escaped (``\\x41``, ``\\u0041``, a doubled
backslash), as an HTML character reference (``&#65;``), or any mix of these, character by
character. :func:`scrub_exception` applies it to an exception and every exception chained to
it, so ``str``, ``repr``, ``args`` and formatted tracebacks are clean.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from functools import lru_cache

from projectops.conventions import API_KEY_ENV
from projectops.errors import ApiError, FieldViolation

__all__ = ["REDACTED", "redact", "scrub_exception"]

#: What a key is replaced with.
REDACTED = "***"


def _char_pattern(char: str) -> str:
    """Every way one character of a key may be written, in either letter case: itself (with
    any backslashes a repr or JSON escaping put before it), %hh, \\xhh, \\uhhhh, \\Uhhhhhhhh,
    &#d; and &#xh;."""
    forms = [r"\\*" + re.escape(char)]
    for code in sorted({ord(char.lower()), ord(char.upper())}):
        forms += [f"%{code:02x}", rf"\\+x{code:02x}", rf"\\+u{code:04x}", rf"\\+U{code:08x}"]
        forms += [f"&#0*{code};", f"&#x0*{code:x};"]
    return "(?:" + "|".join(forms) + ")"


@lru_cache(maxsize=32)
def _key_pattern(key: str) -> re.Pattern[str]:
    return re.compile("".join(_char_pattern(c) for c in key), re.IGNORECASE)


def _keys(extra: Iterable[str | None]) -> list[str]:
    keys = {(os.environ.get(API_KEY_ENV) or "").strip(), *(k.strip() for k in extra if k)}
    # Longest first: a key that contains another is replaced whole.
    return sorted((k for k in keys if k), key=len, reverse=True)


def redact(text: str, keys: Iterable[str | None] = ()) -> str:
    """`text` with ``SERVICE_API_KEY``'s value and each of `keys` replaced by ``***``, in any
    of the spellings of the module docstring (blank and ``None`` keys are skipped)."""
    for key in _keys(keys):
        if text:
            text = _key_pattern(key).sub(REDACTED, text)
    return text


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
