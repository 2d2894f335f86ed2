"""The mock server and ``create_app`` hold their ground (issue 39, items 3 and 4), served
in-process by uvicorn on 127.0.0.1 with raw-socket clients (the proxy's side of item 3, and
item 7: tests/adversarial/test_conformance_proxy.py):

- a request body that trickles (a byte every 0.1 s: no single read waits long) is cut at
  ``body_timeout`` with a 408 ``deadline_exceeded`` and the connection closed, by the mock
  server (its app, and ``mock-server --body-timeout``) and ``create_app`` (``handler_timeout``
  does not count the client's slowness);
- with ``validate_responses``, a large response's rules are checked off the event loop: a call
  that comes while they are checked is answered first.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

import pytest

from projectops import operation
from projectops.codec import from_json
from projectops.mock import create_mock_app, load_fixtures
from projectops.server import create_app
from tests.adversarial.servers import mock_server
from tests.adversarial.slow_clients import (
    BODY_TIMEOUT,
    KEY,
    PROMPT,
    assert_cut_in_time,
    exchange,
    port_of,
    status,
    trickle,
)
from tests.adversarial.test_conformance_proxy import LIST, LISTING, first_list
from tests.adversarial.test_server_failures import served

#: A key of the mock server's bundled fixtures (docs/mock.md).
MOCK_KEY = "demo-key"


def test_the_mock_server_cuts_a_trickling_body_at_body_timeout() -> None:
    app = create_mock_app(load_fixtures(None, generate=True), body_timeout=BODY_TIMEOUT)
    with served(app) as url:
        got, closed, elapsed = trickle(port_of(url), LIST, key=MOCK_KEY)
    assert_cut_in_time(got, closed, elapsed)


@pytest.mark.slow
def test_mock_server_body_timeout_cuts_a_trickling_body() -> None:
    with mock_server(["--body-timeout", str(BODY_TIMEOUT)]) as server:
        got, closed, elapsed = trickle(server.port, LIST, key=MOCK_KEY)
    assert_cut_in_time(got, closed, elapsed)


def test_create_app_cuts_a_trickling_body_apart_from_handler_timeout() -> None:
    def handler(request: Any, context: Any) -> Any:
        return LISTING.response_type()

    service = type("Service", (), {LISTING.name: staticmethod(handler)})()
    app = create_app(
        service,
        authenticate={KEY: "project"}.get,
        handler_timeout=30,  # the client's slowness is not the handler's
        body_timeout=BODY_TIMEOUT,
    )
    with served(app) as url:
        got, closed, elapsed = trickle(port_of(url), LIST)
        fine = exchange(port_of(url), LIST)
    assert_cut_in_time(got, closed, elapsed)
    assert status(fine) == 200


def test_create_app_refuses_a_body_timeout_that_cannot_work() -> None:
    authenticate = {KEY: "project"}.get
    with pytest.raises(ValueError, match="body_timeout"):
        create_app(object(), authenticate=authenticate, body_timeout=0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="body_timeout"):
        create_app(object(), authenticate=authenticate, body_timeout="1")  # type: ignore[arg-type]


#: Elements of the large response: its rules cost the engine its whole budget.
LARGE = 3_000


def test_a_large_answers_rules_are_checked_off_the_event_loop() -> None:
    # Our listing operation, by name: what its elements' rules cost is known (a planted rpc
    # listed first may have rules checked in a millisecond, and nothing to wait for).
    listing, items, _, text = first_list([operation("list_rum_environments")])
    elements = [{text: f"QA-{i}"} for i in range(LARGE)]
    large = from_json({items: elements}, listing.response_type)
    handled = threading.Event()

    async def handler(request: Any, context: Any) -> Any:
        handled.set()
        return large

    service = type("Service", (), {listing.name: staticmethod(handler)})()
    app = create_app(service, authenticate={KEY: "project"}.get, validate_responses=True)
    arrived: dict[str, float] = {}
    # The check (about 0.4 s) holds the GIL between switches: at the default 5 ms a switch, a
    # ping's few dozen hand-overs between this thread and the loop's could outlast it on a
    # loaded machine. A shorter interval for this test only, so that order shows the design.
    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.0002)
    try:
        with served(app) as url:
            port = port_of(url)

            def call_large() -> None:
                got = exchange(port, listing.path)
                assert status(got) == 200
                arrived["large"] = time.monotonic()

            calling = threading.Thread(target=call_large)
            calling.start()
            assert handled.wait(PROMPT * 2)
            # The handler has returned the large response: its rules are being checked now. A call
            # without a key is answered on the loop; on the loop, it would wait for the check.
            ping = exchange(port, listing.path, key="")
            arrived["ping"] = time.monotonic()
            calling.join(PROMPT * 4)
    finally:
        sys.setswitchinterval(interval)
    assert status(ping) == 401
    assert arrived["ping"] < arrived["large"]
