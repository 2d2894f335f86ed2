"""The proxy the environment names (:func:`projectops.client._transport.environment_proxy`):
which variable counts for which base URL, ``NO_PROXY``, and a clear refusal, never quoting the
address, of a proxy that cannot be used. Both clients take it; the first test sees a call go
through it.
"""

from __future__ import annotations

import asyncio
import importlib.util

import pytest

import projectops
from projectops.client import AsyncClient, Client, InvalidProxy
from projectops.client._transport import environment_proxy
from tests.support import KEY, Recorder


@pytest.mark.parametrize("client_class", [Client, AsyncClient])
def test_a_proxy_from_the_environment_is_used_and_no_proxy_honoured(
    client_class: type[Client] | type[AsyncClient],
    recorder: Recorder,
    no_proxy_in_env: pytest.MonkeyPatch,
) -> None:
    no_proxy_in_env.setenv("HTTP_PROXY", recorder.base_url)

    def call(base_url: str) -> None:
        if client_class is Client:
            with Client(base_url, KEY, timeout=5) as client:
                client.call("list-rum-environments")
        else:

            async def go() -> None:
                async with AsyncClient(base_url, KEY, timeout=5) as client:
                    await client.call("list-rum-environments")

            asyncio.run(go())

    call("http://svc.example")
    assert recorder.requests[-1].path == "http://svc.example/api/mcp/list_rum_environments"
    no_proxy_in_env.setenv("NO_PROXY", "svc.example")
    with pytest.raises(projectops.Unavailable):
        call("http://svc.example")  # straight to a host that does not resolve
    assert len(recorder.requests) == 1


def test_no_proxy_variable_is_a_direct_connection(no_proxy_in_env: pytest.MonkeyPatch) -> None:
    assert environment_proxy("http://svc.example") is None
    no_proxy_in_env.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    assert environment_proxy("http://svc.example") is None  # the https one is not for http


def test_the_variable_of_the_base_urls_scheme_wins_over_all_proxy(
    no_proxy_in_env: pytest.MonkeyPatch,
) -> None:
    no_proxy_in_env.setenv("ALL_PROXY", "http://all.example:1")
    no_proxy_in_env.setenv("https_proxy", "http://secure.example:2")
    https = environment_proxy("https://svc.example")
    assert https is not None and (https.url.host, https.url.port) == ("secure.example", 2)
    other = environment_proxy("http://svc.example")
    assert other is not None and (other.url.host, other.url.port) == ("all.example", 1)


def test_an_address_without_a_scheme_is_an_http_proxy(no_proxy_in_env: pytest.MonkeyPatch) -> None:
    no_proxy_in_env.setenv("HTTP_PROXY", "proxy.example:3128")
    proxy = environment_proxy("http://svc.example")
    assert proxy is not None and str(proxy.url) == "http://proxy.example:3128"


def test_no_proxy_exempts_its_hosts_only(no_proxy_in_env: pytest.MonkeyPatch) -> None:
    no_proxy_in_env.setenv("HTTP_PROXY", "http://proxy.example:3128")
    no_proxy_in_env.setenv("NO_PROXY", "svc.example,.internal")
    assert environment_proxy("http://svc.example:8787") is None
    assert environment_proxy("http://api.internal") is None
    assert environment_proxy("http://other.example") is not None


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("ftp://user:hunter2@proxy.example:21", "has the scheme 'ftp'; use one of http, https"),
        ("http://user:hunter2@[::1", "is not a valid URL"),
    ],
    ids=["unknown scheme", "not a URL"],
)
def test_an_unusable_proxy_is_refused_without_quoting_it(
    address: str, expected: str, no_proxy_in_env: pytest.MonkeyPatch
) -> None:
    no_proxy_in_env.setenv("HTTP_PROXY", address)
    with pytest.raises(InvalidProxy) as caught:
        environment_proxy("http://svc.example")
    assert expected in str(caught.value) and "http requests" in str(caught.value)
    assert "hunter2" not in str(caught.value) and "proxy.example" not in str(caught.value)
    assert isinstance(caught.value, ValueError)


@pytest.mark.skipif(importlib.util.find_spec("socksio") is not None, reason="socksio is installed")
def test_a_socks_proxy_without_socksio_says_what_to_install(
    no_proxy_in_env: pytest.MonkeyPatch,
) -> None:
    no_proxy_in_env.setenv("ALL_PROXY", "socks5://user:hunter2@proxy.example:1080")
    with pytest.raises(InvalidProxy, match=r"httpx2\[socks\]") as caught:
        environment_proxy("https://svc.example")
    assert "hunter2" not in str(caught.value)
