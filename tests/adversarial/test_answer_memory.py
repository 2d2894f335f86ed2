"""A response under the size cap cannot cost unbounded memory: the CLI and the tool server.

A hostile backend on 127.0.0.1 (:mod:`tests.adversarial.hostile`) responses with the shapes that
cost the most per byte: many empty elements (``{"environments":[{},{},...]}``), deep nesting,
many short strings and one long string. For a response of N bytes (under
``--max-response-bytes``), the peak resident memory of the CLI (printing to a file and into a
pipe) and of the tool server (``projectops mcp`` over its real stdio) must stay under
100 MiB + 64 * N. Peak memory is ``ru_maxrss`` of the program alone, read by a small launcher
process (as in ``test_client_cli.py``). A response whose decoding would cost more than the
codec allows is refused with an error naming that cap; the tool server refuses a result over
``--max-result-bytes`` with an ``isError`` result naming the cap and the size.

Each run prints a ``FIGURE`` line (``pytest tests/adversarial/test_answer_memory.py -s | grep
FIGURE``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from projectops import codec
from projectops.v1.operations_pb2 import ListRumEnvironmentsResponse
from tests.adversarial.hostile import answer, hostile_server
from tests.adversarial.test_client_mcp import INITIALIZE, INITIALIZED, _line
from tests.support import KEY, cli_env

pytestmark = pytest.mark.slow

LIST = "list-rum-environments"
MIB = 1024 * 1024
#: Seconds one run of a program may take before the test fails (and kills it).
RUN_LIMIT = 120.0

# Runs the program as its only child (stdin and stdout inherited) and writes that child's peak
# RSS (KiB) to the file argv[1]. A child of pytest itself would report pytest's size: Linux
# carries the high-water mark of the forking process over exec.
_LAUNCHER = """
import resource, subprocess, sys
code = subprocess.call(sys.argv[2:])
with open(sys.argv[1], "w") as out:
    out.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(code)
"""


def _fill(prefix: bytes, unit: bytes, suffix: bytes, size: int) -> bytes:
    """`prefix` + `unit` joined by commas + `suffix`, about `size` bytes in all."""
    count = max((size - len(prefix) - len(suffix)) // (len(unit) + 1), 1)
    return prefix + b",".join([unit] * count) + suffix


def empty_elements(size: int) -> bytes:
    """``{"environments":[{},{},...]}``: one message per 3 bytes."""
    return _fill(b'{"environments":[', b"{}", b"]}", size)


def deep_nesting(size: int) -> bytes:
    """A field unknown to the client holding arrays nested 500 deep, again and again (each
    level 2 bytes: the most Python objects per byte json.loads can be made to build)."""
    unit = b"[" * 500 + b"]" * 500
    return _fill(b'{"environments":[{"environment":"QA"}],"extra":[', unit, b"]}", size)


def short_strings(size: int) -> bytes:
    """Many environments, each with a one-letter name."""
    return _fill(b'{"environments":[', b'{"environment":"a"}', b"]}", size)


def long_string(size: int) -> bytes:
    """One environment whose name is the whole response: ASCII and one character outside the
    Basic Multilingual Plane, so every Python copy of it takes 4 bytes per character."""
    prefix, suffix = b'{"environments":[{"environment":"', '\U0001f600"}]}'.encode()
    return prefix + b"x" * (size - len(prefix) - len(suffix)) + suffix


SHAPES: dict[str, Callable[[int], bytes]] = {
    "many empty elements": empty_elements,
    "deep nesting": deep_nesting,
    "many short strings": short_strings,
    "long string": long_string,
}


def budget(size: int) -> int:
    """The peak memory a response of `size` bytes may cost: 100 MiB + 64 bytes per byte."""
    return 100 * MIB + 64 * size


@dataclass
class Run:
    """A finished program: exit code, stdout size and head, stderr, seconds, peak RSS."""

    returncode: int
    out_bytes: int
    out_head: bytes
    stderr: str
    seconds: float
    max_rss_bytes: int


class _Drain(threading.Thread):
    """Reads a pipe to its end, keeping its size and first 64 KiB: a reader of a pipe."""

    def __init__(self, stream: Any) -> None:
        super().__init__(daemon=True)
        self.stream = stream
        self.size = 0
        self.head = b""
        self.start()

    def run(self) -> None:
        while chunk := self.stream.read(1 << 16):
            if len(self.head) < 1 << 16:
                self.head += chunk[: (1 << 16) - len(self.head)]
            self.size += len(chunk)


def run_cli(base_url: str, *, pipe: bool) -> Run:
    """``python -m projectops list-rum-environments`` with stdout to a file or into a pipe."""
    folder = Path(tempfile.mkdtemp(prefix="projectops-memory-"))
    rss, out_path, err_path = folder / "rss", folder / "out", folder / "err"
    args = [sys.executable, "-I", "-S", "-c", _LAUNCHER, str(rss)]
    args += [sys.executable, "-m", "projectops", LIST]
    started = time.monotonic()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        process = subprocess.Popen(
            args,
            env=cli_env(KEY, base_url),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE if pipe else out,
            stderr=err,
        )
    drain = _Drain(process.stdout) if pipe else None
    try:
        process.wait(RUN_LIMIT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        pytest.fail(f"projectops {LIST} ran over {RUN_LIMIT} s")
    seconds = time.monotonic() - started
    if drain is not None:
        drain.join(10)
        size, head = drain.size, drain.head
    else:
        size = out_path.stat().st_size
        with open(out_path, "rb") as out:
            head = out.read(1 << 16)
    run = Run(
        process.returncode,
        size,
        head,
        err_path.read_text("utf-8", "replace"),
        seconds,
        int(rss.read_text()) * 1024,  # ru_maxrss is in KiB on Linux
    )
    for path in (rss, out_path, err_path):
        path.unlink()
    folder.rmdir()
    return run


def run_tool_server(base_url: str, *extra: str) -> tuple[dict[str, Any], Run]:
    """``python -m projectops mcp`` over its real stdio: initialize, one call of
    ``list-rum-environments``, close stdin; (the call's result, the run)."""
    folder = Path(tempfile.mkdtemp(prefix="projectops-memory-"))
    rss, err_path = folder / "rss", folder / "err"
    args = [sys.executable, "-I", "-S", "-c", _LAUNCHER, str(rss)]
    args += [sys.executable, "-m", "projectops", "mcp", *extra]
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": LIST, "arguments": {}},
    }
    started = time.monotonic()
    with open(err_path, "wb") as err:
        process = subprocess.Popen(
            args,
            env=cli_env(KEY, base_url),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
        )
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write(_line(INITIALIZE) + _line(INITIALIZED) + _line(call))
        process.stdin.flush()
        answers: list[dict[str, Any]] = []
        reader = threading.Thread(
            target=lambda: answers.extend(json.loads(line) for line in process.stdout),  # type: ignore[union-attr]
            daemon=True,
        )
        reader.start()
        deadline = started + RUN_LIMIT
        while not any(a.get("id") == 2 for a in answers) and time.monotonic() < deadline:
            time.sleep(0.05)
        process.stdin.close()
        process.wait(max(deadline - time.monotonic(), 1))
        reader.join(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        pytest.fail(f"projectops mcp ran over {RUN_LIMIT} s")
    seconds = time.monotonic() - started
    (result,) = [a["result"] for a in answers if a.get("id") == 2]
    run = Run(
        process.returncode,
        0,
        b"",
        err_path.read_text("utf-8", "replace"),
        seconds,
        int(rss.read_text()) * 1024,
    )
    for path in (rss, err_path):
        path.unlink()
    folder.rmdir()
    return result, run


def _figure(who: str, shape: str, size: int, run: Run) -> None:
    print(
        f"FIGURE {who}, {shape} ({size / 1e6:.1f} MB): peak {run.max_rss_bytes / MIB:.0f} MiB "
        f"(budget {budget(size) / MIB:.0f} MiB), exit {run.returncode}, "
        f"{run.out_bytes / 1e6:.1f} MB printed, {run.seconds:.1f} s"
    )


def _response_text(body: bytes) -> bytes:
    """The response's protobuf JSON, indented, as the CLI prints it and a tool returns it."""
    response = codec.from_json(body, ListRumEnvironmentsResponse)
    return codec.to_json(response, indent=2).encode()


#: The shapes whose decoding would cost more than it may: refused before they are parsed.
REFUSED = {"many empty elements", "deep nesting"}


def _check_cli(run: Run, shape: str, body: bytes) -> None:
    if shape in REFUSED:
        # Millions of objects or arrays would cost several hundred MB to build: refused.
        assert run.returncode == 5, run.stderr
        (line,) = run.stderr.splitlines()
        assert "what decoding may cost" in line, line
        assert run.out_bytes == 0
    else:
        assert run.returncode == 0, run.stderr
        assert run.stderr == ""
        assert run.out_head.startswith(b'{\n  "environments": [\n    {\n      "environment": "')
    assert run.max_rss_bytes < budget(len(body)), (shape, run.max_rss_bytes)


@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_cli_prints_any_answer_in_bounded_memory(shape: str) -> None:
    size = 9_000_000
    body = SHAPES[shape](size)
    with hostile_server(answer(200, body)) as backend:
        for pipe in (False, True):
            run = run_cli(backend.base_url, pipe=pipe)
            _figure(f"cli {'into a pipe' if pipe else 'to a file'}", shape, len(body), run)
            _check_cli(run, shape, body)
            if shape == "long string":  # the whole string, once, and nothing else
                assert run.out_bytes == len(_response_text(body)) + 1, run.out_bytes


def test_the_cli_prints_many_empty_elements_under_the_decoding_cap() -> None:
    """Empty elements few enough to be decoded: printed in full (12 times the response's size)."""
    body = empty_elements(150_000)
    with hostile_server(answer(200, body)) as backend:
        run = run_cli(backend.base_url, pipe=True)
    _figure("cli into a pipe", "empty elements under the cap", len(body), run)
    assert run.returncode == 0, run.stderr
    assert run.out_bytes == len(_response_text(body)) + 1
    assert run.max_rss_bytes < budget(len(body))


@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_tool_server_answers_any_answer_in_bounded_memory(shape: str) -> None:
    size = 3_000_000
    body = SHAPES[shape](size)
    with hostile_server(answer(200, body)) as backend:
        result, run = run_tool_server(backend.base_url)
    _figure("tool server", shape, len(body), run)
    text = result["content"][0]["text"]
    assert result["isError"] is True, text[:300]
    assert "structuredContent" not in result
    if shape in REFUSED:
        assert "what decoding may cost" in text, text
    else:
        # The result would be larger than the 1 MiB cap: refused whole, naming cap and size.
        # Imported here: the MCP SDK behind it costs a second at collection in every worker.
        from projectops.mcp import DEFAULT_MAX_RESULT_BYTES

        assert f"{DEFAULT_MAX_RESULT_BYTES:,} bytes" in text and "--max-result-bytes" in text
        assert len(text) < 1000
    assert run.max_rss_bytes < budget(len(body)), (shape, run.max_rss_bytes)


def test_a_result_under_a_raised_cap_is_answered_in_bounded_memory() -> None:
    body = short_strings(3_000_000)
    with hostile_server(answer(200, body)) as backend:
        result, run = run_tool_server(backend.base_url, "--max-result-bytes", str(64 * MIB))
    _figure("tool server, --max-result-bytes 64 MiB", "many short strings", len(body), run)
    assert result.get("isError") is not True, result["content"][0]["text"][:300]
    count = len(result["structuredContent"]["environments"])
    assert count == body.count(b"{") - 1
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    assert run.max_rss_bytes < budget(len(body))


def test_the_result_cap_names_itself_and_the_size() -> None:
    environments = [{"environment": f"env-{i:05d}"} for i in range(200)]
    body = json.dumps({"environments": environments})
    with hostile_server(answer(200, body)) as backend:
        result, _ = run_tool_server(backend.base_url, "--max-result-bytes", "1000")
    size = len(_response_text(body.encode()))
    text = result["content"][0]["text"]
    assert result["isError"] is True
    assert f"{size:,} bytes" in text and "1,000 bytes" in text and "--max-result-bytes" in text
