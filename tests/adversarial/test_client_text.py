"""The two functions every outside text and every exception pass through on the client side:
escaping and cutting (:mod:`projectops._text`) and key redaction
(:mod:`projectops.client.redaction`), over whole character classes and every spelling."""

from __future__ import annotations

import json
import sys
import traceback
import unicodedata
from urllib.parse import quote, quote_plus

import pytest

import projectops
from projectops import FieldViolation, Unauthenticated
from projectops._text import cut_counting, escape, outside_text
from projectops.client import Client, MissingBaseUrl
from projectops.client.redaction import redact, scrub_exception
from projectops.program.failures import failure
from tests.support import KEY, RunCli

UNSAFE = {"Cc", "Cf", "Zl", "Zp", "Cs"}


def test_every_control_format_separator_and_surrogate_is_escaped() -> None:
    unsafe = [chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) in UNSAFE]
    assert len(unsafe) > 2000  # C0, C1, format characters, 2,048 surrogates
    shown = escape("".join(unsafe))
    assert not [c for c in shown if unicodedata.category(c) in UNSAFE]
    assert escape("\x1b[2J\x07\r\n\u202e\u2028\ud800\U000e0041") == (
        "\\x1b[2J\\x07\\x0d\\x0a\\u202e\\u2028\\ud800\\U000e0041"
    )


def test_ascii_text_is_escaped_as_the_whole_table_escapes_it() -> None:
    # escape() spares ASCII text the whole table: the two must agree on every ASCII character.
    ascii_only = "".join(map(chr, range(128)))
    assert escape(ascii_only) == "".join(escape(c + "\u00e9")[:-1] for c in ascii_only)
    assert escape(ascii_only) == "".join(
        f"\\x{ord(c):02x}" if unicodedata.category(c) in UNSAFE else c for c in ascii_only
    )


@pytest.mark.parametrize("text", ["plain", "caf\u00e9 \u65e5\u672c \U0001f600", "a\\x1b b"])
def test_printable_text_is_left_alone_and_escaping_twice_changes_nothing(text: str) -> None:
    assert escape(text) == text
    assert escape(escape("\x1b" + text)) == escape("\x1b" + text)


def test_outside_text_is_bounded_once_escaped_and_says_what_was_cut() -> None:
    assert cut_counting("abc", 5) == "abc"
    assert cut_counting("a" * 1500) == "a" * 1000 + "... [500 more characters cut]"
    for text in ["\x1b" * 50_000, "A" * 50_000, "\x1bA" * 25_000]:
        shown = outside_text(text)
        head, _, note = shown.partition("... [")
        assert len(head) <= 1000 and note.endswith(" more characters cut]")
        kept = int(note.split(" ")[0].replace(",", ""))
        assert escape(text[: len(text) - kept]) == head  # whole characters, none lost


def spellings(key: str) -> list[str]:
    """A key written out as servers, logs and libraries write it."""
    return [
        key,
        key.upper(),
        key.swapcase(),
        repr(key),
        repr(key.encode()),
        ascii(key),
        json.dumps(key),
        json.dumps(key.upper()),
        quote(key, safe=""),
        quote(key.upper(), safe="").lower(),
        quote_plus(key),
    ]


@pytest.mark.parametrize("key", [KEY, "k'ey\\with\"quotes", "demo-key"])
def test_redact_finds_a_key_in_every_spelling(key: str) -> None:
    for spelling in spellings(key):
        text = redact(f"before {spelling} after", [key])
        assert text.startswith("before ") and text.endswith(" after"), (spelling, text)
        assert "***" in text, (spelling, text)
        letters = [c for c in key if c.isalnum()]
        assert "".join(letters).lower() not in text.lower().replace("\\", "")


def test_redact_reads_the_environment_and_skips_blank_keys(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SERVICE_API_KEY", f"  {KEY}  ")
    assert redact(f"x{KEY.upper()}x") == "x***x"
    monkeypatch.delenv("SERVICE_API_KEY")
    assert redact("a b", ["", None, "  "]) == "a b"


def test_scrub_exception_cleans_the_whole_chain_in_place() -> None:
    def raise_chain() -> None:
        try:
            try:
                raise KeyError(f"inner {KEY.lower()}")
            except KeyError as inner:
                raise RuntimeError(f"middle {quote(KEY)}") from inner
        except RuntimeError:
            error = Unauthenticated(
                f"outer {KEY.upper()}",
                [FieldViolation(field=KEY, description=repr(KEY))],
                http_status=401,
            )
            error.add_note(f"note {KEY}")
            raise error from None

    with pytest.raises(Unauthenticated) as caught:
        raise_chain()
    error = caught.value
    scrub_exception(error, [KEY])
    assert error.__context__ is not None  # kept, only cleaned
    text = "".join(traceback.format_exception(error, chain=True))
    current: BaseException | None = error
    while current is not None:
        text += str(current) + repr(current) + repr(current.args)
        current = current.__cause__ or current.__context__
    text += repr(error.violations) + error.describe()
    for spelling in spellings(KEY):
        assert spelling.lower() not in text.lower(), spelling
    assert error.message == "outer ***" and error.http_status == 401


def test_every_reported_line_is_one_escaped_bounded_line() -> None:
    for exc in [
        Unauthenticated("\x1b]0;x\x07" + "\n" + "A" * 10_000, http_status=401),
        ValueError("bad\r\nvalue"),
        RuntimeError("\u202e" * 5000),
    ]:
        line, sentence = failure(exc).format(exc, "list-rum-environments")
        for text in (line, sentence):
            assert not [c for c in text if unicodedata.category(c) in UNSAFE]
            assert len(text) < 2400


def test_our_own_messages_are_never_rewritten_even_for_a_one_letter_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The key never enters our own messages, so nothing redacts them: a key "A" leaves
    "SERVICE_BACKEND_URL is not set" whole (it used to read "SERVICE_BAC***END_URL")."""
    monkeypatch.setenv("SERVICE_API_KEY", "A")
    monkeypatch.delenv("SERVICE_BACKEND_URL", raising=False)
    with pytest.raises(MissingBaseUrl) as caught:
        Client()
    line, sentence = failure(caught.value).format(caught.value, "list-rum-environments")
    for text in (line, sentence):
        assert "SERVICE_BACKEND_URL is not set" in text and "***" not in text
    assert outside_text("a SERVICE_BACKEND_URL", secrets=["A"]) == "*** SERVICE_B***CKEND_URL"


def test_the_cli_prints_its_own_line_whole_for_a_one_letter_key(run_cli: RunCli) -> None:
    tool = next(iter(projectops.operations())).tool_name
    proc = run_cli(tool, key="A", base_url=None)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "SERVICE_BACKEND_URL is not set" in proc.stderr and "***" not in proc.stderr
    assert len(proc.stderr.splitlines()) == 1
