"""The ``projectops`` CLI against hostile backends on 127.0.0.1 (:mod:`tests.adversarial.hostile`).

Time-outs and memory are measured on the real program (``python -m projectops``); what reaches
the terminal is checked in-process (the ``run_cli`` fixture, :func:`projectops.cli._main.main`).

Each test prints its measured figures on lines starting ``FIGURE`` (see them with
``pytest tests/adversarial/test_client_cli.py -s | grep FIGURE``): the time to give up on a
trickling server, the peak memory (``ru_maxrss`` of the CLI process alone, read by a small
launcher process) for a 100 MB answer and a gzip bomb, beside the CLI's memory for a small
answer.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

import projectops
from projectops.mock import generate
from projectops.validation import is_required
from tests.adversarial.hostile import (
    answer,
    echo_key,
    gzip_bomb,
    hostile_server,
    huge_body,
    trickle_body,
    trickle_head,
)
from tests.support import KEY, RunCli, cli_env

LIST = "list-rum-environments"
#: Seconds any CLI run here may take before the test fails (and kills it).
RUN_LIMIT = 60.0
MIB = 1024 * 1024


@dataclass
class Run:
    """A finished CLI process: exit code, output, wall time, when it ended
    (``time.monotonic()``) and peak memory."""

    returncode: int
    stdout: str
    stderr: str
    seconds: float
    ended: float
    max_rss_bytes: int


# Runs the CLI as its only child and writes that child's peak RSS (KiB) to the file argv[1].
# The CLI is not started from pytest directly: Linux carries the high-water RSS of the process
# that forks over exec, so a child of a large pytest process would report pytest's size.
_LAUNCHER = """
import resource, subprocess, sys
code = subprocess.call(sys.argv[2:])
with open(sys.argv[1], "w") as out:
    out.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(code)
"""


def start(args: list[str], env: dict[str, str]) -> tuple[subprocess.Popen[bytes], Path, float]:
    """Start ``python -m projectops *args`` (through :data:`_LAUNCHER`) with output to files;
    (process, folder, start time)."""
    folder = Path(tempfile.mkdtemp(prefix="projectops-cli-"))
    cli = [sys.executable, "-m", "projectops", *args]
    launcher = [sys.executable, "-I", "-S", "-c", _LAUNCHER, str(folder / "rss")]
    with open(folder / "out", "wb") as out, open(folder / "err", "wb") as err:
        process = subprocess.Popen(
            launcher + cli, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err
        )
    return process, folder, time.monotonic()


def finish(process: subprocess.Popen[bytes], folder: Path, started: float) -> Run:
    """Wait (at most :data:`RUN_LIMIT` s) for `process`; its :class:`Run`, with the peak
    resident memory of the CLI process alone."""
    try:
        process.wait(max(started + RUN_LIMIT - time.monotonic(), 0.1))
    except subprocess.TimeoutExpired:
        process.kill()  # the launcher; its CLI child dies with the closed pipes or its limit
        process.wait()
        pytest.fail(f"projectops {process.args!r} ran over {RUN_LIMIT} s")
    ended = time.monotonic()
    out = (folder / "out").read_text("utf-8", "replace")
    err = (folder / "err").read_text("utf-8", "replace")
    rss_kib = int((folder / "rss").read_text())  # ru_maxrss is in KiB on Linux
    for name in ("out", "err", "rss"):
        (folder / name).unlink()
    folder.rmdir()
    return Run(process.returncode, out, err, ended - started, ended, rss_kib * 1024)


def run_program(*args: str, base_url: str, key: str | None = KEY) -> Run:
    """Run the CLI to its end with SERVICE_BACKEND_URL = `base_url` and SERVICE_API_KEY."""
    return finish(*start(list(args), cli_env(key, base_url)))


def one_error_line(run: Run | subprocess.CompletedProcess[str]) -> str:
    """The CLI's stderr, checked to be exactly one ``error: ...`` line."""
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), run.stderr[:2000]
    return lines[0]


def controls(text: str) -> list[str]:
    """Characters of `text` a terminal acts on instead of showing (the newline aside)."""
    return [c for c in text if c != "\n" and unicodedata.category(c) in {"Cc", "Cf", "Zl", "Zp"}]


# --- item 1: --timeout bounds the whole call --------------------------------------------------


@pytest.mark.slow
def test_the_cli_gives_up_on_a_trickling_server_after_its_timeout() -> None:
    with (
        hostile_server(trickle_head(interval=0.25)) as head,
        hostile_server(trickle_body(interval=0.25)) as body,
    ):
        # Both at once: the two 1 s waits overlap.
        runs = [
            start(["--timeout", "1", LIST], cli_env(KEY, server.base_url))
            for server in (head, body)
        ]
        results = [finish(*run) for run in runs]
    for name, server, result in zip(("head", "body"), (head, body), results, strict=True):
        (request,) = server.requests
        waited = result.ended - request.received  # from the request's arrival: no start-up
        print(
            f"FIGURE cli trickle-{name}: exit {result.returncode} {waited:.2f} s after the "
            f"request arrived ({result.seconds:.2f} s with the interpreter's start-up)"
        )
        assert result.returncode == 5, result.stderr
        line = one_error_line(result)
        assert f"no complete answer from {server.base_url} within the time-out of 1 s" in line
        # A per-read time-out would wait for every byte, 4 a second: 25 s or more.
        assert 0.95 <= waited < 2.5, waited


# --- item 2: responses are capped in bounded memory ---------------------------------------------


@pytest.mark.slow
def test_a_100_mb_answer_and_a_gzip_bomb_cost_the_cli_little_memory() -> None:
    size = 100_000_000
    with (
        hostile_server(answer(200, '{"environments": [{"environment": "QA"}]}')) as small,
        hostile_server(huge_body(size, announce=True)) as announced,
        hostile_server(huge_body(size, announce=False)) as unannounced,
        hostile_server(gzip_bomb()) as bomb,
    ):
        baseline = run_program(LIST, base_url=small.base_url)
        assert baseline.returncode == 0, baseline.stderr
        servers = {
            "100 MB answer with Content-Length": announced,
            "100 MB answer without Content-Length": unannounced,
            "gzip bomb (1 MB -> 1 GiB)": bomb,
        }
        runs = {name: run_program(LIST, base_url=s.base_url) for name, s in servers.items()}
    print(f"FIGURE cli memory, small answer: {baseline.max_rss_bytes / MIB:.1f} MiB")
    for name, run in runs.items():
        print(
            f"FIGURE cli memory, {name}: {run.max_rss_bytes / MIB:.1f} MiB, "
            f"exit {run.returncode} after {run.seconds:.2f} s"
        )
        assert run.returncode == 5, run.stderr
        line = one_error_line(run)
        assert "max_response_bytes" in line or "Content-Encoding: gzip" in line, line
        assert run.max_rss_bytes < 100 * MIB, (name, run.max_rss_bytes)
    # The bomb and an announced size are refused before the body is read.
    for name in ("100 MB answer with Content-Length", "gzip bomb (1 MB -> 1 GiB)"):
        assert runs[name].max_rss_bytes < baseline.max_rss_bytes + 8 * MIB, name


def test_an_html_error_page_is_one_line_naming_status_url_and_variable(run_cli: RunCli) -> None:
    page = "<html>\n<head><title>502 Bad Gateway</title></head>\n" + "<p>down</p>\n" * 2000
    with hostile_server(answer(502, page, {"Content-Type": "text/html"})) as server:
        run = run_cli(LIST, base_url=server.base_url)
    assert run.returncode == 5
    line = one_error_line(run)
    assert f"HTTP 502 from {server.base_url}/api/mcp/list_rum_environments" in line
    assert "SERVICE_BACKEND_URL" in line and "<" not in line


def test_max_response_bytes_is_a_flag(run_cli: RunCli) -> None:
    body = '{"environments": [{"environment": "' + "x" * 5000 + '"}]}'
    with hostile_server(answer(200, body)) as server:
        capped = run_cli("--max-response-bytes", "1000", LIST, base_url=server.base_url)
        roomy = run_cli(LIST, "--max-response-bytes", "100000", base_url=server.base_url)
    assert capped.returncode == 5, capped.stderr
    assert "1,000 bytes (max_response_bytes)" in one_error_line(capped)
    assert roomy.returncode == 0, roomy.stderr


# --- items 3 and 4: what reaches the terminal --------------------------------------------------

INJECTION = "\x1b[2J\x1b[H\x1b]0;pwned\x07\rOK\n\u202eevil\x9b31m"


def test_an_error_cannot_drive_the_terminal_and_is_cut(run_cli: RunCli) -> None:
    body = {
        "code": "failed_precondition",
        "message": INJECTION + "A" * 50_000,
        "violations": [{"field": "version\x1b[31m", "description": INJECTION}],
    }
    with hostile_server(answer(400, json.dumps(body))) as server:
        run = run_cli(LIST, base_url=server.base_url)
    assert run.returncode == 4
    line = one_error_line(run)
    assert not controls(run.stderr), [hex(ord(c)) for c in controls(run.stderr)]
    assert "\\x1b]0;pwned\\x07" in line and "more characters cut" in line
    assert len(line) < 2200, len(line)


def test_a_key_echoed_by_the_server_never_reaches_stderr(run_cli: RunCli) -> None:
    with hostile_server(echo_key()) as server:
        run = run_cli(LIST, base_url=server.base_url)
    assert run.returncode == 3
    text = (run.stdout + run.stderr).lower()
    for spelling in (KEY, "".join(f"\\x{ord(c):02x}" for c in KEY), quote(KEY, safe="")):
        assert spelling.lower() not in text
    assert "***" in run.stderr


def test_a_base_url_with_a_password_is_refused_without_printing_it(run_cli: RunCli) -> None:
    run = run_cli(LIST, base_url="http://user:s3cr3t-pw@127.0.0.1:9")
    assert run.returncode == 2
    line = one_error_line(run)
    assert "user name or password" in line and "s3cr3t" not in run.stderr


# --- issue 28.6: printed answers carry no terminal controls ---------------------------------

#: What a terminal acts on: a bidi override, a line separator, the 8-bit CSI, ESC, BEL, DEL
#: and a tag character (a format character above the BMP).
CONTROLS = "\u202eevil\u2028\x9b31m\x1b[2J\x07\x7f\U000e0001"


def poisoned(message: Message) -> None:
    """Append :data:`CONTROLS` to every string of `message` and of the messages in it."""
    for fd, value in message.ListFields():
        if fd.type == FieldDescriptor.TYPE_STRING:
            if fd.is_repeated:
                value[:] = [item + CONTROLS for item in value]
            else:
                setattr(message, fd.name, value + CONTROLS)
        elif fd.message_type is not None and not fd.message_type.GetOptions().map_entry:
            for item in value if fd.is_repeated else [value]:
                poisoned(item)


def bare_calls() -> list[tuple[projectops.Operation, str]]:
    """(operation, poisoned answer) of each operation callable without arguments (no
    REQUIRED request field) whose generated response holds a string."""
    found = []
    for op in projectops.operations():
        if any(is_required(fd) for fd in op.request_type.DESCRIPTOR.fields):
            continue
        for seed in range(20):  # a generated response may hold no string (an empty list)
            response = generate(op.response_type, f"{op.name}-{seed}")
            poisoned(response)
            text = projectops.to_json(response)
            if CONTROLS[0] in text:
                found.append((op, text))
                break
    return found


def test_a_printed_answer_holds_no_terminal_control_and_the_same_json(run_cli: RunCli) -> None:
    calls = bare_calls()
    assert calls  # the schema has an operation to call bare
    for op, text in calls:
        for compact in ([], ["--compact"]):
            with hostile_server(answer(200, text)) as server:
                run = run_cli(op.tool_name, *compact, base_url=server.base_url)
            assert run.returncode == 0, run.stderr
            assert not controls(run.stdout), [hex(ord(c)) for c in controls(run.stdout)]
            assert "\\u202e" in run.stdout and "\\u009b" in run.stdout
            assert json.loads(run.stdout) == json.loads(text)
