"""Where the service's code runs: the thread pools of one app, :class:`Callee` (plain callables
in a worker thread, ``async def`` ones on the loop), the thread a handler past its
``handler_timeout`` is abandoned in, and which exception is a cancellation from outside."""

from __future__ import annotations

import asyncio
import inspect
import math
import threading
from collections.abc import Callable
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread

__all__ = ["Callee", "Pools", "cancelled_from_outside"]

# A plain `authenticate` and large bodies' decoding get pools of their own, apart from the
# handlers' (anyio's default, 40 threads): handlers stuck in every thread hold up neither.
_AUTHENTICATE_THREADS = 40
_DECODE_THREADS = 8


class Pools:
    """The thread limiters of one app, one set per event loop it is served on."""

    __slots__ = ("_authenticate", "_decode")

    def __init__(self) -> None:
        self._authenticate: anyio.lowlevel.RunVar[anyio.CapacityLimiter]
        self._authenticate = anyio.lowlevel.RunVar("projectops_authenticate_threads")
        self._decode: anyio.lowlevel.RunVar[anyio.CapacityLimiter]
        self._decode = anyio.lowlevel.RunVar("projectops_decode_threads")

    def authenticate(self) -> anyio.CapacityLimiter:
        return self._get(self._authenticate, _AUTHENTICATE_THREADS)

    def decode(self) -> anyio.CapacityLimiter:
        return self._get(self._decode, _DECODE_THREADS)

    @staticmethod
    def _get(
        var: anyio.lowlevel.RunVar[anyio.CapacityLimiter], threads: int
    ) -> anyio.CapacityLimiter:
        try:
            return var.get()
        except LookupError:
            limiter = anyio.CapacityLimiter(threads)
            var.set(limiter)
            return limiter


def cancelled_from_outside(exc: BaseException) -> bool:
    """Whether `exc` is the cancellation of the request's own task (the client went away, the
    server stops, ``handler_timeout``), which goes on up. Any other exception the service's
    code raises, ``CancelledError``, ``SystemExit`` and ``KeyboardInterrupt`` included, is its
    failure (docs/contract.md §5)."""
    cancelled = anyio.get_cancelled_exc_class()
    if isinstance(exc, BaseExceptionGroup):
        if exc.subgroup(cancelled) is None:
            return False
    elif not isinstance(exc, cancelled):
        return False
    try:
        task = asyncio.current_task()
    except RuntimeError:  # trio: its Cancelled comes from a cancel scope only
        return True
    return task is not None and task.cancelling() > 0


class Callee:
    """A plain or ``async def`` callable, called on the loop (async) or in a worker thread of
    `limiter()` (plain; anyio's default limiter when None)."""

    __slots__ = ("_function", "_limiter", "is_async")

    def __init__(
        self,
        function: Callable[..., Any],
        limiter: Callable[[], anyio.CapacityLimiter] | None = None,
    ) -> None:
        self._function = function
        self._limiter = limiter
        self.is_async = inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
            getattr(function, "__call__", None)  # noqa: B004 - callable objects, too
        )

    async def __call__(self, *args: Any) -> Any:
        if self.is_async:
            return await self._function(*args)
        limiter = None if self._limiter is None else self._limiter()
        result = await anyio.to_thread.run_sync(self._function, *args, limiter=limiter)
        return (await result) if inspect.isawaitable(result) else result

    async def abandoning(self, *args: Any) -> Any:
        """As a call, but a plain callable's thread is abandoned (it cannot be killed) when the
        caller is cancelled; it keeps its place in the default limiter until it returns."""
        if self.is_async:
            return await self._function(*args)
        result = await _abandonable_thread(self._function, args)
        return (await result) if inspect.isawaitable(result) else result


async def _abandonable_thread(function: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    # anyio gives an abandoned thread's token back at once, so stuck calls would grow the pool.
    # Here the token is taken on the thread's behalf and whoever is last gives it back: the
    # caller when the call ended (or never started), else the abandoned thread on return.
    pool = anyio.to_thread.current_default_thread_limiter()
    borrower = object()
    await pool.acquire_on_behalf_of(borrower)
    call_soon = _loop_caller()
    lock = threading.Lock()
    state = ["queued"]  # -> running -> returned, or -> abandoned

    def run() -> Any:
        with lock:
            if state[0] == "abandoned":
                return None
            state[0] = "running"
        try:
            return function(*args)
        finally:
            with lock:
                abandoned = state[0] == "abandoned"
                state[0] = "returned"
            if abandoned:
                try:
                    call_soon(lambda: pool.release_on_behalf_of(borrower))
                except RuntimeError:
                    pass  # the event loop has ended, and its limiter with it

    try:
        return await anyio.to_thread.run_sync(
            run, abandon_on_cancel=True, limiter=anyio.CapacityLimiter(math.inf)
        )
    finally:
        with lock:
            still_running = state[0] == "running"
            state[0] = "abandoned"
        if not still_running:
            pool.release_on_behalf_of(borrower)


def _loop_caller() -> Callable[[Callable[[], object]], object]:
    """Schedules a callable on the running loop from any thread without waiting (RuntimeError
    once the loop is closed): asyncio's ``call_soon_threadsafe`` or trio's token."""
    try:
        return asyncio.get_running_loop().call_soon_threadsafe
    except RuntimeError:  # anyio's other backend
        import trio  # type: ignore[import-not-found]

        run_sync_soon: Callable[[Callable[[], object]], object]
        run_sync_soon = trio.lowlevel.current_trio_token().run_sync_soon
        return run_sync_soon
