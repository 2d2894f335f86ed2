"""Throughput and latency of the mock server beside a bare Starlette app; prints, asserts nothing.

The module behind ``scripts/bench-server``.

Usage: scripts/bench-server [--requests N] [--seconds S] [--rounds R] [--concurrency C]
                            [--workers N]

Two servers run as subprocesses on free ports of 127.0.0.1, with the same uvicorn settings (the
mock server's: log level warning, no lifespan, no access log):

- ``mock``: ``projectops mock-server`` on its default fixtures (``python -m projectops``);
- ``bare``: a Starlette app with one route per operation that reads the body, looks the
  ``Service-Api-Key`` header up in a dictionary and answers the bytes the mock server answers
  to the same request (taken from the mock's own fixtures), with the same content type.

A raw asyncio HTTP/1.1 client (not httpx: its per-request cost would dominate) opens
``--concurrency`` keep-alive connections and sends ``POST`` requests on each, one at a time,
for ``list_rum_environments`` (``{}``) and ``get_release_details`` (``{"version": "1.0.0"}``),
both with the demo key. Every response's status is checked (200) and its body compared with the
expected bytes. Both servers run at once but only one is under load at a time: for each
operation, after a warm-up, ``--rounds`` rounds alternate a run against the mock and a run
against the bare app, each of at most ``--requests`` / ``--rounds`` requests and
``--seconds`` / ``--rounds`` seconds, so that a change in the machine's load (its cores are
shared) touches both alike. Printed: requests/s and p50/p99 latency (send to last byte) over all
rounds, and the median over the rounds of the ratio mock/bare of requests/s. Target: 0.6 or more.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from protolib import ensure_dev_python

ensure_dev_python("projectops", "projectops")

from projectops.conventions import API_KEY_HEADER, CONTENT_TYPE  # noqa: E402
from projectops.registry import operation  # noqa: E402

LOOPBACK = "127.0.0.1"
KEY = "demo-key"
#: (operation name, request body) of each benchmark.
CASES: list[tuple[str, bytes]] = [
    ("list_rum_environments", b"{}"),
    ("get_release_details", b'{"version": "1.0.0"}'),
]
TARGET = 0.6


def expected_answers() -> dict[str, bytes]:
    """Operation name -> the mock server's response body to its benchmark request."""
    from projectops.codec import from_json
    from projectops.mock._matching import load_fixtures

    project = load_fixtures()[KEY]
    answers = {}
    for name, body in CASES:
        op = operation(name)
        answers[name] = project.reply(op, from_json(body, op.request_type)).body
    return answers


def bare_app() -> object:
    """The bare Starlette app: one dictionary lookup, then the mock's bytes."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    by_key = {KEY: expected_answers()}

    def endpoint(name: str) -> object:
        async def answer(request: Request) -> Response:
            await request.body()
            answers = by_key.get(request.headers.get(API_KEY_HEADER, ""))
            if answers is None:
                return Response(b"{}", status_code=401, media_type=CONTENT_TYPE)
            return Response(answers[name], media_type=CONTENT_TYPE)

        return answer

    routes = [
        Route(operation(name).path, endpoint(name), methods=["POST"])  # type: ignore[arg-type]
        for name, _ in CASES
    ]
    return Starlette(routes=routes)


def serve_bare(port: int) -> int:
    """Serve :func:`bare_app` on 127.0.0.1:`port` with the mock server's uvicorn settings."""
    import uvicorn

    app: Any = bare_app()
    uvicorn.run(
        app, host=LOOPBACK, port=port, log_level="warning", access_log=False, lifespan="off"
    )
    return 0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def start(args: list[str], port: int) -> subprocess.Popen[bytes]:
    """Start a server subprocess and wait (at most 30 s) until `port` accepts connections.

    Its output is dropped unless it exits first (then it is shown with the exit code).
    """
    log = tempfile.TemporaryFile()
    process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            log.seek(0)
            output = log.read().decode("utf-8", "replace")
            sys.exit(f"error: {' '.join(args)} exited with code {process.returncode}:\n{output}")
        try:
            with socket.create_connection((LOOPBACK, port), timeout=1):
                return process
        except OSError:
            time.sleep(0.05)
    process.kill()
    sys.exit(f"error: {' '.join(args)} did not listen on port {port} within 30 s")


def stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@dataclass
class Result:
    """One run: requests answered, seconds taken, latencies in seconds."""

    requests: int
    seconds: float
    latencies: list[float]

    @property
    def rate(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    def quantile(self, q: int) -> float:
        return statistics.quantiles(self.latencies, n=100, method="inclusive")[q - 1]


async def read_answer(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """One HTTP/1.1 answer with a Content-Length: (status, body)."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split(b" ", 2)[1])
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return status, await reader.readexactly(length)


async def connection(
    port: int,
    request: bytes,
    expected: bytes,
    budget: list[int],
    deadline: float,
    latencies: list[float],
) -> None:
    """Send `request` again and again on one keep-alive connection while budget and time last."""
    # Every wait is bounded: a stalled server ends the run with TimeoutError, never a hang.
    reader, writer = await asyncio.wait_for(asyncio.open_connection(LOOPBACK, port), 10)
    try:
        while budget[0] > 0 and time.monotonic() < deadline:
            budget[0] -= 1
            start = time.perf_counter()
            writer.write(request)
            status, body = await asyncio.wait_for(read_answer(reader), 10)
            latencies.append(time.perf_counter() - start)
            if status != 200 or body != expected:
                raise RuntimeError(f"unexpected answer {status}: {body[:200]!r}")
    finally:
        writer.close()
        with contextlib.suppress(OSError, asyncio.TimeoutError):
            await asyncio.wait_for(writer.wait_closed(), 5)


async def load(
    port: int, name: str, body: bytes, expected: bytes, requests: int, seconds: float, clients: int
) -> Result:
    """`clients` connections sending one operation's request; at most `requests`, `seconds`."""
    op = operation(name)
    request = (
        f"POST {op.path} HTTP/1.1\r\nHost: {LOOPBACK}:{port}\r\n"
        f"Content-Type: {CONTENT_TYPE}\r\n{API_KEY_HEADER}: {KEY}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode("ascii") + body
    latencies: list[float] = []
    budget = [requests]
    start = time.perf_counter()
    deadline = time.monotonic() + seconds
    await asyncio.gather(
        *(connection(port, request, expected, budget, deadline, latencies) for _ in range(clients))
    )
    return Result(len(latencies), time.perf_counter() - start, latencies)


def measure(
    ports: dict[str, int], name: str, body: bytes, expected: bytes, args: argparse.Namespace
) -> tuple[dict[str, Result], float]:
    """Alternating rounds of one operation against each server: (label -> all rounds, the
    median of the per-round ratios mock/bare of requests/s)."""
    per_round = max(1, args.requests // args.rounds)
    seconds = args.seconds / args.rounds
    for port in ports.values():  # warm-up: caches filled, connections and code paths hot
        asyncio.run(load(port, name, body, expected, per_round, seconds, args.concurrency))
    rounds: dict[str, list[Result]] = {label: [] for label in ports}
    for _ in range(args.rounds):
        for label, port in ports.items():
            result = asyncio.run(
                load(port, name, body, expected, per_round, seconds, args.concurrency)
            )
            rounds[label].append(result)
    ratios = [m.rate / b.rate for m, b in zip(rounds["mock"], rounds["bare"], strict=True)]
    merged = {
        label: Result(
            sum(r.requests for r in results),
            sum(r.seconds for r in results),
            [x for r in results for x in r.latencies],
        )
        for label, results in rounds.items()
    }
    return merged, statistics.median(ratios)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (module docstring) and print its table; 0 when it ran."""
    parser = argparse.ArgumentParser(prog="scripts/bench-server", description=__doc__)
    parser.add_argument(
        "--requests", type=int, default=10_000, help="per operation and server (default 10000)"
    )
    parser.add_argument(
        "--seconds", type=float, default=10.0, help="per operation and server (default 10)"
    )
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds (default 5)")
    parser.add_argument("--concurrency", type=int, default=50, help="connections (default 50)")
    parser.add_argument("--workers", type=int, default=1, help="mock server processes")
    parser.add_argument("--serve-bare", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_bare:
        return serve_bare(args.serve_bare)
    answers = expected_answers()
    ports = {"mock": free_port(), "bare": free_port()}
    commands = {
        "mock": [
            *(sys.executable, "-m", "projectops", "mock-server", "--host", LOOPBACK),
            *("--port", str(ports["mock"]), "--workers", str(args.workers)),
        ],
        "bare": [sys.executable, __file__, "--serve-bare", str(ports["bare"])],
    }
    processes = [start(command, ports[label]) for label, command in commands.items()]
    try:
        measured = {name: measure(ports, name, body, answers[name], args) for name, body in CASES}
    finally:
        for process in processes:
            stop(process)
    print(
        f"concurrency {args.concurrency}, keep-alive; per operation {args.rounds} alternating "
        f"rounds of up to {args.requests // args.rounds} requests or "
        f"{args.seconds / args.rounds:g} s on each server; mock server workers: {args.workers}, "
        "bare app: 1 process"
    )
    print(f"{'operation':24} {'server':6} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8}")
    for name, _ in CASES:
        results, ratio = measured[name]
        for label, r in results.items():
            print(
                f"{name:24} {label:6} {r.rate:8.0f} "
                f"{r.quantile(50) * 1000:8.2f} {r.quantile(99) * 1000:8.2f}"
            )
        verdict = "meets" if ratio >= TARGET else "misses"
        print(
            f"{name:24} mock/bare {ratio:.2f}x (median of rounds; {verdict} the {TARGET}x target)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
