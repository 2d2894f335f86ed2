""":class:`MockServer`, the API mocked for one test: the ``projectops_mock`` fixture (extra
``testing``) of :mod:`_projectops_pytestplugin`.

One project (key :data:`API_KEY`) with the answers the test scripts (:meth:`MockServer.answer`)
and generated ones for the rest, served by the mock server's app: requests are checked as by
any :func:`projectops.server.create_app` server and matched as by the mock server. The library
clients reach it in-process (:meth:`~MockServer.client`, :meth:`~MockServer.async_client`, or
``transport=`` :attr:`~MockServer.transport`); a subprocess reaches :attr:`~MockServer.base_url`,
a port of 127.0.0.1 served by uvicorn in a thread from first use to the end of the test.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import httpx2 as httpx
import uvicorn
from anyio.from_thread import BlockingPortal, start_blocking_portal
from google.protobuf.message import Message

from projectops.codec import to_dict
from projectops.conventions import API_KEY_ENV, BASE_URL_ENV
from projectops.errors import ApiError, Code
from projectops.fixtures import FixtureAnswer, FixtureError, decode_answer
from projectops.mock._app import create_mock_app
from projectops.mock._matching import MockProject, Reply
from projectops.registry import Operation, operation
from projectops.v1.error_pb2 import ErrorResponse

__all__ = ["API_KEY", "PROJECT", "Call", "MockServer"]

#: The API key of the mock's one project.
API_KEY = "projectops-test-key"
#: The mock project's name (``failed_precondition`` messages name it).
PROJECT = "test"
# The in-process clients' base URL: never resolved, no request leaves the process.
_IN_PROCESS_URL = "http://projectops-mock.invalid"
# Seconds the port may take to start, and to stop.
_START_TIMEOUT, _STOP_TIMEOUT = 20.0, 10.0


@dataclass(frozen=True)
class Call:
    """One request that reached an answer: the operation's name and the decoded request."""

    operation: str
    request: Message


class _Recording(MockProject):
    calls: list[Call]

    def reply(self, op: Operation, request: Message) -> Reply:
        self.calls.append(Call(op.name, request))
        return super().reply(op, request)


class MockServer:
    """The mock of one test (module docstring). `api_key` is its project's key (any other gets
    401); `calls` lists every request that reached an answer (:class:`Call`), in order."""

    def __init__(self) -> None:
        self.api_key = API_KEY
        self.calls: list[Call] = []
        self._scenario: dict[str, list[FixtureAnswer]] = {}
        self._generate = True
        self._projects: dict[str, MockProject] = {}
        self._rebuild()
        self._app = create_mock_app(self._projects, docs=False)
        self._transport: Any = None
        self._async_transport: Any = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._base_url: str | None = None

    @property
    def generate(self) -> bool:
        """Whether an operation without scripted answers gets a generated response (default);
        ``False``: 400 ``failed_precondition``, as a request no answer matches."""
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
        """Script an answer of an operation (its name, tool name or path), as a fixtures file
        does: `request` (message or JSON dict; ``None``: every request), `response` (default:
        the empty one) or `error` (an ``ApiError``, or a ``Code`` or its name), `delay` (seconds
        or ``timedelta``, at most 60), `partial` (match requests holding the fields `request`
        sets; default: ``request is None``). An answer for the same request and partiality
        replaces the earlier one.

        Raises:
            projectops.UnknownOperationError: no such operation.
            projectops.fixtures.FixtureError: what the fixtures decoder refuses, naming the
                field (``request.version: is required``).
        """
        op = operation(operation_key)
        item: dict[str, Any] = {
            "request": _json(op.request_type, request or {}, "request"),
            "partial": request is None if partial is None else partial,
        }
        if error is not None:
            item["error"] = to_dict(_error_response(error))
        if response is not None or error is None:
            item["response"] = _json(op.response_type, response or {}, "response")
        if delay is not None:
            seconds = delay.total_seconds() if isinstance(delay, timedelta) else float(delay)
            item["delay"] = f"{seconds:.9f}s"
        found = decode_answer(op, item, "")
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
        """Serve the scripted answers from now on (a project is replaced, never changed)."""
        scenario = {name: tuple(answers) for name, answers in self._scenario.items()}
        project = _Recording(PROJECT, scenario, self._generate)
        project.calls = self.calls
        self._projects[self.api_key] = project

    @property
    def app(self) -> Any:
        """The ASGI app (Starlette) that answers."""
        return self._app

    @property
    def transport(self) -> httpx.BaseTransport:
        """An ``httpx`` transport that hands each request to :attr:`app` in-process, for
        ``Client(transport=...)``; closed at the end of the test."""
        if self._transport is None:
            self._transport = _SyncAppTransport(self._app)
        return self._transport  # type: ignore[no-any-return]

    @property
    def async_transport(self) -> httpx.AsyncBaseTransport:
        """An ``httpx.ASGITransport`` of :attr:`app`, for ``AsyncClient(transport=...)``."""
        if self._async_transport is None:
            self._async_transport = httpx.ASGITransport(app=self._app)
        return self._async_transport  # type: ignore[no-any-return]

    def client(self, cls: type | None = None, **options: Any) -> Any:
        """A typed client of the mock, in-process (default class
        :class:`projectops.client.OperationsServiceClient`; `options` go to it, ``timeout``
        30 s unless given); close it, or use it in ``with``."""
        from projectops.client import OperationsServiceClient

        options.setdefault("timeout", 30.0)
        return (cls or OperationsServiceClient)(
            base_url=_IN_PROCESS_URL, api_key=self.api_key, transport=self.transport, **options
        )

    def async_client(self, cls: type | None = None, **options: Any) -> Any:
        """:meth:`client` of :class:`projectops.client.AsyncOperationsServiceClient`."""
        from projectops.client import AsyncOperationsServiceClient

        options.setdefault("timeout", 30.0)
        return (cls or AsyncOperationsServiceClient)(
            base_url=_IN_PROCESS_URL,
            api_key=self.api_key,
            transport=self.async_transport,
            **options,
        )

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` serving :attr:`app`, started on first use.

        Raises:
            RuntimeError: the server did not start within 20 s.
        """
        if self._base_url is None:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            sock.listen(128)
            config = uvicorn.Config(
                self._app, log_level="warning", lifespan="off", access_log=False
            )
            self._server = server = uvicorn.Server(config)
            self._thread = threading.Thread(
                target=server.run, kwargs={"sockets": [sock]}, name="projectops-mock", daemon=True
            )
            self._thread.start()
            deadline = time.monotonic() + _START_TIMEOUT
            while not server.started:
                if not self._thread.is_alive() or time.monotonic() > deadline:
                    self.close()
                    sock.close()
                    raise RuntimeError("the projectops mock server did not start")
                time.sleep(0.01)
            self._base_url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        return self._base_url

    @property
    def env(self) -> dict[str, str]:
        """``SERVICE_BACKEND_URL`` (:attr:`base_url`, started) and ``SERVICE_API_KEY``, the
        environment of a subprocess that calls the mock."""
        return {BASE_URL_ENV: self.base_url, API_KEY_ENV: self.api_key}

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


def _json(message_type: type[Message], value: Message | Mapping[str, Any], what: str) -> Any:
    if not isinstance(value, Message):
        return dict(value)
    if not isinstance(value, message_type):
        raise FixtureError(
            f"{what}: expected a {message_type.DESCRIPTOR.full_name}, "
            f"got a {value.DESCRIPTOR.full_name}"
        )
    return to_dict(value)


def _error_response(error: ApiError | Code | str) -> ErrorResponse:
    if isinstance(error, ApiError):
        return error.to_proto()
    code = error.value if isinstance(error, Code) else str(error)
    return ErrorResponse(code=code, message=f"mock {code} answer")


class _SyncAppTransport(httpx.BaseTransport):
    """A sync transport that runs the ASGI app on an event loop of its own thread (an anyio
    blocking portal), so the sync client reaches it without a socket; delays wait there."""

    def __init__(self, app: Any) -> None:
        self._inner = httpx.ASGITransport(app=app)
        self._stack = contextlib.ExitStack()
        self._portal: BlockingPortal | None = None
        self._lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        inner = httpx.Request(
            request.method, request.url, headers=request.headers, content=request.read()
        )

        async def send() -> tuple[int, list[tuple[bytes, bytes]], bytes]:
            answer = await self._inner.handle_async_request(inner)
            try:
                content = b"".join([chunk async for chunk in answer.aiter_raw()])
                return answer.status_code, answer.headers.raw, content
            finally:
                await answer.aclose()

        with self._lock:
            if self._portal is None:
                self._portal = self._stack.enter_context(start_blocking_portal())
            portal = self._portal
        status, headers, content = portal.call(send)
        return httpx.Response(status, headers=headers, content=content, request=request)

    def close(self) -> None:
        with self._lock:
            self._stack.close()
            self._portal = None
