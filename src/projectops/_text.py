"""Making text from outside this process safe to print, log or return (docs/contract.md §9),
and redacting a secret from it, for every layer: :func:`escape` writes every character a
terminal or log reader would act on (controls, format characters such as bidi overrides, line
separators, lone surrogates) as a visible escape; :func:`cut_counting` shortens with a note
of how many characters were cut, :func:`cut_to_width` to exactly a width, with ``...`` alone
(a value quoted in a one-line message);
:func:`redact_secrets` finds a secret in the spellings an honest echo writes (as it is, in any
ASCII case, percent-encoded, JSON- or Python-escaped), and any cut of one that keeps its first
:data:`KEY_CUT` characters (a quoted value cut short), in linear time.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable
from functools import cache, lru_cache
from urllib.parse import quote, quote_plus

#: Characters of an outside text kept in a message (the rest is cut, with a note).
MAX_TEXT_CHARS = 1000
#: What stands wherever the API key was, in every layer.
REDACTED = "***"

_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
# Format characters above the BMP (Unicode 15): computed ranges would cost ~0.1 s per start.
_ASTRAL_UNSAFE = (
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"
)


@cache
def _unsafe() -> re.Pattern[str]:
    # Built on first use from the running Python's Unicode tables (BMP: ~10 ms).
    unsafe = []
    for code in range(0x10000):
        char = chr(code)
        surrogate = 0xD800 <= code <= 0xDFFF  # one range below, not 2,048 escapes
        if unicodedata.category(char) in _UNSAFE_CATEGORIES and not surrogate:
            unsafe.append(re.escape(char))
    bmp = "".join(unsafe)
    return re.compile(f"[{bmp}\ud800-\udfff{_ASTRAL_UNSAFE}]")


# ASCII's only unsafe characters are its controls (Cc): an ASCII text, the usual case, is
# escaped without building the table of :func:`_unsafe`.
_ASCII_UNSAFE = re.compile(r"[\x00-\x1f\x7f]")


def unsafe_characters(*, ascii_only: bool) -> re.Pattern[str]:
    """The pattern of one character :func:`escape` writes as an escape: for an ASCII text
    (`ascii_only`) the ASCII controls, which match there as the whole table would, else the
    whole table of :func:`_unsafe` (built on first use)."""
    if ascii_only:
        return _ASCII_UNSAFE
    return _unsafe()


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def escape(text: str) -> str:
    """`text` with every unsafe character written as a visible escape (``\\x1b``); printable
    text, backslashes included, is kept, so escaping twice changes nothing."""
    unsafe = unsafe_characters(ascii_only=text.isascii())
    return unsafe.sub(_visible, text)


def cut_counting(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    """`text` itself if it has at most `limit` characters, else its first `limit` characters
    followed by ``... [N more characters cut]``."""
    if len(text) <= limit:
        return text
    rest = len(text) - limit
    return f"{text[:limit]}... [{rest:,} more characters cut]"


def cut_to_width(text: str, limit: int = 40) -> str:
    """`text` itself if it has at most `limit` characters (default 40), else its first
    ``limit - 3`` characters and ``...``: exactly `limit` characters, for a value quoted in a
    one-line message (docs/contract.md §3.5)."""
    if len(text) <= limit:
        return text
    return text[: limit - 3] + "..."


def outside_text(
    text: str,
    limit: int = MAX_TEXT_CHARS,
    secrets: Iterable[str | None] = (),
) -> str:
    """A text from outside, safe to show: `secrets` redacted, escaped, and at most `limit`
    characters once escaped, with a note of about how many were cut. Time in proportion to
    `limit`, not to ``len(text)``."""
    rest = 0
    keys = _keys(secrets)
    if keys:
        room = max(len(spelling) for key in keys for spelling in _spellings(key))
        head = text[: limit + room]
        rest = len(text) - len(head)
        text = redact_secrets(head, keys, REDACTED)
        if rest:  # a spelling cut off by the head's end could show in part: that end goes
            rest += room
            text = text[: max(0, len(text) - room)]
    head = text[:limit]
    shown = escape(head)
    if len(shown) > limit:
        # Escapes lengthened the head: keep whole source characters up to `limit` shown ones.
        kept = 0
        size = 0
        for char in head:
            width = len(escape(char))
            if size + width > limit:
                break
            kept += 1
            size += width
        head = head[:kept]
        shown = escape(head)
    rest += len(text) - len(head)
    if not rest:
        return shown
    return f"{shown}... [{rest:,} more characters cut]"


def escape_lines(text: str) -> str:
    """:func:`escape` of each line of a multi-line text, keeping its line feeds."""
    return "\n".join(escape(line) for line in text.split("\n"))


# ASCII letters only, so that lower-casing keeps every offset (str.lower does not: "İ").
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
# What percent-encoders leave as it is: quote(safe=""), quote(), encodeURIComponent.
_URL_SAFE = ("", "/", "-_.!~*'()")


def _keys(secrets: Iterable[str | None]) -> list[str]:
    stripped = (secret.strip() for secret in secrets if secret)
    keys = {key for key in stripped if key}
    return sorted(keys, key=len, reverse=True)


@lru_cache(maxsize=64)
def _spellings(secret: str) -> tuple[str, ...]:
    """`secret` as an honest echo writes it, ASCII letters lower-cased."""
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
        forms.add(quote(secret, safe=safe))
        forms.add(quote_plus(secret, safe=safe))
    lowered = {form.translate(_ASCII_LOWER) for form in forms}
    return tuple(sorted(lowered, key=len, reverse=True))


#: Characters of a spelling of the key that a cut of it must keep to be redacted as the key
#: (docs/contract.md §9.4): fewer cannot rebuild a key, and "sk_live_" is its own 8.
KEY_CUT = 8

_SHORT = 64  # spellings up to this long are found together, by one regular expression


@lru_cache(maxsize=64)
def _pattern(secret: str) -> re.Pattern[str] | None:
    """One alternation of `secret`'s spellings when all are short; else ``None``."""
    spellings = _spellings(secret)
    if max(map(len, spellings)) > _SHORT:
        return None
    alternation = "|".join(map(re.escape, spellings))
    return re.compile(alternation, re.IGNORECASE | re.ASCII)


def redact_secrets(
    text: str,
    secrets: Iterable[str | None],
    replacement: str,
) -> str:
    """`text` with every spelling of each of `secrets` (blank and ``None`` skipped, stripped)
    replaced by `replacement`, the longest secret first, and so is every cut of a spelling
    that keeps at least its first :data:`KEY_CUT` characters: a message quotes a value cut to
    a few dozen characters (``sk_live_0123...``) before it reaches the redaction. Linear in
    ``len(text)``: short spellings are one alternation of literals, longer ones found by
    ``str.find`` (two-way); the cuts of each spelling one pattern of nested literals."""
    for key in _keys(secrets):
        if not text:
            break
        text = _redact_whole(text, key, replacement)
        text = _redact_cuts(text, key, replacement)
    return text


def _redact_whole(text: str, key: str, replacement: str) -> str:
    """`text` with every whole spelling of `key` replaced by `replacement`."""
    pattern = _pattern(key)
    if pattern is not None:
        return pattern.sub(replacement.replace("\\", "\\\\"), text)
    low = text.translate(_ASCII_LOWER)  # same offsets as `text`
    spans: list[tuple[int, int]] = []
    for spelling in _spellings(key):
        start = low.find(spelling)
        while start >= 0:
            spans.append((start, start + len(spelling)))
            start = low.find(spelling, start + len(spelling))
    return _replaced(text, spans, replacement)


@lru_cache(maxsize=64)
def _cut_patterns(secret: str) -> tuple[tuple[re.Pattern[str], str], ...]:
    """Per spelling of `secret` longer than :data:`KEY_CUT` characters: the pattern of its cuts
    (its first :data:`KEY_CUT` characters, then each next one while they follow, up to
    :data:`_SHORT`: nested optional literals, which cannot backtrack) and the spelling."""
    patterns = []
    spellings = _spellings(secret)
    for spelling in spellings:
        if len(spelling) <= KEY_CUT:  # a cut of it is no cut: the whole spelling went before
            continue
        if any(len(other) > len(spelling) and other.startswith(spelling) for other in spellings):
            continue  # its cuts are the longer spelling's (JSON doubles a trailing backslash)
        rest = spelling[KEY_CUT:_SHORT]
        opened = "".join(f"(?:{re.escape(char)}" for char in rest)
        nested = opened + ")?" * len(rest)
        kept = re.escape(spelling[:KEY_CUT])
        cuts = re.compile(kept + nested, re.IGNORECASE | re.ASCII)
        patterns.append((cuts, spelling))
    return tuple(patterns)


def _redact_cuts(text: str, key: str, replacement: str) -> str:
    """`text` with every cut of a spelling of `key` (its first :data:`KEY_CUT` characters or
    more, where they show) replaced by `replacement`."""
    patterns = _cut_patterns(key)
    if len(patterns) == 1:
        only, spelling = patterns[0]
        if len(spelling) <= _SHORT:  # the usual key: letters, digits
            return only.sub(replacement.replace("\\", "\\\\"), text)
    low = text.translate(_ASCII_LOWER)  # same offsets as `text`
    spans: set[tuple[int, int]] = set()  # two spellings may share a cut
    for pattern, spelling in patterns:
        if len(spelling) <= _SHORT:  # the pattern finds the whole cut: no loop in Python
            spans.update(match.span() for match in pattern.finditer(low))
            continue
        match = pattern.search(low)
        while match is not None:
            start, stop = match.span()
            if stop - start == _SHORT:  # as far as the pattern goes: the spelling may go on
                stop = start + _shared(low, start, spelling, _SHORT)
            spans.add((start, stop))
            match = pattern.search(low, stop)  # a cut it covers would cover no more
    return _replaced(text, spans, replacement)


def _shared(
    low: str,
    at: int,
    spelling: str,
    held: int,
) -> int:
    """How many first characters of `spelling` `low` holds at `at`, knowing it holds the first
    `held`: one more, two more, four more..., then halving the gap, so the comparisons (in C)
    cost in proportion to the length held, not to the spelling's."""
    tried = held
    step = 1
    while held == tried and held < len(spelling):
        tried = min(held + step, len(spelling))
        if low.startswith(spelling[:tried], at):
            held = tried
            step *= 2
    while tried - held > 1:  # `held` characters match, `tried` do not
        middle = (held + tried) // 2
        if low.startswith(spelling[:middle], at):
            held = middle
        else:
            tried = middle
    return held


def _replaced(
    text: str,
    spans: Iterable[tuple[int, int]],
    replacement: str,
) -> str:
    """`text` with each run of overlapping `spans` (``(start, stop)`` offsets) replaced by one
    `replacement`."""
    out: list[str] = []
    pos = 0
    for start, stop in sorted(spans):
        if start >= pos:
            out += [text[pos:start], replacement]
        pos = max(pos, stop)  # one overlapping another is replaced with it
    return "".join(out) + text[pos:]
