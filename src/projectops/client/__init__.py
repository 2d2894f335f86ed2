"""The client side of the API: typed clients, the HTTP client, the CLI and the MCP tool server.

Needs the ``client`` extra (httpx); the MCP tool server also needs the ``mcp`` extra.

    >>> from projectops.client import OperationsServiceClient
    >>> with OperationsServiceClient() as client:  # SERVICE_BACKEND_URL / SERVICE_API_KEY
    ...     details = client.get_release_details(version="1.0.0")  # doctest: +SKIP

:class:`OperationsServiceClient` and :class:`AsyncOperationsServiceClient` are generated from the
proto service (:mod:`projectops.client._services`), one method per rpc, on :class:`Client` and
:class:`AsyncClient` (:mod:`projectops.client.http`), whose ``call(name, dict)`` is the dynamic
path the CLI and the tool server use. The names are imported on first use, so the CLI's
core-only commands (``projectops operations``, ``schema``) run without httpx installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from projectops._lazy import lazy_attributes

if TYPE_CHECKING:
    from projectops.client._services import AsyncOperationsServiceClient, OperationsServiceClient
    from projectops.client.http import (
        DEFAULT_RETRIES,
        AnswerTimedOut,
        AnswerTooLarge,
        AsyncCallNext,
        AsyncClient,
        AsyncInterceptor,
        CallContext,
        CallNext,
        Client,
        Interceptor,
        InvalidProxy,
        InvalidRequest,
        InvalidResponse,
        MissingApiKey,
        MissingBaseUrl,
        OperationKey,
        RequestHeaders,
        RequestLike,
        ServiceUnreachable,
        UnexpectedRedirect,
        prepare_request,
    )

_WHERE = {
    "AsyncOperationsServiceClient": "projectops.client._services",
    "OperationsServiceClient": "projectops.client._services",
    "AnswerTimedOut": "projectops.client.http",
    "AnswerTooLarge": "projectops.client.http",
    "AsyncCallNext": "projectops.client.http",
    "AsyncClient": "projectops.client.http",
    "AsyncInterceptor": "projectops.client.http",
    "CallContext": "projectops.client.http",
    "CallNext": "projectops.client.http",
    "Client": "projectops.client.http",
    "DEFAULT_RETRIES": "projectops.client._retry",  # no httpx: the CLI's help reads it
    "Interceptor": "projectops.client.http",
    "InvalidProxy": "projectops.client.http",
    "InvalidRequest": "projectops.client.http",
    "InvalidResponse": "projectops.client.http",
    "MissingApiKey": "projectops.client.http",
    "MissingBaseUrl": "projectops.client.http",
    "OperationKey": "projectops.client.http",
    "RequestHeaders": "projectops.client.http",
    "RequestLike": "projectops.client.http",
    "ServiceUnreachable": "projectops.client.http",
    "UnexpectedRedirect": "projectops.client.http",
    "prepare_request": "projectops.client.http",
}

__all__ = [
    "DEFAULT_RETRIES",
    "AnswerTimedOut",
    "AnswerTooLarge",
    "AsyncCallNext",
    "AsyncClient",
    "AsyncInterceptor",
    "AsyncOperationsServiceClient",
    "CallContext",
    "CallNext",
    "Client",
    "Interceptor",
    "InvalidProxy",
    "InvalidRequest",
    "InvalidResponse",
    "MissingApiKey",
    "MissingBaseUrl",
    "OperationKey",
    "OperationsServiceClient",
    "RequestHeaders",
    "RequestLike",
    "ServiceUnreachable",
    "UnexpectedRedirect",
    "prepare_request",
]

if not TYPE_CHECKING:
    __getattr__ = lazy_attributes(__name__, _WHERE)
