"""``projectops.testing``: the API mocked for one test (extra ``testing``).

Installed with ``pip install projectops[testing]``, the pytest plugin
(:mod:`_projectops_pytestplugin`, entry point ``pytest11``) gives every test the fixture
``projectops_mock``, a :class:`MockServer`: the mock server's app with one project, no fixtures
and the answers the test scripts::

    def test_release_is_shown(projectops_mock):
        projectops_mock.answer(
            "get_release_details", {"version": "1.0.0"},
            response={"summary": {"release": {"version": "1.0.0"}}},
        )
        with projectops_mock.client() as client:   # an OperationsServiceClient
            assert client.get_release_details(version="1.0.0").summary.release.version == "1.0.0"
            assert [call.operation for call in projectops_mock.calls] == ["get_release_details"]

The library clients talk to the app in-process (:meth:`MockServer.client`,
:meth:`MockServer.async_client`, or ``transport=`` :attr:`MockServer.transport` /
:attr:`MockServer.async_transport`); a subprocess talks to :attr:`MockServer.base_url`, a real
port on 127.0.0.1 served by uvicorn in a thread, started on first access and stopped when the
test ends (:attr:`MockServer.env` holds ``SERVICE_BACKEND_URL`` and ``SERVICE_API_KEY`` for it).
Requests are checked exactly as by any server of :func:`projectops.server.create_app`, and
matched as by the mock server (:mod:`projectops.mock._matching`): exact answers first, then
the first partial one; an operation without scripted answers gets a generated, schema-valid
response unless :attr:`MockServer.generate` is set to ``False``.

This module is a pytest plugin too (``-p projectops.testing``, or ``pytest_plugins``, where
plugins are not autoloaded): it holds the same ``projectops_mock`` fixture. Importing it imports
neither httpx, Starlette nor uvicorn: a :class:`MockServer` imports them when first used.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from google.protobuf.message import Message

from projectops.codec import from_json
from projectops.conventions import API_KEY_ENV, BASE_URL_ENV
from projectops.errors import ApiError, Code, InvalidArgument
from projectops.fixtures import MAX_DELAY_SECONDS, FixtureAnswer, FixtureError, request_key
from projectops.registry import Operation, operation
from projectops.v1.error_pb2 import ErrorResponse
from projectops.validation import validate

__all__ = ["API_KEY", "PROJECT", "Call", "MockServer"]

#: The API key the mock's one project is selected by.
API_KEY = "projectops-test-key"
#: The mock project's name (it appears in ``failed_precondition`` messages).
PROJECT = "test"
# The base URL of the in-process clients: never resolved (no request leaves the process).
_IN_PROCESS_URL = "http://projectops-mock.invalid"
# Seconds the thread-served port may take to start, and to stop.
_START_TIMEOUT = 20.0
_STOP_TIMEOUT = 10.0


@dataclass(frozen=True)
class Call:
    """One request the mock answered (or failed on purpose).

    Attributes:
        operation: the operation name, e.g. ``"get_release_details"``.
        request: the decoded, validated request message.
    """

    operation: str
    request: Message


class MockServer:
    """The mock of one test (the ``projectops_mock`` fixture); see the module docstring.

    Attributes:
        api_key: the key of the mock's project (:data:`API_KEY`); any other answers 401.
        calls: every request that reached an answer, in order (:class:`Call`); requests the
            adapter refuses first (a bad key, an invalid body) are not in it.
    """

    def __init__(self) -> None:
        self.api_key = API_KEY
        self.calls: list[Call] = []
        self._scenario: dict[str, list[FixtureAnswer]] = {}
        self._generate = True
        from projectops.mock import _matching as fixtures

        self._fixtures = fixtures
        self._projects: dict[str, Any] = {}
        self._rebuild()
        from projectops.mock._app import create_mock_app

        self._app = create_mock_app(self._projects, docs=False)
        self._transport: Any = None
        self._async_transport: Any = None
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._base_url: str | None = None

    @property
    def generate(self) -> bool:
        """Whether an operation without scripted answers gets a generated response (default
        ``True``); ``False``: a 400 ``failed_precondition``, as a request no answer matches."""
        return self._generate

    @generate.setter
    def generate(self, value: bool) -> None:
        self._generate = value
        self._rebuild()

    def answer(
        self,
        operation_key: str | Operation,
        request: Message | Mapping[str, Any] | None = None,
        *,
        response: Message | Mapping[str, Any] | None = None,
        error: ApiError | Code | str | None = None,
        delay: float | timedelta | None = None,
        partial: bool | None = None,
    ) -> None:
        """Script an answer of `operation_key` (an operation name, tool name or path).

        Args:
            request: the request it answers, as a message or its JSON mapping (a dict);
                ``None``: every request of the operation.
            response: the response, as a message or a dict; with neither `response` nor
                `error`, the empty response.
            error: answer with this error instead: an :class:`~projectops.ApiError` (its code
                gives the status, its message and violations are sent) or a
                :class:`~projectops.Code` (or its name, e.g. ``"not_found"``).
            delay: seconds (or a ``timedelta``) to wait before answering, at most 60.
            partial: match the requests that hold the fields `request` sets, whatever else
                they set; default: ``True`` when `request` is ``None``, else ``False`` (the
                request must be equal; strings are compared trimmed).

        An answer for the same request (and partiality) as an earlier one replaces it; exact
        answers win over partial ones, and among partial ones the first scripted wins.

        Raises:
            projectops.UnknownOperationError: no such operation.
            projectops.fixtures.FixtureError: (a ``ValueError``) the request or response
                does not decode as the operation's message, an exact request lacks a
                REQUIRED field, both `response` and `error` are given, the code is unknown,
                or the delay is negative or over 60 s.
        """
        op = operation(operation_key)
        exact = request is not None if partial is None else not partial
        wanted = _message(op.request_type, request or {}, "request")
        if exact:
            _check(lambda: validate(wanted), "request")
        if response is not None and error is not None:
            raise FixtureError("give response or error, not both")
        found = FixtureAnswer(
            request=wanted,
            response=_message(op.response_type, response or {}, "response"),
            key=request_key(wanted),
            error=None if error is None else _error(error),
            delay=_seconds(delay),
            partial=not exact,
        )
        answers = self._scenario.setdefault(op.name, [])
        same = [
            i for i, a in enumerate(answers) if (a.partial, a.key) == (found.partial, found.key)
        ]
        if same:
            answers[same[0]] = found
        else:
            answers.append(found)
        self._rebuild()

    def _rebuild(self) -> None:
        """Serve the scripted answers from now on (a project is immutable: it is replaced)."""
        scenario = {name: tuple(answers) for name, answers in self._scenario.items()}
        self._projects[self.api_key] = _recording(self._fixtures.MockProject, self.calls)(
            PROJECT, scenario, self._generate
        )

    @property
    def app(self) -> Any:
        """The ASGI app (Starlette) that answers."""
        return self._app

    @property
    def transport(self) -> Any:
        """An ``httpx.BaseTransport`` that hands each request to :attr:`app` in-process, for
        ``Client(transport=...)``; made on first use, closed at the end of the test."""
        if self._transport is None:
            self._transport = _SyncAppTransport(self._app)
        return self._transport

    @property
    def async_transport(self) -> Any:
        """An ``httpx.ASGITransport`` of :attr:`app`, for ``AsyncClient(transport=...)``."""
        if self._async_transport is None:
            import httpx2 as httpx

            self._async_transport = httpx.ASGITransport(app=self._app)
        return self._async_transport

    def client(self, cls: type | None = None, **options: Any) -> Any:
        """A typed client of the mock (:class:`projectops.client.OperationsServiceClient`, a
        :class:`~projectops.client.Client`), in-process; close it, or use it in ``with``.

        Args:
            cls: another subclass of :class:`~projectops.client.Client` to make.
            options: passed to the client (``timeout=``, default 30 s; ``retries=``, ...).
        """
        from projectops.client import OperationsServiceClient

        cls = cls or OperationsServiceClient
        options.setdefault("timeout", 30.0)
        return cls(
            base_url=_IN_PROCESS_URL, api_key=self.api_key, transport=self.transport, **options
        )

    def async_client(self, cls: type | None = None, **options: Any) -> Any:
        """An async typed client of the mock
        (:class:`projectops.client.AsyncOperationsServiceClient`), in-process; as
        :meth:`client`."""
        from projectops.client import AsyncOperationsServiceClient

        cls = cls or AsyncOperationsServiceClient
        options.setdefault("timeout", 30.0)
        return cls(
            base_url=_IN_PROCESS_URL,
            api_key=self.api_key,
            transport=self.async_transport,
            **options,
        )

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` of a real port serving :attr:`app` (uvicorn in a thread),
        started on first access and stopped at the end of the test.

        Raises:
            RuntimeError: the server did not start within 20 s.
        """
        if self._base_url is None:
            self._base_url = self._start()
        return self._base_url

    @property
    def env(self) -> dict[str, str]:
        """``SERVICE_BACKEND_URL`` (:attr:`base_url`, so the port is started) and
        ``SERVICE_API_KEY``: the environment of a subprocess that should call the mock."""
        return {BASE_URL_ENV: self.base_url, API_KEY_ENV: self.api_key}

    def _start(self) -> str:
        import uvicorn

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        config = uvicorn.Config(self._app, log_level="warning", lifespan="off", access_log=False)
        server = uvicorn.Server(config)
        thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name="projectops-mock", daemon=True
        )
        self._server, self._thread = server, thread
        thread.start()
        deadline = time.monotonic() + _START_TIMEOUT
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                self.close()
                sock.close()
                raise RuntimeError("the projectops mock server did not start")
            time.sleep(0.01)
        port = sock.getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def close(self) -> None:
        """Stop the port (if started) and the in-process transport; the fixture calls it."""
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(_STOP_TIMEOUT)
            if self._thread.is_alive():  # a connection held open: stop waiting for it
                self._server.force_exit = True
                self._thread.join(_STOP_TIMEOUT)
            self._server = self._thread = None
        if self._transport is not None:
            self._transport.close()
            self._transport = None


def _recording(base: type, calls: list[Call]) -> type:
    """A subclass of ``MockProject`` that notes each request it replies to in `calls`."""

    class RecordingProject(base):  # type: ignore[misc]
        def reply(self, op: Operation, request: Message) -> Any:
            calls.append(Call(op.name, request))
            return super().reply(op, request)

    return RecordingProject


def _message(message_type: type[Message], value: Message | Mapping[str, Any], what: str) -> Any:
    if isinstance(value, Message):
        if not isinstance(value, message_type):
            raise FixtureError(
                f"{what}: expected a {message_type.DESCRIPTOR.full_name}, "
                f"got a {value.DESCRIPTOR.full_name}"
            )
        copy = message_type()
        copy.CopyFrom(value)
        return copy
    return _check(lambda: from_json(dict(value), message_type, strict=True), what)


def _check(call: Callable[[], Any], what: str) -> Any:
    """`call()`, its InvalidArgument as a FixtureError naming the field under `what`."""
    try:
        return call()
    except InvalidArgument as exc:
        parts = [f"{what}.{v.field}: {v.description}" for v in exc.violations if v.field]
        raise FixtureError("; ".join(parts) or f"{what}: {exc.message}") from None


def _error(error: ApiError | Code | str) -> ErrorResponse:
    if isinstance(error, ApiError):
        return error.to_proto()
    try:
        code = Code(error)
    except ValueError:
        known = ", ".join(c.value for c in Code)
        raise FixtureError(f"error: {error!r} is no error code; known codes: {known}") from None
    return ErrorResponse(code=code.value, message=f"mock {code.value} answer")


def _seconds(delay: float | timedelta | None) -> float:
    seconds = delay.total_seconds() if isinstance(delay, timedelta) else float(delay or 0)
    if not 0 <= seconds <= MAX_DELAY_SECONDS:
        raise FixtureError(f"delay: {seconds:g}s is not between 0 and {MAX_DELAY_SECONDS:g}s")
    return seconds


class _SyncAppTransport:
    """A sync ``httpx`` transport that runs an ASGI app on an event loop of its own thread
    (an anyio blocking portal), so the sync :class:`~projectops.client.Client` reaches the app
    without a socket; a delay of an answer is waited on that loop."""

    def __new__(cls, app: Any) -> Any:
        import anyio.from_thread as anyio_from_thread
        import httpx2 as httpx

        class Transport(httpx.BaseTransport):
            def __init__(self) -> None:
                self._inner = httpx.ASGITransport(app=app)
                self._portal_cm: Any = None
                self._portal: Any = None
                self._lock = threading.Lock()

            def _started(self) -> Any:
                with self._lock:
                    if self._portal is None:
                        self._portal_cm = anyio_from_thread.start_blocking_portal()
                        self._portal = self._portal_cm.__enter__()
                    return self._portal

            def handle_request(self, request: Any) -> Any:
                body = request.read()
                inner = httpx.Request(
                    request.method, request.url, headers=request.headers, content=body
                )

                async def send() -> tuple[int, list[tuple[bytes, bytes]], bytes]:
                    answer = await self._inner.handle_async_request(inner)
                    try:
                        content = b"".join([chunk async for chunk in answer.aiter_raw()])
                    finally:
                        await answer.aclose()
                    return answer.status_code, answer.headers.raw, content

                status, headers, content = self._started().call(send)
                return httpx.Response(status, headers=headers, content=content, request=request)

            def close(self) -> None:
                with self._lock:
                    if self._portal_cm is not None:
                        self._portal_cm.__exit__(None, None, None)
                        self._portal_cm = self._portal = None

        return Transport()
