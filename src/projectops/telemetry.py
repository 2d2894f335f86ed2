"""OpenTelemetry spans and duration histograms of rpcs (extra ``otel``, docs/python.md): one
interceptor a side, put first: ``Client(interceptors=[ClientTelemetry()])``
(``AsyncClientTelemetry`` for the async client) and
``create_app(..., interceptors=[ServerTelemetry()])``. Each looks its tracer and histogram up
once, through OpenTelemetry's public API, from the providers given or the global ones (the API's
proxies until an SDK sets them). Without ``opentelemetry-api`` they only call on; while no tracer
provider is configured a call costs a clock read and a dropped measurement.

Per rpc (RPC semantic conventions v1.37): a span ``<service>/<Rpc>``, CLIENT or SERVER, with
``rpc.system`` (``projectops``: the listed systems name wire protocols this API does not speak),
``rpc.service``, ``rpc.method``, ``http.response.status_code`` and, for a failed call,
``projectops.error_code`` and ``error.type`` (the code; the client marks any failure an error,
the server a 5xx only); a histogram ``rpc.<side>.duration`` (ms), same ``rpc.*`` attributes and
code. The client sends its span context in the global propagator's headers (W3C
``traceparent``); the server's span continues it and holds the handler, for calls past the key
check and decoding (docs/contract.md §2.4). Never recorded: the key, a header, a body, a message.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from projectops.errors import HTTP_STATUS_BY_CODE, ApiError
from projectops.registry import Operation

if TYPE_CHECKING:
    from google.protobuf.descriptor import MethodDescriptor
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import TracerProvider

__all__ = ["RPC_SYSTEM", "AsyncClientTelemetry", "ClientTelemetry", "ServerTelemetry", "available"]

# The listed rpc.system values name wire protocols this API does not speak.
RPC_SYSTEM = "projectops"
_ERROR_CODE = "projectops.error_code"  # the projectops.Code of a failed call

_AVAILABLE: bool | None = None


def available() -> bool:
    """Whether OpenTelemetry's API is installed (extra ``otel``).

    Returns:
        Whether ``opentelemetry-api`` can be imported, looked up once per process. Without it the
        interceptors of this module pass calls through untouched.
    """
    global _AVAILABLE
    if _AVAILABLE is None:
        _AVAILABLE = importlib.util.find_spec("opentelemetry.trace") is not None
    return _AVAILABLE


class _Telemetry:
    """Both sides: the tracer and histogram (each rpc's span name and attributes:
    :func:`_span_name`)."""

    _side = "client"

    def __init__(
        self,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
    ) -> None:
        """Take the providers spans and histograms are made from.

        Args:
            tracer_provider: where spans go; ``None`` (the default): OpenTelemetry's global one.
            meter_provider: where ``rpc.*.duration`` histograms go; ``None`` (the default): the
                global one.
        """
        self.on = available()
        if not self.on:
            return
        from opentelemetry import context, metrics, propagate, trace

        from projectops import __version__

        self._context = context
        self._propagate = propagate
        self._trace = trace
        # See _traced.
        self._tracing = tracer_provider is not None
        self._idle_until = 0.0
        tracers = tracer_provider or trace.get_tracer_provider()
        self._tracer = tracers.get_tracer("projectops", __version__)
        meters = meter_provider or metrics.get_meter_provider()
        what = f"Duration of {self._side} RPCs of the Project-Scoped Operations API."
        meter = meters.get_meter("projectops", __version__)
        self._histogram = meter.create_histogram(f"rpc.{self._side}.duration", "ms", what)
        self._kind = getattr(trace.SpanKind, self._side.upper())

    def _traced(self) -> bool:
        """Whether a tracer provider is given or configured: the global one is looked up (µs:
        it reads the environment) at most once a second until set (the API sets it once)."""
        if self._tracing:
            return True
        now = time.monotonic()
        if now < self._idle_until:
            return False
        idle = (self._trace.ProxyTracerProvider, self._trace.NoOpTracerProvider)
        self._tracing = not isinstance(self._trace.get_tracer_provider(), idle)
        self._idle_until = now + 1.0
        return self._tracing

    def _start(self, op: Operation, carrier: Any = None) -> _Call:
        name, attributes = _span_name(op.method)
        span = None
        token = None
        if self._traced():
            parent = None
            if carrier is not None:
                parent = self._propagate.extract(carrier)
            span = self._tracer.start_span(name, parent, self._kind, attributes)
            current = self._trace.set_span_in_context(span, parent)
            token = self._context.attach(current)
        return _Call(self, span, token, attributes, time.perf_counter())


@cache
def _span_name(method: MethodDescriptor) -> tuple[str, dict[str, str]]:
    """The span name of an rpc (``<service>/<method>``) and its attributes, made once."""
    service = method.containing_service.full_name
    attributes = {"rpc.system": RPC_SYSTEM, "rpc.service": service, "rpc.method": method.name}
    return f"{service}/{method.name}", attributes


@dataclass(slots=True)
class _Call:
    """One call being recorded: its span (current until :meth:`finish`), if any, and start."""

    _owner: _Telemetry
    span: Any
    _token: object
    _attributes: dict[str, str]
    _start: float

    def finish(
        self,
        status: int | None,
        code: str | None,
        failed: bool,
    ) -> None:
        """Set the status attributes (`code`: a failure's), end the span, record the duration."""
        elapsed_ms = (time.perf_counter() - self._start) * 1000.0
        span = self.span
        if span is not None:
            if status is not None:
                span.set_attribute("http.response.status_code", status)
            if code is not None:
                span.set_attributes({_ERROR_CODE: code, "error.type": code})
            if failed:
                span.set_status(self._owner._trace.StatusCode.ERROR, code)
            span.end()
            self._owner._context.detach(self._token)
        measured = self._attributes
        if code is not None:
            measured = {**self._attributes, _ERROR_CODE: code}
        self._owner._histogram.record(elapsed_ms, measured)


def _client_finish(
    call: _Call,
    context: Any,
    failure: BaseException | None,
) -> None:
    """Finish a client call: status and code as :class:`ClientTelemetry` says, never a message."""
    # The failure's status, else the last response's.
    status = getattr(failure, "http_status", None)
    if not isinstance(status, int):
        status = getattr(context, "http_status", None)
    if not isinstance(status, int):
        status = None
    code = None
    if isinstance(failure, ApiError):
        code = str(failure.code)
    elif failure is not None:
        code = type(failure).__name__
    call.finish(status, code, failed=failure is not None)


class ClientTelemetry(_Telemetry):
    """Interceptor of :class:`~projectops.client.Client`: a CLIENT span and
    ``rpc.client.duration`` per call (retries included). ``http.response.status_code``: the
    failing response's status, else the last response's; unset when no response came."""

    @contextmanager
    def _measured(self, context: Any) -> Iterator[None]:
        """Measure the call run inside, in a CLIENT span (nothing while telemetry is off)."""
        if not self.on:
            yield
            return
        call = self._start(context.operation)
        # The span context goes in the headers (a name they refuse: left out).
        found: dict[str, str] = {}
        if call.span is not None:
            self._propagate.inject(found)
        for name, value in found.items():
            with suppress(ValueError):
                context.headers[name] = value
        try:
            yield
        except BaseException as exc:
            _client_finish(call, context, exc)
            raise
        _client_finish(call, context, None)

    def __call__(self, request: Any, context: Any, call_next: Any) -> Any:
        """Run one call inside a CLIENT span, measured (a client interceptor).

        Args:
            request: the request message.
            context: the call's :class:`~projectops.client.CallContext`.
            call_next: the rest of the chain.

        Returns:
            What `call_next` returns.

        Raises:
            Exception: what `call_next` raises, recorded on the span first.
        """
        with self._measured(context):
            return call_next(request, context)


class AsyncClientTelemetry(ClientTelemetry):
    """:class:`ClientTelemetry` for :class:`~projectops.client.AsyncClient`."""

    async def __call__(self, request: Any, context: Any, call_next: Any) -> Any:
        """Run one call inside a CLIENT span, measured (an async client interceptor).

        Args:
            request: the request message.
            context: the call's :class:`~projectops.client.CallContext`.
            call_next: the rest of the chain, awaited.

        Returns:
            What `call_next` returns.

        Raises:
            Exception: what `call_next` raises, recorded on the span first.
        """
        with self._measured(context):
            return await call_next(request, context)


class ServerTelemetry(_Telemetry):
    """Interceptor of :func:`projectops.server.create_app`: a SERVER span, child of the
    caller's, around the other interceptors and the handler (calls past the key check and
    decoding, docs/contract.md §2.4), and ``rpc.server.duration``. Any exception other than an
    ApiError is the adapter's 500 ``internal``."""

    _side = "server"

    async def __call__(self, request: Any, context: Any, call_next: Any) -> Any:
        """Run one call inside a SERVER span, child of the caller's trace context, measured (a
        server interceptor).

        Args:
            request: the decoded request message.
            context: the call's :class:`~projectops.server.RequestContext`.
            call_next: the rest of the chain and the handler, awaited.

        Returns:
            What `call_next` returns.

        Raises:
            Exception: what `call_next` raises, recorded on the span first.
        """
        if not self.on:
            return await call_next(request, context)
        call = self._start(context.operation, context.headers)
        try:
            response = await call_next(request, context)
        except BaseException as exc:
            status: int | None
            if isinstance(exc, ApiError):
                code = str(exc.code)
                status = HTTP_STATUS_BY_CODE.get(exc.code, 500)
            elif isinstance(exc, Exception):
                code = "internal"
                status = 500
            else:  # cancelled: no response
                code = type(exc).__name__
                status = None
            call.finish(status, code, failed=status is None or status >= 500)
            raise
        call.finish(200, None, failed=False)
        return response
