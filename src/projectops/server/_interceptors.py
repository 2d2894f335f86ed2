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
    """An interceptor around every handler of :func:`~projectops.server.create_app`
    (docs/server.md): ``async def interceptor(request, context, call_next) -> response``.

    It runs after the key check, decoding and validation (docs/contract.md §2.4). It may raise
    an :class:`~projectops.ApiError`, pass on another request, or return another response of the
    operation's types; any other exception or type is a logged 500 ``internal``.
    """

    async def __call__(
        self,
        request: Message,
        context: RequestContext[Any],
        call_next: ServerCallNext,
    ) -> Message | PreEncoded:
        """Handle one call, usually by awaiting `call_next`.

        Args:
            request: the decoded, validated request message.
            context: the call's :class:`~projectops.server.RequestContext`.
            call_next: the next interceptor, at last the handler.

        Returns:
            The response message, or a :class:`PreEncoded` body.

        Raises:
            projectops.ApiError: answered with its code's status (docs/contract.md §5.2).
        """
        ...


class PreEncoded:
    """A handler's response already encoded, sent as it is, unchecked: for a handler that keeps
    its responses as JSON (a cache, a proxy).

    Args:
        body: the response as UTF-8 JSON, as :func:`projectops.to_json` writes it.
    """

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

    async def wrapped(
        request: Message,
        context: RequestContext[Any],
    ) -> Message | PreEncoded:
        return await interceptor(request, context, call_next)

    return wrapped
