"""Server interceptors: the callables :func:`projectops.server.create_app` wraps around each
rpc's handler, what they await to go on, and a handler's already encoded answer."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from google.protobuf.message import Message

from projectops.server._context import RequestContext

__all__ = ["PreEncoded", "ServerCallNext", "ServerInterceptor", "check_interceptors", "wrap"]

#: What a server interceptor awaits to go on: ``await call_next(request, context)`` runs the
#: next interceptor, and after the last the handler; it returns the response message (or the
#: handler's :class:`PreEncoded` answer) and raises an :class:`~projectops.ApiError` for a
#: failed call (a handler's failure other than an ``ApiError`` as
#: :class:`~projectops.errors.Internal`, its generic message; a handler past
#: ``handler_timeout`` as :class:`~projectops.errors.DeadlineExceeded`).
ServerCallNext = Callable[[Message, RequestContext[Any]], Awaitable["Message | PreEncoded"]]


class ServerInterceptor(Protocol):
    """A callable around each rpc served by :func:`create_app` (``interceptors=[...]``).

    ``async def interceptor(request, context, call_next) -> response``: `request` is the
    decoded, validated request message (a ``<Rpc>Request`` of ``context.operation``),
    `context` the :class:`RequestContext` the handler gets, `call_next` a
    :data:`ServerCallNext`. It runs after the key check and decoding and before the response
    is encoded, so it may:

    - refuse the call by raising an :class:`~projectops.ApiError` (``PermissionDenied``
      answers 403, each code with its status of :data:`projectops.HTTP_STATUS_BY_CODE`);
    - time or log the call around ``await call_next(request, context)``;
    - pass another request message of the operation's request type on;
    - return another response message of the operation's response type (or a
      :class:`PreEncoded` answer).

    Any other exception it raises is a 500 ``internal`` answer with a generic message, logged
    with the API key redacted, as a handler's; so is a result of the wrong type.
    """

    async def __call__(
        self, request: Message, context: RequestContext[Any], call_next: ServerCallNext
    ) -> Message | PreEncoded: ...


class PreEncoded:
    """A handler's answer already encoded: the JSON text of a message of the operation's
    response type (e.g. from a cache). The adapter sends `body` as it is, unchecked.

    Attributes:
        body: UTF-8 JSON text of the response message, as :func:`projectops.codec.to_json`
            writes it.
    """

    __slots__ = ("body",)

    def __init__(self, body: bytes) -> None:
        self.body = body


def check_interceptors(interceptors: object) -> tuple[ServerInterceptor, ...]:
    """`interceptors` as a tuple, each checked to be callable.

    Raises:
        TypeError: not a sequence (a string counts as none), or an item is not callable.
    """
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
    """`call_next` with `interceptor` around it: one more layer of the chain."""

    async def wrapped(request: Message, context: RequestContext[Any]) -> Message | PreEncoded:
        return await interceptor(request, context, call_next)

    return wrapped
