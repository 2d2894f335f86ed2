"""The figures of issue 31: a 31.9 MiB answer of ``{"sessionCount":"1"}`` elements (the most
judging work per byte a valid answer holds) through ``projectops proxy`` and judged by
``projectops conformance --deadline 2 --timeout T``; prints, asserts nothing.

Usage: python scripts/bench_kit.py [--src DIR] [--timeout T] [-- CONFORMANCE FLAGS...]

``--src`` runs the programs of another checkout's ``src/`` folder (``PYTHONPATH``), so one
command prints the figures before and after a change, e.g. for a commit C::

    git archive C src | tar -x -C /tmp/before
    python scripts/bench_kit.py --src /tmp/before/src
    python scripts/bench_kit.py

An upstream on raw sockets (127.0.0.1) answers the key in use with the large response on
``list_rum_environments``, and a small one to a request for ``/small``. Printed: the seconds a
client waits for one large response through the proxy and the proxy's peak memory (``VmHWM``);
the same for six at once, with the seconds a small call made meanwhile waited; the drift lines
the proxy wrote; the seconds and peak memory (``/usr/bin/time``) of one conformance run of that
operation, with its summary line.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

KEY = "bench-kit-key"
MIB = 1024 * 1024
UNIT = b'{"sessionCount":"1"}'
LARGE = b'{"environments":[' + b",".join([UNIT] * ((int(31.9 * MIB) - 20) // 21)) + b"]}"
SMALL = b'{"environments":[]}'


def _answer(sock: socket.socket) -> None:
    with sock:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                return
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(body) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            body += chunk
        target = head.split(b"\r\n")[0]
        if b"/small" in target:
            status, out = b"200 OK", SMALL
        elif KEY.encode() in head and b"/api/mcp/list_rum_environments" in target:
            status, out = b"200 OK", LARGE
        else:
            status, out = b"401 Unauthorized", b'{"code":"unauthenticated","message":"no"}'
        head = b"HTTP/1.1 " + status + b"\r\nContent-Type: application/json\r\n"
        head += b"Connection: close\r\nContent-Length: " + str(len(out)).encode() + b"\r\n\r\n"
        try:
            sock.sendall(head + out)
        except OSError:
            pass  # the client went away


def _serve(listener: socket.socket) -> None:
    while True:
        try:
            sock, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=_answer, args=(sock,), daemon=True).start()


def _peak_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _post(url: str, seconds: list[float]) -> None:
    started = time.monotonic()
    headers = {"Service-Api-Key": KEY, "Content-Type": "application/json"}
    request = urllib.request.Request(url, data=b"{}", method="POST", headers=headers)
    with urllib.request.urlopen(request, timeout=600) as answer:
        answer.read()
    seconds.append(time.monotonic() - started)


def _proxy(upstream: str, env: dict[str, str]) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    args = [sys.executable, "-m", "projectops", "proxy", "--upstream", upstream]
    args += ["--port", str(port), "--timeout", "120"]
    proxy = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    url = f"http://127.0.0.1:{port}/api/mcp/list_rum_environments"
    one: list[float] = []
    _post(url, one)
    print(
        f"proxy, one {len(LARGE) / MIB:.1f} MiB answer: {one[0]:.2f} s to the client, "
        f"proxy peak {_peak_mib(proxy.pid):.0f} MiB",
        flush=True,
    )
    six: list[float] = []
    threads = [threading.Thread(target=_post, args=(url, six)) for _ in range(6)]
    for thread in threads:
        thread.start()
    time.sleep(0.5)
    small: list[float] = []
    _post(f"http://127.0.0.1:{port}/small", small)
    for thread in threads:
        thread.join()
    print(
        f"proxy, six at once: {min(six):.2f}-{max(six):.2f} s each, a small call meanwhile "
        f"{small[0]:.2f} s, proxy peak {_peak_mib(proxy.pid):.0f} MiB",
        flush=True,
    )
    proxy.terminate()
    _, err = proxy.communicate(timeout=600)
    print(f"proxy drift lines: {err.decode(errors='replace').count('drift:')}", flush=True)


def _conformance(upstream: str, env: dict[str, str], timeout: str, extra: list[str]) -> None:
    args = [sys.executable, "-m", "projectops", "conformance", "--base-url", upstream]
    args += ["--deadline", "2", "--timeout", timeout, "--operation", "list_rum_environments"]
    done = subprocess.run(
        ["/usr/bin/time", "-f", "%e %M", *args, *extra], env=env, capture_output=True, check=False
    )
    seconds, kib = done.stderr.decode().strip().splitlines()[-1].split()
    summary = [line for line in done.stdout.decode().splitlines() if "requests sent" in line]
    print(
        f"conformance --deadline 2 --timeout {timeout} {' '.join(extra)}: {float(seconds):.2f} s, "
        f"peak {int(kib) / 1024:.0f} MiB, exit {done.returncode}; {summary[-1] if summary else ''}",
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--src", help="the src/ folder to run (default: the installed package)")
    parser.add_argument("--timeout", default="10", help="conformance --timeout (default 10)")
    parser.add_argument("extra", nargs="*", help="more conformance flags, after --")
    args = parser.parse_args()
    listener = socket.create_server(("127.0.0.1", 0))
    threading.Thread(target=_serve, args=(listener,), daemon=True).start()
    upstream = f"http://127.0.0.1:{listener.getsockname()[1]}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SERVICE_")}
    env["SERVICE_API_KEY"] = KEY
    if args.src:
        env["PYTHONPATH"] = args.src
    _proxy(upstream, env)
    _conformance(upstream, env, args.timeout, args.extra)
    listener.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
