"""projectops.server: the ASGI server adapter of the API and the mock server (extra ``server``).

A server package implements handlers and gets the HTTP side (spec sections 4, 5 and 7) from the
registry::

    from projectops.server import create_app
    from projectops.v1 import operations_pb2 as ops

    async def list_rum_environments(project, request):
        return ops.ListRumEnvironmentsResponse(environments=...)

    app = create_app({"list_rum_environments": list_rum_environments}, keys.get)
    # uvicorn module:app

Order of the checks of one request (the first that fails answers; every error body is an
``ErrorResponse``, ``Content-Type: application/json``):

1. Path outside ``/api/mcp/``: 404 ``not_found``. No key is needed: it says nothing about
   operations.
2. Method other than POST, on any path under ``/api/mcp/``: 405 ``unimplemented`` with
   ``Allow: POST``. It does not depend on the operation name, so it reveals nothing either.
3. ``Service-Api-Key`` missing, blank, or unknown to ``authenticate``: 401 ``unauthenticated``.
   This comes before everything about the operation and the body, so a caller without a valid
   key cannot enumerate operations (a 404 would tell them apart) and costs no body read. A
   ``Project-Id`` or ``Organization-Id`` header is ignored: the key alone decides the project
   (spec 5.3, 5.4).
4. Operation name not served: 404 ``not_found``; the message lists the served operations.
5. Body larger than ``MAX_BODY_BYTES`` (1 MiB), by ``Content-Length`` or by the bytes actually
   read (the stream is read with a cap): 413 ``resource_exhausted``.
6. Body not UTF-8 JSON, not an object, or a field of the wrong type: 400 ``invalid_argument``
   naming the field (an empty body is the empty object ``{}``, spec 4.1.5). A REQUIRED field
   missing or blank: 400 ``invalid_argument`` with one violation per field.
7. The handler: its response is 200 with the protobuf JSON of the message; an
   ``ApiError`` it raises (``FailedPrecondition`` for a business rule) answers with its status
   and code; any other exception is 500 ``internal`` with a generic message, and its traceback
   is logged to the ``projectops.server`` logger with the API key redacted.

Content type: the request's ``Content-Type`` is not checked. The body is always read as UTF-8
JSON (RFC 8259 allows no other encoding), so ``application/json`` with or without a charset
works, and so do tools that send another type by default (``curl -d`` sends a form type). This
opens no cross-site hole: a browser cannot add the ``Service-Api-Key`` header to a cross-origin
request without a CORS preflight, which this app never grants.

The mock server (``projectops mock-server``) is :mod:`projectops.server.mock`.
"""

from projectops.server.asgi import AsyncAuthenticate, Authenticate, Handler, create_app

__all__ = ["AsyncAuthenticate", "Authenticate", "Handler", "create_app"]
