"""Server interceptors (``create_app(..., interceptors=[...])``) and a handler's already encoded
answer, :class:`PreEncoded`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from google.protobuf.message import Message

from projectops.server._context import RequestContext

__all__ = ["PreEncoded", "ServerCallNext", "ServerInterceptor", "check_interceptors", "wrap"]

#: ``await call_next(request, context)`` runs the next interceptor, after the last the handler:
#: the response message (or :class:`PreEncoded`), or an ``ApiError`` (a handler's unexpected
#: failure as ``Internal``, one past ``handler_timeout`` as ``DeadlineExceeded``).
ServerCallNext = Callable[[Message, RequestContext[Any]], Awaitable["Message | PreEncoded"]]


class ServerInterceptor(Protocol):
    """``async def interceptor(request, context, call_next) -> response`` around every rpc's
    handler, after the key check and decoding: it may raise an ``ApiError`` (answered with its
    code's status), time the call, or pass on another request or return another response of the
    operation's types. Any other exception, or a result of another type, is a logged 500."""

    async def __call__(
        self, request: Message, context: RequestContext[Any], call_next: ServerCallNext
    ) -> Message | PreEncoded: ...


class PreEncoded:
    """A handler's answer already encoded: `body`, the UTF-8 JSON of a response message as
    :func:`projectops.codec.to_json` writes it, sent as it is, unchecked."""

    __slots__ = ("body",)

    def __init__(self, body: bytes) -> None:
        self.body = body


def check_interceptors(interceptors: object) -> tuple[ServerInterceptor, ...]:
    """`interceptors` as a tuple. Raises TypeError: not a sequence (a string counts as none),
    or an item is not callable."""
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
    """`call_next` with `interceptor` around it."""

    async def wrapped(request: Message, context: RequestContext[Any]) -> Message | PreEncoded:
        return await interceptor(request, context, call_next)

    return wrapped
