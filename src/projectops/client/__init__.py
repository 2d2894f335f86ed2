"""The HTTP clients of the API (extra ``client``; docs/python.md): the generated typed clients,
:class:`Client` / :class:`AsyncClient` under them, and the bounded raw exchange
:class:`RawClient` / :class:`AsyncRawClient`. Names are imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from projectops._lazy import lazy_attributes, modules_by_name

if TYPE_CHECKING:
    from projectops.client._base import AsyncCallNext as AsyncCallNext
    from projectops.client._base import AsyncInterceptor as AsyncInterceptor
    from projectops.client._base import CallContext as CallContext
    from projectops.client._base import CallNext as CallNext
    from projectops.client._base import Interceptor as Interceptor
    from projectops.client._base import OperationKey as OperationKey
    from projectops.client._base import RequestHeaders as RequestHeaders
    from projectops.client._base import RequestLike as RequestLike
    from projectops.client._base import prepare_request as prepare_request
    from projectops.client._errors import AnswerTimedOut as AnswerTimedOut
    from projectops.client._errors import InvalidRequest as InvalidRequest
    from projectops.client._errors import InvalidResponse as InvalidResponse
    from projectops.client._errors import MissingApiKey as MissingApiKey
    from projectops.client._errors import MissingBaseUrl as MissingBaseUrl
    from projectops.client._errors import ResponseTimedOut as ResponseTimedOut
    from projectops.client._errors import ResponseTooLarge as ResponseTooLarge
    from projectops.client._errors import ServiceUnreachable as ServiceUnreachable
    from projectops.client._errors import UnexpectedRedirect as UnexpectedRedirect
    from projectops.client._errors import error_from_response as error_from_response
    from projectops.client._errors import usable_api_key as usable_api_key
    from projectops.client._retry import DEFAULT_RETRIES as DEFAULT_RETRIES
    from projectops.client._services import (
        AsyncOperationsServiceClient as AsyncOperationsServiceClient,
    )
    from projectops.client._services import OperationsServiceClient as OperationsServiceClient
    from projectops.client._transport import AsyncRawClient as AsyncRawClient
    from projectops.client._transport import InvalidProxy as InvalidProxy
    from projectops.client._transport import RawClient as RawClient
    from projectops.client._transport import RawResponse as RawResponse
    from projectops.client.http import AsyncClient as AsyncClient
    from projectops.client.http import Client as Client

_NAMES = {
    "projectops.client._base": "AsyncCallNext AsyncInterceptor CallContext CallNext Interceptor "
    "OperationKey RequestHeaders RequestLike prepare_request",
    "projectops.client._errors": "AnswerTimedOut InvalidRequest InvalidResponse MissingApiKey "
    "MissingBaseUrl ResponseTimedOut ResponseTooLarge ServiceUnreachable UnexpectedRedirect "
    "error_from_response usable_api_key",
    "projectops.client._retry": "DEFAULT_RETRIES",
    "projectops.client._services": "AsyncOperationsServiceClient OperationsServiceClient",
    "projectops.client._transport": "AsyncRawClient InvalidProxy RawClient RawResponse",
    "projectops.client.http": "AsyncClient Client",
}
_WHERE = modules_by_name(_NAMES)
__all__ = sorted(_WHERE)

if not TYPE_CHECKING:
    __getattr__ = lazy_attributes(__name__, _WHERE, extra="client")
