"""A clipped key is still the key (issue 39, findings 1 and 6), against hostile servers on
127.0.0.1 with a 50-character key and a 40-character one:

- redaction knows every cut of the key that keeps its first 8 characters, in each spelling an
  honest echo writes (as it is, any letter case, JSON- or Python-escaped, percent-encoded);
- the codec's messages quote a value cut to 40 characters, so a key in an int64 or timestamp
  field, as an unknown field's name or as an error's ``code`` comes back cut: no output of
  ``projectops conformance`` (its text and JSON reports, the JUnit file, stderr) shows 8
  characters of it in a row, the wrong key of ``auth.wrong-key`` (``<key>-not-a-key``, cut
  inside the key itself when the key has 38 to 40 characters) included; nor does the CLI's
  error line;
- the CLI prints a response that echoes the key with ``***`` where the key was, as the MCP tool
  server returns it (docs/contract.md §9.4), and the same JSON otherwise.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor

import projectops
from projectops.client.redaction import redact
from projectops.codec import from_json, to_dict
from projectops.registry import Operation, operations
from projectops.validation import is_required
from tests.adversarial.hostile import Request, answer, hostile_server
from tests.adversarial.test_linear_patterns import MIB, REDACTION_LIMIT, cpu_seconds
from tests.support import RunCli
from tests.synthetic import valid_request

#: The issue's key (50 characters), and one of 40: a value quoted in a message is cut to 40.
KEY_50 = "sk_live_0123456789abcdefghijklmnopqrstuvwxyzABCDEF"
KEY_40 = "k40_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
KEYS = [KEY_50, KEY_40]
#: Characters of the key in a row that would be too many to show.
SHOWN = 8
_TEXT_TYPES = {FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BYTES}


def honest_spellings(key: str) -> list[str]:
    """`key` as servers, logs and libraries write it out."""
    return [
        key,
        key.upper(),
        key.swapcase(),
        json.dumps(key)[1:-1],
        repr(key)[1:-1],
        quote(key, safe=""),
        quote_plus(key).lower(),
    ]


def shown_part(text: str, key: str) -> str | None:
    """The first :data:`SHOWN` characters in a row of a spelling of `key` that `text` holds, in
    any letter case; ``None``: none."""
    low = text.lower()
    for spelled in {s.lower() for s in honest_spellings(key)}:
        for start in range(len(spelled) - SHOWN + 1):
            if spelled[start : start + SHOWN] in low:
                return spelled[start : start + SHOWN]
    return None


@pytest.mark.parametrize("key", KEYS, ids=["50 characters", "40 characters"])
def test_every_cut_that_keeps_the_first_8_characters_is_redacted(key: str) -> None:
    for spelled in honest_spellings(key):
        for length in range(SHOWN, len(spelled) + 1):
            text = f'got the string "{spelled[:length]}...", and {spelled[:length]}'
            redacted = redact(text, [key])
            assert shown_part(redacted, key) is None, (spelled[:length], redacted)
            assert redacted.count("***") == 2, redacted
    # The wrong key the runner sends, cut to 40 characters as a message quotes it.
    wrong = f"{key}-not-a-key"
    assert redact(f"unknown code '{wrong[:37]}...'", [key]) == "unknown code '***...'"
    assert redact(f"unknown code '{wrong}'", [key]) == "unknown code '***-not-a-key'"
    # Fewer than 8 characters cannot rebuild a key: text that only starts like it is kept.
    assert redact(f"{key[: SHOWN - 1]} and {key[1 : SHOWN + 1]}", [key]).count("***") == 0


def _echo_value(fd: FieldDescriptor, key: str, depth: int) -> Any:
    """`key` in every field (an int64, a timestamp, an enum: a message quotes it cut), nested
    messages filled the same way."""
    if fd.message_type is not None and not fd.message_type.full_name.startswith("google."):
        if fd.message_type.GetOptions().map_entry:
            return {key: key}
        value: Any = _echo_message(fd.message_type, key, depth + 1)
    else:
        value = key
    return [value] if fd.is_repeated else value


def _echo_message(descriptor: Descriptor, key: str, depth: int = 0) -> dict[str, Any]:
    if depth > 4:  # a recursive message stops somewhere
        return {}
    # The key as an unknown field's name too: strict decoding quotes it.
    echoed = {fd.json_name: _echo_value(fd, key, depth) for fd in descriptor.fields}
    return {key: 1, **echoed}


def _echoing_server(key: str) -> Any:
    """A 200 whose every field (and one unknown field's name) holds the key, to a request with
    the key; else a 400 whose ``code`` and ``message`` are the key header it got (the wrong
    key, ``<key>-not-a-key``, holds the key too)."""

    def behave(sock: Any, request: Request) -> None:
        path = request.head.split(b" ", 2)[1].decode("latin-1")
        got = request.header(projectops.API_KEY_HEADER)
        op = next((op for op in operations() if op.path == path), None)
        if got == key and op is not None:
            body = _echo_message(op.response_type.DESCRIPTOR, key)
            answer(200, json.dumps(body))(sock, request)
        else:
            code = got or key
            answer(400, json.dumps({"code": code, "message": f"bad key {code}"}))(sock, request)

    return behave


def _fixtures(tmp_path: Path, key: str) -> str:
    """The default fixtures with `key` as the first project's key."""
    data = json.loads(Path(projectops.__file__).with_name("default_fixtures.json").read_text())
    data["projects"][0]["apiKey"] = key
    path = tmp_path / "fixtures.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("key", KEYS, ids=["50 characters", "40 characters"])
def test_no_output_of_conformance_shows_a_cut_key(
    run_cli: RunCli, tmp_path: Path, key: str
) -> None:
    xml = tmp_path / "report.xml"
    fixtures = _fixtures(tmp_path, key)
    with hostile_server(_echoing_server(key)) as server:
        args = ["conformance", "--fixtures", fixtures, "--operation", operations()[0].name]
        text = run_cli(*args, "--junit-xml", str(xml), key=key, base_url=server.base_url)
        as_json = run_cli(*args, "--json", key=key, base_url=server.base_url)
    # The echo reached the report, cut as a message quotes it, and was redacted there.
    assert "unknown code '***..." in text.stdout or "unknown code '***-not-a-key'" in text.stdout
    assert "***" in text.stdout.split("response.decodes", 1)[1]
    assert json.loads(as_json.stdout)["failed"] > 0
    for output in (text.stdout, text.stderr, as_json.stdout, as_json.stderr, xml.read_text()):
        assert shown_part(output, key) is None, output


def _with_a_text_field() -> tuple[Operation, dict[str, Any]]:
    """The registry's first operation whose answer has a top-level string field, and a JSON
    answer of it holding only that field (the key goes there): one with no other REQUIRED
    field, so that answer decodes."""
    for op in operations():
        fields = op.response_type.DESCRIPTOR.fields
        for fd in fields:
            if any(is_required(other) for other in fields if other is not fd):
                continue
            if fd.type in _TEXT_TYPES and not fd.is_repeated:
                return op, {fd.json_name: ""}
            item = fd.message_type
            if fd.is_repeated and item is not None and not item.GetOptions().map_entry:
                texts = [f.json_name for f in item.fields if f.type in _TEXT_TYPES]
                if texts:
                    return op, {fd.json_name: [{texts[0]: ""}]}
    raise LookupError("no answer holds a string field")


def _put(data: Any, value: str) -> Any:
    """`data` (what :func:`_with_a_text_field` gives) with `value` in its string field."""
    if isinstance(data, dict):
        return {name: _put(item, value) for name, item in data.items()}
    if isinstance(data, list):
        return [_put(item, value) for item in data]
    return value


@pytest.mark.parametrize("key", KEYS, ids=["50 characters", "40 characters"])
def test_the_cli_prints_an_echoed_key_as_the_tool_server_returns_it(
    run_cli: RunCli, key: str
) -> None:
    op, shape = _with_a_text_field()
    command = op.name.replace("_", "-")
    for echoed, shown in [
        (key, "***"),
        (f"key {key.upper()} here", "key *** here"),
        (f"{key[:20]}...", "***..."),  # a cut of it, as a log line before it wrote it
    ]:
        body = json.dumps(_put(shape, echoed))
        with hostile_server(answer(200, body)) as server:
            for layout in ([], ["--compact"]):
                request = ["--json-input", json.dumps(to_dict(valid_request(op)))]
                run = run_cli(command, *request, *layout, key=key, base_url=server.base_url)
                assert run.returncode == 0, run.stderr
                assert shown_part(run.stdout, key) is None, run.stdout
                expected = to_dict(from_json(_put(shape, shown), op.response_type))
                assert json.loads(run.stdout) == expected


def _refused(key: str) -> tuple[Operation, str]:
    """The registry's first operation whose answer :func:`_echo_message` makes undecodable (a
    field that cannot hold the key: its message quotes the key cut), and that response."""
    for op in operations():
        body = json.dumps(_echo_message(op.response_type.DESCRIPTOR, key))
        try:
            from_json(body, op.response_type)
        except projectops.InvalidArgument:
            return op, body
    raise LookupError("every answer can hold a string in every field")


@pytest.mark.parametrize("key", KEYS, ids=["50 characters", "40 characters"])
def test_a_cut_key_in_the_clis_decoding_error_is_redacted(run_cli: RunCli, key: str) -> None:
    op, body = _refused(key)
    request = ["--json-input", json.dumps(to_dict(valid_request(op)))]
    with hostile_server(answer(200, body)) as server:
        run = run_cli(op.name.replace("_", "-"), *request, key=key, base_url=server.base_url)
    assert run.returncode != 0
    assert "***" in run.stderr
    assert shown_part(run.stdout + run.stderr, key) is None, run.stderr


@pytest.mark.parametrize("key", KEYS, ids=["50 characters", "40 characters"])
def test_a_mebibyte_of_cuts_of_the_key_is_redacted_in_linear_time(key: str) -> None:
    """Every cut is found, however many: a mebibyte of the key's first 8 characters and one
    more each time (a hostile peer's best case for the cuts' pattern)."""
    redacted: list[str] = []
    for unit in [key[:SHOWN] + "#", key[: SHOWN + 1] + "#", key[:30] + "#"]:
        text = (unit * (MIB // len(unit) + 1))[:MIB]
        elapsed = cpu_seconds(partial(lambda text: redacted.append(redact(text, [key])), text))
        assert elapsed < REDACTION_LIMIT, (unit, elapsed)
        assert shown_part(redacted[-1], key) is None
