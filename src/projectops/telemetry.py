"""OpenTelemetry spans and duration histograms of rpcs: one interceptor for each side.

``Client(interceptors=[ClientTelemetry()])``, ``AsyncClient(interceptors=[AsyncClientTelemetry()])``
and ``create_app(..., interceptors=[ServerTelemetry()])``; put it first, so that it covers the
other interceptors. Each takes ``tracer_provider`` and ``meter_provider`` (default: the global
ones) and looks its tracer and histogram up once, when it is made, through OpenTelemetry's
public API only: made before an SDK is configured, they are the API's proxies, which start
recording once a global provider is set. Without ``opentelemetry-api`` (the ``otel`` extra) an
interceptor only calls on. While no provider is configured a call costs a no-op span and a
dropped measurement (``scripts/bench-server``: not measurable).

Per rpc, on the experimental RPC semantic conventions (v1.37 and earlier):

- a span named ``projectops.v1.OperationsService/<Rpc>``, kind CLIENT or SERVER, with
  ``rpc.system``, ``rpc.service``, ``rpc.method``, ``http.response.status_code`` when known and,
  for a failed call, ``projectops.error_code`` and ``error.type`` (the code's name); the client
  marks any failure as an error, the server a 5xx only (a 4xx is the caller's fault);
- a histogram ``rpc.client.duration`` / ``rpc.server.duration`` in ms, same ``rpc.*``
  attributes (and the error code).

``rpc.system`` is ``"projectops"``: the convention's listed systems each name a wire protocol
this API does not speak (hence also ``projectops.error_code``, not ``rpc.connect_rpc.*``). The
client sends its span context in the global propagator's headers (W3C ``traceparent``); the
server's span continues it, and the handler runs inside it. The server's span covers what its
interceptors see: a call past the key check and decoding (docs/contract.md §2.4). Never
recorded: the API key, any header, a body, an error's message.
"""

from __future__ import annotations

import importlib
import time
from typing import TYPE_CHECKING, Any

from projectops.errors import HTTP_STATUS_BY_CODE, ApiError
from projectops.registry import Operation

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import TracerProvider

__all__ = [
    "ERROR_CODE_ATTRIBUTE",
    "RPC_SYSTEM",
    "AsyncClientTelemetry",
    "ClientTelemetry",
    "ServerTelemetry",
    "available",
    "span_name",
]

#: The ``rpc.system`` of every span and measurement.
RPC_SYSTEM = "projectops"
#: The attribute holding the :class:`projectops.Code` of a failed call.
ERROR_CODE_ATTRIBUTE = "projectops.error_code"

_AVAILABLE: bool | None = None


def available() -> bool:
    """Whether ``opentelemetry-api`` can be imported (looked up once per process)."""
    global _AVAILABLE
    if _AVAILABLE is None:
        try:
            for name in ("context", "metrics", "propagate", "trace"):
                importlib.import_module(f"opentelemetry.{name}")
        except ImportError:
            _AVAILABLE = False
        else:
            _AVAILABLE = True
    return _AVAILABLE


def span_name(op: Operation) -> str:
    """``<service full name>/<Rpc>``, e.g. ``projectops.v1.OperationsService/GetReleaseDetails``."""
    return f"{op.method.containing_service.full_name}/{op.method.name}"


class _Telemetry:
    """What both sides share: the tracer and histogram, looked up once, and each operation's
    span name and attributes, worked out once."""

    _side = "client"

    def __init__(
        self,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
    ) -> None:
        self._on = available()
        self._names: dict[str, tuple[str, dict[str, str]]] = {}
        if not self._on:
            return
        from opentelemetry import context, metrics, propagate, trace

        from projectops import __version__

        self._context, self._propagate, self._trace = context, propagate, trace
        tracers = tracer_provider or trace.get_tracer_provider()
        self._tracer = tracers.get_tracer("projectops", __version__)
        meters = meter_provider or metrics.get_meter_provider()
        self._histogram = meters.get_meter("projectops", __version__).create_histogram(
            f"rpc.{self._side}.duration",
            unit="ms",
            description=f"Duration of {self._side} RPCs of the Project-Scoped Operations API.",
        )
        kinds = trace.SpanKind
        self._kind = kinds.SERVER if self._side == "server" else kinds.CLIENT

    def _of(self, op: Operation) -> tuple[str, dict[str, str]]:
        found = self._names.get(op.name)
        if found is None:
            service = op.method.containing_service.full_name
            attributes = {"rpc.system": RPC_SYSTEM, "rpc.service": service}
            found = (span_name(op), {**attributes, "rpc.method": op.method.name})
            self._names[op.name] = found
        return found

    def _start(self, op: Operation, carrier: Any = None) -> _Call:
        name, attributes = self._of(op)
        parent = None if carrier is None else self._propagate.extract(carrier)
        span = self._tracer.start_span(name, context=parent, kind=self._kind, attributes=attributes)
        # Attached only when it has a context to pass on (no-op tracer, no caller: nothing).
        token = None
        if span.get_span_context().is_valid:
            token = self._context.attach(self._trace.set_span_in_context(span, parent))
        return _Call(self, span, token, attributes)


class _Call:
    """One call being recorded: its span (current while `token` is attached) and start."""

    __slots__ = ("_attributes", "_owner", "_span", "_start", "_token", "live")

    def __init__(self, owner: _Telemetry, span: Any, token: object, attributes: dict[str, str]):
        self._owner, self._span, self._token, self._attributes = owner, span, token, attributes
        self.live = token is not None
        self._start = time.perf_counter()

    def inject(self, headers: Any) -> None:
        """Add the span context's headers (``traceparent``, ...) to `headers`; one that
        `headers` refuses (``ValueError``) is left out."""
        found: dict[str, str] = {}
        self._owner._propagate.inject(found)
        for name, value in found.items():
            try:
                headers[name] = value
            except ValueError:
                continue

    def finish(self, status: int | None, code: str | None, failed: bool) -> None:
        """Set the status attributes (`code`: of a failed call), end the span, record the
        duration."""
        elapsed_ms = (time.perf_counter() - self._start) * 1000.0
        span = self._span
        if span.is_recording():
            if status is not None:
                span.set_attribute("http.response.status_code", status)
            if code is not None:
                span.set_attributes({ERROR_CODE_ATTRIBUTE: code, "error.type": code})
            if failed:
                span.set_status(self._owner._trace.StatusCode.ERROR, code)
        span.end()
        if self._token is not None:
            self._owner._context.detach(self._token)
        measured: dict[str, str] = self._attributes
        if code is not None:
            measured = {**measured, ERROR_CODE_ATTRIBUTE: code}
        self._owner._histogram.record(elapsed_ms, measured)


def _code(failure: BaseException) -> str:
    # The code only, never the message: it may quote a request value.
    return str(failure.code) if isinstance(failure, ApiError) else type(failure).__name__


def _client_status(failure: BaseException | None, context: Any) -> int | None:
    """The status of the answer that failed the call (its error's), else the last answer's."""
    status = getattr(failure, "http_status", None)
    if not isinstance(status, int):
        status = getattr(context, "http_status", None)
    return status if isinstance(status, int) else None


class ClientTelemetry(_Telemetry):
    """Interceptor of :class:`~projectops.client.Client`: a CLIENT span and
    ``rpc.client.duration`` per call (retries included), its context sent in the call's
    headers. ``http.response.status_code``: the failing answer's status, else the last
    answer's (the call context's ``http_status``); unset when no answer came."""

    def __call__(self, request: Any, context: Any, call_next: Any) -> Any:
        if not self._on:
            return call_next(request, context)
        call = self._start(context.operation)
        if call.live:
            call.inject(context.headers)
        try:
            response = call_next(request, context)
        except BaseException as exc:
            call.finish(_client_status(exc, context), _code(exc), failed=True)
            raise
        call.finish(_client_status(None, context), None, failed=False)
        return response


class AsyncClientTelemetry(ClientTelemetry):
    """:class:`ClientTelemetry` for :class:`~projectops.client.AsyncClient`."""

    async def __call__(self, request: Any, context: Any, call_next: Any) -> Any:
        if not self._on:
            return await call_next(request, context)
        call = self._start(context.operation)
        if call.live:
            call.inject(context.headers)
        try:
            response = await call_next(request, context)
        except BaseException as exc:
            call.finish(_client_status(exc, context), _code(exc), failed=True)
            raise
        call.finish(_client_status(None, context), None, failed=False)
        return response


class ServerTelemetry(_Telemetry):
    """Interceptor of :func:`projectops.server.create_app`: a SERVER span, child of the
    caller's (read from the request headers), around the other interceptors and the handler,
    and ``rpc.server.duration``. A failure's status is its code's
    (:data:`projectops.HTTP_STATUS_BY_CODE`); any other exception is the adapter's 500."""

    _side = "server"

    async def __call__(self, request: Any, context: Any, call_next: Any) -> Any:
        if not self._on:
            return await call_next(request, context)
        call = self._start(context.operation, context.headers)
        try:
            response = await call_next(request, context)
        except BaseException as exc:
            status: int | None
            if isinstance(exc, ApiError):
                code, status = str(exc.code), HTTP_STATUS_BY_CODE.get(exc.code, 500)
            elif isinstance(exc, Exception):  # the adapter answers it 500 internal
                code, status = "internal", 500
            else:  # cancelled: no answer
                code, status = type(exc).__name__, None
            call.finish(status, code, failed=status is None or status >= 500)
            raise
        call.finish(200, None, failed=False)
        return response
