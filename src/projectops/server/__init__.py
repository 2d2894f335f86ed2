"""projectops.server: the ASGI server adapter of the API (extra ``server``; docs/server.md).

A subclass of the generated :class:`OperationsServiceHandler` overrides the rpcs it serves;
:func:`create_app` serves it at the registry's paths and checks each request in the order of
docs/contract.md §2.4, every failure an ``ErrorResponse``::

    app = create_app(Service(), authenticate=keys.get)   # uvicorn module:app
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from projectops._lazy import lazy_attributes, modules_by_name

if TYPE_CHECKING:
    from projectops.server._context import RequestContext
    from projectops.server._endpoint import read_body
    from projectops.server._interceptors import PreEncoded, ServerCallNext, ServerInterceptor
    from projectops.server._responses import error_response
    from projectops.server._services import OperationsServiceHandler
    from projectops.server.asgi import Authenticate, create_app

_NAMES = {
    "projectops.server._context": "RequestContext",
    "projectops.server._endpoint": "read_body",
    "projectops.server._interceptors": "PreEncoded ServerCallNext ServerInterceptor",
    "projectops.server._responses": "error_response",
    "projectops.server._services": "OperationsServiceHandler",
    "projectops.server.asgi": "Authenticate create_app",
}
_WHERE = modules_by_name(_NAMES)

__all__ = [
    "Authenticate",
    "OperationsServiceHandler",
    "PreEncoded",
    "RequestContext",
    "ServerCallNext",
    "ServerInterceptor",
    "create_app",
    "error_response",
    "read_body",
]

if not TYPE_CHECKING:
    __getattr__ = lazy_attributes(__name__, _WHERE, extra="server")
