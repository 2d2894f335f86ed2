"""Benchmarks of the JSON codec against json.loads/json.dumps; prints ratios, asserts nothing.

The module behind ``scripts/bench``.

Usage: scripts/bench [--seconds S] [--sizes golden,0.6MB,3MB]

For the golden get_release_details response and for it scaled to about 0.6 MB and 3 MB (its
scenarios and issues repeated), every codec path and its baseline run interleaved in one
process, round after round (CPU time of this process, garbage collection off while timing), and
each figure is the median over the rounds of the ratio to its baseline timed in the same round:
decoding against ``json.loads`` of the same text, encoding against ``json.dumps`` of the same
object with the codec's settings (compact, ``ensure_ascii=False``).

Rows: ``projectops`` is the public ``from_json``/``to_json``; ``fast path`` is
``projectops._fastcodec`` directly (with ``json.loads``/``json.dumps`` around it);
``json_format`` is protobuf's own ``ParseDict``/``MessageToDict`` with the codec's options.
Targets: decode <= 5x json.loads, encode <= 3x json.dumps (stretch 3x / 2x).
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
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
    # Batch fast calls so that one timing is at least ~5 ms; rounds for about `seconds`.
    batches = {name: max(1, int(0.005 / max(t, 1e-7))) for name, t in first.items()}
    per_round = sum(first[n] * batches[n] for n in cases)
    rounds = max(7, min(300, int(seconds / max(per_round, 1e-6))))
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
    gc_was_enabled = gc.isenabled()
    gc.disable()  # collections would land on whichever case happens to be running
    try:
        start = time.process_time()
        for _ in range(count):
            fn()
        return time.process_time() - start
    finally:
        if gc_was_enabled:
            gc.enable()


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
    ]
    print(f"  {'':<38} {'decode / loads':>15} {'encode / dumps':>15}")
    for name, decode, encode in rows:
        dec = f"{ratio[decode]:.2f}x" if decode else ""
        enc = f"{ratio[encode]:.2f}x" if encode else ""
        print(f"  {name:<38} {dec:>15} {enc:>15}")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="per size (default 3)")
    parser.add_argument(
        "--sizes", default=",".join(SIZES), help="comma-separated: " + ",".join(SIZES)
    )
    args = parser.parse_args()
    print(
        f"Python {sys.version.split()[0]}, protobuf {protobuf.__version__} "
        f"({api_implementation.Type()}); medians of paired ratios over interleaved rounds"
    )
    for size in args.sizes.split(","):
        bench(size, payload(SIZES[size]), args.seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
