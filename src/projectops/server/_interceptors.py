"""Server interceptors and a handler's already encoded answer, :class:`PreEncoded`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from google.protobuf.message import Message

from projectops.server._context import RequestContext

__all__ = ["PreEncoded", "ServerCallNext", "ServerInterceptor", "check_interceptors", "wrap"]

#: ``await call_next(request, context)``: the next interceptor's (at last the handler's)
#: response, or an ``ApiError`` (``Internal``, ``DeadlineExceeded`` past ``handler_timeout``).
ServerCallNext = Callable[[Message, RequestContext[Any]], Awaitable["Message | PreEncoded"]]


class ServerInterceptor(Protocol):
    """``async def interceptor(request, context, call_next) -> response`` around every handler
    (docs/server.md): it may raise an ``ApiError``, or pass on another request or return another
    response of the operation's types. Any other exception or type is a logged 500."""

    async def __call__(
        self, request: Message, context: RequestContext[Any], call_next: ServerCallNext
    ) -> Message | PreEncoded: ...


class PreEncoded:
    """A handler's answer already encoded (`body`, UTF-8 JSON as ``to_json`` writes it), sent
    unchecked."""

    __slots__ = ("body",)

    def __init__(self, body: bytes) -> None:
        self.body = body


def check_interceptors(interceptors: object) -> tuple[ServerInterceptor, ...]:
    """`interceptors` as a tuple. Raises TypeError: not a sequence of callables."""
    if isinstance(interceptors, str | bytes) or not isinstance(interceptors, Sequence):
        raise TypeError(
            "interceptors must be a sequence of async callables "
            f"(request, context, call_next), not {type(interceptors).__name__}"
        )
    for index, interceptor in enumerate(interceptors):
        if not callable(interceptor):
            raise TypeError(
                f"interceptors[{index}] is a {type(interceptor).__name__}, not a callable "
                "(request, context, call_next) -> response"
            )
    return tuple(interceptors)


def wrap(interceptor: ServerInterceptor, call_next: ServerCallNext) -> ServerCallNext:

    async def wrapped(request: Message, context: RequestContext[Any]) -> Message | PreEncoded:
        return await interceptor(request, context, call_next)

    return wrapped
