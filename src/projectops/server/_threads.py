"""Where the service's code runs: plain callables in worker threads (a handler past its
``handler_timeout`` abandoned in its thread), ``async def`` ones on the loop."""

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

__all__ = ["PooledCallable", "Pools", "cancelled_from_outside"]

# A plain `authenticate` and large bodies' decoding get pools of their own, apart from the
# handlers' (anyio's default, 40 threads): handlers stuck in every thread hold up neither.
_AUTHENTICATE_THREADS = 40
_DECODE_THREADS = 8
# Large answers' rules checks (validate_responses), pure Python for up to a second each, take
# one thread: each more would take its share of the GIL from the event loop too.
_RULES_THREADS = 1


class _Limiter:
    """One thread limiter of an app: ``limiter()`` is the one of the running event loop, made
    on first use there."""

    __slots__ = ("_threads", "_var")

    def __init__(self, name: str, threads: int) -> None:
        self._threads = threads
        self._var: anyio.lowlevel.RunVar[anyio.CapacityLimiter]
        self._var = anyio.lowlevel.RunVar(f"projectops_{name}_threads")

    def __call__(self) -> anyio.CapacityLimiter:
        try:
            return self._var.get()
        except LookupError:
            limiter = anyio.CapacityLimiter(self._threads)
            self._var.set(limiter)
            return limiter


class Pools:
    """The thread limiters of one app, one set per event loop it is served on."""

    __slots__ = ("authenticate", "decode", "rules")

    def __init__(self) -> None:
        self.authenticate = _Limiter("authenticate", _AUTHENTICATE_THREADS)
        self.decode = _Limiter("decode", _DECODE_THREADS)
        self.rules = _Limiter("rules", _RULES_THREADS)


def cancelled_from_outside(exc: BaseException) -> bool:
    """Whether `exc` cancels the request's own task (client gone, server stopping,
    ``handler_timeout``): it goes on up; anything else is the service's failure (§5)."""
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


class PooledCallable:
    """A callable run on the loop (``async def``) or in a thread of `limiter()` (default:
    anyio's default thread limiter)."""

    __slots__ = ("_function", "_limiter", "is_async")

    def __init__(
        self,
        function: Callable[..., Any],
        limiter: Callable[
            [], anyio.CapacityLimiter
        ] = anyio.to_thread.current_default_thread_limiter,
    ) -> None:
        self._function = function
        self._limiter = limiter
        self.is_async = inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
            getattr(function, "__call__", None)  # noqa: B004 - callable objects, too
        )

    async def __call__(self, *args: Any) -> Any:
        if self.is_async:
            return await self._function(*args)
        result = await anyio.to_thread.run_sync(self._function, *args, limiter=self._limiter())
        if inspect.isawaitable(result):
            return await result
        return result

    async def abandoning(self, *args: Any) -> Any:
        """As a call, but a cancelled caller abandons the thread, which keeps its place in its
        limiter until it returns."""
        if self.is_async:
            return await self._function(*args)
        result = await _abandonable_thread(self._function, args, self._limiter())
        if inspect.isawaitable(result):
            return await result
        return result


async def _abandonable_thread(
    function: Callable[..., Any],
    args: tuple[Any, ...],
    limiter: anyio.CapacityLimiter,
) -> Any:
    # anyio gives an abandoned thread's token back at once, so stuck calls would grow the pool.
    # Here the token is taken on the thread's behalf and whoever is last gives it back: the
    # caller when the call ended (or never started), else the abandoned thread on return.
    borrower = object()
    await limiter.acquire_on_behalf_of(borrower)
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
                    call_soon(lambda: limiter.release_on_behalf_of(borrower))
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
            limiter.release_on_behalf_of(borrower)


def _loop_caller() -> Callable[[Callable[[], object]], object]:
    # Schedules a callable on the running loop from any thread (RuntimeError once it closed).
    try:
        return asyncio.get_running_loop().call_soon_threadsafe
    except RuntimeError:  # anyio's other backend
        import trio  # type: ignore[import-not-found]

        run_sync_soon: Callable[[Callable[[], object]], object]
        run_sync_soon = trio.lowlevel.current_trio_token().run_sync_soon
        return run_sync_soon
