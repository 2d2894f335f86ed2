"""The client side of the API: HTTP client, the ``projectops`` CLI and the MCP tool server.

Needs the ``client`` extra (httpx); the MCP tool server also needs the ``mcp`` extra.

    >>> from projectops.client import Client
    >>> with Client() as client:  # SERVICE_BACKEND_URL / SERVICE_API_KEY from the environment
    ...     response = client.call("get-release-details", {"version": "1.0.0"})  # doctest: +SKIP

:class:`Client` and :class:`AsyncClient` are defined in :mod:`projectops.client.http`; the CLI
is :func:`projectops.client.cli.main`.
"""

from projectops.client.http import (
    AsyncClient,
    Client,
    MissingApiKey,
    OperationKey,
    RequestLike,
    prepare_request,
)

__all__ = ["AsyncClient", "Client", "MissingApiKey", "OperationKey", "RequestLike",
           "prepare_request"]
