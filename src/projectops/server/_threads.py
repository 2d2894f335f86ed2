"""The server adapter's threads: the thread pools of one app, the callee that runs a plain
or ``async def`` callable where it belongs, and the worker thread a handler past its
``handler_timeout`` is abandoned in (see :func:`projectops.server.create_app`)."""

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

__all__ = ["Callee", "Pools", "must_go_up"]

# Threads of the pools of a sync `authenticate` and of body decoding, each its own, apart from
# the handlers' (anyio's default limiter, 40 threads): handlers stuck in every thread of theirs
# must not hold up the key check or the decoding of other requests.
_AUTHENTICATE_THREADS = 40
_DECODE_THREADS = 8


class Pools:
    """The thread limiters of one app, one set per event loop (a limiter is bound to the loop
    it is used on; the same app may be served on several, e.g. by a test client)."""

    __slots__ = ("_authenticate", "_decode")

    def __init__(self) -> None:
        self._authenticate: anyio.lowlevel.RunVar[anyio.CapacityLimiter] = anyio.lowlevel.RunVar(
            "projectops_authenticate_threads"
        )
        self._decode: anyio.lowlevel.RunVar[anyio.CapacityLimiter] = anyio.lowlevel.RunVar(
            "projectops_decode_threads"
        )

    def authenticate(self) -> anyio.CapacityLimiter:
        """The limiter of a plain `authenticate` on the running loop (40 threads)."""
        return self._get(self._authenticate, _AUTHENTICATE_THREADS)

    def decode(self) -> anyio.CapacityLimiter:
        """The limiter of large bodies' decoding on the running loop (8 threads)."""
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


def must_go_up(exc: BaseException) -> bool:
    """Whether `exc` must propagate instead of becoming a 500: the process is told to stop, a
    generator to close, or the request's own task is cancelled (also inside a group)."""
    kinds = (KeyboardInterrupt, SystemExit, GeneratorExit, anyio.get_cancelled_exc_class())
    if isinstance(exc, BaseExceptionGroup):
        return exc.subgroup(kinds) is not None
    return isinstance(exc, kinds)


class Callee:
    """A plain or ``async def`` callable, called on the loop (async) or in a worker thread
    (plain); which one is decided once, not per request.

    `limiter` gives the thread limiter of a plain callable (anyio's default when None).
    """

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
        if inspect.isawaitable(result):
            result = await result
        return result

    async def abandoning(self, *args: Any) -> Any:
        """As a call, but a plain callable's thread is abandoned when the caller is cancelled
        (it cannot be killed); it holds its token of the default limiter until it returns."""
        if self.is_async:
            return await self._function(*args)
        result = await _abandonable_thread(self._function, args)
        if inspect.isawaitable(result):
            result = await result
        return result


async def _abandonable_thread(function: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    """`function(*args)` in a worker thread, under anyio's default thread limiter; cancelling
    the caller abandons the thread without waiting for it.

    anyio releases an abandoned thread's token at once, so stuck calls would add a thread each
    past the limit. Here the token is taken on the thread's behalf, and whoever is last gives
    it back: the caller when the call ended (or never started), else the abandoned thread once
    `function` returns.
    """
    pool = anyio.to_thread.current_default_thread_limiter()
    borrower = object()
    await pool.acquire_on_behalf_of(borrower)
    call_soon = _loop_caller()
    lock = threading.Lock()
    # queued -> running -> returned, or -> abandoned (before it ran, or while it ran)
    state = ["queued"]

    def give_back_from_thread() -> None:
        try:
            call_soon(lambda: pool.release_on_behalf_of(borrower))
        except RuntimeError:
            pass  # the event loop has ended, and its limiter with it

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
                give_back_from_thread()

    try:
        # The token is already held: the thread itself is not limited a second time.
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
    """A function that schedules a callable on the running event loop from any thread, without
    waiting (asyncio's ``call_soon_threadsafe``, trio's ``TrioToken.run_sync_soon``); it raises
    RuntimeError once the loop is closed.

    Public APIs of both backends: ``anyio.from_thread.run_sync(token=...)`` would do it too, but
    only from anyio 4.11, and it blocks the calling thread until the loop runs the callable.
    """
    try:
        return asyncio.get_running_loop().call_soon_threadsafe
    except RuntimeError:  # not asyncio: anyio's other backend
        import trio  # type: ignore[import-not-found]

        run_sync_soon: Callable[[Callable[[], object]], object]
        run_sync_soon = trio.lowlevel.current_trio_token().run_sync_soon
        return run_sync_soon
