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
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from functools import cache, lru_cache
from itertools import accumulate

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


#: Backslashes in a row of a secret beyond which its pattern does not count escaped ones
#: among them (the second pass over a copy with escaped backslashes made plain does).
_MIXED_MAX = 1
_ESCAPED = "x5c|u005c|U0000005c"
_BARE = rf"%5c|&(?:#{_zeros_then('92')};|#x{_zeros_then('5c')};)"


def _escaped_run(count: int) -> str:
    """`count` backslashes of a secret, one or more of them escaped, among plain ones: at
    most `count` escaped ones with the runs before them, once a look-ahead counted `count`
    (:func:`_backslashes_piece`)."""
    unit = rf"(?:\\(?:{_ESCAPED})|\\|{_BARE})"
    segment = rf"(?:\\*+(?:{_BARE}|(?<=\\)(?:{_ESCAPED})))"
    return rf"(?={unit}{{{count}}}){segment}{{1,{count}}}"


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

    A run of more than :data:`_MIXED_MAX` backslashes is taken whole only: counting escaped
    ones here would cost each place of a text of escaped backslashes up to `count` steps,
    and `count` is the client's to choose where a server redacts its key. Such a run written
    with escaped backslashes is found in a second pass (:func:`_escaped_backslash_spans`).

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
    run_start = r"\\(?<!\\\\)"  # a backslash that starts a run (it and the one before)
    if count > _MIXED_MAX:
        return f"{run_start}(?i:{whole(count - 1)})" if first else whole(count)
    if not first:
        return f"(?:{whole(count)}|{_escaped_run(count)}{after})"
    # The first character taken, the rest of the first unit and segment, then as above.
    more = rf"{unit}{{{count - 1}}}"
    tail = rf"{segment}{{0,{count - 1}}}{after}"
    forms = [
        rf"{run_start}(?i:{whole(count - 1)})",
        rf"{run_start}(?i:(?=(?:{escaped})?+{more})\\*+(?:{bare}|(?<=\\)(?:{escaped})){tail})",
        rf"%(?i:(?=5c{more})5c{tail})",
        rf"&(?i:(?=(?:{html}){more})(?:{html}){tail})",
    ]
    return "(?:" + "|".join(forms) + ")"


def _units(secret: str) -> list[str]:
    """`secret` cut where its pieces begin: a character that is no backslash, with the run of
    backslashes before it if any (a run at the end is a unit of its own)."""
    return re.findall(r"\\*+[^\\]|\\++", secret)


def _piece(unit: str) -> str:
    char = unit[-1]
    if char == "\\":
        return _backslashes_piece(len(unit), None)
    if len(unit) > 1:
        return _backslashes_piece(len(unit) - 1, char)
    return _char_piece(char)


def _pieces(secret: str) -> list[str]:
    return [_piece(unit) for unit in _units(secret)]


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


def _pattern_source(secret: str, *, mark_last: bool = False) -> tuple[str, int]:
    """A secret's pattern and its flags; with `mark_last`, its last piece is group 1."""
    parts = _pieces(secret)
    if mark_last and len(parts) > 1:
        parts[-1] = f"({parts[-1]})"
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


@lru_cache(maxsize=32)
def _head_pattern(head: str) -> re.Pattern[str]:
    source, flags = _pattern_source(head, mark_last=True)
    return re.compile(source, flags)


@lru_cache(maxsize=512)
def _plain(unit: str) -> frozenset[str]:
    """The characters that are `unit` written as itself, when it is one character whose
    matches are known (:func:`_same_letters`); else none."""
    return frozenset(_same_letters(unit) or ()) if len(unit) == 1 and unit != "\\" else frozenset()


@lru_cache(maxsize=512)
def _unit_patterns(unit: str) -> tuple[re.Pattern[str], ...]:
    """The ways one piece of a secret may be written, each a pattern of its own, in the
    order the whole pattern tries them (a character may be read as itself or an escape)."""
    char = unit[-1]
    if char == "\\":
        sources = [_piece(unit)]
    else:
        forms = [re.escape(char), f"(?:{_bare_forms(char)})", f"(?:{_escape_forms(char)})"]
        count = len(unit) - 1
        if not count:
            sources = [rf"\\*+{forms[0]}", rf"\\++{forms[2]}", forms[1]]
        else:
            sources = [rf"\\{{{count},}}+{forms[0]}", rf"\\{{{count},}}+{forms[1]}"]
            sources.append(rf"\\{{{count + 1},}}+{forms[2]}")
            if count <= _MIXED_MAX:
                run = _escaped_run(count)
                sources += [rf"{run}\\*+{forms[0]}", rf"{run}\\*+{forms[1]}"]
                sources.append(rf"{run}\\++{forms[2]}")
    return tuple(re.compile(source, re.IGNORECASE) for source in sources)


#: Pieces of a secret searched for with one pattern; a longer secret's other pieces are
#: followed from where that pattern matched.
_HEAD_PIECES = 64
#: Steps of one redaction spent following a long secret's pieces every way (some 0.1 s).
_FOLLOW_STEPS = 20_000


def _follow(text: str, pos: int, units: list[str], budget: int) -> tuple[int, int]:
    """Where the spelling of `units` that starts at `pos` ends (or, if none is whole, the
    furthest it goes), trying every way of each piece depth first: ``(end, budget left)``.

    Each step tries one piece at one place; `budget` bounds the steps (a (piece, place)
    tried once is never tried again), and without budget only each piece's first way is
    followed, which reads each character once.
    """
    start = pos
    for unit in units:  # the first way of each piece: enough unless a piece reads two ways
        if pos < len(text) and text[pos] in _plain(unit):  # no regex for the common case
            pos += 1
            continue
        found = next((m for p in _unit_patterns(unit) if (m := p.match(text, pos))), None)
        if found is None:
            break
        pos = found.end()
    else:
        return pos, budget
    if budget <= 0:
        return pos, budget
    greedy, pos = pos, start
    stack = [(0, pos)]
    seen: set[tuple[int, int]] = set()
    furthest = pos
    while stack and budget > 0:
        index, here = stack.pop()
        if index == len(units):
            return here, budget
        if (index, here) in seen:
            continue
        seen.add((index, here))
        budget -= 1
        furthest = max(furthest, here)
        ends = [m.end() for p in _unit_patterns(units[index]) if (m := p.match(text, here))]
        stack += [(index + 1, end) for end in reversed(ends)]
    return max([greedy, furthest] + [here for _, here in stack]), budget


def _long_spans(text: str, units: list[str]) -> Iterator[tuple[int, int]]:
    """Where the secret made of `units` (more than :data:`_HEAD_PIECES`) is spelled in
    `text`, in order: its head is searched for with one pattern, the other pieces are
    followed from there (:func:`_follow`), and a span covers all that spells the secret,
    or the longest start of it there.

    A pattern of the whole secret would cost compile time in proportion to its length, and
    a search time in proportion to the text's length times the secret's: a peer that chose
    both (a server's request key) could make that minutes. Here the head's pattern reads
    each character a bounded number of times; following reads what it replaces, plus at
    most :data:`_FOLLOW_STEPS` steps in all where a piece reads two ways.
    """
    head = _head_pattern("".join(units[:_HEAD_PIECES]))
    # From where the head's last piece began: it may read another way than the head took.
    rest = units[_HEAD_PIECES - 1 :]
    budget = _FOLLOW_STEPS
    pos = 0
    while (found := head.search(text, pos)) is not None:
        pos, budget = _follow(text, found.start(1), rest, budget)
        yield found.start(), pos


def _spans(text: str, secret: str, units: list[str]) -> Iterator[tuple[int, int]]:
    if len(units) > _HEAD_PIECES:
        return _long_spans(text, units)
    return (found.span() for found in _secret_pattern(secret).finditer(text))


def _replaced(text: str, spans: Iterable[tuple[int, int]], replacement: str) -> str:
    out: list[str] = []
    pos = 0
    for start, end in spans:
        out += [text[pos:start], replacement]
        pos = end
    out.append(text[pos:])
    return "".join(out)


# An escaped backslash (the x, u and U forms with the backslash before them).
_ESCAPED_BACKSLASH = re.compile(rf"\\(?:{_ESCAPED})|{_BARE}", re.IGNORECASE)
_ESCAPED_BACKSLASH_GROUP = re.compile(rf"(\\(?:{_ESCAPED})|{_BARE})", re.IGNORECASE)


def _escaped_backslash_spans(text: str, secret: str, units: list[str]) -> list[tuple[int, int]]:
    """Spans of `text` where `secret` is spelled with more than :data:`_MIXED_MAX` of a run of
    its backslashes escaped: found in a copy of `text` whose escaped backslashes are plain
    ones (so a run of plain and escaped backslashes is one run, counted as the pattern
    counts them), then mapped back."""
    # Every step below runs in C: split, join, len and accumulate over the pieces.
    pieces = _ESCAPED_BACKSLASH_GROUP.split(text)  # text, escaped backslash, text, ...
    copy = "\\".join(pieces[0::2])
    widths = list(map(len, pieces))
    origins = [0, *accumulate(widths)]  # where each piece starts in `text`
    widths[1::2] = [1] * (len(pieces) // 2)
    starts = [0, *accumulate(widths)]  # and in the copy

    def back(index: int, end: bool) -> int:
        piece = bisect_right(starts, index - 1 if end else index) - 1
        if piece % 2 == 0:  # plain text: the same offset in it
            return origins[piece] + index - starts[piece]
        return origins[piece + 1] if end else origins[piece]

    return [(back(s, False), back(e, True)) for s, e in _spans(copy, secret, units)]


def redact_secrets(text: str, secrets: Iterable[str | None], replacement: str) -> str:
    """`text` with each of `secrets` (blank and ``None`` ones skipped, surrounding white space
    ignored) replaced by `replacement`, in any of the spellings of the module docstring; the
    longest secret first, so one that contains another is replaced whole.

    Time grows in proportion to ``len(text)`` whatever the text holds (runs of backslashes,
    quotes, zeros or half-written escapes included), times at most 64 characters of the
    secret. Where the secret holds backslashes, a match may take a few more backslashes,
    escaped or not, than the secret itself has (never fewer). A secret of more than 64
    pieces (characters, with a run of backslashes and the character after it as one) is
    found by its first 64, then followed piece by piece: a run of its first 64 pieces is
    redacted with as much of the rest as follows it."""
    for secret in sorted({s.strip() for s in secrets if s and s.strip()}, key=len, reverse=True):
        if not text:
            break
        units = _units(secret)
        text = _replaced(text, _spans(text, secret, units), replacement)
        if max(len(u) - (u[-1] != "\\") for u in units) > _MIXED_MAX:
            if _ESCAPED_BACKSLASH.search(text):
                text = _replaced(text, _escaped_backslash_spans(text, secret, units), replacement)
    return text
