""":class:`MockServer`, the API mocked for one test (the ``projectops_mock`` fixture)."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Mapping
from datetime import timedelta
from typing import Any, TypeVar, overload

import anyio
import httpx2
import uvicorn
from anyio.from_thread import BlockingPortal
from google.protobuf.message import Message

from projectops.client import (
    AsyncClient,
    AsyncOperationsServiceClient,
    Client,
    OperationsServiceClient,
)
from projectops.codec import to_dict
from projectops.conventions import API_KEY_ENV, BASE_URL_ENV
from projectops.errors import ApiError, Code
from projectops.fixtures import FixtureError, FixtureResponse, decode_fixture_response
from projectops.mock._app import create_mock_app
from projectops.mock._matching import Call, MockProject
from projectops.program.commands import listen
from projectops.registry import Operation, operation

__all__ = ["API_KEY", "PROJECT", "MockServer"]

#: The API key of the mock's one project.
API_KEY = "projectops-test-key"
#: The mock project's name (``failed_precondition`` messages name it).
PROJECT = "test"
# The client classes MockServer.client() and async_client() make, as a type checker sees them.
_C = TypeVar("_C", bound=Client)
_A = TypeVar("_A", bound=AsyncClient)
_AnyClient = TypeVar("_AnyClient", Client, AsyncClient)
# The in-process clients' base URL: never resolved, no request leaves the process.
_IN_PROCESS_URL = "http://projectops-mock.invalid"
# Seconds the port may take to start.
_START_TIMEOUT = 20.0
# Seconds the port may take to stop.
_STOP_TIMEOUT = 10.0


class MockServer:
    """The mock of one test (docs/mock.md), behind the ``projectops_mock`` pytest fixture: one
    project answering what the test scripts (:meth:`answer`) and generated responses for the rest.

    It takes no arguments. In-process by default (:meth:`client`); :attr:`base_url` serves it on
    a port for a subprocess.

    Attributes:
        api_key: the project's API key (:data:`API_KEY`).
        calls: the requests answered so far, as :class:`Call`, in order.
        app: the mock's ASGI app.
        transport: an ``httpx2.BaseTransport`` handing requests to `app` in-process.
        async_transport: the same as an ``httpx2.AsyncBaseTransport``.
    """

    def __init__(self) -> None:
        self.api_key = API_KEY
        self.calls: list[Call] = []
        self._scenario: dict[str, dict[tuple[bool, str], FixtureResponse]] = {}
        self._generate = True
        self._projects: dict[str, MockProject] = {}
        self._rebuild()
        self.app = create_mock_app(self._projects, docs=False)
        self.async_transport = httpx2.ASGITransport(app=self.app)
        self.transport = httpx2.MockTransport(self._in_portal)
        # The sync transport's event loop, in a thread of its own, started on first use.
        self._portal: BlockingPortal | None = None
        self._lock = threading.Lock()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._base_url: str | None = None

    @property
    def generate(self) -> bool:
        """Whether an operation without scripted answers gets a generated response (default),
        else 400 ``failed_precondition``."""
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
        """Script a response of an operation, as a fixtures file's answer does; it replaces one
        scripted before for the same request and partiality.

        Args:
            operation_key: the operation: a name, tool name, path, or an
                :class:`~projectops.Operation`.
            request: the request it answers, a message or a JSON object; ``None`` (the default):
                every request of the operation.
            response: the response, a message or a JSON object; ``None`` (the default): the empty
                response ``{}`` unless `error` is given.
            error: answer with this error instead: an :class:`~projectops.ApiError`, or a
                :class:`~projectops.Code` (or its name), whose message is then ``mock <code>
                answer``; ``None`` (the default): the response.
            delay: wait this long before answering, seconds or a ``timedelta``, at most 60 s;
                ``None`` (the default): no wait.
            partial: match requests by the fields `request` sets rather than by equality; ``None``
                (the default): partial exactly when `request` is ``None``.

        Raises:
            projectops.UnknownOperationError: no such operation.
            projectops.fixtures.FixtureError: a request, response, error or delay a fixtures file
                could not hold; the message names the field.
        """
        op = operation(operation_key)
        item: dict[str, Any] = {
            "request": _json(op.request_type, request or {}, "request"),
            "partial": request is None if partial is None else partial,
        }
        if isinstance(error, ApiError):
            item["error"] = to_dict(error.to_proto())
        elif error is not None:
            code = error.value if isinstance(error, Code) else error
            item["error"] = {"code": code, "message": f"mock {code} answer"}
        if response is not None or error is None:
            item["response"] = _json(op.response_type, response or {}, "response")
        if delay is not None:
            seconds = delay.total_seconds() if isinstance(delay, timedelta) else float(delay)
            item["delay"] = f"{seconds:.9f}s"
        found = decode_fixture_response(op, item, "")
        answers = self._scenario.setdefault(op.name, {})
        answers[(found.partial, found.key)] = found
        self._rebuild()

    def _rebuild(self) -> None:
        # A project is replaced, never changed.
        scenario = {name: tuple(answers.values()) for name, answers in self._scenario.items()}
        self._projects[self.api_key] = MockProject(PROJECT, scenario, self._generate, self.calls)

    @overload
    def client(self, cls: None = None, **options: Any) -> OperationsServiceClient: ...
    @overload
    def client(self, cls: type[_C], **options: Any) -> _C: ...
    def client(self, cls: type[Client] | None = None, **options: Any) -> Client:
        """An in-process client of the mock, sharing no socket.

        Args:
            cls: the client class, a subclass of :class:`~projectops.client.Client`; ``None`` (the
                default): :class:`~projectops.client.OperationsServiceClient`.
            options: more arguments of the client (``retries``, ``interceptors``, ...); ``timeout``
                is 30 seconds unless given.

        Returns:
            A new client of `cls` (typed as such) with the mock's base URL, key and transport;
            close it or use it in ``with``.
        """
        return self._client(cls or OperationsServiceClient, self.transport, options)

    @overload
    def async_client(
        self,
        cls: None = None,
        **options: Any,
    ) -> AsyncOperationsServiceClient: ...
    @overload
    def async_client(self, cls: type[_A], **options: Any) -> _A: ...
    def async_client(
        self,
        cls: type[AsyncClient] | None = None,
        **options: Any,
    ) -> AsyncClient:
        """:meth:`client` for ``async with``.

        Args:
            cls: the client class, a subclass of :class:`~projectops.client.AsyncClient`; ``None``
                (the default): :class:`~projectops.client.AsyncOperationsServiceClient`.
            options: more arguments of the client; ``timeout`` is 30 seconds unless given.

        Returns:
            A new async client of `cls` (typed as such) of the mock.
        """
        return self._client(cls or AsyncOperationsServiceClient, self.async_transport, options)

    def _client(
        self,
        cls: type[_AnyClient],
        transport: Any,
        options: dict[str, Any],
    ) -> _AnyClient:
        options.setdefault("timeout", 30.0)
        return cls(base_url=_IN_PROCESS_URL, api_key=self.api_key, transport=transport, **options)

    def _in_portal(self, request: httpx2.Request) -> httpx2.Response:
        # On the portal's loop (delays wait there): the sync client needs no socket.
        with self._lock:
            if self._portal is None:
                self._portal = _daemon_portal()
        return self._portal.call(self._send, request)

    async def _send(self, request: httpx2.Request) -> httpx2.Response:
        answer = await self.async_transport.handle_async_request(request)
        content = await answer.aread()  # no Content-Encoding: the raw body
        return httpx2.Response(answer.status_code, headers=answer.headers.raw, content=content)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` serving :attr:`app` (uvicorn in a thread), started on first
        use. Raises RuntimeError: it did not start within 20 s."""
        if self._base_url is None:
            sock = listen("127.0.0.1", 0)
            config = uvicorn.Config(self.app, log_config=None, log_level="warning", lifespan="off")
            server = uvicorn.Server(config)
            self._server = server
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
        """The environment (base URL, API key) of a subprocess that calls the mock."""
        return {BASE_URL_ENV: self.base_url, API_KEY_ENV: self.api_key}

    def close(self) -> None:
        """Stop the port (if started) and the in-process transport; the fixture calls it."""
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(_STOP_TIMEOUT)
            if self._thread.is_alive():  # a connection held open: stop waiting for it
                self._server.force_exit = True
                self._thread.join(_STOP_TIMEOUT)
            self._server = None
            self._thread = None
        with self._lock:
            if self._portal is not None:
                self._portal.call(self._portal.stop)
            self._portal = None


def _daemon_portal() -> BlockingPortal:
    """A portal to an event loop in a daemon thread: a MockServer nobody closed never keeps
    the interpreter from exiting (anyio's start_blocking_portal is joined at exit)."""
    ready: queue.Queue[BlockingPortal] = queue.Queue()

    async def serve() -> None:
        async with BlockingPortal() as portal:
            ready.put(portal)
            await portal.sleep_until_stopped()

    threading.Thread(
        target=anyio.run, args=(serve,), name="projectops-mock-loop", daemon=True
    ).start()
    return ready.get()


def _json(
    message_type: type[Message],
    value: Message | Mapping[str, Any],
    what: str,
) -> Any:
    if not isinstance(value, Message):
        return dict(value)
    if not isinstance(value, message_type):
        raise FixtureError(
            f"{what}: expected a {message_type.DESCRIPTOR.full_name}, "
            f"got a {value.DESCRIPTOR.full_name}"
        )
    return to_dict(value)
