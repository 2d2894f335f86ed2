"""Making text that came from outside this process safe to print, log or return, and
redacting a secret from it: the one implementation both the client and the server layer use.

Every text a peer controls (an error's ``message`` and violations, a raw body, a header, a
protocol library's complaint about the bytes it got) goes through :func:`outside_text` before
it reaches an exception's message, stderr, a tool result or a log line (docs/contract.md §9):

- :func:`escape` turns every character that a terminal or a log reader would act on instead of
  show (C0 and C1 controls such as ESC, BEL, CR and LF; DEL; line and paragraph separators;
  format characters such as the bidi overrides and zero-width spaces; lone surrogates) into a
  visible escape (``\\x1b``, ``\\u202e``), so one error is one line and cannot clear a screen,
  retitle a terminal or reorder what a reader sees.
- :func:`cut` keeps the first characters of a long text and says how many were left out.
- :func:`redact_secrets` finds a secret (the API key) in the spellings an honest echo writes:
  as it is, in any case of its ASCII letters, percent-encoded (``quote``, ``quote_plus``,
  ``encodeURIComponent``), JSON- or Python-escaped (``json.dumps``, ``repr``, ``ascii``); in
  time linear in the text. Only outside text is redacted: our own messages never hold the key,
  so they are never rewritten.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable
from functools import cache, lru_cache
from urllib.parse import quote, quote_plus

__all__ = [
    "MAX_TEXT_CHARS",
    "REDACTED",
    "cut",
    "escape",
    "escape_lines",
    "outside_text",
    "redact_secrets",
]

#: Characters of an outside text kept in a message (the rest is cut, with a note).
MAX_TEXT_CHARS = 1000
#: What stands wherever the API key was, in both layers: messages, logs, tool results, the
#: headers a handler sees and the CLI's ``--dry-run``.
REDACTED = "***"

# Unicode categories a reader's terminal acts on: controls, format characters (bidi overrides,
# zero-width characters), line/paragraph separators and surrogates (never valid alone).
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
# Format characters above the BMP (Unicode 15): computed ranges would cost ~0.1 s per start.
_ASTRAL_UNSAFE = (
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"
)


@cache
def _unsafe() -> re.Pattern[str]:
    # Built on first use from the running Python's Unicode tables (BMP: ~10 ms).
    bmp = "".join(
        re.escape(chr(c))
        for c in range(0x10000)
        if unicodedata.category(chr(c)) in _UNSAFE_CATEGORIES and not 0xD800 <= c <= 0xDFFF
    )
    return re.compile(f"[{bmp}\ud800-\udfff{_ASTRAL_UNSAFE}]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def escape(text: str) -> str:
    """`text` with every unsafe character written as a visible escape (module docstring).

    ``"\\x1b]0;pwned\\x07"`` becomes ``"\\\\x1b]0;pwned\\\\x07"``; printable text, backslashes
    included, is left as it is, so escaping twice changes nothing.
    """
    return _unsafe().sub(_visible, text)


def cut(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    """`text` itself if it has at most `limit` characters, else its first `limit` characters
    followed by ``... [N more characters cut]``."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit:,} more characters cut]"


def outside_text(text: str, limit: int = MAX_TEXT_CHARS, secrets: Iterable[str | None] = ()) -> str:
    """A text from outside, safe to show: each of `secrets` redacted (:func:`redact_secrets`),
    escaped (:func:`escape`) and at most `limit` characters long once escaped, with a note of
    about how many characters were cut. Time in proportion to `limit` (and the secrets'
    length), not to ``len(text)``."""
    rest = 0
    keys = _keys(secrets)
    if keys:
        room = max(len(spelling) for key in keys for spelling in _spellings(key))
        head = text[: limit + room]
        rest = len(text) - len(head)
        text = redact_secrets(head, keys, REDACTED)
        if rest:  # a spelling cut off by the head's end could show in part: that end goes
            rest, text = rest + room, text[: max(0, len(text) - room)]
    head = text[:limit]
    shown = escape(head)
    if len(shown) > limit:
        # Escapes lengthened the head: keep whole source characters up to `limit` shown ones.
        kept, size = 0, 0
        for char in head:
            width = len(escape(char))
            if size + width > limit:
                break
            kept, size = kept + 1, size + width
        head, shown = head[:kept], escape(head[:kept])
    rest += len(text) - len(head)
    return f"{shown}... [{rest:,} more characters cut]" if rest else shown


def escape_lines(text: str) -> str:
    """:func:`escape` of each line of a multi-line text (a traceback for a log), keeping its
    line feeds: every other unsafe character is escaped."""
    return "\n".join(escape(line) for line in text.split("\n"))


# ASCII letters only, so that lower-casing keeps every offset (str.lower does not: "İ").
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
# What percent-encoders leave as it is: quote(safe=""), quote(), encodeURIComponent.
_URL_SAFE = ("", "/", "-_.!~*'()")


def _keys(secrets: Iterable[str | None]) -> list[str]:
    """The secrets to look for: stripped, blank ones dropped, longest first."""
    return sorted({s.strip() for s in secrets if s and s.strip()}, key=len, reverse=True)


@lru_cache(maxsize=64)
def _spellings(secret: str) -> tuple[str, ...]:
    """`secret` as an honest echo writes it, ASCII letters lower-cased (module docstring)."""
    forms = {
        secret,
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        repr(secret)[1:-1],
        repr(secret + '"')[1:-2],  # single-quoted even when the secret holds a quote
        ascii(secret)[1:-1],
    }
    forms |= {form.replace("/", "\\/") for form in forms}  # JSON may escape the solidus
    for safe in _URL_SAFE:
        forms |= {quote(secret, safe=safe), quote_plus(secret, safe=safe)}
    return tuple(sorted({form.translate(_ASCII_LOWER) for form in forms}, key=len, reverse=True))


#: Spellings up to this long are searched for together, in one pass of a regular expression.
_SHORT = 64


@lru_cache(maxsize=64)
def _pattern(secret: str) -> re.Pattern[str] | None:
    """One alternation of `secret`'s spellings when all are short; else ``None``."""
    spellings = _spellings(secret)
    if max(map(len, spellings)) > _SHORT:
        return None
    return re.compile("|".join(map(re.escape, spellings)), re.IGNORECASE | re.ASCII)


def redact_secrets(text: str, secrets: Iterable[str | None], replacement: str) -> str:
    """`text` with every spelling of each of `secrets` (module docstring; blank and ``None``
    ones skipped, surrounding white space ignored) replaced by `replacement`, the longest
    secret first. Linear in ``len(text)``, whatever the text and the secret hold: spellings
    of at most 64 characters are one alternation of literals (at most 18 of them), longer
    ones are found with ``str.find`` (two-way search) in an ASCII-lower-cased copy."""
    for key in _keys(secrets):
        if not text:
            break
        pattern = _pattern(key)
        if pattern is not None:
            text = pattern.sub(replacement.replace("\\", "\\\\"), text)
            continue
        low = text.translate(_ASCII_LOWER)  # same offsets as `text`
        spans: list[tuple[int, int]] = []
        for spelling in _spellings(key):
            start = low.find(spelling)
            while start >= 0:
                spans.append((start, start + len(spelling)))
                start = low.find(spelling, start + len(spelling))
        out: list[str] = []
        pos = 0
        for start, stop in sorted(spans):
            if start >= pos:  # one overlapping another is replaced with it
                out += [text[pos:start], replacement]
                pos = stop
        text = "".join(out) + text[pos:]
    return text
