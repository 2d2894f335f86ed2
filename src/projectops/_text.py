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


# Every pattern below runs over text a peer chose, so none may backtrack in proportion to it:
# a match starts only where a backslash run starts (never inside one), every backslash run and
# every run of leading zeros is consumed possessively (``*+``, ``++``, ``{r,}+``), and the
# alternatives of one key character begin with different characters, so from one start each
# piece of the key is matched at most a few ways, each in time proportional to what it reads.
# A search thus reads each text character a number of times bounded by the key's length, not
# by the text's. (The old ``\\*`` before every character backtracked over each backslash run from
# each of its positions, and a key holding backslashes split the run among them every way.)
_START = r"(?!(?<=\\)\\)"  # not inside a backslash run: its first backslash or no backslash


def _codes(char: str) -> list[int]:
    # A case mapping to more than one character ("ß".upper() == "SS") has no one code.
    return sorted({ord(c) for c in (char, char.lower(), char.upper()) if len(c) == 1})


def _zeros_then(digits: str) -> str:
    # ``0*+`` then the number's own digits; a zero code is only zeros (``0*+0`` never matches).
    return "0++" if digits == "0" else f"0*+{digits}"


def _bare_form_list(char: str) -> list[tuple[str, str]]:
    # (first character, pattern of the rest): each form begins with one plain character.
    forms = [("+", "")] if char == " " else []
    for code in _codes(char):
        forms += [("%", f"{code:02x}"), ("&", f"#{_zeros_then(str(code))};")]
        forms += [("&", f"#x{_zeros_then(f'{code:x}')};")]
    return forms


def _bare_forms(char: str) -> str:
    """The spellings of `char` that take no backslash before them: %hh, &#d; and &#xh; (and
    ``+`` for a space)."""
    return "|".join(re.escape(first) + rest for first, rest in _bare_form_list(char))


def _escape_forms(char: str) -> str:
    """The spellings of `char` that follow a backslash: xhh, uhhhh and Uhhhhhhhh."""
    return "|".join(f"x{c:02x}|u{c:04x}|U{c:08x}" for c in _codes(char))


def _char_piece(char: str) -> str:
    """One character of a secret that is not a backslash, in every spelling: itself after any
    number of backslashes, an escape after one or more, or a bare form."""
    return rf"(?:\\*+(?:{re.escape(char)}|(?<=\\)(?:{_escape_forms(char)}))|{_bare_forms(char)})"


def _backslashes_piece(count: int, char: str | None, *, first: bool = False) -> str:
    """`count` backslashes of a secret, then `char` (a character of it that is no backslash,
    or ``None`` at its end), in every spelling.

    Each backslash is one or more backslashes of the text (a repr or JSON escaping doubles
    them) or an escaped backslash (``\\x5c``, ``%5c``, ``&#92;`` ...). With none escaped, the
    text holds a run of at least `count` backslashes, taken whole, then `char`. Otherwise the
    run(s) and escaped backslashes are taken whole, up to `count` escaped ones, where a
    look-ahead has found at least `count` backslashes of the secret among them: each escaped
    one and each plain backslash counts once, so a backslash the secret lacks is never
    redacted as its own, though a few surplus backslashes around escaped ones may go with it.

    With `first` (the secret starts here), the alternatives each begin with one plain
    character (the pattern is then compiled without IGNORECASE, which only their rest has).
    """
    escaped = "x5c|u005c|U0000005c"
    html = rf"#{_zeros_then('92')};|#x{_zeros_then('5c')};"
    bare = rf"%5c|&(?:{html})"

    # Taken whole: `count` or more backslashes (`least` of them still to take), then `char`.
    def whole(least: int) -> str:
        if char is None:
            return rf"\\{{{least},}}+"
        return (
            rf"\\{{{least},}}+(?:{re.escape(char)}|{_bare_forms(char)}"
            rf"|(?<=\\{{{count + 1}}})(?:{_escape_forms(char)}))"
        )

    if char is None:
        after = r"\\*+"
    else:
        # Backslashes right before `char` are the secret's (the look-ahead counted them),
        # so its bare forms may follow them too.
        after = rf"\\*+(?:{re.escape(char)}|{_bare_forms(char)}|(?<=\\)(?:{_escape_forms(char)}))"
    unit = rf"(?:\\(?:{escaped})|\\|{bare})"
    segment = rf"(?:\\*+(?:{bare}|(?<=\\)(?:{escaped})))"
    if not first:
        units = rf"(?={unit}{{{count}}})"
        return f"(?:{whole(count)}|{units}{segment}{{1,{count}}}{after})"
    # The first character taken, the rest of the first unit and segment, then as above.
    more = rf"{unit}{{{count - 1}}}"
    tail = rf"{segment}{{0,{count - 1}}}{after}"
    run_start = r"\\(?<!\\\\)"  # a backslash that starts a run (it and the one before)
    forms = [
        rf"{run_start}(?i:{whole(count - 1)})",
        rf"{run_start}(?i:(?=(?:{escaped})?+{more})\\*+(?:{bare}|(?<=\\)(?:{escaped})){tail})",
        rf"%(?i:(?=5c{more})5c{tail})",
        rf"&(?i:(?=(?:{html}){more})(?:{html}){tail})",
    ]
    return "(?:" + "|".join(forms) + ")"


def _pieces(secret: str) -> list[str]:
    parts = []
    run = 0
    for char in secret:
        if char == "\\":
            run += 1
        elif run:
            parts.append(_backslashes_piece(run, char))
            run = 0
        else:
            parts.append(_char_piece(char))
    if run:
        parts.append(_backslashes_piece(run, None))
    return parts


# Characters that IGNORECASE matches to an ASCII letter although they are not ASCII.
_ASCII_FOLDS = "\u0130\u0131\u017f\u212a"
_ASCII_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _same_letters(char: str) -> list[str] | None:
    """Every character IGNORECASE matches to `char`, or ``None`` if that is not known cheaply
    (a cased character outside ASCII)."""
    if char.lower() == char.upper() == char and (char.isascii() or not char.isalpha()):
        return [char]
    if not char.isascii():
        return None
    pool = _ASCII_LETTERS + _ASCII_FOLDS
    return [c for c in pool if re.fullmatch(re.escape(char), c, re.IGNORECASE)]


def _first_piece(char: str) -> str | None:
    """The piece of a secret's first character (no backslash) as alternatives that each begin
    with one plain literal, so the search skips in C every position no spelling can start at;
    ``None`` if the characters matching `char` are not known cheaply."""
    letters = _same_letters(char)
    if letters is None:
        return None
    escape_forms = _escape_forms(char)
    # A backslash that starts a run: the lookbehind sees the one just taken and the one before.
    forms = [rf"\\(?<!\\\\)(?i:\\*+(?:{re.escape(char)}|(?<=\\)(?:{escape_forms})))"]
    forms += [re.escape(c) for c in letters]  # itself first, as the old alternation had it
    forms += [f"{re.escape(first)}(?i:{rest})" for first, rest in _bare_form_list(char)]
    return "(?:" + "|".join(forms) + ")"


def _pattern_source(secret: str) -> tuple[str, int]:
    """A secret's pattern and its flags."""
    parts = _pieces(secret)
    if secret[0] == "\\":
        count = len(secret) - len(secret.lstrip("\\"))
        rest = secret[count:]
        parts[0] = _backslashes_piece(count, rest[0] if rest else None, first=True)
        return parts[0] + "(?i:" + "".join(parts[1:]) + ")", 0
    first = _first_piece(secret[0])
    if first is None:
        return _START + "".join(parts), re.IGNORECASE
    return first + "(?i:" + "".join(parts[1:]) + ")", 0


@lru_cache(maxsize=32)
def _secret_pattern(secret: str) -> re.Pattern[str]:
    source, flags = _pattern_source(secret)
    return re.compile(source, flags)


def redact_secrets(text: str, secrets: Iterable[str | None], replacement: str) -> str:
    """`text` with each of `secrets` (blank and ``None`` ones skipped, surrounding white space
    ignored) replaced by `replacement`, in any of the spellings of the module docstring; the
    longest secret first, so one that contains another is replaced whole.

    Time grows in proportion to ``len(text)`` times the secret's length at worst, whatever
    the text holds (runs of backslashes, quotes, zeros or half-written escapes included).
    Where the secret holds backslashes, a match may take a few more backslashes, escaped or
    not, than the secret itself has (never fewer)."""
    for secret in sorted({s.strip() for s in secrets if s and s.strip()}, key=len, reverse=True):
        if text:
            text = _secret_pattern(secret).sub(replacement, text)
    return text
