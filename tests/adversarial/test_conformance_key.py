"""The conformance runner and proxy keep the key (issue 31, item 1): against a hostile server on
127.0.0.1 that
echoes the key it got in every field of its 200 responses and as the ``code`` and ``message`` of
its errors, nothing ``projectops conformance`` writes (the text report, ``--json``, the JUnit
XML file, stderr) holds the key; and no error about a base URL shows a key, a query or a
fragment, whichever command reads the URL (an operation, ``conformance``, ``proxy --upstream``,
``mcp``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor

import projectops
from projectops.client import Client
from tests.adversarial.hostile import Request, answer, hostile_server
from tests.support import RunCli

#: A key an echo cannot hide by accident: letters, digits and a dash.
KEY = "SECRETKEY123-kit"


def _echo_value(fd: FieldDescriptor, depth: int) -> Any:
    """The key wherever a value of `fd` can hold text; nested messages filled the same way."""
    if fd.message_type is not None and not fd.message_type.full_name.startswith("google."):
        if fd.message_type.GetOptions().map_entry:
            return {KEY: KEY}
        value: Any = _echo_message(fd.message_type, depth + 1)
    else:
        value = KEY
    return [value] if fd.is_repeated else value


def _echo_message(descriptor: Descriptor, depth: int = 0) -> dict[str, Any]:
    if depth > 4:  # a recursive message stops somewhere
        return {}
    return {fd.json_name: _echo_value(fd, depth) for fd in descriptor.fields}


def _echoing_server(sock: Any, request: Request) -> None:
    """A 200 whose every field holds the key to a request with the key; else a 400 whose
    ``code`` and ``message`` are the key header it got (the wrong key holds the key too)."""
    path = request.head.split(b" ", 2)[1].decode("latin-1")
    got = request.header(projectops.API_KEY_HEADER)
    op = next((op for op in projectops.operations() if op.path == path), None)
    if got == KEY and op is not None:
        body = _echo_message(op.response_type.DESCRIPTOR)
        answer(200, json.dumps(body))(sock, request)
    else:
        code = got or KEY.lower()
        answer(400, json.dumps({"code": code, "message": f"bad key {code}"}))(sock, request)


def _fixtures(tmp_path: Path) -> str:
    """The default fixtures with :data:`KEY` as the first project's key."""
    data = json.loads(Path(projectops.__file__).with_name("default_fixtures.json").read_text())
    data["projects"][0]["apiKey"] = KEY
    path = tmp_path / "fixtures.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def _spellings(text: str) -> bool:
    """Whether `text` holds the key as an honest echo would write it."""
    low = text.lower()
    return any(s.lower() in low for s in (KEY, quote(KEY), json.dumps(KEY)[1:-1]))


def test_no_output_of_conformance_holds_a_key_the_server_echoes(
    run_cli: RunCli, tmp_path: Path
) -> None:
    xml = tmp_path / "report.xml"
    with hostile_server(_echoing_server) as server:
        fixtures = _fixtures(tmp_path)
        text = run_cli(
            "conformance",
            "--fixtures",
            fixtures,
            "--junit-xml",
            str(xml),
            key=KEY,
            base_url=server.base_url,
        )
        as_json = run_cli(
            "conformance", "--fixtures", fixtures, "--json", key=KEY, base_url=server.base_url
        )
    # The server's echo reached the report (so the test examines something): redacted.
    assert "unknown code '***'" in text.stdout
    assert "unknown code '***-not-a-key'" in text.stdout
    report = json.loads(as_json.stdout)
    assert report["failed"] > 0
    for output in (text.stdout, text.stderr, as_json.stdout, as_json.stderr, xml.read_text()):
        assert not _spellings(output)


@pytest.mark.parametrize(
    "url",
    [
        f"http://127.0.0.1:1/?k={KEY}",
        f"http://127.0.0.1:1/#{KEY}",
        f"ftp://127.0.0.1:1/{KEY}",
        f"http://127.0.0.1:1/{quote(KEY)}/x\x01",
        f"http://[::1/{KEY}",
    ],
    ids=["query", "fragment", "scheme", "control", "malformed"],
)
@pytest.mark.parametrize(
    "command",
    [
        ["list-rum-environments", "--base-url"],
        ["conformance", "--base-url"],
        ["proxy", "--port", "0", "--upstream"],
        ["mcp", "--base-url"],
    ],
    ids=["operation", "conformance", "proxy", "mcp"],
)
def test_no_error_about_a_base_url_shows_a_key(
    run_cli: RunCli, command: list[str], url: str
) -> None:
    done = run_cli(*command, url, key=KEY)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "base URL" in done.stderr
    assert not _spellings(done.stderr + done.stdout)
    assert "?" not in done.stderr.split("got", 1)[-1]


def test_a_key_in_a_base_urls_path_is_not_shown_when_it_cannot_be_reached(
    run_cli: RunCli, dead_url: str, tmp_path: Path
) -> None:
    url = f"{dead_url}/{KEY}"
    call = run_cli("list-rum-environments", "--base-url", url, "--retries", "0", key=KEY)
    assert "cannot reach" in call.stderr
    xml = tmp_path / "report.xml"
    run = run_cli("conformance", "--base-url", url, "--junit-xml", str(xml), key=KEY)
    assert "requests sent to" in run.stdout
    for output in (call.stderr, run.stdout, run.stderr, xml.read_text()):
        assert not _spellings(output)
    # A key given in code, not in the environment, is not shown either.
    with Client(url, "another-key-0042", timeout=5, retries=0) as client:
        assert "another-key-0042" not in repr(client)
        with pytest.raises(projectops.ApiError) as caught:
            client.call("list_rum_environments", {})
        assert "another-key-0042" not in str(caught.value)
