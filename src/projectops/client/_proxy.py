"""The proxy the environment names for a call: ``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``
and ``NO_PROXY``, read the way the standard library reads them.

Its own module, apart from the transport, because both clients read it: the sync client hands
the proxy to its whole-call deadline transport (:mod:`projectops.client._transport`), the async
client to httpx's own transport. The proxy's address is never quoted in an error: it may hold
a user name and password.
"""

from __future__ import annotations

import importlib.util
import urllib.request
from urllib.parse import urlsplit

import httpx

__all__ = ["PROXY_SCHEMES", "InvalidProxy", "environment_proxy"]

#: The proxy schemes httpx (httpcore) can speak.
PROXY_SCHEMES = ("http", "https", "socks5", "socks5h")


class InvalidProxy(ValueError):
    """The environment names a proxy for the base URL that cannot be used (not a URL, an
    unknown scheme, SOCKS without ``socksio``); the message never quotes its address."""


def environment_proxy(url: str) -> httpx.Proxy | None:
    """The proxy that the environment (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``,
    ``NO_PROXY``, any case) names for requests to `url`, or ``None`` for a direct connection.

    Args:
        url: the absolute http(s) base URL the calls go to; its scheme picks the variable,
            its host is matched against ``NO_PROXY``.

    Raises:
        InvalidProxy: the proxy is not a URL, its scheme is none of http, https, socks5 and
            socks5h, or it is socks5 and the ``socksio`` package is missing.
    """
    proxies = urllib.request.getproxies_environment()
    parts = urlsplit(url)
    address = proxies.get(parts.scheme) or proxies.get("all")
    if not address or urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    address = address if "://" in address else f"http://{address}"
    try:
        scheme = urlsplit(address).scheme.lower()
        proxy = httpx.Proxy(address) if scheme in PROXY_SCHEMES else None
    except (ValueError, httpx.InvalidURL):
        raise InvalidProxy(
            f"the environment's proxy for {parts.scheme} requests is not a valid URL"
        ) from None
    if proxy is None:
        raise InvalidProxy(
            f"the environment's proxy for {parts.scheme} requests has the scheme {scheme!r}; "
            f"use one of {', '.join(PROXY_SCHEMES)}"
        )
    if scheme.startswith("socks") and importlib.util.find_spec("socksio") is None:
        raise InvalidProxy(
            f"the environment's proxy for {parts.scheme} requests is a SOCKS proxy, which "
            "needs the socksio package: pip install 'httpx[socks]'"
        )
    return proxy
