"""What every test that runs a server as a subprocess on 127.0.0.1 needs, in one place.

Imported as ``tests.loopback`` (the tests are packages).
"""

from __future__ import annotations

import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

#: The only address tests listen on or send to.
LOOPBACK = "127.0.0.1"
#: Seconds a server may take to accept connections before the test fails.
STARTUP_TIMEOUT = 20.0
#: Seconds a server may take to exit after its stop signal before it is killed.
SHUTDOWN_TIMEOUT = 10.0


@contextmanager
def raw_listener(handle: Callable[[socket.socket], None]) -> Iterator[str]:
    """A listener on 127.0.0.1 whose accept loop (a daemon thread) hands each connection to
    `handle`, in the loop's thread (a `handle` that serves for long starts its own); its base
    URL. On exit the loop stops (within 5 s) and the listener is closed; the connections are
    `handle`'s to close."""
    listener = socket.create_server((LOOPBACK, 0))
    listener.settimeout(0.1)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            handle(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://{LOOPBACK}:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(5)
        listener.close()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def wait_until_listening(
    process: subprocess.Popen[bytes],
    port: int,
    name: str | Sequence[str],
    output: Callable[[], str],
    timeout: float = STARTUP_TIMEOUT,
) -> None:
    """Block until 127.0.0.1:`port` accepts a connection.

    Raises:
        RuntimeError: `process` exited first, or nothing listened within `timeout` seconds;
            the message names the server and carries its `output()` (the process is left
            running in the second case: the caller stops it).
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"{name} exited with code {process.returncode} before "
                f"listening; output:\n{output()}"
            )
        try:
            with socket.create_connection((LOOPBACK, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(
        f"{name} did not listen on {LOOPBACK}:{port} within {timeout} s; output:\n{output()}"
    )


def stop(
    process: subprocess.Popen[bytes],
    sig: signal.Signals = signal.SIGTERM,
    timeout: float = SHUTDOWN_TIMEOUT,
) -> int:
    """Send `sig`, wait up to `timeout` seconds (then kill); return the exit code."""
    if process.poll() is None:
        process.send_signal(sig)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return process.returncode


def refuses_while_running(process: subprocess.Popen[bytes], port: int, within: float) -> bool:
    """Whether a new connection to 127.0.0.1:`port` is refused while `process` still runs,
    polled for up to `within` seconds (a listener closes on the server's next loop pass after
    its stop signal)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with socket.create_connection((LOOPBACK, port), timeout=1):
                pass
        except ConnectionRefusedError:
            return process.poll() is None
        except OSError:
            pass
        time.sleep(0.02)
    return False
