"""projectops.server: the ASGI server adapter of the API and the mock server (extra ``server``).

A server package implements the generated handler protocol and gets the HTTP side (docs/contract.md
§1, §2 and §5) from the registry::

    from projectops.server import OperationsServiceHandler, RequestContext, create_app
    from projectops.v1 import operations_pb2 as ops

    class Service(OperationsServiceHandler):
        async def list_rum_environments(
            self, request: ops.ListRumEnvironmentsRequest, context: RequestContext[str]
        ) -> ops.ListRumEnvironmentsResponse:
            return ops.ListRumEnvironmentsResponse(...)   # context.project is the project

    app = create_app(Service(), authenticate=keys.get)   # uvicorn module:app

Order of the checks of one request (the first that fails answers; every error body is an
``ErrorResponse``, ``Content-Type: application/json``):

1. Path that is no operation's path of the registry (``op.path``): 404 ``not_found``. No key is
   needed: it says nothing about what is served.
2. Method other than POST on an operation's path: 405 with ``Allow: POST``; its body's code is
   ``unimplemented`` (a transport answer outside the code -> status table, see the README).
3. ``Service-Api-Key`` missing, blank, or unknown to ``authenticate``: 401 ``unauthenticated``.
   This comes before everything about the body, so a caller without a valid key costs no body
   read and learns nothing about which rpcs are implemented. A ``Project-Id`` or
   ``Organization-Id`` header is ignored: the key alone decides the project (docs/contract.md §2.2).
4. The service object has no method for the rpc: 501 ``unimplemented``.
5. Body larger than ``MAX_BODY_BYTES`` (1 MiB), by ``Content-Length`` or by the bytes actually
   read (the stream is read with a cap): 413 ``resource_exhausted``.
6. Body not UTF-8 JSON, not an object, or a field of the wrong type: 400 ``invalid_argument``
   naming the field (an empty body is the empty object ``{}``, docs/contract.md §1.2). A
   REQUIRED field missing or blank: 400 ``invalid_argument`` with one violation per field.
7. The handler method: its response is 200 with the protobuf JSON of the message; an
   ``ApiError`` it raises (``FailedPrecondition`` for a business rule) answers with the status of
   its code; any other exception is 500 ``internal`` with a generic message, and its traceback
   is logged to the ``projectops.server`` logger with the API key redacted. That holds for a
   ``BaseException`` that is no ``Exception`` too (from a handler or ``authenticate``); only
   ``SystemExit``, ``KeyboardInterrupt``, ``GeneratorExit`` and the cancellation of the
   request's task go on up. With ``create_app(..., handler_timeout=S)``, a handler still
   running after S seconds is answered 504 ``deadline_exceeded`` (a plain handler's thread
   cannot be killed: it runs on, holding its place in the thread pool, until it returns).
   ``create_app(..., interceptors=[...])`` wraps the handler in :class:`ServerInterceptor`
   callables (first outermost), which may refuse the call with an ``ApiError``, time it, or
   replace its request or response; one that fails otherwise is a 500 as a handler is.

Threads: plain (non-``async``) handlers run in anyio's default thread pool (40 threads per
event loop); a plain ``authenticate`` runs in a pool of its own, so handlers stuck in every
thread do not hold up the key check of other requests.

Content type: the request's ``Content-Type`` is not checked. The body is always read as UTF-8
JSON (RFC 8259 allows no other encoding), so ``application/json`` with or without a charset
works, and so do tools that send another type by default (``curl -d`` sends a form type). This
opens no cross-site hole: a browser cannot add the ``Service-Api-Key`` header to a cross-origin
request without a CORS preflight, which this app never grants.

The mock server (``projectops mock-server``) is :mod:`projectops.mock._app`, its fixtures
:mod:`projectops.mock._matching`. Names are imported on first use, so the ``mock-server``
command can be listed without the server extra installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from projectops._lazy import lazy_attributes

if TYPE_CHECKING:
    from projectops.server._context import RequestContext
    from projectops.server._services import OperationsServiceHandler
    from projectops.server.asgi import (
        Authenticate,
        ServerCallNext,
        ServerInterceptor,
        create_app,
    )

_WHERE = {
    "Authenticate": "projectops.server.asgi",
    "OperationsServiceHandler": "projectops.server._services",
    "RequestContext": "projectops.server._context",
    "ServerCallNext": "projectops.server.asgi",
    "ServerInterceptor": "projectops.server.asgi",
    "create_app": "projectops.server.asgi",
}

__all__ = [
    "Authenticate",
    "OperationsServiceHandler",
    "RequestContext",
    "ServerCallNext",
    "ServerInterceptor",
    "create_app",
]

if not TYPE_CHECKING:
    __getattr__ = lazy_attributes(__name__, _WHERE)
