"""The guard of tests/conftest.py: a test not marked ``slow`` cannot start a process, so
``./scripts/test --fast`` (``-m "not slow"``) stays in-process; one marked ``slow`` can."""

from __future__ import annotations

import asyncio
import multiprocessing
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.conftest import SPAWN_GUARD, UnmarkedProcessError, pytest_runtest_makereport


@contextmanager
def refused() -> Iterator[pytest.ExceptionInfo[UnmarkedProcessError]]:
    """Expect the guard's error; then clear its record, since this test provokes it on purpose."""
    with pytest.raises(UnmarkedProcessError) as caught:
        yield caught
    assert SPAWN_GUARD.violation == str(caught.value)
    SPAWN_GUARD.violation = None


def test_subprocess_in_an_unmarked_test_is_refused_with_the_fix() -> None:
    with refused() as caught:
        subprocess.run(["true"], check=False)
    message = str(caught.value)
    assert "test_subprocess_in_an_unmarked_test_is_refused_with_the_fix" in message
    assert "@pytest.mark.slow" in message


def test_an_asyncio_subprocess_is_refused() -> None:
    async def start() -> None:
        await asyncio.create_subprocess_exec("true")

    with refused():
        asyncio.run(start())


def test_a_multiprocessing_process_is_refused() -> None:
    for method in ("spawn", "forkserver"):
        process = multiprocessing.get_context(method).Process(target=print)
        with refused():
            process.start()


@pytest.mark.parametrize("event", ["os.fork", "os.posix_spawn", "os.system"])
def test_fork_spawn_and_system_are_refused(event: str) -> None:
    # The audit event itself, not a real fork: a fork the guard missed would run pytest twice.
    with refused():
        sys.audit(event)


@pytest.mark.slow
def test_a_test_marked_slow_may_start_a_process() -> None:
    assert subprocess.run(["true"], check=False).returncode == 0
    assert SPAWN_GUARD.violation is None


def test_a_test_that_swallows_the_error_still_fails(request: pytest.FixtureRequest) -> None:
    SPAWN_GUARD.violation = "tests/x.py::test starts a process (subprocess.Popen) ..."
    passed = pytest.TestReport(
        request.node.nodeid, request.node.location, {}, "passed", None, "call"
    )
    hook = pytest_runtest_makereport(request.node, None)  # type: ignore[arg-type]
    next(hook)
    with pytest.raises(StopIteration) as done:
        hook.send(passed)
    report = done.value.value
    assert report.failed
    assert "starts a process" in str(report.longrepr)
    assert SPAWN_GUARD.violation is None
