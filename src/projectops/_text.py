"""Making text that came from outside this process safe to print, log or return, and
redacting a secret from it: the one implementation both the client and the server layer use.

Every text a peer controls (an error's ``message`` and violations, a raw body, a header, a
protocol library's complaint about the bytes it got) goes through :func:`outside_text` before
it reaches an exception's message, stderr, a tool result or a log line (DESIGN.md, "Trust"):

- :func:`escape` turns every character that a terminal or a log reader would act on instead of
  show (C0 and C1 controls such as ESC, BEL, CR and LF; DEL; line and paragraph separators;
  format characters such as the bidi overrides and zero-width spaces; lone surrogates) into a
  visible escape (``\\x1b``, ``\\u202e``), so one error is one line and cannot clear a screen,
  retitle a terminal or reorder what a reader sees.
- :func:`cut` keeps the first characters of a long text and says how many were left out.
- :func:`redact_secrets` finds a secret (the API key) however it was written: in any letter
  case, percent-encoded (``%41``, ``+`` for a space), repr- or JSON-escaped (``\\x41``,
  ``\\u0041``, doubled backslashes), as an HTML character reference (``&#65;``), or any mix of
  these, character by character.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import cache, lru_cache

__all__ = [
    "MAX_TEXT_CHARS",
    "cut",
    "escape",
    "escape_lines",
    "outside_text",
    "redact_secrets",
]

#: Characters of an outside text kept in a message (the rest is cut, with a note).
MAX_TEXT_CHARS = 1000

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


def outside_text(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    """A text from outside, safe to show: escaped (:func:`escape`) and at most `limit`
    characters long once escaped, with a note of how many characters of `text` were cut.

    Costs time in proportion to `limit`, not to ``len(text)``.
    """
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
    rest = len(text) - len(head)
    return f"{shown}... [{rest:,} more characters cut]" if rest else shown


def escape_lines(text: str) -> str:
    """:func:`escape` of each line of a multi-line text (a traceback for a log), keeping its
    line feeds: every other unsafe character is escaped."""
    return "\n".join(escape(line) for line in text.split("\n"))


def _char_pattern(char: str) -> str:
    """Every way one character of a secret may be written, in either letter case: itself (with
    any backslashes a repr or JSON escaping put before it), %hh, \\xhh, \\uhhhh, \\Uhhhhhhhh,
    &#d; and &#xh; (and ``+`` for a space, as form encoding writes it)."""
    forms = [r"\\*" + re.escape(char)]
    if char == " ":
        forms.append(r"\+")
    for code in sorted({ord(char.lower()), ord(char.upper())}):
        forms += [f"%{code:02x}", rf"\\+x{code:02x}", rf"\\+u{code:04x}", rf"\\+U{code:08x}"]
        forms += [f"&#0*{code};", f"&#x0*{code:x};"]
    return "(?:" + "|".join(forms) + ")"


@lru_cache(maxsize=32)
def _secret_pattern(secret: str) -> re.Pattern[str]:
    return re.compile("".join(_char_pattern(c) for c in secret), re.IGNORECASE)


def redact_secrets(text: str, secrets: Iterable[str | None], replacement: str) -> str:
    """`text` with each of `secrets` (blank and ``None`` ones skipped, surrounding white space
    ignored) replaced by `replacement`, in any of the spellings of the module docstring; the
    longest secret first, so one that contains another is replaced whole."""
    for secret in sorted({s.strip() for s in secrets if s and s.strip()}, key=len, reverse=True):
        if text:
            text = _secret_pattern(secret).sub(replacement, text)
    return text
