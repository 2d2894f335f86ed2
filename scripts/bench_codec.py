"""Benchmarks of the JSON codec against json.loads/json.dumps, and of one CLI call against the
import of the libraries it cannot do without; prints ratios, asserts nothing.

The module behind ``scripts/bench``.

Usage: scripts/bench [--seconds S] [--sizes golden,0.6MB,3MB] [--cli-rounds N]

Everything runs as users run it: garbage collection on (Python's defaults), .pyc files written.

The codec: for the golden get_release_details response and for it scaled to about 0.6 MB and
3 MB (its scenarios and issues repeated), every codec path and its baseline run interleaved in
one process, round after round (CPU time of this process), and each figure is the median over
the rounds of the ratio to its baseline timed in the same round: decoding against ``json.loads``
of the same text, encoding against ``json.dumps`` of the same object with the codec's settings
(compact, ``ensure_ascii=False``). Rows: ``projectops`` is the public ``from_json``/``to_json``;
``fast path`` is ``projectops._fastcodec`` directly (with ``json.loads``/``json.dumps`` around
it); ``json_format`` is protobuf's own ``ParseDict``/``MessageToDict`` with the codec's options;
``REQUIRED check`` is ``projectops.validate`` of the decoded message, which a client runs on
every response after decoding it (against ``json.loads`` of the text, for scale).
Targets: from_json <= 4x json.loads, to_json <= 2.5x json.dumps.

The CLI: ``projectops get-release-details --version 1.0.0`` (the console script) against
``projectops mock-server`` (started for the run on a free port of 127.0.0.1), each call a new
process, in turn with ``python -c "import httpx2, google.protobuf.message,
google.api.annotations_pb2"``, the import floor; the figure is the median over the rounds of
call / floor, in CPU time (user + sys of the child) and in wall time. The floor with httpcore2
added is shown beside it: httpx2 imports its transport, httpcore2, only when a client is made, so
no call through httpx2 can cost less than that floor; against it the target is 1.25x (against the
floor without it, httpcore2's import alone is about 1.2x). The bare httpx2 call is the least any
call through httpx2 costs (:data:`BARE_CALL`: one POST, json.loads, json.dumps, no projectops):
call / bare is what projectops adds, and bare / floor what the floor leaves out.

The JSON library under the codec is named in the first line: orjson with the extra ``fast``
(``pip install 'projectops[fast]'``), else the json module alone.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from protolib import REPO, ensure_dev_python

ensure_dev_python("projectops", "projectops")
import google.protobuf as protobuf  # noqa: E402
from google.protobuf import json_format  # noqa: E402
from google.protobuf.internal import api_implementation  # noqa: E402

import projectops  # noqa: E402
from projectops import _fastcodec, codec  # noqa: E402
from projectops.v1.operations_pb2 import GetReleaseDetailsResponse  # noqa: E402

GOLDEN = REPO / "tests/golden/get_release_details.response.json"
SIZES = {"golden": 0, "0.6MB": 600_000, "3MB": 3_000_000}
OPTIONS_OUT: dict[str, Any] = {
    "preserving_proto_field_name": False,
    "always_print_fields_with_no_presence": True,
    "use_integers_for_enums": False,
}


def dumps(data: Any) -> str:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def payload(target: int) -> str:
    """The golden response as JSON text, its detailed results repeated to about `target` bytes."""
    text = GOLDEN.read_text()
    if not target:
        return text
    data = json.loads(text)
    results = data["detailedResults"]
    unit = len(dumps(results["scenarios"])) + len(dumps(results["issues"]))
    times = max(1, round((target - len(dumps(data))) / unit) + 1)
    scaled = copy.deepcopy(data)
    scaled["detailedResults"]["scenarios"] = results["scenarios"] * times
    scaled["detailedResults"]["issues"] = results["issues"] * times
    return dumps(scaled)


def wired() -> bool:
    """Whether codec.py calls the fast path (the public rows measure it then)."""
    return "_fastcodec" in Path(codec.__file__).read_text()


def run(
    cases: dict[str, Callable[[], object]], baselines: dict[str, str], seconds: float
) -> tuple[dict[str, float], dict[str, float]]:
    """Per case: the median CPU seconds per call, and the median over rounds of its ratio to
    its baseline measured in the same round (pairing cancels most noise from other load)."""
    first = {name: _time(fn, 1) for name, fn in cases.items()}  # also warms the caches
    # Batch fast calls so that one timing is at least ~5 ms; rounds for about `seconds`, at
    # least 15: on 3 MB a round takes about 0.8 s, and a median of 7 pairs moved by 0.3x.
    batches = {name: max(1, int(0.005 / max(t, 1e-7))) for name, t in first.items()}
    per_round = sum(first[n] * batches[n] for n in cases)
    rounds = max(15, min(300, int(seconds / max(per_round, 1e-6))))
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(rounds):
        for name, fn in cases.items():
            samples[name].append(_time(fn, batches[name]) / batches[name])
    times = {name: statistics.median(values) for name, values in samples.items()}
    ratios = {
        name: statistics.median(
            t / b for t, b in zip(samples[name], samples[baseline], strict=True)
        )
        for name, baseline in baselines.items()
    }
    return times, ratios


def _time(fn: Callable[[], object], count: int) -> float:
    start = time.process_time()
    for _ in range(count):
        fn()
    return time.process_time() - start


def bench(label: str, text: str, seconds: float) -> None:
    rtype = GetReleaseDetailsResponse
    message = projectops.from_json(text, rtype)
    data = projectops.to_dict(message)
    assert _fastcodec.to_dict(message) == data
    assert _fastcodec.from_dict(json.loads(text), rtype, strict=False) == message

    def json_format_decode() -> object:
        out = rtype()
        return json_format.ParseDict(json.loads(text), out, ignore_unknown_fields=True)

    def json_format_encode() -> object:
        return dumps(json_format.MessageToDict(message, **OPTIONS_OUT))

    cases: dict[str, Callable[[], object]] = {
        "json.loads": lambda: json.loads(text),
        "json.dumps": lambda: dumps(data),
        "projectops.from_json": lambda: projectops.from_json(text, rtype),
        "projectops.from_json strict": lambda: projectops.from_json(text, rtype, strict=True),
        "projectops.to_json": lambda: projectops.to_json(message),
        "fast path decode": lambda: _fastcodec.from_dict(json.loads(text), rtype, strict=False),
        "fast path decode strict": lambda: _fastcodec.from_dict(
            json.loads(text), rtype, strict=True
        ),
        "fast path encode": lambda: dumps(_fastcodec.to_dict(message)),
        "json_format decode": json_format_decode,
        "json_format encode": json_format_encode,
        "validate": lambda: projectops.validate(message),
    }
    baselines = {
        name: "json.dumps" if "encode" in name or "to_json" in name else "json.loads"
        for name in cases
        if not name.startswith("json.")
    }
    t, ratio = run(cases, baselines, seconds)
    loads, dumps_ = t["json.loads"], t["json.dumps"]
    print(
        f"\n{label}: {len(text):,} bytes of JSON, {len(message.detailed_results.issues):,} "
        f"issues; json.loads {loads * 1e3:.3f} ms, json.dumps {dumps_ * 1e3:.3f} ms"
    )
    public = "projectops (wired to the fast path)" if wired() else "projectops (json_format path)"
    rows = [
        (public, "projectops.from_json", "projectops.to_json"),
        ("  strict", "projectops.from_json strict", None),
        ("fast path (_fastcodec)", "fast path decode", "fast path encode"),
        ("  strict", "fast path decode strict", None),
        ("json_format", "json_format decode", "json_format encode"),
        ("REQUIRED check (validate, after decoding)", "validate", None),
    ]
    print(f"  {'':<38} {'decode / loads':>15} {'encode / dumps':>15}")
    for name, decode, encode in rows:
        dec = f"{ratio[decode]:.2f}x" if decode else ""
        enc = f"{ratio[encode]:.2f}x" if encode else ""
        print(f"  {name:<38} {dec:>15} {enc:>15}")


FLOOR_IMPORTS = "import httpx2, google.protobuf.message, google.api.annotations_pb2"
CLI_CALL = ["get-release-details", "--version", "1.0.0"]
# The least a call through httpx2 does: the floor's imports, one POST (verify=False: an SSL
# context without the CA bundle, about 1 ms more than the CLI, which builds none for an http://
# URL), the response parsed and printed by the json module.
BARE_CALL = f"""{FLOOR_IMPORTS}, json, os, sys
with httpx2.Client(verify=False) as client:
    answer = client.post(
        os.environ["SERVICE_BACKEND_URL"] + "/api/mcp/get_release_details",
        json={{"version": "1.0.0"}},
        headers={{"Service-Api-Key": os.environ["SERVICE_API_KEY"]}},
    )
answer.raise_for_status()
sys.stdout.write(json.dumps(answer.json(), indent=2))
"""


def _child_env() -> dict[str, str]:
    """The environment of the CLI's processes: .pyc files written and read, as after pip install;
    the mock server's first demo project's key."""
    from projectops.fixtures import default_fixtures

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["SERVICE_API_KEY"] = default_fixtures()[0].api_key
    return env


def _run(command: Sequence[str], env: dict[str, str]) -> tuple[float, float]:
    """CPU seconds (user + sys) and wall seconds of one process running `command`."""
    start = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode:
        raise SystemExit(f"error: {' '.join(command)} exited {process.returncode}")
    return usage.ru_utime + usage.ru_stime, wall


def _program() -> str:
    """The ``projectops`` console script of this interpreter's environment, as users run it."""
    script = Path(sys.executable).with_name("projectops")
    if not script.exists():
        raise SystemExit(f"error: no {script}: pip install -e '.[client,server]' first")
    return str(script)


def _mock_server(env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    """``projectops mock-server`` on a free port of 127.0.0.1, listening, and its base URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "projectops", "mock-server", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return server, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.1)
    server.kill()
    raise SystemExit("error: the mock server did not start within 30 s")


def bench_cli(rounds: int) -> None:
    env = _child_env()
    server, base_url = _mock_server(env)
    env["SERVICE_BACKEND_URL"] = base_url
    commands = {
        "floor": [sys.executable, "-c", FLOOR_IMPORTS],
        "floor + httpcore2": [sys.executable, "-c", FLOOR_IMPORTS + ", httpcore2"],
        "bare httpx2 call": [sys.executable, "-c", BARE_CALL],
        "call": [_program(), *CLI_CALL],
    }
    try:
        for command in commands.values():  # warm-up: .pyc files, the page cache
            _run(command, env)
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        for _ in range(rounds):
            for name, command in commands.items():
                samples[name].append(_run(command, env))
    finally:
        server.terminate()
        server.wait(timeout=30)

    def ratio(name: str, floor: str, index: int) -> float:
        pairs = zip(samples[name], samples[floor], strict=True)
        return statistics.median(a[index] / b[index] for a, b in pairs)

    cpu = {name: statistics.median(s[0] for s in values) for name, values in samples.items()}
    print(
        f"\nCLI: projectops {' '.join(CLI_CALL)} against the mock server, {rounds} rounds; "
        f"median CPU s: call {cpu['call']:.3f}, floor {cpu['floor']:.3f}, "
        f"floor + httpcore2 {cpu['floor + httpcore2']:.3f}, bare httpx2 call "
        f"{cpu['bare httpx2 call']:.3f}"
    )
    print(f"  {'':<38} {'CPU':>15} {'wall':>15}")
    for name, floor in (
        ("call", "floor"),
        ("call", "floor + httpcore2"),
        ("call", "bare httpx2 call"),
        ("bare httpx2 call", "floor"),
    ):
        label = f"{name} / {floor}"
        print(f"  {label:<38} {ratio(name, floor, 0):>14.2f}x {ratio(name, floor, 1):>14.2f}x")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--seconds", type=float, default=3.0, help="per size (default 3; at least 15 rounds)"
    )
    parser.add_argument(
        "--sizes", default=",".join(SIZES), help="comma-separated: " + ",".join(SIZES)
    )
    parser.add_argument(
        "--cli-rounds", type=int, default=15, help="CLI calls timed (default 15; 0: none)"
    )
    args = parser.parse_args()
    find = getattr(codec, "_orjson", None)  # the codec before the extra "fast" has none
    orjson = find() if find else None
    under = f"orjson {orjson.__version__}" if orjson else "json alone (no orjson)"
    print(
        f"Python {sys.version.split()[0]}, protobuf {protobuf.__version__} "
        f"({api_implementation.Type()}), codec on {under}; medians of paired ratios over "
        "interleaved rounds, garbage collection on"
    )
    for size in [s for s in args.sizes.split(",") if s]:
        bench(size, payload(SIZES[size]), args.seconds)
    if args.cli_rounds:
        bench_cli(args.cli_rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
